import { and, eq, sql } from "drizzle-orm";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import type pg from "pg";
import type { DbOrTx } from "../../db/client.js";
import { pgErrorCode } from "../../db/errors.js";
import * as schema from "../../db/schema/index.js";
import { flowRunEvents, flowRuns } from "../../db/schema/index.js";

/**
 * Writes of one run. Each is its own statement, guarded by `status = 'active'`,
 * so the runner never holds a lock that a flow deletion (which cascades to its
 * runs) or the timeout sweep would wait on: when the row has vanished or ended
 * under it, the write throws RunGone and the advance stops there.
 */

export type RunRow = typeof flowRuns.$inferSelect;
export type RunEventRow = typeof flowRunEvents.$inferSelect;
export type RunStatus = RunRow["status"];

export const RUN_EVENT_TYPES = [
  "started",
  "node_entered",
  "message_sent",
  "reply_received",
  "fallback_fired",
  "handoff",
  "timeout",
  "error",
  "completed",
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** The run was deleted with its flow, or ended by someone else (the timeout sweep). */
export class RunGone extends Error {
  constructor() {
    super("The run no longer exists or is no longer active");
    this.name = "RunGone";
  }
}

const FOREIGN_KEY_VIOLATION = "23503";

export async function addRunEvent(
  db: DbOrTx,
  run: Pick<RunRow, "id" | "flowId">,
  event: { type: RunEventType; nodeKey?: string | null; payload?: Record<string, unknown>; at: Date },
) {
  try {
    await db.insert(flowRunEvents).values({
      runId: run.id,
      flowId: run.flowId,
      eventType: event.type,
      nodeKey: event.nodeKey ?? null,
      payload: event.payload ?? {},
      createdAt: event.at,
    });
  } catch (error) {
    if (pgErrorCode(error) === FOREIGN_KEY_VIOLATION) throw new RunGone();
    throw error;
  }
}

/** Changes an active run; RunGone when it is no longer there to change. */
export async function updateActiveRun(
  db: DbOrTx,
  runId: string,
  patch: Partial<
    Pick<
      RunRow,
      | "currentNodeKey"
      | "vars"
      | "repromptCount"
      | "lastActivityAt"
      | "awaitingMessageId"
      | "questionSentAt"
      | "resumeAt"
    >
  >,
) {
  const rows = await db
    .update(flowRuns)
    .set(patch)
    .where(and(eq(flowRuns.id, runId), eq(flowRuns.status, "active")))
    .returning({ id: flowRuns.id });
  if (rows.length === 0) throw new RunGone();
}

/**
 * Moves an active run to a node and records its `node_entered` event, in one
 * statement (the walk's most frequent write); RunGone when the run is no
 * longer active.
 */
export async function enterNode(
  db: DbOrTx,
  run: Pick<RunRow, "id">,
  node: { key: string; type: string; at: Date },
) {
  const { rows } = await db.execute(sql`
    with moved as (
      update flow_runs set current_node_key = ${node.key}, last_activity_at = ${node.at}::timestamptz
       where id = ${run.id} and status = 'active'
      returning id, flow_id)
    insert into flow_run_events (run_id, flow_id, event_type, node_key, payload, created_at)
    select id, flow_id, 'node_entered', ${node.key}::text,
           ${JSON.stringify({ node_type: node.type })}::jsonb, ${node.at}::timestamptz
      from moved
    returning run_id`);
  if (rows.length === 0) throw new RunGone();
}

/** Ends an active run; RunGone when it already ended or vanished. */
export async function endActiveRun(
  db: DbOrTx,
  runId: string,
  end: { status: Exclude<RunStatus, "active">; reason: string; at: Date },
) {
  const rows = await db
    .update(flowRuns)
    .set({
      status: end.status,
      endReason: end.reason,
      endedAt: end.at,
      lastActivityAt: end.at,
      awaitingMessageId: null,
      resumeAt: null,
    })
    .where(and(eq(flowRuns.id, runId), eq(flowRuns.status, "active")))
    .returning({ id: flowRuns.id });
  if (rows.length === 0) throw new RunGone();
}

/** The contact's active run, if any. */
export async function findActiveRun(db: DbOrTx, accountId: string, contactId: string) {
  const [run] = await db
    .select()
    .from(flowRuns)
    .where(
      and(
        eq(flowRuns.accountId, accountId),
        eq(flowRuns.contactId, contactId),
        eq(flowRuns.status, "active"),
      ),
    );
  return run ?? null;
}

/** One drizzle instance per pool: building one (its schema's relations) costs more than a query. */
const lockingDbs = new WeakMap<pg.Pool, NodePgDatabase<typeof schema>>();

/**
 * Runs a function in one transaction that first takes the contact's
 * transaction-level advisory lock. All advances of one contact (across
 * instances too) take turns; the lock ends with the transaction, whether it
 * commits, rolls back or its connection dies with the process: an advance is
 * all written or not at all (its sends are jobs added in that transaction).
 */
export async function withContactLock<T>(
  pool: pg.Pool,
  key: { accountId: string; contactId: string },
  work: (db: DbOrTx) => Promise<T>,
): Promise<T> {
  let db = lockingDbs.get(pool);
  if (!db) {
    db = drizzle(pool, { schema });
    lockingDbs.set(pool, db);
  }
  const lockKey = `flow-runner:${key.accountId}:${key.contactId}`;
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`);
    return work(tx);
  });
}
