import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { createApiKey, deleteApiKey, listApiKeys } from "./api-keys.js";
import { requireOwner } from "./session.js";

const createBody = z.object({
  name: storableString({ trim: true, min: 1, max: 100 }),
  expires_in_days: z
    .int("expires_in_days must be a whole number of days")
    .min(1)
    .max(3650)
    .nullish()
    .describe("Omit (or null) for a key that never expires"),
});
const idParams = z.object({ id: z.uuid() });

const apiKeyJson = z.object({
  id: z.uuid(),
  name: z.string(),
  prefix: z.string().describe("The key's first characters, to recognise it"),
  created_at: z.iso.datetime(),
  expires_at: z.iso.datetime().nullable(),
  last_used_at: z.iso.datetime().nullable().describe("Updated at most once a minute"),
});

const ownerOnly = "The caller is a member (or an API key), or has no account";

export function registerApiKeyRoutes(app: FastifyInstance, deps: Pick<AppDeps, "db" | "sessions" | "now">) {
  const { db, sessions } = deps;

  app.post(
    "/api/api-keys",
    docs({
      tags: ["api keys"],
      summary: "Create an API key (owner only)",
      description:
        "The key is answered this once and stored hashed. Send it as `X-API-Key: <key>` or `Authorization: Bearer <key>`; it acts for the account with member rights.",
      body: createBody,
      responses: {
        201: {
          description: "Created",
          body: z.object({ api_key: apiKeyJson, key: z.string().describe("Shown once") }),
        },
        400: "Invalid JSON, name missing or too long, or a bad expires_in_days",
        403: ownerOnly,
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      const body = parse(createBody, readJsonObject(request));
      const created = await createApiKey(db, {
        accountId,
        createdBy: caller.userId,
        name: body.name,
        expiresInDays: body.expires_in_days ?? null,
        now: deps.now(),
      });
      return reply.code(201).send({ api_key: created.apiKey, key: created.key });
    },
  );

  app.get(
    "/api/api-keys",
    docs({
      tags: ["api keys"],
      summary: "The account's API keys, newest first (owner only; never the keys themselves)",
      responses: {
        200: { description: "Keys", body: z.object({ api_keys: z.array(apiKeyJson) }) },
        403: ownerOnly,
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      return { api_keys: await listApiKeys(db, accountId) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/api-keys/:id",
    docs({
      tags: ["api keys"],
      summary: "Revoke an API key (owner only): it stops working at once on every instance",
      params: idParams,
      responses: {
        200: { description: "Revoked", body: z.object({ ok: z.literal(true) }) },
        403: ownerOnly,
        404: "No such key in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const { id } = request.params;
      if (!isUuid(id) || !(await deleteApiKey(db, { accountId, id }))) throw notFound("API key not found");
      return { ok: true };
    },
  );
}
