import type { AppDeps } from "../deps.js";
import type { TaskName, TaskPayload } from "../queue/tasks.js";

/** What a task knows of the job it runs. */
export interface JobInfo {
  id: string;
  /** This attempt's number, starting at 1. */
  attempt: number;
  maxAttempts: number;
}

/**
 * One kind of background work, with the payload its name carries in the task
 * registry (src/queue/tasks.ts). A task must be idempotent: after a crash it may
 * run again, and twice must do what once does (a receipt, a unique key, or a
 * state check at its start). Throwing makes graphile-worker try it again later.
 */
export type Task<N extends TaskName> = (
  payload: TaskPayload<N>,
  deps: AppDeps,
  job: JobInfo,
) => Promise<void>;

/** A task as the worker runs it: a job row's payload, read back from the database. */
export type RunnableTask = (payload: unknown, deps: AppDeps, job: JobInfo) => Promise<void>;
