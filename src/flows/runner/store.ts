import { randomInt } from "node:crypto";
import { and, eq, type SQL, sql } from "drizzle-orm";
import type pg from "pg";
import { commitWith, type DbOrTx, transactionOpenedWith, transactionSharedBy } from "../../db/client.js";
import { pgErrorCode } from "../../db/errors.js";
import { prepared } from "../../db/prepared.js";
import { EXECUTION_COUNT_SHARDS, type flowRunEvents, flowRuns, flows } from "../../db/schema/index.js";
import type { ContactTransactions } from "../../ports.js";

/**
 * Writes of one run. An advance changes its run in memory (RunContext.run)
 * and keeps the changes and the run's events in a RunWrites; `writeRun` then
 * puts them in the database in one statement at the end of the advance. The
 * advance holds the run's row from its start (see `lockRunSql`; a run it
 * starts is its own insert), so nothing can end or delete the run in between.
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

/**
 * A run this advance started could not be inserted: the contact has an active
 * run after all (only a writer outside the contact's lock could cause it). It
 * fails the advance, whose transaction rolls back.
 */
export class RunBusy extends Error {
  constructor() {
    super("The contact has an active run already");
    this.name = "RunBusy";
  }
}

/** The run was deleted with its flow, or ended by someone else (the timeout sweep). */
export class RunGone extends Error {
  constructor() {
    super("The run no longer exists or is no longer active");
    this.name = "RunGone";
  }
}

/** The columns an advance changes. */
export type RunPatch = Partial<
  Pick<
    RunRow,
    | "status"
    | "currentNodeKey"
    | "vars"
    | "repromptCount"
    | "endReason"
    | "lastActivityAt"
    | "endedAt"
    | "awaitingMessageId"
    | "questionSentAt"
    | "resumeAt"
  >
>;

export interface PendingRunEvent {
  type: RunEventType;
  nodeKey: string | null;
  payload: Record<string, unknown>;
  at: Date;
}

/** What an advance has changed on its run and not yet written. */
export interface RunWrites {
  /** The run is new to this advance: inserted by the run write, as the patch leaves it. */
  insert?: RunRow;
  patch: RunPatch;
  events: PendingRunEvent[];
  /** The customer message that moved the run: its receipt gets the outcome and the run. */
  receipt?: { messageId: string; outcome: string };
  /** The advance started the run: one more execution of its flow (see flowExecutionCounts). */
  countStart?: boolean;
  /** Another write that goes in the same statement (a bot message, see AlongsideWrite). */
  alongside?: AlongsideWrite;
}

/**
 * A write that an advance leaves for its run write, to save a round trip:
 * `with ${ctes}` and `select ${columns} from ${from}` of a statement whose CTE
 * names are not the run write's own (run, events, receipt, counted), written
 * before them and returning one row, which `read` gets (before any RunGone).
 * It is written whatever becomes of the run, as it would be on its own.
 */
export interface AlongsideWrite {
  ctes: SQL;
  columns: SQL;
  from: SQL;
  read: (row: Record<string, unknown>) => void;
}

export const noRunWrites = (): RunWrites => ({ patch: {}, events: [] });

const PATCH_COLUMNS: Record<keyof RunPatch, string> = {
  status: "status",
  currentNodeKey: "current_node_key",
  vars: "vars",
  repromptCount: "reprompt_count",
  endReason: "end_reason",
  lastActivityAt: "last_activity_at",
  endedAt: "ended_at",
  awaitingMessageId: "awaiting_message_id",
  questionSentAt: "question_sent_at",
  resumeAt: "resume_at",
};

function patchValue(key: keyof RunPatch, value: unknown) {
  if (value === null || value === undefined) return sql`null`;
  if (value instanceof Date) return sql`${value.toISOString()}::timestamptz`;
  if (key === "vars") return sql`${JSON.stringify(value)}::jsonb`;
  if (key === "repromptCount") return sql`${value}::integer`;
  if (key === "awaitingMessageId") return sql`${value}::uuid`;
  return sql`${value}::text`;
}

/**
 * Writes an advance's changes and events in one statement, the run's still
 * `active` row being the condition for all of it, with the message's receipt
 * and the flow's execution count when the advance has them (the counter row,
 * locked until the commit, is taken last), and the write left `alongside`
 * (its own condition); RunGone when the run is no longer active (only
 * possible for a run the advance did not lock), RunBusy when the run it
 * inserts cannot be (the statement itself fails then, so its transaction
 * rolls back). With `last`, the statement ends the transaction: it and the
 * commit go out together (commitWith), and nothing may follow it. Clears
 * `writes`.
 */
export async function writeRun(
  db: DbOrTx,
  runId: string,
  writes: RunWrites,
  options: { last?: boolean } = {},
): Promise<void> {
  const keys = (Object.keys(writes.patch) as Array<keyof RunPatch>).filter(
    (key) => writes.patch[key] !== undefined,
  );
  const { receipt, countStart, alongside, insert } = writes;
  if (!insert && keys.length === 0 && writes.events.length === 0 && !receipt && !countStart && !alongside)
    return;
  const target = insert
    ? insertRunSql({ ...insert, ...Object.fromEntries(keys.map((key) => [key, writes.patch[key]])) })
    : keys.length
      ? sql`update flow_runs set ${sql.join(
          keys.map((key) => sql`${sql.raw(PATCH_COLUMNS[key])} = ${patchValue(key, writes.patch[key])}`),
          sql`, `,
        )} where id = ${runId} and status = 'active' returning id, flow_id`
      : sql`select id, flow_id from flow_runs where id = ${runId} and status = 'active'`;
  const events = JSON.stringify(
    writes.events.map((e) => ({
      type: e.type,
      node_key: e.nodeKey,
      payload: e.payload,
      at: e.at.toISOString(),
    })),
  );
  // A run that could not be inserted fails the statement (flow_run_busy, migration 0024).
  const written = insert
    ? sql`(select case when count(*) = 0 then flow_run_busy() else count(*)::int end from run)`
    : sql`(select count(*)::int from run)`;
  const statement = prepared(sql`
    with ${alongside ? sql`${alongside.ctes}, ` : sql``}run as (${target}),
    events as (
      insert into flow_run_events (run_id, flow_id, event_type, node_key, payload, created_at)
      select run.id, run.flow_id, e.type, e.node_key, e.payload, e.at
        from run, rows from (jsonb_to_recordset(${events}::jsonb)
                               as (type text, node_key text, payload jsonb, at timestamptz))
                  with ordinality as e(type, node_key, payload, at, ord)
       order by e.ord
      returning 1)${
        receipt
          ? sql`,
    receipt as (
      update flow_message_receipts set outcome = ${receipt.outcome}::text, run_id = run.id
        from run where message_id = ${receipt.messageId}::uuid
      returning 1)`
          : sql``
      }${
        countStart
          ? sql`,
    counted as (
      insert into flow_execution_counts (flow_id, shard, count)
      select run.flow_id, ${countShards.get(db) ?? randomInt(EXECUTION_COUNT_SHARDS)}::smallint, 1 from run
      on conflict (flow_id, shard) do update set count = flow_execution_counts.count + 1
      returning 1)`
          : sql``
      }
    ${
      alongside
        ? sql`select ${written} as n, ${alongside.columns} from ${alongside.from}`
        : sql`select ${written} as n`
    }`);
  let rows: Record<string, unknown>[];
  try {
    rows = options.last ? await commitWith(db, statement) : (await db.execute(statement)).rows;
  } catch (error) {
    if (pgErrorCode(error) === RUN_BUSY_CODE) throw new RunBusy();
    throw error;
  }
  writes.patch = {};
  writes.events = [];
  writes.receipt = undefined;
  writes.countStart = undefined;
  writes.alongside = undefined;
  writes.insert = undefined;
  if (alongside) {
    const row = rows[0];
    if (!row) throw new Error("The write that went with the run's returned nothing");
    alongside.read(row);
  }
  // (A run insert that wrote nothing failed the statement above: flow_run_busy.)
  if (((rows[0]?.n as number | undefined) ?? 0) === 0) throw new RunGone();
}

/** The SQLSTATE of flow_run_busy(). */
const RUN_BUSY_CODE = "WA409";

/** The run's insert, for writeRun's `run` CTE (nothing when the contact has an active run). */
function insertRunSql(run: RunRow) {
  const value = (key: keyof RunPatch) => patchValue(key, run[key]);
  return sql`insert into flow_runs (id, flow_id, account_id, contact_id, conversation_id, status, current_node_key,
                         vars, reprompt_count, end_reason, awaiting_message_id, question_sent_at, resume_at,
                         started_at, last_activity_at, ended_at)
    values (${run.id}::uuid, ${run.flowId}::uuid, ${run.accountId}::uuid, ${run.contactId}::uuid,
            ${run.conversationId}::uuid, ${value("status")}, ${value("currentNodeKey")}, ${value("vars")},
            ${value("repromptCount")}, ${value("endReason")}, ${value("awaitingMessageId")},
            ${value("questionSentAt")}, ${value("resumeAt")}, ${run.startedAt.toISOString()}::timestamptz,
            ${value("lastActivityAt")}, ${value("endedAt")})
    on conflict do nothing
    returning id, flow_id`;
}

/**
 * Locks an active run's row for this transaction, its flow's row first (in
 * key-share mode, from the filter's subquery, which runs before the run's row
 * is locked): a flow deletion takes them in that order, so the two wait for
 * each other instead of deadlocking. The timeout sweep passes a locked run by
 * and a deletion waits, so the advance's writes (done at its end) find the run
 * as the advance found it. `columns` are read from the row as it is once
 * locked (a row lock returns its latest version, not the statement's snapshot).
 */
export const lockRunSql = (where: SQL, columns: SQL = sql`r.id`) => sql`
  select ${columns} from flow_runs r
   where ${where} and r.status = 'active' and ${flowLockedFirst(sql`r.flow_id`)}
  for no key update of r`;

/** The filter that key-share locks the run's flow row before the run's own row is locked. */
export const flowLockedFirst = (flowId: SQL | typeof flowRuns.flowId) =>
  sql`exists (select 1 from ${flows} f where f.id = ${flowId} for key share)`;

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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Runs a function in one transaction that first takes the contact's
 * transaction-level advisory lock. All advances of one contact (across
 * instances too) take turns; the lock ends with the transaction, whether it
 * commits, rolls back or its connection dies with the process: an advance is
 * all written or not at all (its sends are stored with their jobs in that transaction; hooks
 * registered with onCommit run once it committed).
 *
 * `begin` and the lock go in one round trip (two statements of one simple
 * query, the key's two UUIDs written as a literal): every bot reply takes two
 * of these transactions, and on a busy machine each round trip to PostgreSQL
 * costs about as much as the statement's own work.
 */
export async function withContactLock<T>(
  pool: pg.Pool,
  key: { accountId: string; contactId: string },
  work: (db: DbOrTx) => Promise<T>,
): Promise<T> {
  const lockKey = contactLockKey(key);
  const inline = UUID.test(key.accountId) && UUID.test(key.contactId);
  const hooks: Array<() => Promise<void>> = [];
  const opening = inline ? `begin; select ${lockStatement(lockKey)}` : "begin";
  const result = await transactionOpenedWith(pool, opening, async (tx) => {
    if (!inline) await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`);
    commitHooks.set(tx, hooks);
    return work(tx);
  });
  // Committed: what waited for it runs now (each hook handles its own errors).
  for (const hook of hooks) await hook();
  return result;
}

const contactLockKey = (key: { accountId: string; contactId: string }) =>
  `flow-runner:${key.accountId}:${key.contactId}`;

/** The lock of a key made of UUIDs only (checked by the caller), written as a literal. */
const lockStatement = (lockKey: string) => `pg_advisory_xact_lock(hashtextextended('${lockKey}', 0))`;

/** A work waiting for the next shared transaction. */
interface Waiting {
  key: { accountId: string; contactId: string };
  lockKey: string;
  work: (db: DbOrTx) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Contacts' works in one shared transaction at most (its opening takes as many locks). */
export const CONTACT_BATCH_MAX = 32;

/**
 * withContactLock for the hot path's transactions (a customer message's
 * advance, a bot send's record), several contacts to a transaction: the works
 * asked for while the last shared transaction ran go together into the next,
 * which takes their contacts' locks in one order (two such transactions never
 * wait on each other for them) and commits once. A contact's works still take
 * turns: a transaction takes one work a contact, the others wait for the next.
 *
 * All of a transaction's works are written, or none: should one fail (or ask
 * for a savepoint, see transactionSharedBy), the transaction rolls back and
 * each work runs again in a transaction of its own (withContactLock), where
 * the one that failed fails by itself. Commit hooks (onCommit) run once the
 * shared transaction has committed. The works see one another's writes (they
 * are one transaction): none of them reads a row of another contact and
 * writes it back, and the one such row they update, a flow's run count, is
 * updated as `count + 1` on one shard a transaction (see countShards).
 */
export function createContactTransactions(
  pool: pg.Pool,
  options: { max?: number } = {},
): ContactTransactions {
  const max = options.max ?? CONTACT_BATCH_MAX;
  let queue: Waiting[] = [];
  let running = false;
  let scheduled = false;

  const alone = (one: Waiting) => withContactLock(pool, one.key, one.work).then(one.resolve, one.reject);

  const together = async (batch: Waiting[]) => {
    const ordered = [...batch].sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0));
    const opening = `begin; ${ordered.map((one) => `select ${lockStatement(one.lockKey)}`).join("; ")}`;
    const hooks = batch.map(() => [] as Array<() => Promise<void>>);
    const shard = randomInt(EXECUTION_COUNT_SHARDS);
    const results = await transactionSharedBy(
      pool,
      opening,
      batch.map((one, i) => (tx) => {
        commitHooks.set(tx, hooks[i] ?? []);
        countShards.set(tx, shard);
        return one.work(tx);
      }),
    ).catch(() => null);
    if (!results) {
      await Promise.all(batch.map(alone));
      return;
    }
    await Promise.all(
      batch.map(async (one, i) => {
        for (const hook of hooks[i] ?? []) await hook();
        one.resolve(results[i]);
      }),
    );
  };

  /** Starts the next transaction with the works waiting (one a contact, `max` at most). */
  const next = () => {
    scheduled = false;
    if (running || queue.length === 0) return;
    const batch: Waiting[] = [];
    const taken = new Set<string>();
    const later: Waiting[] = [];
    for (const one of queue) {
      if (batch.length < max && !taken.has(one.lockKey)) {
        batch.push(one);
        taken.add(one.lockKey);
      } else later.push(one);
    }
    queue = later;
    running = true;
    const [only] = batch;
    void (batch.length === 1 && only ? alone(only) : together(batch)).finally(() => {
      running = false;
      schedule();
    });
  };
  // The works asked for in the same turn of the event loop join the same transaction.
  const schedule = () => {
    if (scheduled || running || queue.length === 0) return;
    scheduled = true;
    setImmediate(next);
  };

  return {
    run<T>(key: { accountId: string; contactId: string }, work: (db: DbOrTx) => Promise<T>): Promise<T> {
      // A key that cannot be written into the opening as a literal takes a transaction of its own.
      if (!UUID.test(key.accountId) || !UUID.test(key.contactId)) return withContactLock(pool, key, work);
      return new Promise<T>((resolve, reject) => {
        queue.push({
          key,
          lockKey: contactLockKey(key),
          work,
          reject,
          resolve: resolve as (v: unknown) => void,
        });
        schedule();
      });
    },
  };
}

/** The shard of a flow's run count that the shared transaction `db` counts on (one for all its works). */
const countShards = new WeakMap<object, number>();

/** The after-commit work of each withContactLock transaction. */
const commitHooks = new WeakMap<object, Array<() => Promise<void>>>();

/**
 * Runs `hook` once the contact's transaction `db` has committed (never if it
 * rolls back); false when `db` is no withContactLock transaction, and then
 * nothing is registered.
 */
export function onCommit(db: DbOrTx, hook: () => Promise<void>): boolean {
  const hooks = commitHooks.get(db);
  if (!hooks) return false;
  hooks.push(hook);
  return true;
}

/** Whether onCommit(db, ...) would take a hook. */
export const takesCommitHooks = (db: DbOrTx) => commitHooks.has(db);
