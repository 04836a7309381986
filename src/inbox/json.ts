import { automationAt, toAutomationJson } from "../bots/automation.js";
import { toContactJson } from "../contacts/json.js";
import type { contacts, conversations, messageReactions, messages } from "../db/schema/index.js";
import { windowExpiresAt } from "./window.js";

type MessageRow = typeof messages.$inferSelect;
type ContactRow = typeof contacts.$inferSelect;
type ConversationRow = typeof conversations.$inferSelect;
type ReactionRow = typeof messageReactions.$inferSelect;

export interface ReactionJson {
  actor_type: "agent" | "customer";
  actor_id: string;
  emoji: string;
}

export const toReactionJson = (r: ReactionRow): ReactionJson => ({
  actor_type: r.actorType,
  actor_id: r.actorId,
  emoji: r.emoji,
});

/**
 * A stored message as the API shows it. `reactions` is present when the caller
 * loaded them (the conversation's message list does; a conversation's last
 * message does not).
 */
export function toMessageJson(m: MessageRow, reactions?: ReactionJson[]) {
  return {
    id: m.id,
    conversation_id: m.conversationId,
    message_id: m.messageId,
    direction: m.direction,
    sender_type: m.senderType,
    sender_user_id: m.senderUserId,
    type: m.type,
    text: m.text,
    interactive: m.interactive,
    media: m.media,
    payload: m.payload,
    context_message_id: m.contextMessageId,
    status: m.status,
    error: m.error,
    upstream_timestamp: m.upstreamTimestamp,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    ...(reactions ? { reactions } : {}),
  };
}

export const toConversationJson = (
  c: ConversationRow,
  contact: ContactRow,
  last: MessageRow | null,
  now = new Date(),
) => ({
  id: c.id,
  status: c.status,
  assigned_to: c.assignedTo,
  // Why a flow handed the conversation to agents, when one did.
  handoff_note: c.handoffNote,
  // Whether flows may start here (a pause whose time ran out shows as active).
  automation: toAutomationJson(automationAt(c, now)),
  last_message_at: c.lastMessageAt,
  window_expires_at: windowExpiresAt(c),
  unread_count: c.unreadCount,
  created_at: c.createdAt,
  contact: toContactJson(contact),
  last_message: last ? toMessageJson(last) : null,
});
