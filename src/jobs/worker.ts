import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import {
  Logger,
  makeWorkerUtils,
  parseCronItems,
  type Runner,
  run,
  type TaskList,
  type WorkerEvents,
} from "graphile-worker";
import pg from "pg";
import { prepareMarkedStatements } from "../db/prepared.js";
import type { AppDeps } from "../deps.js";
import type { LocalStart } from "../ports.js";
import { type FollowUpOptions, runFollowUps } from "./follow-ups.js";
import { createJobSlots, type JobSlots } from "./job-slots.js";
import { createLocalStarts } from "./local-start.js";
import { RUNNABLE_TASKS } from "./tasks/index.js";
import type { RunnableTask } from "./types.js";

/**
 * The background side of an instance: a graphile-worker pool that takes jobs
 * from our PostgreSQL (at once, through LISTEN/NOTIFY), runs the timeout sweep
 * once a minute across all instances, and frees the jobs of instances that
 * died (see the reaper below) so queued work never waits for a lock to expire.
 */

export interface Workers {
  /** Jobs this instance adds and starts itself (the webhook's deliveries). */
  local: LocalStart;
  /** Stops taking jobs and waits for the running ones, at most `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface WorkerOptions {
  connectionString: string;
  /** Jobs run at once by this instance. */
  concurrency: number;
  log: {
    info(o: object, m: string): void;
    warn(o: object, m: string): void;
    error(o: object, m: string): void;
  };
  /** How often the reaper looks for jobs locked by dead instances. */
  reapIntervalMs?: number;
  /** Run the minute-by-minute timeout sweep (tests that drive it themselves turn it off). */
  cron?: boolean;
}

const INSTANCE_LOCK_PREFIX = "wa-inbox-instance:";

export async function startWorkers(deps: AppDeps, options: WorkerOptions): Promise<Workers> {
  const instanceId = randomUUID();
  // Held for the life of the instance: other instances (and this one after a
  // restart) read a free lock as "that instance is dead".
  const liveness = new pg.Client({ connectionString: options.connectionString });
  liveness.on("error", (error) => options.log.error({ err: error }, "worker liveness connection failed"));
  await liveness.connect();
  await liveness.query("select pg_advisory_lock(hashtextextended($1, 0))", [
    INSTANCE_LOCK_PREFIX + instanceId,
  ]);

  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.concurrency + 2 });
  pool.on("error", () => undefined);
  prepareMarkedStatements(pool);

  await reapDeadWorkers(pool, options.log);

  let running = true;
  const followUps: FollowUpOptions = { pool, tasks: RUNNABLE_TASKS, deps, running: () => running };
  const taskList: TaskList = {};
  const slots = createJobSlots(options.concurrency);
  for (const [name, task] of Object.entries(RUNNABLE_TASKS)) {
    taskList[name] = wrap(task, deps, followUps, slots);
  }
  // The worker that jobs started here are locked for, known to the reaper before any is.
  const localWorkerId = `local-${instanceId}`;
  await pool.query("insert into worker_instances (worker_id, instance_id) values ($1, $2)", [
    localWorkerId,
    instanceId,
  ]);
  const local = createLocalStarts({ followUps, workerId: localWorkerId, slots });

  // Worker ids are learnt as the workers are created (inside run()): each is recorded under this
  // instance before the reaper's grace period for unknown workers could run out.
  const events = new EventEmitter() as WorkerEvents;
  const registrations: Promise<unknown>[] = [];
  events.on("worker:create", ({ worker }) => {
    registrations.push(
      pool
        .query(
          "insert into worker_instances (worker_id, instance_id) values ($1, $2) on conflict do nothing",
          [worker.workerId, instanceId],
        )
        .catch((error: unknown) => options.log.error({ err: error }, "worker registration failed")),
    );
  });

  const runner: Runner = await run({
    events,
    pgPool: pool,
    concurrency: options.concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: graphileLogger(options.log),
    taskList,
    parsedCronItems: parseCronItems(
      options.cron === false
        ? []
        : [
            {
              task: "sweep-timeouts",
              match: "* * * * *",
              identifier: "sweep-timeouts",
              options: { backfillPeriod: 0, maxAttempts: 1 },
            },
            {
              task: "purge-events",
              match: "17 * * * *",
              identifier: "purge-events",
              options: { backfillPeriod: 0, maxAttempts: 1 },
            },
          ],
    ),
  });
  await Promise.all(registrations);

  const timer = setInterval(() => {
    void reapDeadWorkers(pool, options.log);
  }, options.reapIntervalMs ?? 5_000);
  timer.unref();

  // Empty named queues stay as rows that every job look-up locks: dropped at start (queues of
  // an earlier queue naming included) and every ten minutes.
  const utils = await makeWorkerUtils({ pgPool: pool, logger: graphileLogger(options.log) });
  const collectQueues = () =>
    utils.cleanup({ tasks: ["GC_JOB_QUEUES"] }).then(
      () => undefined,
      (error: unknown) => options.log.error({ err: error }, "dropping empty job queues failed"),
    );
  await collectQueues();
  const gcTimer = setInterval(() => void collectQueues(), 600_000);
  gcTimer.unref();

  let stopped: Promise<void> | undefined;
  return {
    local,
    stop(graceMs = 10_000) {
      stopped ??= (async () => {
        running = false;
        clearInterval(timer);
        clearInterval(gcTimer);
        const timeout = new Promise<"timeout">((resolve) =>
          setTimeout(() => resolve("timeout"), graceMs).unref(),
        );
        const outcome = await Promise.race([
          Promise.all([runner.stop(), local.stop()]).then(() => "stopped" as const),
          timeout,
        ]);
        if (outcome === "timeout") {
          options.log.warn(
            { graceMs },
            "background jobs still running at shutdown; they are freed for other instances",
          );
        } else {
          await pool
            .query("delete from worker_instances where instance_id = $1", [instanceId])
            .catch(() => undefined);
        }
        // Ending the liveness session marks this instance dead: whatever it still
        // held is released by the next reaper, here or on another instance.
        await liveness.end().catch(() => undefined);
        await Promise.resolve(utils.release()).catch(() => undefined);
        await pool.end().catch(() => undefined);
      })();
      return stopped;
    },
  };
}

/**
 * Frees the jobs and queues locked by workers of instances that are gone
 * (their liveness lock is free) so another worker takes them at once,
 * instead of after graphile-worker's 4-hour lock expiry. Workers this table
 * does not know hold their lock a minute before they count as dead.
 */
export async function reapDeadWorkers(pool: pg.Pool, log: WorkerOptions["log"]): Promise<number> {
  try {
    const { rows } = await pool.query<{ worker_id: string }>(`
      with locked as (
        select locked_by as worker_id, min(locked_at) as since from graphile_worker._private_jobs
         where locked_by is not null group by locked_by
        union all
        select locked_by, min(locked_at) from graphile_worker._private_job_queues
         where locked_by is not null group by locked_by
      )
      select distinct l.worker_id
        from locked l left join worker_instances w on w.worker_id = l.worker_id
       where case when w.worker_id is null then l.since < now() - interval '1 minute'
                  else instance_is_dead(w.instance_id) end`);
    if (rows.length === 0) return 0;
    const ids = rows.map((r) => r.worker_id);
    await pool.query("select graphile_worker.force_unlock_workers($1::text[])", [ids]);
    await pool.query("delete from worker_instances where worker_id = any($1::text[])", [ids]);
    log.warn({ workers: ids.length }, "freed the jobs of workers whose instance is gone");
    return ids.length;
  } catch (error) {
    log.error({ err: error }, "looking for jobs of dead instances failed");
    return 0;
  }
}

/** `slots`: a graphile-worker job runs in one of the instance's job slots, shared with jobs started here. */
function wrap(
  task: RunnableTask,
  deps: AppDeps,
  followUps: FollowUpOptions,
  slots: JobSlots,
): TaskList[string] {
  return async (payload, helpers) => {
    await slots.take();
    try {
      await task(payload ?? {}, deps, {
        id: helpers.job.id,
        attempt: helpers.job.attempts,
        maxAttempts: helpers.job.max_attempts,
      });
      const { job_queue_id: queueId, locked_by: workerId } = helpers.job;
      if (queueId === null || workerId === null) return;
      // This job is done whatever happens next: a follow-up's trouble is the follow-up's.
      await runFollowUps(followUps, { queueId, workerId }).catch((error: unknown) =>
        deps.log.error({ err: error }, "running a queue's next jobs failed"),
      );
    } finally {
      slots.give();
    }
  };
}

function graphileLogger(log: WorkerOptions["log"]) {
  return new Logger(() => (level, message, meta) => {
    // The logger given is the jobs' child logger: it says `component` already (once).
    const fields = { ...(meta ?? {}) };
    if (level === "error") log.error(fields, message);
    else if (level === "warning") log.warn(fields, message);
    else if (level === "info") log.info(fields, message);
  });
}
