import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../../deps.js";
import { handleInboundMessage } from "./dispatch.js";
import { registerRunRoutes } from "./routes.js";
import { SWEEP_INTERVAL_MS, sweepTimedOutRuns } from "./timeouts.js";

/**
 * Advances running at once. Each holds one pooled connection for the
 * contact's lock (and the inbox's send path borrows another), so the cap
 * leaves the rest of the pool to the webhook and the API.
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
 * The flow runner: advances runs on every stored inbound customer message,
 * times out stale runs every minute, and serves the run endpoints.
 */
export function registerRunner(app: FastifyInstance, deps: AppDeps) {
  const limit = createLimiter(MAX_CONCURRENT_ADVANCES);
  deps.events.onInboundMessage(async (event) => {
    const outcome = await limit(() => handleInboundMessage(deps, event));
    app.log.debug({ messageId: event.messageId, outcome }, "flow runner took an inbound message");
  });

  const timer = setInterval(() => {
    sweepTimedOutRuns(deps, deps.now())
      .then((result) => {
        if (result.timedOut > 0) app.log.info({ timedOut: result.timedOut }, "flow runs timed out");
      })
      .catch((error: unknown) => app.log.error({ err: error }, "flow run timeout sweep failed"));
  }, SWEEP_INTERVAL_MS);
  timer.unref();
  app.addHook("onClose", async () => clearInterval(timer));

  registerRunRoutes(app, deps, limit);
}
