import { index, jsonb, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

export const contacts = pgTable(
  "contacts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    waId: text("wa_id").notNull(),
    name: text("name"),
    // Digits only; null when the contact has no usable number.
    phone: text("phone"),
    tags: text("tags").array().notNull().default([]),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("contacts_account_wa_id_uq").on(t.accountId, t.waId)],
);

export const conversations = pgTable(
  "conversations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    contactId: uuid("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    status: text("status", { enum: ["open", "pending", "closed"] })
      .notNull()
      .default("open"),
    assignedTo: uuid("assigned_to").references(() => users.id, { onDelete: "set null" }),
    handoffNote: text("handoff_note"),
    lastMessageAt: timestamptz("last_message_at").notNull().defaultNow(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    // One conversation per contact: the thread with that customer.
    uniqueIndex("conversations_contact_uq").on(t.contactId),
    index("conversations_account_activity_idx").on(
      t.accountId,
      t.lastMessageAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

export type MessageStatus = "received" | "pending" | "sent" | "delivered" | "read" | "failed";

export const messages = pgTable(
  "messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    conversationId: uuid("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    // Upstream (wamid) id; null until the message has been accepted upstream.
    messageId: text("message_id"),
    direction: text("direction", { enum: ["inbound", "outbound"] }).notNull(),
    senderType: text("sender_type", { enum: ["customer", "agent", "bot"] }).notNull(),
    senderUserId: uuid("sender_user_id").references(() => users.id, { onDelete: "set null" }),
    type: text("type").notNull(),
    text: text("text"),
    // Button / list reply: { type, id, title, description? }.
    interactive: jsonb("interactive").$type<Record<string, unknown>>(),
    // Media metadata: { id, mime_type, sha256, caption, filename, url }.
    media: jsonb("media").$type<Record<string, unknown>>(),
    // For unsupported or outbound structured messages, the payload as sent or received.
    payload: jsonb("payload").$type<Record<string, unknown>>(),
    contextMessageId: text("context_message_id"),
    status: text("status").$type<MessageStatus>().notNull(),
    error: jsonb("error").$type<Record<string, unknown>>(),
    upstreamTimestamp: timestamptz("upstream_timestamp"),
    // Set by a bot send job just before its upstream call: a job that finds it set
    // (the process died mid-send) cannot know whether Meta took the message.
    sendStartedAt: timestamptz("send_started_at"),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("messages_account_message_id_uq").on(t.accountId, t.messageId),
    index("messages_conversation_created_idx").on(t.conversationId, t.createdAt, t.id),
  ],
);

export const messageReactions = pgTable(
  "message_reactions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    messageId: uuid("message_id")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    conversationId: uuid("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    actorType: text("actor_type", { enum: ["agent", "customer"] }).notNull(),
    actorId: text("actor_id").notNull(),
    emoji: text("emoji").notNull(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("message_reactions_actor_uq").on(t.messageId, t.actorType, t.actorId)],
);
