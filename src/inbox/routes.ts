import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { notFound } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { findConversation, listConversations, listMessages } from "./conversations.js";
import { sendAgentText } from "./send.js";

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
      summary: "Send a text message to the conversation's contact",
      description:
        "The message is stored first; on upstream failure the answer is 502 and the message stays, with status `failed` and the upstream error.",
      params: idParams,
      body: sendBody,
      responses: {
        201: "`{ message }`, status `sent`",
        400: "Bad text, channel not configured, or the contact has no phone",
        404: "Not found",
        502: "The upstream platform refused or did not answer: `{ error, message }`",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { conversation, contact } = await conversationOf(accountId, request.params.id);
      const { text } = parse(sendBody, readJsonObject(request));
      const message = await sendAgentText(deps, {
        accountId,
        userId: caller.userId,
        conversationId: conversation.id,
        contactPhone: contact.phone,
        text,
      });
      return reply.code(201).send({ message });
    },
  );
}
