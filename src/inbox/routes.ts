import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { autoAssign } from "../bots/assign.js";
import { optedOutError } from "../contacts/contacts.js";
import { tag } from "../contacts/fields.js";
import { searchQuery } from "../contacts/search.js";
import { phoneRule } from "../contracts/common.js";
import {
  conversationAnswer,
  conversationCounts,
  conversationsPage,
  messageAnswer,
  messagesPage,
  startedAnswer,
} from "../contracts/inbox.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { pageQuery } from "../http/pagination.js";
import { parse } from "../http/validation.js";
import { templateRequestSchema } from "../templates/request.js";
import { prepareTemplateSend } from "../templates/service.js";
import {
  countConversations,
  findConversation,
  getConversationJson,
  listConversations,
  listMessages,
  updateConversation,
} from "./conversations.js";
import { MAX_TEXT_LENGTH } from "./limits.js";
import { addNote } from "./notes.js";
import { markConversationRead } from "./read.js";
import { sendAgentText } from "./send.js";
import { conversationJson, startConversation } from "./start.js";
import { requireOpenWindow } from "./window.js";

const STATUSES = ["open", "pending", "closed"] as const;
const status = z.enum(STATUSES, { error: `must be one of ${STATUSES.join(", ")}` });

const listQuery = pageQuery.extend({
  status: status.optional(),
  assigned_to: z
    .string({ error: "must be given once" })
    .refine((v) => v === "me" || v === "none" || isUuid(v), "must be me, none or a user id")
    .optional()
    .describe("`me`, `none` (unassigned) or a user id"),
  tag: tag.optional().describe("A tag of the conversation's contact"),
  q: searchQuery.describe(
    "Substring of the contact's name or phone, or of any message's text (at least 3 characters; indexed)",
  ),
});
const messagesQuery = pageQuery.extend({
  order: z
    .enum(["oldest", "newest"], { error: "must be oldest or newest" })
    .optional()
    .describe("`newest`: pages from the latest message back"),
});
const idParams = z.object({ id: z.string() });
const text = storableString({ trim: true, min: 1, max: MAX_TEXT_LENGTH });
const sendBody = z.object({ text });
const noteBody = z.object({ text });
const patchBody = z.object({
  status: status.optional(),
  assigned_to: z
    .string({ error: "must be a user id or null" })
    .refine(isUuid, "must be a user id or null")
    .nullable()
    .optional(),
  automation: z
    .discriminatedUnion(
      "state",
      [
        z
          .object({
            state: z.literal("paused"),
            minutes: z
              .number({ error: "must be a whole number of minutes" })
              .int("must be a whole number of minutes")
              .min(1, "must be at least 1")
              .max(43_200, "must be at most 43200 (30 days)")
              .optional(),
          })
          .strict(),
        z.object({ state: z.literal("active") }).strict(),
      ],
      { error: 'must be { state: "paused", minutes? } or { state: "active" }' },
    )
    .optional()
    .describe("Pause the conversation's flows (for `minutes`, or until resumed) or resume them"),
});
const templateSendBody = z.object({ template: templateRequestSchema });
const startBody = z.object({
  phone: z
    .string({ error: "phone must be a string" })
    .trim()
    .min(1, "phone is required")
    .max(40)
    .meta(phoneRule),
  name: z.string().trim().min(1).max(200).optional(),
  template: templateRequestSchema,
});

const TAGS = ["inbox"];

export function registerInboxRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  const conversationOf = async (accountId: string, id: string) => {
    const found = await findConversation(db, accountId, id);
    if (!found) throw notFound();
    return found;
  };

  app.get(
    "/api/conversations",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's conversations, most recent activity first",
      description:
        "Each with its contact and last message. Filters: `status`, `assigned_to` (`me`, `none` or a user id), `tag` (a contact tag), `q` (contact name or phone, or message text). Pages with `limit` and `cursor` (`next_cursor`).",
      querystring: listQuery,
      responses: {
        200: { description: "`{ conversations, next_cursor }`", body: conversationsPage },
        400: "Bad filter, limit or cursor",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { assigned_to, ...query } = parse(listQuery, request.query);
      const assignedTo =
        assigned_to === undefined
          ? undefined
          : assigned_to === "me"
            ? caller.userId
            : assigned_to === "none"
              ? null
              : assigned_to;
      const body = await listConversations(db, { accountId, ...query, assignedTo });
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );

  app.get(
    "/api/conversations/counts",
    docs({
      account: true,
      tags: TAGS,
      summary:
        "How many conversations are open, pending and closed, and how many open ones are yours, nobody's or unread",
      description:
        "`mine`, `unassigned` and `unread` (with customer messages not yet read) count conversations that are not closed.",
      responses: {
        200: {
          description: "`{ open, pending, closed, mine, unassigned, unread }`",
          body: conversationCounts,
        },
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      return countConversations(db, { accountId, userId: caller.userId });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/conversations/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "One conversation, with its contact and last message",
      description: "The same shape as an item of the list: what a thread header shows.",
      params: idParams,
      responses: {
        200: { description: "`{ conversation }`", body: conversationAnswer },
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const conversation = await getConversationJson(db, accountId, request.params.id);
      if (!conversation) throw notFound();
      return { conversation };
    },
  );

  app.patch<{ Params: { id: string } }>(
    "/api/conversations/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "Set a conversation's status, assignee or automation",
      description:
        '`assigned_to` must be a member of the account; null unassigns. Assigning a person pauses the conversation\'s automation until it is unassigned or closed; closing re-arms it. `automation: { state: "paused", minutes? }` pauses it (for the minutes, or until resumed), `{ state: "active" }` resumes it. While paused no flow starts: messages go to the inbox.',
      params: idParams,
      body: patchBody,
      responses: {
        200: { description: "`{ conversation }`", body: conversationAnswer },
        400: "Invalid JSON, no field to change, a bad status or automation, or an assignee who is not a member",
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const { conversation } = await conversationOf(accountId, request.params.id);
      const patch = parse(patchBody, readJsonObject(request));
      if (patch.status === undefined && patch.assigned_to === undefined && patch.automation === undefined) {
        throw new ApiError(400, "Nothing to change: send status, assigned_to or automation");
      }
      const updated = await updateConversation(db, {
        accountId,
        id: conversation.id,
        patch,
        now: deps.now(),
      });
      if (!updated) throw notFound();
      // A member may have dropped under the auto-assignment cap: the oldest waiting conversation is theirs.
      if (patch.status === "closed" || patch.assigned_to !== undefined) {
        await autoAssign(db, {
          accountId,
          now: deps.now(),
          ...(patch.assigned_to === null && { except: conversation.id }),
        });
      }
      return { conversation: updated };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/conversations/:id/messages",
    docs({
      account: true,
      tags: TAGS,
      summary: "A conversation's messages and notes, oldest first, each with its reactions",
      description:
        "`order=newest` pages from the latest message back (the console's thread): the first page is the latest `limit` messages, `next_cursor` leads to the ones before them; each page is oldest first either way.",
      params: idParams,
      querystring: messagesQuery,
      responses: {
        200: { description: "`{ messages, next_cursor }`", body: messagesPage },
        400: "Bad limit or cursor",
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const { conversation } = await conversationOf(accountId, request.params.id);
      const page = parse(messagesQuery, request.query);
      return listMessages(db, { conversationId: conversation.id, ...page });
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/conversations/:id/messages",
    docs({
      account: true,
      tags: TAGS,
      summary: "Send a text or a template to the conversation's contact",
      description:
        "`{ text }` sends a free-form message: only within 24 hours of the customer's last message (`window_expires_at`), else 422 `code: window_closed` and nothing is sent. `{ template: { name, language, components? } }` sends a synced, approved template whose parameters match its `{{n}}` placeholders; it may go out at any time. The message is stored first; on upstream failure the answer is 502 and the message stays, with status `failed` and the upstream error.",
      params: idParams,
      body: z.union([sendBody, templateSendBody]),
      responses: {
        201: { description: "`{ message }`, status `sent`", body: messageAnswer },
        400: "Bad text or template (unknown, not approved, wrong parameters), channel not configured, or the contact has no phone",
        404: "Not found",
        422: '`{ error, code: "opted_out" }`: the contact has opted out; `{ error, code: "window_closed" }`: a free-form message outside the 24-hour window',
        502: "The upstream platform refused or did not answer: `{ error, message }`",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { conversation, contact } = await conversationOf(accountId, request.params.id);
      const body = readJsonObject(request);
      if (contact.optedOut) throw optedOutError();
      const target = {
        accountId,
        userId: caller.userId,
        conversationId: conversation.id,
        // No phone: the customer's BSUID (Meta withholds their number).
        contactPhone: contact.phone ?? contact.bsuid,
      };
      if (body.template !== undefined) {
        if (body.text !== undefined) throw new ApiError(400, "Send either text or template, not both");
        const { template } = parse(templateSendBody, body);
        const prepared = await prepareTemplateSend(db, accountId, template);
        const message = await sendAgentText(deps, { ...target, ...prepared });
        return reply.code(201).send({ message });
      }
      const { text } = parse(sendBody, body);
      requireOpenWindow(conversation, deps.now());
      const message = await sendAgentText(deps, { ...target, text });
      return reply.code(201).send({ message });
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/conversations/:id/notes",
    docs({
      account: true,
      tags: TAGS,
      summary: "Leave an internal note in the conversation (never sent to the contact)",
      description:
        "The note is a message of type `note`, direction `internal`, status `stored`, listed in the thread with the others.",
      params: idParams,
      body: noteBody,
      responses: {
        201: { description: "`{ message }`", body: messageAnswer },
        400: "Invalid JSON or a bad text",
        404: "Not found",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { conversation } = await conversationOf(accountId, request.params.id);
      const { text } = parse(noteBody, readJsonObject(request));
      const message = await addNote(deps, {
        accountId,
        userId: caller.userId,
        conversationId: conversation.id,
        text,
      });
      return reply.code(201).send({ message });
    },
  );

  app.post(
    "/api/conversations",
    docs({
      tags: TAGS,
      summary: "Start a conversation with a phone number by sending it a template",
      description:
        "Finds or creates the contact (by the phone's digits) and its conversation, then sends the template. Only templates can start a conversation: WhatsApp refuses free-form messages to customers who have not written in the last 24 hours.",
      body: startBody,
      responses: {
        201: { description: "`{ conversation, message }`", body: startedAnswer },
        400: "Bad phone, `text` given, bad template (unknown, not approved, wrong parameters), or channel not configured",
        502: "The upstream platform refused or did not answer: `{ error, message }`",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const body = readJsonObject(request);
      if (body.text !== undefined) {
        throw new ApiError(400, "Only a template can start a conversation: send { phone, template }");
      }
      const input = parse(startBody, body);
      const started = await startConversation(deps, { accountId, userId: caller.userId, ...input });
      return reply.code(201).send(started);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/conversations/:id/read",
    docs({
      tags: TAGS,
      summary: "Mark the conversation read",
      description:
        "When customer messages are unread, tells WhatsApp the latest one was read (the customer sees blue ticks), then sets `unread_count` to 0.",
      params: idParams,
      responses: {
        200: { description: "`{ conversation }`", body: conversationAnswer },
        400: "Channel not configured",
        404: "Not found",
        502: "The upstream platform refused or did not answer; nothing changed",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const { conversation } = await conversationOf(accountId, request.params.id);
      await markConversationRead(deps, {
        accountId,
        conversationId: conversation.id,
        unreadCount: conversation.unreadCount,
      });
      return { conversation: await conversationJson(db, conversation.id) };
    },
  );
}
