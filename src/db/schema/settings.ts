import { integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

/**
 * An account's settings (product.md sections 19 and 20). No row means every
 * setting at its default; the first PATCH writes one.
 */
export const accountSettings = pgTable("account_settings", {
  accountId: uuid("account_id")
    .primaryKey()
    .references(() => accounts.id, { onDelete: "cascade" }),
  /** ISO 3166-1 alpha-2 country that national phone numbers belong to (null: none, numbers must be international). */
  defaultCountry: text("default_country"),
  /** Inbound texts (trimmed, any case) that opt a contact out. */
  optOutKeywords: text("opt_out_keywords").array().notNull(),
  /** Inbound texts that opt a contact back in. */
  optInKeywords: text("opt_in_keywords").array().notNull(),
  /** Sent to a contact who opts out, while their 24-hour window is open (null: no answer). */
  optOutReply: text("opt_out_reply"),
  /** How long an agent's message pauses the conversation's automation (0: never). */
  agentReplyPauseMinutes: integer("agent_reply_pause_minutes").notNull(),
  /** Who new conversations go to: off, round_robin or least_busy. */
  autoAssignMode: text("auto_assign_mode", { enum: ["off", "round_robin", "least_busy"] }).notNull(),
  /** The most open conversations auto-assignment gives one member (null: no cap). */
  maxOpenPerAgent: integer("max_open_per_agent"),
  updatedAt: timestamptz("updated_at").notNull().defaultNow(),
});

/** Weekly opening ranges by day (`mon`..`sun`), each `["HH:MM", "HH:MM"]` in the account's timezone. */
export type WeeklyHours = Partial<
  Record<"mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun", [string, string][]>
>;

/** An account's business hours (no row: always open, no away message). */
export const businessHours = pgTable("business_hours", {
  accountId: uuid("account_id")
    .primaryKey()
    .references(() => accounts.id, { onDelete: "cascade" }),
  /** An IANA timezone (e.g. `Europe/Berlin`). */
  timezone: text("timezone").notNull(),
  weekly: jsonb("weekly").$type<WeeklyHours>().notNull(),
  /** Whole days closed (`YYYY-MM-DD`, in the timezone). */
  holidays: text("holidays").array().notNull().default([]),
  /** Sent once per closed period to a customer who writes while closed (null: none). */
  awayMessage: text("away_message"),
  updatedAt: timestamptz("updated_at").notNull().defaultNow(),
});
