import { index, jsonb, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

/**
 * The account's WhatsApp message templates as last synced from its business
 * account (one row per name and language, as Meta keys them).
 */
export const messageTemplates = pgTable(
  "message_templates",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    // Meta's template id.
    upstreamId: text("upstream_id").notNull(),
    name: text("name").notNull(),
    language: text("language").notNull(),
    // APPROVED, PENDING, REJECTED, PAUSED, DISABLED... as Meta reports it.
    status: text("status").notNull(),
    category: text("category"),
    components: jsonb("components").$type<Array<Record<string, unknown>>>().notNull().default([]),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("message_templates_account_name_language_uq").on(t.accountId, t.name, t.language),
    index("message_templates_account_upstream_idx").on(t.accountId, t.upstreamId),
  ],
);
