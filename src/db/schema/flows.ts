import { sql } from "drizzle-orm";
import {
  bigserial,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { contacts, conversations, messages } from "./inbox.js";
import { accounts } from "./tenancy.js";

export const DEFAULT_FALLBACK_POLICY = {
  on_unknown_reply: "reprompt",
  max_reprompts: 2,
  on_timeout_hours: 24,
  on_exhaust: "handoff",
} as const;

export const flows = pgTable(
  "flows",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id),
    name: text("name").notNull(),
    description: text("description"),
    status: text("status", { enum: ["draft", "active", "archived"] })
      .notNull()
      .default("draft"),
    triggerType: text("trigger_type", { enum: ["keyword", "first_inbound_message", "manual"] })
      .notNull()
      .default("keyword"),
    triggerConfig: jsonb("trigger_config").$type<Record<string, unknown>>().notNull().default({}),
    // Holds a node_key: edges between nodes are node keys, so a template's entry
    // point is known before its nodes (and their generated ids) exist.
    entryNodeId: text("entry_node_id"),
    fallbackPolicy: jsonb("fallback_policy")
      .$type<Record<string, unknown>>()
      .notNull()
      .default(DEFAULT_FALLBACK_POLICY),
    executionCount: integer("execution_count").notNull().default(0),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("flows_account_created_idx").on(
      t.accountId,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index("flows_account_status_idx").on(t.accountId, t.status, t.createdAt),
  ],
);

/**
 * Runs started, per flow, spread over up to EXECUTION_COUNT_SHARDS rows: each
 * run start adds one to a random row of its flow, inside the run's transaction,
 * so a flood of triggers of one flow does not queue on a single row lock (it
 * did on flows.execution_count: 170 ms a start at 8 jobs at once). A flow's
 * execution_count is its own column (the count before these rows existed) plus
 * the sum of its rows here.
 */
export const flowExecutionCounts = pgTable(
  "flow_execution_counts",
  {
    flowId: uuid("flow_id")
      .notNull()
      .references(() => flows.id, { onDelete: "cascade" }),
    shard: smallint("shard").notNull(),
    count: integer("count").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.flowId, t.shard] })],
);

export const EXECUTION_COUNT_SHARDS = 16;

/**
 * A flow's nodes as a document: the API's node objects, in the order they were
 * written, as JSON text (`json`, not `jsonb`: kept as written, so a read
 * answers it without rebuilding it). A flow's nodes are only ever written and
 * read whole (PUT replaces them all; reads and the runner take them all), so
 * one row a flow costs a PUT of 500 nodes one row, not 500 rows and 1,000
 * index entries. A flow without a row has no nodes. Node keys are unique
 * within a flow: PUT and the templates check it before writing.
 */
export const flowGraphs = pgTable("flow_graphs", {
  flowId: uuid("flow_id")
    .primaryKey()
    .references(() => flows.id, { onDelete: "cascade" }),
  nodes: json("nodes").$type<StoredNode[]>().notNull(),
});

/** A node as flow_graphs keeps it: the API's node object (created_at as its ISO text). */
export interface StoredNode {
  id: string;
  flow_id: string;
  node_key: string;
  node_type: string;
  config: Record<string, unknown>;
  position_x: number;
  position_y: number;
  created_at: string;
}

export const flowRuns = pgTable(
  "flow_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    flowId: uuid("flow_id")
      .notNull()
      .references(() => flows.id, { onDelete: "cascade" }),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    contactId: uuid("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    conversationId: uuid("conversation_id").references(() => conversations.id, {
      onDelete: "cascade",
    }),
    status: text("status", {
      enum: ["active", "completed", "handed_off", "timed_out", "failed"],
    })
      .notNull()
      .default("active"),
    currentNodeKey: text("current_node_key"),
    vars: jsonb("vars").$type<Record<string, unknown>>().notNull().default({}),
    repromptCount: integer("reprompt_count").notNull().default(0),
    endReason: text("end_reason"),
    // The bot message the run waits to see sent before it moves on (a send job has it).
    awaitingMessageId: uuid("awaiting_message_id").references(() => messages.id, { onDelete: "set null" }),
    // When Meta took the question the run waits on: earlier customer messages cannot answer it.
    questionSentAt: timestamptz("question_sent_at"),
    // A `wait` node's end; its resume job is scheduled for then.
    resumeAt: timestamptz("resume_at"),
    startedAt: timestamptz("started_at").notNull().defaultNow(),
    lastActivityAt: timestamptz("last_activity_at").notNull().defaultNow(),
    endedAt: timestamptz("ended_at"),
  },
  (t) => [
    // At most one active run per contact; deleting the flow deletes the run and
    // so releases the contact.
    uniqueIndex("flow_runs_one_active_per_contact_uq")
      .on(t.accountId, t.contactId)
      .where(sql`${t.status} = 'active'`),
    index("flow_runs_flow_started_idx").on(
      t.flowId,
      t.startedAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index("flow_runs_active_activity_idx").on(t.lastActivityAt).where(sql`${t.status} = 'active'`),
  ],
);

export const flowRunEvents = pgTable(
  "flow_run_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => flowRuns.id, { onDelete: "cascade" }),
    flowId: uuid("flow_id")
      .notNull()
      .references(() => flows.id, { onDelete: "cascade" }),
    eventType: text("event_type").notNull(),
    nodeKey: text("node_key"),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  (t) => [index("flow_run_events_run_idx").on(t.runId, t.id)],
);

/**
 * Inbound messages the flow runner has taken (one row per message, written
 * before acting on it): a second delivery of the same message finds its row
 * and is ignored, so no message ever advances a run twice.
 */
export const flowMessageReceipts = pgTable(
  "flow_message_receipts",
  {
    messageId: uuid("message_id")
      .primaryKey()
      .references(() => messages.id, { onDelete: "cascade" }),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    // The run it started or advanced (null when it did neither or the flow was deleted).
    runId: uuid("run_id").references(() => flowRuns.id, { onDelete: "set null" }),
    outcome: text("outcome").notNull(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  // Deleting a flow sets run_id null on its receipts: the index keeps that cheap.
  (t) => [index("flow_message_receipts_run_idx").on(t.runId)],
);
