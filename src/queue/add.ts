import { type SQL, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { pgErrorCode } from "../db/errors.js";
import type { LocallyStartedJob, LocalStart } from "../ports.js";
import type { TaskName, TaskPayload } from "./tasks.js";

/**
 * Enqueueing background work. A job is a row in graphile-worker's tables on our
 * own PostgreSQL, so `addJob` inside a transaction makes the work exist exactly
 * when the transaction's other writes do: committed together, or not at all.
 */

export interface JobOptions {
  /** Jobs sharing a queue name run one at a time, in the order they were added. */
  queueName?: string;
  /** Not before this moment (default: at once). */
  runAt?: Date;
  /**
   * A job with the same key that has not started yet is replaced (its payload and run_at). An SQL
   * expression for jobs added by a statement (addJobSql only).
   */
  jobKey?: string | SQL;
  /** How often graphile-worker tries a job that throws (default 25, with exponential backoff). */
  maxAttempts?: number;
  /** Lower runs first (default 0). */
  priority?: number;
}

/**
 * The call that adds a job, as an expression that can also stand inside a
 * bigger statement (the job then exists exactly when that statement's rows
 * do); `payload` is a SQL expression of type json (of `task`'s payload type:
 * see src/queue/tasks.ts). A job due later is added without graphile-worker's
 * NOTIFY (migration 0026): it would only wake an idle worker to look for a job
 * and find none due.
 */
export const addJobSql = (
  task: TaskName,
  payload: SQL,
  options: JobOptions = {},
) => sql`${options.runAt ? sql`add_job_notify_if_due` : sql`graphile_worker.add_job`}(
    identifier := ${task}::text,
    payload := ${payload},
    queue_name := ${options.queueName ?? null}::text,
    run_at := ${options.runAt?.toISOString() ?? null}::timestamptz,
    max_attempts := ${options.maxAttempts ?? null}::integer,
    job_key := (${options.jobKey ?? null})::text,
    priority := ${options.priority ?? null}::integer
  )`;

/**
 * The call that removes the job of a key (graphile-worker's remove_job, without
 * its NOTIFY, which wakes no worker: migration 0026), as an expression.
 */
export const removeJobSql = (jobKey: string) => sql`remove_job_quietly(${jobKey}::text)`;

/** Adds a job on the given connection or transaction. */
export async function addJob<N extends TaskName>(
  db: DbOrTx,
  task: N,
  payload: TaskPayload<N>,
  options: JobOptions = {},
): Promise<void> {
  await db.execute(sql`select ${addJobSql(task, sql`${JSON.stringify(payload)}::json`, options)}`);
}

/** Adds jobs like addJob, but many requests' jobs share one insert and one commit. */
export interface JobBatcher {
  /** Resolves once the job is committed (with the others of its batch); rejects if the batch failed. */
  add<N extends TaskName>(task: N, payload: TaskPayload<N>, options?: JobOptions): Promise<void>;
}

/** PostgreSQL's deadlock_detected. */
const DEADLOCK = "40P01";

/** The most jobs one insert takes; more wait for the next. */
const MAX_BATCH = 200;

/**
 * Group commit for jobs added by requests (the webhook's deliveries): the first
 * job is inserted at once; those that arrive while an insert is under way wait
 * for it and go together in the next one (two of one queue never share an
 * insert, so a queue keeps the order jobs arrived in). Each commit costs a disk flush and a NOTIFY, which
 * PostgreSQL serialises across all transactions: one per request capped the
 * webhook at a few hundred deliveries a second.
 *
 * When the instance runs workers with room for more (`local`), the insert
 * locks jobs for them, and they start as soon as it commits (see LocalStart).
 */
export function createJobBatcher(
  db: DbOrTx,
  local: () => LocalStart | undefined = () => undefined,
): JobBatcher {
  type Waiting = { spec: Record<string, unknown>; resolve: () => void; reject: (error: unknown) => void };
  let waiting: Waiting[] = [];
  let flushing = false;

  const flush = async () => {
    flushing = true;
    while (waiting.length > 0) {
      // At most one job per named queue in an insert: the order of one insert's rows is the
      // planner's, and a queue's jobs run in the order they were added.
      const batch: Waiting[] = [];
      const later: Waiting[] = [];
      const queues = new Set<unknown>();
      for (const w of waiting) {
        const queue = w.spec.queue_name;
        if (batch.length >= MAX_BATCH || (queue !== null && queues.has(queue))) later.push(w);
        else {
          batch.push(w);
          if (queue !== null) queues.add(queue);
        }
      }
      waiting = later;
      const specs = sql`array(select spec from json_populate_recordset(null::graphile_worker.job_spec,
        ${JSON.stringify(batch.map((w) => w.spec))}::json) as spec)`;
      const here = local();
      const offer = here?.offer();
      const insert = async (): Promise<LocallyStartedJob[]> => {
        if (!offer) {
          await db.execute(sql`select count(*) from graphile_worker.add_jobs(${specs})`);
          return [];
        }
        const { rows } = await db.execute<LocallyStartedJob>(
          sql`select * from add_jobs_started_here(${specs}, ${offer.workerId}, ${offer.max})`,
        );
        return rows;
      };
      try {
        // Two instances' batches that add the same new queue names can deadlock inside add_jobs
        // (each inserts its names in its own order). PostgreSQL then aborts one whole batch, so
        // adding it again is safe.
        let started: LocallyStartedJob[] = [];
        for (let attempt = 1; ; attempt++) {
          try {
            started = await insert();
            break;
          } catch (error) {
            if (pgErrorCode(error) !== DEADLOCK || attempt >= 3) throw error;
          }
        }
        if (started.length > 0) here?.run(started);
        for (const w of batch) w.resolve();
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    flushing = false;
  };

  return {
    add(task, payload, options = {}) {
      return new Promise<void>((resolve, reject) => {
        const spec = {
          identifier: task,
          payload,
          queue_name: options.queueName ?? null,
          run_at: options.runAt?.toISOString() ?? null,
          max_attempts: options.maxAttempts ?? null,
          job_key: options.jobKey ?? null,
          priority: options.priority ?? null,
          flags: null,
        };
        waiting.push({ spec, resolve, reject });
        if (!flushing) void flush();
      });
    },
  };
}
