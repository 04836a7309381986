import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../../deps.js";
import { registerRunRoutes } from "./routes.js";

/**
 * Manual starts running at once. Each holds one pooled connection for the
 * contact's lock, so the cap leaves the rest of the pool to the API.
 */
export const MAX_CONCURRENT_ADVANCES = 4;

/** A tiny semaphore: at most `max` pieces of work run at once, the rest queue in order. */
export function createLimiter(max: number) {
  let running = 0;
  const queue: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= max) await new Promise<void>((resolve) => queue.push(resolve));
    running += 1;
    try {
      return await work();
    } finally {
      running -= 1;
      queue.shift()?.();
    }
  };
}

/**
 * The flow runner's HTTP side: the run endpoints. Its background side runs as
 * jobs (src/jobs/tasks): customer messages are offered from the job that
 * processes their delivery, bot messages go out through send jobs, waits end
 * through resume jobs, and the timeout sweep runs once a minute.
 */
export function registerRunner(app: FastifyInstance, deps: AppDeps) {
  registerRunRoutes(app, deps, createLimiter(MAX_CONCURRENT_ADVANCES));
}
