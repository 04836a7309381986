import { z } from "zod";
import { jsonObject, nextCursor, timestamp } from "./common.js";

export const Reaction = z
  .object({ actor_type: z.enum(["agent", "customer"]), actor_id: z.string(), emoji: z.string() })
  .meta({ id: "Reaction" });

/** A media message's file: Meta's announcement, then our copy (`url`) once stored. */
export const MessageMedia = z
  .looseObject({
    id: z.string().optional().describe("WhatsApp's media id"),
    mime_type: z.string().optional(),
    sha256: z.string().optional(),
    caption: z.string().optional(),
    filename: z.string().optional(),
    size: z.number().int().optional().describe("Bytes, once stored"),
    status: z.enum(["pending", "stored", "failed"]).optional(),
    url: z.string().optional().describe("Where to download our copy, once stored"),
    error: z.string().optional().describe("Why the download failed"),
  })
  .meta({ id: "MessageMedia" });

/** The customer's tap on a reply button or list row. */
export const MessageInteractive = z
  .looseObject({
    type: z.string().optional().describe("button_reply, list_reply or button (a template's quick reply)"),
    id: z.string().optional(),
    title: z.string().optional(),
    description: z.string().optional(),
  })
  .meta({ id: "MessageInteractive" });

export const Message = z
  .object({
    id: z.uuid(),
    conversation_id: z.uuid(),
    message_id: z.string().nullable().describe("WhatsApp's message id (wamid), once sent or received"),
    direction: z.enum(["inbound", "outbound", "internal"]),
    sender_type: z.enum(["customer", "agent", "bot"]),
    sender_user_id: z.string().nullable(),
    type: z.string().describe("text, image, video, audio, document, interactive, template, note, ..."),
    text: z.string().nullable(),
    interactive: MessageInteractive.nullable(),
    media: MessageMedia.nullable(),
    payload: jsonObject.nullable(),
    context_message_id: z.string().nullable(),
    status: z.enum(["received", "pending", "sent", "delivered", "read", "failed", "stored"]),
    error: jsonObject.nullable(),
    upstream_timestamp: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    reactions: z.array(Reaction).optional().describe("Present in a conversation's message list"),
  })
  .meta({ id: "Message" });

export const Contact = z
  .object({
    id: z.uuid(),
    wa_id: z.string().nullable(),
    name: z.string().nullable(),
    phone: z.string().nullable(),
    tags: z.array(z.string()),
    attributes: z.record(z.string(), z.string()),
    opted_out: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Contact" });

export const Automation = z
  .object({
    state: z.enum(["active", "paused"]),
    until: timestamp.nullable(),
    reason: z.enum(["agent_reply", "assigned", "agent_started", "manual"]).nullable(),
  })
  .meta({ id: "Automation" });

export const Conversation = z
  .object({
    id: z.uuid(),
    status: z.enum(["open", "pending", "closed"]),
    assigned_to: z.string().nullable(),
    handoff_note: z.string().nullable().describe("Why a flow handed the conversation to agents"),
    automation: Automation,
    last_message_at: timestamp.nullable(),
    window_expires_at: timestamp.nullable(),
    unread_count: z.number().int(),
    created_at: timestamp,
    contact: Contact,
    last_message: Message.nullable(),
  })
  .meta({ id: "Conversation" });

export const conversationAnswer = z.object({ conversation: Conversation });
export const conversationsPage = z.object({ conversations: z.array(Conversation), next_cursor: nextCursor });
export const messageAnswer = z.object({ message: Message });
export const messagesPage = z.object({ messages: z.array(Message), next_cursor: nextCursor });
export const startedAnswer = z.object({ conversation: Conversation, message: Message });
export const conversationCounts = z.object({
  open: z.number().int(),
  pending: z.number().int(),
  closed: z.number().int(),
  mine: z.number().int(),
  unassigned: z.number().int(),
  unread: z.number().int(),
});
