import type pg from "pg";
import type { RunnableTask } from "../../src/jobs/types.js";

/** The queue tests' own tasks: `record` notes its payload's name in `ran`, `explode` throws "boom". */
export function recordingTasks() {
  const ran: string[] = [];
  const tasks: Record<string, RunnableTask> = {
    record: async (payload) => {
      ran.push(String((payload as { name: string }).name));
    },
    explode: async () => {
      throw new Error("boom");
    },
  };
  return { ran, tasks };
}

export interface JobRow {
  name: string;
  identifier: string;
  queue: string | null;
  attempts: number;
  locked_by: string | null;
  last_error: string | null;
  due_in_s: number;
}

/** Every job row graphile-worker holds, in the order added, with its task and queue. */
export async function jobRows(pool: pg.Pool): Promise<JobRow[]> {
  const { rows } = await pool.query<JobRow>(
    `select j.payload->>'name' as name, k.identifier, q.queue_name as queue, j.attempts, j.locked_by,
            j.last_error, extract(epoch from j.run_at - now())::float as due_in_s
       from graphile_worker._private_jobs j
       join graphile_worker._private_tasks k on k.id = j.task_id
       left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      order by j.id`,
  );
  return rows;
}
