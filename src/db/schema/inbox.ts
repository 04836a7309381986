import { sql } from "drizzle-orm";
import {
  type AnyPgColumn,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { campaigns } from "./campaigns.js";
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
    // A flat map of string values set by agents (PATCH /api/contacts/{id}).
    attributes: jsonb("attributes").$type<Record<string, string>>().notNull().default({}),
    // Opted out: agents cannot message the contact and no flow starts for it.
    optedOut: boolean("opted_out").notNull().default(false),
    optedOutAt: timestamptz("opted_out_at"),
    // Consent to be messaged: when and how it was given (a form, an import, a keyword...).
    optedInAt: timestamptz("opted_in_at"),
    optInSource: text("opt_in_source"),
    // Meta's business-scoped user id and username, for customers who hide their number.
    bsuid: text("bsuid"),
    username: text("username"),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("contacts_account_wa_id_uq").on(t.accountId, t.waId),
    // Equality on the number (imports and POST /api/contacts find duplicates by it).
    index("contacts_account_phone_idx").on(t.accountId, t.phone),
    uniqueIndex("contacts_account_bsuid_uq").on(t.accountId, t.bsuid).where(sql`${t.bsuid} is not null`),
    index("contacts_account_created_idx").on(
      t.accountId,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    // Search (pg_trgm, scoped by btree_gin's account_id): any substring of a name, phone or username.
    // A short pending list (64 kB): every search reads it whole (migration 0021).
    index("contacts_search_idx")
      .using(
        "gin",
        t.accountId,
        t.name.op("gin_trgm_ops"),
        t.phone.op("gin_trgm_ops"),
        t.username.op("gin_trgm_ops"),
      )
      .with({ gin_pending_list_limit: 64 }),
    // Tag filters.
    index("contacts_tags_idx").using("gin", t.tags),
  ],
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
    // Meta's timestamp of the customer's latest message: the 24-hour window runs from it.
    customerMessageAt: timestamptz("customer_message_at"),
    // Customer messages stored since an agent last marked the conversation read.
    unreadCount: integer("unread_count").notNull().default(0),
    // Whether flows may start here (product.md section 20): paused until `automation_until`
    // (null: until resumed, unassigned or closed), for `automation_reason`.
    automationState: text("automation_state", { enum: ["active", "paused"] })
      .notNull()
      .default("active"),
    automationUntil: timestamptz("automation_until"),
    automationReason: text("automation_reason").$type<AutomationReason>(),
    // When the away message last went to this conversation (once per closed period).
    awaySentAt: timestamptz("away_sent_at"),
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
    // The inbox's status and assignee filters, in list order; also what counts reads.
    index("conversations_account_status_activity_idx").on(
      t.accountId,
      t.status,
      t.lastMessageAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index("conversations_waiting_idx")
      .on(t.accountId, t.createdAt)
      .where(sql`${t.assignedTo} is null and ${t.status} <> 'closed'`),
    index("conversations_account_assignee_activity_idx").on(
      t.accountId,
      t.assignedTo,
      t.lastMessageAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

/** Why a conversation's automation is paused. */
export type AutomationReason = "agent_reply" | "assigned" | "agent_started" | "manual";

/** `stored`: an internal note, never sent anywhere. */
export type MessageStatus = "received" | "pending" | "sent" | "delivered" | "read" | "failed" | "stored";

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
    // `internal`: an agents' note (type `note`), shown in the thread and never sent upstream.
    direction: text("direction", { enum: ["inbound", "outbound", "internal"] }).notNull(),
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
    // Set when an unknown outcome was resolved by sending once more (never a third time).
    sendResentAt: timestamptz("send_resent_at"),
    // The campaign that sent it (its template message), null for any other message.
    campaignId: uuid("campaign_id").references((): AnyPgColumn => campaigns.id, { onDelete: "set null" }),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("messages_account_message_id_uq").on(t.accountId, t.messageId),
    index("messages_conversation_created_idx").on(t.conversationId, t.createdAt, t.id),
    // A conversation's campaign messages (a reply marks the latest one's recipient `replied`).
    index("messages_campaign_conversation_idx")
      .on(t.conversationId, t.createdAt)
      .where(sql`${t.campaignId} is not null`),
    // Inbox search by message text (pg_trgm, scoped by btree_gin's account_id): any substring.
    index("messages_search_idx")
      .using("gin", t.accountId, t.text.op("gin_trgm_ops"))
      .with({ gin_pending_list_limit: 64 }),
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

/** Saved replies an agent inserts by shortcut. */
export const cannedResponses = pgTable(
  "canned_responses",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    shortcut: text("shortcut").notNull(),
    text: text("text").notNull(),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("canned_responses_account_shortcut_uq").on(t.accountId, t.shortcut)],
);
