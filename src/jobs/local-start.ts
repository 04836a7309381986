import type { LocallyStartedJob, LocalStart } from "../ports.js";
import { attemptJob, FAIL_JOB, type FollowUpOptions, runFollowUps } from "./follow-ups.js";
import type { JobSlots } from "./job-slots.js";

/**
 * The instance's jobs that it added itself and starts at once (LocalStart in
 * ports.ts). A webhook delivery's job is inserted already locked, with its
 * queue, for this worker (src/db/migrations/0025_jobs_started_here.sql), and
 * runs here as soon as the insert commits: the customer's message is stored
 * and answered without a graphile-worker look-up (and the NOTIFY that wakes it)
 * between the webhook's answer and the work.
 *
 * Such a job is like one graphile-worker took: its attempt is counted, the
 * queue's next due jobs run after it (follow-ups), it is deleted when it
 * succeeds and given back with graphile-worker's backoff when it throws, and
 * the queue is unlocked at the end. Its worker is registered under the
 * instance, so if the instance dies the reaper frees the job and its queue for
 * another instance. Jobs started here and graphile-worker's share the
 * instance's job slots (job-slots.ts): a job is started here only in a slot no
 * graphile-worker job waits for.
 */
export interface LocalStarts extends LocalStart {
  /** Starts no more jobs; resolves once those running have ended. */
  stop(): Promise<void>;
}

/** Unlocks the queue (parameter `queue`) if the worker (parameter `worker`) holds it. */
const unlockQueue = (queue: string, worker: string) => `update graphile_worker._private_job_queues
    set locked_at = null, locked_by = null where id = ${queue} and locked_by = ${worker}`;

/** Unlocks the queue $1 held by the worker $2. */
const UNLOCK_QUEUE = unlockQueue("$1", "$2");

/** Gives the job $1 back (FAIL_JOB, its error $2) and unlocks its queue $3 held by the worker $4. */
const FAIL_AND_UNLOCK = `with failed as (${FAIL_JOB}) ${unlockQueue("$3", "$4")}`;

/**
 * Hands the job $1 back untried (its attempt uncounted) and unlocks its queue $3, both held by the
 * worker $2: a stopping instance leaves them to the queue's other workers.
 */
const HAND_BACK = `with back as (
    update graphile_worker._private_jobs set locked_at = null, locked_by = null, attempts = attempts - 1
     where id = $1::bigint and locked_by = $2
  ) ${unlockQueue("$3", "$2")}`;

/** Tries a statement that frees locks three times, a second apart: a lock left behind stalls its queue. */
async function release(pool: FollowUpOptions["pool"], text: string, values: unknown[]) {
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query(text, values);
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export function createLocalStarts(options: {
  followUps: FollowUpOptions;
  workerId: string;
  slots: JobSlots;
}): LocalStarts {
  const { followUps, workerId } = options;
  const { pool, tasks, deps } = followUps;
  const running = new Set<Promise<void>>();
  let stopping = false;

  const runOne = async (job: LocallyStartedJob) => {
    const held = { queueId: job.queue_id, workerId };
    const failure = await attemptJob(deps, tasks[job.identifier], job);
    if (failure !== null) {
      await release(pool, FAIL_AND_UNLOCK, [job.id, failure, held.queueId, workerId]);
      return;
    }
    // The job is done whatever happens next: a follow-up's trouble is the follow-up's.
    await runFollowUps(followUps, held, job.id).catch((error: unknown) =>
      deps.log.error({ err: error }, "running a queue's next jobs failed"),
    );
    await release(pool, UNLOCK_QUEUE, [held.queueId, workerId]);
  };

  return {
    offer() {
      if (stopping) return null;
      const max = options.slots.available();
      return max > 0 ? { workerId, max } : null;
    },
    run(jobs) {
      for (const job of jobs) {
        if (stopping) {
          // Offered before the stop, added after it: any instance's worker takes it from the queue
          // (if this statement fails too, the reaper frees it once this instance is gone).
          void release(pool, HAND_BACK, [job.id, workerId, job.queue_id]).catch((error: unknown) =>
            deps.log.error({ err: error, jobId: job.id }, "handing a job back at shutdown failed"),
          );
          continue;
        }
        // Locked for this instance already: it runs even if the slots offered were taken meanwhile.
        options.slots.claim();
        const work: Promise<void> = runOne(job)
          .catch((error: unknown) =>
            // The job and its queue stay locked: the reaper frees them once this instance is gone.
            deps.log.error({ err: error, jobId: job.id }, "ending a job started here failed"),
          )
          .finally(() => {
            running.delete(work);
            options.slots.give();
          });
        running.add(work);
      }
    },
    async stop() {
      stopping = true;
      await Promise.all([...running]);
    },
  };
}
