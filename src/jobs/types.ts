import type { AppDeps } from "../deps.js";

/** What a task knows of the job it runs. */
export interface JobInfo {
  id: string;
  /** This attempt's number, starting at 1. */
  attempt: number;
  maxAttempts: number;
}

/**
 * One kind of background work. A task must be idempotent: after a crash it may
 * run again, and twice must do what once does (a receipt, a unique key, or a
 * state check at its start). Throwing makes graphile-worker try it again later.
 */
export type Task = (payload: Record<string, unknown>, deps: AppDeps, job: JobInfo) => Promise<void>;
