import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { cannedAnswer, cannedListAnswer } from "../contracts/account.js";
import { okAnswer } from "../contracts/common.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { MAX_TEXT_LENGTH } from "../inbox/limits.js";
import {
  createCannedResponse,
  deleteCannedResponse,
  findCannedResponse,
  listCannedResponses,
  updateCannedResponse,
} from "./canned-responses.js";

const TAGS = ["canned responses"];

const shortcut = z
  .string({ error: "must be a string" })
  .regex(/^[a-z0-9_-]{1,32}$/, "must be 1-32 characters of a-z, 0-9, '_' or '-'")
  .describe("What an agent types to insert the text, unique in the account");
const text = storableString({ trim: true, min: 1, max: MAX_TEXT_LENGTH });
const createBody = z.object({ shortcut, text });
const updateBody = z.object({ shortcut: shortcut.optional(), text: text.optional() });
const idParams = z.object({ id: z.string().describe("Canned response id (UUID)") });

export function registerCannedResponseRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.get(
    "/api/canned-responses",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's canned responses, by shortcut",
      responses: {
        200: { description: "`{ canned_responses }`", body: cannedListAnswer },
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return { canned_responses: await listCannedResponses(db, accountId) };
    },
  );

  app.post(
    "/api/canned-responses",
    docs({
      account: true,
      tags: TAGS,
      summary: "Save a canned response",
      body: createBody,
      responses: {
        201: { description: "`{ canned_response }`", body: cannedAnswer },
        400: "Invalid JSON or a bad shortcut or text",
        409: "The shortcut is taken in the account",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const body = parse(createBody, readJsonObject(request));
      const created = await createCannedResponse(db, { accountId, userId: caller.userId, ...body });
      return reply.code(201).send({ canned_response: created });
    },
  );

  app.put<{ Params: { id: string } }>(
    "/api/canned-responses/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "Change a canned response's shortcut or text",
      params: idParams,
      body: updateBody,
      responses: {
        200: { description: "`{ canned_response }`", body: cannedAnswer },
        400: "Invalid JSON, no field to change, or a bad shortcut or text",
        404: "No such canned response in the caller's account",
        409: "The shortcut is taken in the account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const id = request.params.id;
      if (!(await findCannedResponse(db, accountId, id))) throw notFound();
      const patch = parse(updateBody, readJsonObject(request));
      if (patch.shortcut === undefined && patch.text === undefined) {
        throw new ApiError(400, "Nothing to change: send shortcut or text");
      }
      const updated = await updateCannedResponse(db, { accountId, id, patch, now: deps.now() });
      if (!updated) throw notFound();
      return { canned_response: updated };
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/canned-responses/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "Delete a canned response",
      params: idParams,
      responses: {
        200: { description: "`{ ok: true }`", body: okAnswer },
        404: "No such canned response in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!(await deleteCannedResponse(db, accountId, request.params.id))) throw notFound();
      return { ok: true };
    },
  );
}
