import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

export const CAMPAIGN_STATUSES = [
  "draft",
  "scheduled",
  "running",
  "paused",
  "completed",
  "cancelled",
] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

import { RECIPIENT_STATUSES, type RecipientStatus } from "./recipient-statuses.js";

export { RECIPIENT_STATUSES, type RecipientStatus };

/** One template sent to an audience of contacts (product.md section 18). */
export const campaigns = pgTable(
  "campaigns",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    status: text("status").$type<CampaignStatus>().notNull().default("draft"),
    templateName: text("template_name").notNull(),
    templateLanguage: text("template_language").notNull(),
    /** `{ header?, body?, buttons? }` as the API takes it (expressions unrendered). */
    parameters: jsonb("parameters").$type<Record<string, unknown>>().notNull().default({}),
    /** `{ tags_any?, tags_none?, attributes?, contact_ids? }`. */
    audience: jsonb("audience").$type<Record<string, unknown>>().notNull().default({}),
    scheduledAt: timestamptz("scheduled_at"),
    startedAt: timestamptz("started_at"),
    completedAt: timestamptz("completed_at"),
    pausedReason: text("paused_reason"),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    /** When the last `campaign.updated` event was written (at most one a second). */
    lastEventAt: timestamptz("last_event_at"),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("campaigns_account_created_idx").on(
      t.accountId,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

/** The audience snapshot: one row per contact, taken at start. */
export const campaignRecipients = pgTable(
  "campaign_recipients",
  {
    // Deleted with their campaign and contact by statement-level triggers (migration 0018), not
    // by foreign keys: a key's per-row check tripled the time of a 100,000-row snapshot.
    campaignId: uuid("campaign_id").notNull(),
    contactId: uuid("contact_id").notNull(),
    status: text("status").$type<RecipientStatus>().notNull().default("queued"),
    /** The campaign's message in the contact's conversation (messages.id). */
    // No foreign key either (see above); a deleted contact's messages go with its recipient rows.
    messageId: uuid("message_id"),
    /** Sends tried (a 131049 deferral allows a second). */
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamptz("next_attempt_at"),
    claimedAt: timestamptz("claimed_at"),
    errorCode: text("error_code"),
    errorTitle: text("error_title"),
    skippedReason: text("skipped_reason"),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.campaignId, t.contactId] }),
    index("campaign_recipients_campaign_status_idx").on(t.campaignId, t.status, t.contactId),
    // Partial: the snapshot writes no entry (no message yet).
    index("campaign_recipients_message_idx").on(t.messageId).where(sql`${t.messageId} is not null`),
  ],
);
