import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { pageQuery } from "../http/pagination.js";
import { parse } from "../http/validation.js";
import { searchQuery } from "../inbox/search.js";
import { getContact, listContacts, updateContact } from "./contacts.js";
import { attributes, tag, tags } from "./fields.js";

const TAGS = ["contacts"];

const listQuery = pageQuery.extend({ q: searchQuery, tag: tag.optional() });
const idParams = z.object({ id: z.string().describe("Contact id (UUID)") });
const patchBody = z.object({
  name: storableString({ trim: true, min: 1, max: 200 }).nullable().optional(),
  tags: tags.optional(),
  attributes: attributes.optional(),
  opted_out: z.boolean({ error: "must be true or false" }).optional(),
});

export function registerContactRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.get(
    "/api/contacts",
    docs({
      tags: TAGS,
      summary: "The account's contacts, newest first",
      description:
        "`q` finds a substring of the name or phone (at least 3 characters; indexed), `tag` contacts with that tag. Each contact carries its `conversation_id` (null when none). Pages with `limit` and `cursor` (`next_cursor`).",
      querystring: listQuery,
      responses: {
        200: "`{ contacts, next_cursor }`",
        400: "Bad q, tag, limit or cursor",
        401: "Not signed in",
        403: "The caller's profile has no account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const query = parse(listQuery, request.query);
      return listContacts(db, { accountId, ...query });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/contacts/:id",
    docs({
      tags: TAGS,
      summary: "A contact, with its conversation id",
      params: idParams,
      responses: {
        200: "`{ contact }`",
        401: "Not signed in",
        403: "The caller's profile has no account",
        404: "No such contact in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const contact = await getContact(db, accountId, request.params.id);
      if (!contact) throw notFound();
      return { contact };
    },
  );

  app.patch<{ Params: { id: string } }>(
    "/api/contacts/:id",
    docs({
      tags: TAGS,
      summary: "Change a contact's name, tags, attributes or opt-out",
      description:
        "Each supplied field replaces the stored one: `tags` (at most 50, each 1-50 characters, repeats dropped), `attributes` (a flat map of at most 50 string values, keys of letters, digits, `_`, `.` or `-`). An opted-out contact gets no message from agents (422 `opted_out`) and starts no flow.",
      params: idParams,
      body: patchBody,
      responses: {
        200: "`{ contact }`",
        400: "Invalid JSON, no field to change, or a bad field (named)",
        401: "Not signed in",
        403: "The caller's profile has no account",
        404: "No such contact in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!(await getContact(db, accountId, request.params.id))) throw notFound();
      const patch = parse(patchBody, readJsonObject(request));
      if (Object.values(patch).every((v) => v === undefined)) {
        throw new ApiError(400, "Nothing to change: send name, tags, attributes or opted_out");
      }
      const contact = await updateContact(db, { accountId, id: request.params.id, patch, now: deps.now() });
      if (!contact) throw notFound();
      return { contact };
    },
  );
}
