import { and, eq } from "drizzle-orm";
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { successAnswer } from "../contracts/common.js";
import { contacts, conversations, messageReactions, messages, messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { tryParseJson } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { docs } from "../http/openapi.js";
import { createRateLimiter } from "../http/rate-limit.js";
import { GraphApiError, toUpstreamPhone } from "../upstream/graph.js";
import { isSingleEmoji } from "./emoji.js";

const FAILED = "Failed to react to message";

const reactionBody = z.object({
  message_id: z.string().uuid().describe("Internal message id (not the upstream wamid)"),
  emoji: z.string().describe('One emoji, or "" to remove your reaction'),
});

export interface ReactionInput {
  messageId: string;
  /** One emoji, or "" to remove the caller's reaction. */
  emoji: string;
}

/**
 * POST /api/messaging/react, the spec's twelve steps in order. The rate limit
 * (step 2) counts every authenticated call, before the account check and
 * before the body is parsed.
 */
export function registerReactionRoutes(app: FastifyInstance, deps: AppDeps) {
  const limiter = createRateLimiter(app, deps, deps.config.reactRateLimit);

  app.post(
    "/api/messaging/react",
    docs({
      tags: ["reactions"],
      summary: "React to a stored message with an emoji, or remove the caller's reaction",
      description:
        "Sends the reaction upstream, then mirrors it as the caller's agent reaction (one per user and message; " +
        'a new emoji replaces the previous one, "" removes it). Rate-limited per user (REACT_RATE_LIMIT).',
      body: reactionBody,
      responses: {
        200: { description: "`{ success: true }`", body: successAnswer },
        400: "message_id missing, emoji not one emoji, message not sent upstream, contact without phone, or channel not configured",
        403: "Profile not linked to an account",
        404: "`Message not found` or `Conversation not found` in the caller's account",
        429: "`{ error, retry_after_seconds }` with Retry-After, RateLimit-Policy and RateLimit headers",
        500: "Unexpected error, or the reaction was sent upstream but the local write failed",
        502: "The upstream platform failed; nothing was written locally",
      },
    }),
    async (request, reply) => {
      try {
        const caller = await deps.sessions.require(request);
        await limiter.consume(`react:${caller.userId}`, reply);
        const accountId = requireAccount(caller);
        const input = readReactionInput(request);
        await reactToMessage(deps, { ...input, accountId, userId: caller.userId });
        return { success: true };
      } catch (error) {
        throw toReactionError(error, request.log);
      }
    },
  );
}

/** Step 4. A body that is not JSON at all is an unexpected error (step 12), not a 400. */
export function readReactionInput(request: FastifyRequest): ReactionInput {
  const parsed = tryParseJson(request);
  if (!parsed.ok) throw new ApiError(500, FAILED);
  const body =
    parsed.value !== null && typeof parsed.value === "object" && !Array.isArray(parsed.value)
      ? (parsed.value as Record<string, unknown>)
      : {};
  const { message_id: messageId, emoji } = body;
  if (typeof messageId !== "string" || messageId === "") {
    throw new ApiError(400, "message_id is required");
  }
  if (typeof emoji !== "string") {
    throw new ApiError(400, 'emoji must be a string: one emoji, or "" to remove your reaction');
  }
  if (emoji !== "" && !isSingleEmoji(emoji)) {
    throw new ApiError(400, 'emoji must be exactly one emoji, or "" to remove your reaction');
  }
  return { messageId, emoji };
}

/** Steps 5 to 11: look the message up in the caller's account, send upstream, mirror locally. */
export async function reactToMessage(
  deps: Pick<AppDeps, "db" | "cipher" | "sends" | "now">,
  input: ReactionInput & { accountId: string; userId: string },
): Promise<void> {
  const { db, cipher, sends } = deps;
  const { accountId, userId, emoji } = input;

  // One round trip for every lookup; the checks below keep the spec's order.
  const [target] = isUuid(input.messageId)
    ? await db
        .select({
          id: messages.id,
          upstreamId: messages.messageId,
          conversationId: messages.conversationId,
          conversationInAccount: conversations.id,
          phone: contacts.phone,
          phoneNumberId: messagingConfigs.phoneNumberId,
          accessToken: messagingConfigs.accessToken,
          messagesPerSecond: messagingConfigs.messagesPerSecond,
        })
        .from(messages)
        .leftJoin(
          conversations,
          and(eq(conversations.id, messages.conversationId), eq(conversations.accountId, accountId)),
        )
        .leftJoin(contacts, and(eq(contacts.id, conversations.contactId), eq(contacts.accountId, accountId)))
        .leftJoin(messagingConfigs, eq(messagingConfigs.accountId, accountId))
        .where(and(eq(messages.id, input.messageId), eq(messages.accountId, accountId)))
    : [];

  if (!target) throw notFound("Message not found");
  if (!target.upstreamId) {
    throw new ApiError(400, "This message was never sent to WhatsApp, so it cannot be reacted to");
  }
  if (!target.conversationInAccount) throw notFound("Conversation not found");
  const to = toUpstreamPhone(target.phone);
  if (!to) throw new ApiError(400, "The contact has no phone number");
  if (!target.phoneNumberId || !target.accessToken) {
    throw new ApiError(400, "The messaging channel is not configured for this account");
  }

  const accessToken = cipher.decrypt(target.accessToken);
  // Through the number's send pipeline: paced at its messages_per_second, ahead of campaign sends.
  const sent = await sends.send({
    messageId: null,
    phoneNumberId: target.phoneNumberId,
    token: accessToken,
    to,
    message: { type: "reaction", reaction: { message_id: target.upstreamId, emoji } },
    limit: target.messagesPerSecond ?? 80,
    priority: "customer",
  });
  if (sent.kind === "released") throw new ApiError(503, "The service is shutting down: try again");
  if (sent.kind === "error") {
    const { error } = sent;
    if (error instanceof GraphApiError) {
      throw withCause(new ApiError(502, `WhatsApp did not accept the reaction: ${error.message}`), error);
    }
    throw error;
  }

  const actor = and(
    eq(messageReactions.messageId, target.id),
    eq(messageReactions.actorType, "agent"),
    eq(messageReactions.actorId, userId),
  );
  try {
    if (emoji === "") {
      await db.delete(messageReactions).where(actor);
    } else {
      const now = deps.now();
      await db
        .insert(messageReactions)
        .values({
          accountId,
          messageId: target.id,
          conversationId: target.conversationId,
          actorType: "agent",
          actorId: userId,
          emoji,
          createdAt: now,
          updatedAt: now,
        })
        .onConflictDoUpdate({
          target: [messageReactions.messageId, messageReactions.actorType, messageReactions.actorId],
          set: { emoji, updatedAt: now },
        });
    }
  } catch (error) {
    throw withCause(
      new ApiError(500, "The reaction was sent to WhatsApp but saving it locally failed"),
      error,
    );
  }
}

function withCause(error: ApiError, cause: unknown): ApiError {
  error.cause = cause;
  return error;
}

/** Step 12: any error that is not one of the answers above becomes the spec's 500. */
function toReactionError(error: unknown, log: FastifyBaseLogger): ApiError {
  if (error instanceof ApiError) {
    if (error.status >= 500 && error.cause) log.error({ err: error.cause }, error.message);
    return error;
  }
  log.error({ err: error }, "reaction failed");
  return new ApiError(500, FAILED);
}
