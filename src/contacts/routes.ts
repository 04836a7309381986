import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount, requireOwner } from "../auth/session.js";
import { okAnswer } from "../contracts/common.js";
import { attributeAnswer, attributesAnswer, contactAnswer, contactsPage } from "../contracts/contacts.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { pageQuery } from "../http/pagination.js";
import { parse } from "../http/validation.js";
import { getSettings } from "../settings/settings.js";
import {
  checkAttributes,
  createDefinition,
  definitionBody,
  definitionMap,
  deleteDefinition,
  listDefinitionsJson,
} from "./attributes.js";
import { createContact, getContact, listContacts, updateContact } from "./contacts.js";
import { eraseContact, mergeContacts } from "./erase.js";
import { registerContactExportRoute } from "./export.js";
import { attributes, filterQuery, tags } from "./fields.js";
import { registerContactImportRoutes } from "./import-routes.js";
import { normalisePhone } from "./phone.js";
import { isAttributeKey } from "./values.js";

const TAGS = ["contacts"];

const listQuery = pageQuery.extend(filterQuery.shape);
const idParams = z.object({ id: z.string().describe("Contact id (UUID)") });
const patchBody = z.object({
  name: storableString({ trim: true, min: 1, max: 200 }).nullable().optional(),
  tags: tags.optional(),
  attributes: attributes.optional(),
  opted_out: z.boolean({ error: "must be true or false" }).optional(),
  opt_in_source: storableString({ trim: true, min: 1, max: 100 }).nullable().optional(),
});
const optInSource = storableString({ trim: true, min: 1, max: 100 });
const createBody = z.object({
  phone: z.string({ error: "is required" }).max(40, "must be at most 40 characters").meta({
    pattern: "^[+0-9 ()./-]*$",
    description:
      "International (`+` and the country code), or national in the account's default_country; digits with spaces, `(`, `)`, `-`, `.`, `/`; stored as digits with the country code",
  }),
  name: storableString({ trim: true, min: 1, max: 200 }).nullable().optional(),
  tags: tags.optional(),
  attributes: attributes.optional(),
  opt_in_source: optInSource.nullable().optional(),
});
const mergeBody = z.object({ from_contact_id: z.uuid({ error: "must be a contact id (UUID)" }) });
const keyParams = z.object({ key: z.string().describe("Attribute key") });

export function registerContactRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.get(
    "/api/contacts",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's contacts, newest first",
      description:
        "`q` finds a substring of the name, phone or username (at least 3 characters; indexed), `tag` contacts with that tag, `opted_out=true|false` by consent, `attribute` (and `value`) by an attribute. Each contact carries its `conversation_id` (null when none). Pages with `limit` and `cursor` (`next_cursor`).",
      querystring: listQuery,
      responses: {
        200: { description: "`{ contacts, next_cursor }`", body: contactsPage },
        400: "Bad q, tag, limit or cursor",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      const query = parse(listQuery, request.query);
      const body = await listContacts(db, { accountId, ...query });
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/contacts/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "A contact, with its conversation id",
      params: idParams,
      responses: {
        200: { description: "`{ contact }`", body: contactAnswer },
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
      account: true,
      tags: TAGS,
      summary: "Change a contact's name, tags, attributes or opt-out",
      description:
        "Each supplied field replaces the stored one: `tags` (at most 50, each 1-50 characters, repeats dropped), `attributes` (a flat map of at most 50 values, keys of letters, digits, `_`, `.` or `-`; a key with a definition in /api/contact-attributes must have a value of its type, kept in canonical form), `opted_out` (sets or clears `opted_out_at`; clearing sets `opted_in_at`), `opt_in_source` (sets `opted_in_at`). An opted-out contact gets no message from agents (422 `opted_out`) and starts no flow.",
      params: idParams,
      body: patchBody,
      responses: {
        200: { description: "`{ contact }`", body: contactAnswer },
        400: "Invalid JSON, no field to change, or a bad field (named; an attribute of the wrong type names its key)",
        404: "No such contact in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!(await getContact(db, accountId, request.params.id))) throw notFound();
      const body = parse(patchBody, readJsonObject(request));
      if (Object.values(body).every((v) => v === undefined)) {
        throw new ApiError(400, "Nothing to change: send name, tags, attributes, opted_out or opt_in_source");
      }
      const patch = {
        ...body,
        attributes: body.attributes && checkAttributes(await definitionMap(db, accountId), body.attributes),
      };
      const contact = await updateContact(db, { accountId, id: request.params.id, patch, now: deps.now() });
      if (!contact) throw notFound();
      return { contact };
    },
  );

  app.post(
    "/api/contacts",
    docs({
      account: true,
      tags: TAGS,
      summary: "Add a contact",
      description:
        "`phone` is normalised to digits with the country code (libphonenumber); a national number is read in the account's `default_country` (GET /api/settings). `attributes` are checked against the attribute definitions. `opt_in_source` (how the customer consented: a form, a shop...) sets `opted_in_at`. The contact's WhatsApp id is its number until a send tells us Meta's.",
      body: createBody,
      responses: {
        201: { description: "`{ contact }`", body: contactAnswer },
        400: "Invalid JSON, a phone that is not a valid number, or a bad field (named)",
        409: "`{ error, contact_id }`: a contact has this number already",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      const body = parse(createBody, readJsonObject(request));
      const { defaultCountry } = await getSettings(db, accountId);
      const phone = normalisePhone(body.phone, defaultCountry);
      if (!phone) {
        throw new ApiError(
          400,
          defaultCountry
            ? "phone: not a valid phone number"
            : "phone: not a valid international phone number (start with + and the country code, or set default_country in /api/settings)",
        );
      }
      const checked = body.attributes && checkAttributes(await definitionMap(db, accountId), body.attributes);
      const contact = await createContact(db, {
        accountId,
        contact: { ...body, phone, attributes: checked },
        now: deps.now(),
      });
      return reply.code(201).send({ contact });
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/contacts/:id",
    docs({
      tags: TAGS,
      summary: "Erase a contact",
      description:
        "Erasure on the customer's request: the contact, its conversation, messages, reactions, flow runs and their events, and the account events that carried them, are deleted in one transaction; a background job then deletes its stored media files (local or S3). Owners only.",
      params: idParams,
      responses: {
        200: { description: "`{ ok: true }`", body: okAnswer },
        403: "Not an owner of the account",
        404: "No such contact in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      if (!isUuid(request.params.id)) throw notFound();
      if (!(await eraseContact(db, { accountId, contactId: request.params.id }))) throw notFound();
      return { ok: true };
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/contacts/:id/merge",
    docs({
      account: true,
      tags: TAGS,
      summary: "Merge another contact into this one",
      description:
        "Moves `from_contact_id`'s conversation (its messages join this contact's conversation), flow runs, tags and attributes into this contact and deletes the other. This contact's name, number and attributes win where both have one; an opt-out on either stands.",
      params: idParams,
      body: mergeBody,
      responses: {
        200: { description: "`{ contact }`: the merged contact", body: contactAnswer },
        400: "Invalid JSON, a bad from_contact_id, or the contact itself",
        404: "Either contact is not in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!isUuid(request.params.id)) throw notFound();
      const body = parse(mergeBody, readJsonObject(request));
      if (body.from_contact_id === request.params.id) {
        throw new ApiError(400, "from_contact_id: a contact cannot be merged into itself");
      }
      const merged = await mergeContacts(db, {
        accountId,
        intoId: request.params.id,
        fromId: body.from_contact_id,
        now: deps.now(),
      });
      if (!merged) throw notFound();
      return { contact: await getContact(db, accountId, request.params.id) };
    },
  );

  app.get(
    "/api/contact-attributes",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's contact attribute definitions",
      responses: {
        200: {
          description: "`{ attributes: [{ key, label, type, options, created_at }] }`",
          body: attributesAnswer,
        },
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return { attributes: await listDefinitionsJson(db, accountId) };
    },
  );

  app.post(
    "/api/contact-attributes",
    docs({
      tags: TAGS,
      summary: "Define a typed contact attribute",
      description:
        "`type`: text, number, date (YYYY-MM-DD), boolean or list (`options` required: the allowed values). Every contact write (PATCH, POST, import) is checked against the definitions; a key without a definition takes any text. Existing values are not rechecked.",
      body: definitionBody,
      responses: {
        201: { description: "`{ attribute }`", body: attributeAnswer },
        400: "Invalid JSON or a bad field (named)",
        403: "Not an owner of the account",
        409: "The key is defined already",
      },
    }),
    async (request, reply) => {
      const accountId = requireOwner(await sessions.require(request));
      const body = parse(definitionBody, readJsonObject(request));
      return reply.code(201).send({ attribute: await createDefinition(db, accountId, body) });
    },
  );

  app.delete<{ Params: { key: string } }>(
    "/api/contact-attributes/:key",
    docs({
      tags: TAGS,
      summary: "Remove a contact attribute definition",
      description: "Contacts keep their values of the key, as free text.",
      params: keyParams,
      responses: {
        200: { description: "`{ ok: true }`", body: okAnswer },
        403: "Not an owner of the account",
        404: "No such attribute definition",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      // A key no definition can have (a bad character, too long) names none.
      const { key } = request.params;
      if (!isAttributeKey(key) || !(await deleteDefinition(db, accountId, key))) throw notFound();
      return { ok: true };
    },
  );

  registerContactImportRoutes(app, deps);
  registerContactExportRoute(app, deps);
}
