import { and, desc, eq, isNotNull, sql } from "drizzle-orm";
import { conversations, messages } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { channelFor } from "../messaging/channel.js";
import { GraphApiError } from "../upstream/graph.js";

/**
 * Marks a conversation read: Meta is told the latest customer message was
 * read (the customer sees blue ticks) when something is unread, then the
 * unread count drops by what was seen. Messages that arrive meanwhile stay
 * unread. An upstream failure changes nothing (502).
 */
export async function markConversationRead(
  deps: Pick<AppDeps, "db" | "cipher" | "graph">,
  input: { accountId: string; conversationId: string; unreadCount: number },
) {
  if (input.unreadCount <= 0) return;
  const [latest] = await deps.db
    .select({ messageId: messages.messageId })
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, input.conversationId),
        eq(messages.direction, "inbound"),
        isNotNull(messages.messageId),
      ),
    )
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(1);
  if (latest?.messageId) {
    const channel = await channelFor(deps, input.accountId);
    try {
      await deps.graph.markRead(channel.token, channel.phoneNumberId, latest.messageId);
    } catch (error) {
      if (error instanceof GraphApiError) throw new ApiError(502, error.message);
      throw error;
    }
  }
  await deps.db
    .update(conversations)
    .set({ unreadCount: sql`greatest(${conversations.unreadCount} - ${input.unreadCount}, 0)` })
    .where(eq(conversations.id, input.conversationId));
}
