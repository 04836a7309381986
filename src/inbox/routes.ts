import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { templateRequestSchema } from "../templates/request.js";
import { prepareTemplateSend } from "../templates/service.js";
import { findConversation, listConversations, listMessages } from "./conversations.js";
import { markConversationRead } from "./read.js";
import { sendAgentText } from "./send.js";
import { conversationJson, startConversation } from "./start.js";
import { requireOpenWindow } from "./window.js";

export const MAX_TEXT_LENGTH = 4096;

const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().min(1).optional(),
});
const idParams = z.object({ id: z.string() });
const sendBody = z.object({
  text: z
    .string({ error: "text must be a string" })
    .trim()
    .min(1, "text is required")
    .max(MAX_TEXT_LENGTH, `text must be at most ${MAX_TEXT_LENGTH} characters`),
});
const templateSendBody = z.object({ template: templateRequestSchema });
const startBody = z.object({
  phone: z.string({ error: "phone must be a string" }).trim().min(1, "phone is required").max(40),
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
      tags: TAGS,
      summary: "The account's conversations, most recent activity first",
      description: "Each with its contact and last message. Pages with `limit` and `cursor` (`next_cursor`).",
      querystring: pageQuery,
      responses: { 200: "`{ conversations, next_cursor }`", 400: "Bad limit or cursor" },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const page = parse(pageQuery, request.query);
      return listConversations(db, { accountId, ...page });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/conversations/:id/messages",
    docs({
      tags: TAGS,
      summary: "A conversation's messages, oldest first, each with its reactions",
      params: idParams,
      querystring: pageQuery,
      responses: { 200: "`{ messages, next_cursor }`", 400: "Bad limit or cursor", 404: "Not found" },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const { conversation } = await conversationOf(accountId, request.params.id);
      const page = parse(pageQuery, request.query);
      return listMessages(db, { conversationId: conversation.id, ...page });
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/conversations/:id/messages",
    docs({
      tags: TAGS,
      summary: "Send a text or a template to the conversation's contact",
      description:
        "`{ text }` sends a free-form message: only within 24 hours of the customer's last message (`window_expires_at`), else 422 `code: window_closed` and nothing is sent. `{ template: { name, language, components? } }` sends a synced, approved template whose parameters match its `{{n}}` placeholders; it may go out at any time. The message is stored first; on upstream failure the answer is 502 and the message stays, with status `failed` and the upstream error.",
      params: idParams,
      body: z.union([sendBody, templateSendBody]),
      responses: {
        201: "`{ message }`, status `sent`",
        400: "Bad text or template (unknown, not approved, wrong parameters), channel not configured, or the contact has no phone",
        404: "Not found",
        422: '`{ error, code: "window_closed" }`: a free-form message outside the 24-hour window',
        502: "The upstream platform refused or did not answer: `{ error, message }`",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { conversation, contact } = await conversationOf(accountId, request.params.id);
      const body = readJsonObject(request);
      const target = {
        accountId,
        userId: caller.userId,
        conversationId: conversation.id,
        contactPhone: contact.phone,
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

  app.post(
    "/api/conversations",
    docs({
      tags: TAGS,
      summary: "Start a conversation with a phone number by sending it a template",
      description:
        "Finds or creates the contact (by the phone's digits) and its conversation, then sends the template. Only templates can start a conversation: WhatsApp refuses free-form messages to customers who have not written in the last 24 hours.",
      body: startBody,
      responses: {
        201: "`{ conversation, message }`",
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
        200: "`{ conversation }`",
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
