import type pg from "pg";
import { preparedText } from "../db/prepared.js";
import type { AppDeps } from "../deps.js";
import type { QueuedJob } from "../ports.js";
import type { RunnableTask } from "./types.js";

/**
 * Jobs of a named queue run one at a time: while a worker runs one, the queue
 * is locked for it, and nobody else can take the queue's next job. So when a
 * job ends, the worker that holds the queue runs the jobs that became due in
 * it meanwhile itself (the bot's reply a delivery queued, most often), before
 * graphile-worker unlocks the queue. It saves the reply a trip through the
 * queue (the job's completion, then another worker's look-up): the reply goes
 * out as soon as the advance that queued it is committed.
 *
 * A follow-up is a job like any other: locked under this worker's id with its
 * attempt counted (the reaper frees it if this instance dies), deleted when
 * its task succeeds, given back with graphile-worker's backoff when it throws.
 * Only the queue's first due job is taken, so the queue's order holds; an
 * index of ours on graphile-worker's table (migration 0011) finds it in one
 * probe, however long the backlog.
 *
 * This reads and writes graphile-worker's own tables, as graphile-worker does
 * to complete or fail a job (package.json keeps it to 0.16.x, whose schema
 * this follows; test/jobs covers it).
 */

/** Follow-ups one job may run, so a busy queue still goes back to the pool now and then. */
export const MAX_FOLLOW_UPS = 8;

export interface FollowUpOptions {
  pool: pg.Pool;
  tasks: Record<string, RunnableTask>;
  deps: AppDeps;
  /** False once the instance is stopping: no new follow-up starts. */
  running: () => boolean;
}

/**
 * Locks the queue's first due job for the worker ($1 queue id, $2 worker id,
 * $3 the task names this instance knows), counting the attempt, and deletes
 * the follow-up that just succeeded ($4, or null): one round trip between two
 * jobs of a backlog instead of two. The job deleted is still locked by this
 * worker, so it is never the one taken.
 */
export const TAKE_NEXT_JOB = preparedText(`with done as (
    delete from graphile_worker._private_jobs where id = $4::bigint
  )
  update graphile_worker._private_jobs as jobs
    set attempts = jobs.attempts + 1, locked_at = now(), locked_by = $2
   from graphile_worker._private_tasks as tasks
  where jobs.id = (
          select id from graphile_worker._private_jobs
           where job_queue_id = $1 and is_available = true and run_at <= now()
           order by priority, run_at, id
           limit 1
           for update skip locked)
    and tasks.id = jobs.task_id and tasks.identifier = any($3::text[])
  returning jobs.id::text as id, tasks.identifier, jobs.payload, jobs.attempts, jobs.max_attempts`);

/**
 * graphile-worker's own failure handling for job $1 (with its error $2): unlocked, due again after
 * exp(attempts) seconds (at most e^10).
 */
export const FAIL_JOB = `update graphile_worker._private_jobs
    set locked_at = null, locked_by = null, last_error = $2, updated_at = now(),
        run_at = greatest(now(), run_at) + exp(least(attempts, 10)) * interval '1 second'
  where id = $1::bigint`;

/**
 * Runs a job its worker took itself (a follow-up, or one started where it was added): null when
 * its task succeeded, else the error's text (logged), for FAIL_JOB.
 */
export async function attemptJob(
  deps: AppDeps,
  task: RunnableTask | undefined,
  job: QueuedJob,
): Promise<string | null> {
  try {
    if (!task) throw new Error(`no task named ${job.identifier} in this instance`);
    await task(job.payload ?? {}, deps, { id: job.id, attempt: job.attempts, maxAttempts: job.max_attempts });
    return null;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    deps.log.warn({ jobId: job.id, task: job.identifier, err: message }, "queued job failed; retried later");
    return message;
  }
}

/**
 * `done`: a job of the queue that succeeded and is not deleted yet (the first
 * look deletes it).
 */
export async function runFollowUps(
  options: FollowUpOptions,
  held: { queueId: number; workerId: string },
  done: string | null = null,
): Promise<void> {
  const { pool, tasks, deps } = options;
  /** The job that succeeded and is not deleted yet (the next look deletes it). */
  let finished: string | null = done;
  const deleteFinished = async () => {
    if (finished === null) return;
    const id = finished;
    finished = null;
    await pool.query("delete from graphile_worker._private_jobs where id = $1::bigint", [id]);
  };
  for (let n = 0; n < MAX_FOLLOW_UPS && options.running(); n++) {
    let job: QueuedJob | undefined;
    try {
      const { rows }: pg.QueryResult<QueuedJob> = await pool.query<QueuedJob>(TAKE_NEXT_JOB, [
        held.queueId,
        held.workerId,
        Object.keys(tasks),
        finished,
      ]);
      finished = null;
      job = rows[0];
    } catch (error) {
      // The statement's delete went with it: the job that succeeded must not run again.
      await deleteFinished();
      throw error;
    }
    const task = job && tasks[job.identifier];
    if (!job || !task) return;
    const failure = await attemptJob(deps, task, job);
    if (failure !== null) {
      await pool.query(FAIL_JOB, [job.id, failure]);
      return;
    }
    finished = job.id;
  }
  // The last follow-up allowed, or the instance is stopping: no next look to delete it with.
  await deleteFinished();
}
