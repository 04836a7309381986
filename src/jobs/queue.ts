import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";

// Stand-in for the lead's job queue (announced in the coordination notes); main's version replaces it on merge.
export interface AddJobOptions {
  queueName?: string;
  runAt?: Date;
  jobKey?: string;
  maxAttempts?: number;
  priority?: number;
}

export async function addJob(
  db: DbOrTx,
  task: string,
  payload: Record<string, unknown>,
  options: AddJobOptions = {},
): Promise<void> {
  await db.execute(sql`select graphile_worker.add_job(${task}, ${JSON.stringify(payload)}::json,
    queue_name => ${options.queueName ?? null}, run_at => ${options.runAt?.toISOString() ?? null}::timestamptz,
    max_attempts => ${options.maxAttempts ?? null}::int, job_key => ${options.jobKey ?? null},
    priority => ${options.priority ?? null}::int)`);
}
