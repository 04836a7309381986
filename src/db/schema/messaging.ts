import { sql } from "drizzle-orm";
import { check, doublePrecision, index, integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

export const messagingConfigs = pgTable(
  "messaging_configs",
  {
    accountId: uuid("account_id")
      .primaryKey()
      .references(() => accounts.id, { onDelete: "cascade" }),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id),
    // Unique across accounts: one account per business number.
    phoneNumberId: text("phone_number_id").notNull().unique(),
    businessAccountId: text("business_account_id"),
    // Encrypted (v1:iv:tag:ciphertext); never returned.
    accessToken: text("access_token").notNull(),
    verifyToken: text("verify_token"),
    // Keyed hash of the verify token, so the webhook handshake finds its account
    // without decrypting every row.
    verifyTokenHash: text("verify_token_hash"),
    status: text("status", { enum: ["connected", "disconnected"] }).notNull(),
    connectedAt: timestamptz("connected_at"),
    registeredAt: timestamptz("registered_at"),
    subscribedAppsAt: timestamptz("subscribed_apps_at"),
    lastRegistrationError: text("last_registration_error"),
    /** The number's send rate (Meta's default 80; up to 1,000 after an upgrade), across all instances. */
    messagesPerSecond: integer("messages_per_second").notNull().default(80),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("messaging_configs_verify_token_hash_idx").on(t.verifyTokenHash),
    check("messaging_configs_messages_per_second_range", sql`${t.messagesPerSecond} between 1 and 1000`),
  ],
);

/**
 * Each number's send schedule, shared by every instance (src/sending/rate.ts,
 * without Redis): the next free send slot, and the AIMD rate lowered by Meta's
 * throughput errors (recovering from `changed_at`).
 */
export const sendRates = pgTable("send_rates", {
  phoneNumberId: text("phone_number_id").primaryKey(),
  nextAt: timestamp("next_at", { withTimezone: true, precision: 6 }).notNull(),
  rate: doublePrecision("rate").notNull(),
  changedAt: timestamp("changed_at", { withTimezone: true, precision: 6 }).notNull(),
});
