import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  json,
  pgTable,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

/** PostgreSQL's 64-bit transaction id; read as text. */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => "xid8" });

/**
 * The account event log. Rows are written by database triggers (see the
 * 0007_events migration) in the transaction that makes the change, so no
 * write path can forget one. Readers walk it in (tx_id, seq) order and only
 * up to the oldest transaction still running, so an event committed late is
 * never skipped (see src/events/log.ts).
 *
 * No foreign key to accounts: an event insert must not lock the account row
 * (every inbound message writes events), and rows of a deleted account age
 * out with the 7-day retention.
 */
export const accountEvents = pgTable(
  "account_events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    seq: bigint("seq", { mode: "number" }).notNull().generatedAlwaysAsIdentity(),
    txId: xid8("tx_id").notNull().default(sql`pg_current_xact_id()`),
    accountId: uuid("account_id").notNull(),
    type: text("type").notNull(),
    // `json`, not `jsonb`: keeps the key order of the API's JSON.
    data: json("data").$type<Record<string, unknown>>().notNull(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("account_events_account_position_idx").on(t.accountId, t.txId, t.seq),
    // BRIN: rows arrive in created_at order, so a tiny index serves the retention purge.
    index("account_events_created_idx").using("brin", t.createdAt),
  ],
);

/** Outbound webhook endpoints: where an account's events are POSTed. */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description"),
    // Event types, or ["*"] for all.
    events: text("events").array().notNull(),
    // The signing secret (`whsec_...`), encrypted with ENCRYPTION_KEY.
    secret: text("secret").notNull(),
    enabled: boolean("enabled").notNull().default(true),
    disabledReason: text("disabled_reason"),
    // Start of the current run of failed attempts; null while deliveries succeed.
    failingSince: timestamptz("failing_since"),
    createdBy: uuid("created_by").references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("webhook_endpoints_account_idx").on(t.accountId, t.createdAt)],
);

/** One row per delivery attempt of an event to an endpoint (the delivery log). */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id").notNull(),
    endpointId: uuid("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    // The account event (or a test event, which is not in the log).
    eventId: uuid("event_id").notNull(),
    eventType: text("event_type").notNull(),
    attempt: integer("attempt").notNull(),
    status: text("status", { enum: ["delivered", "failed"] }).notNull(),
    responseStatus: integer("response_status"),
    // The start of the receiver's answer, for debugging.
    responseBody: text("response_body"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    // When the next attempt runs; null when delivered or given up.
    nextAttemptAt: timestamptz("next_attempt_at"),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  (t) => [
    // A task that runs twice records (and sends) an attempt once.
    uniqueIndex("webhook_deliveries_attempt_uq").on(t.endpointId, t.eventId, t.attempt),
    index("webhook_deliveries_endpoint_created_idx").on(
      t.endpointId,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index("webhook_deliveries_created_idx").using("brin", t.createdAt),
  ],
);
