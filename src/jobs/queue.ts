import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";

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
  /** A job with the same key that has not started yet is replaced (its payload and run_at). */
  jobKey?: string;
  /** How often graphile-worker tries a job that throws (default 25, with exponential backoff). */
  maxAttempts?: number;
  /** Lower runs first (default 0). */
  priority?: number;
}

/** Adds a job on the given connection or transaction. */
export async function addJob(
  db: DbOrTx,
  task: string,
  payload: Record<string, unknown>,
  options: JobOptions = {},
): Promise<void> {
  await db.execute(sql`select graphile_worker.add_job(
    identifier := ${task},
    payload := ${JSON.stringify(payload)}::json,
    queue_name := ${options.queueName ?? null}::text,
    run_at := ${options.runAt?.toISOString() ?? null}::timestamptz,
    max_attempts := ${options.maxAttempts ?? null}::integer,
    job_key := ${options.jobKey ?? null}::text,
    priority := ${options.priority ?? null}::integer
  )`);
}
