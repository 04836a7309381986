import type { FastifyInstance, FastifyReply } from "fastify";
import { Redis } from "ioredis";
import type pg from "pg";
import {
  type IRateLimiterOptions,
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";
import type { RateLimitSetting } from "../config.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "./errors.js";

export interface RateLimiter {
  /**
   * Counts one request against `key`. Sets the `RateLimit-Policy` and
   * `RateLimit` headers on the reply; over the limit, throws 429
   * `{ error: "Rate limit exceeded", retry_after_seconds }` with `Retry-After`.
   */
  consume(key: string, reply?: FastifyReply): Promise<void>;
  /** Gives back one point counted against `key` (an attempt that turned out not to count). */
  refund(key: string): Promise<void>;
  /** Forgets everything counted against `key`. */
  reset(key: string): Promise<void>;
}

/** How long a request waits for Redis before it is counted in memory instead. */
const REDIS_COMMAND_TIMEOUT_MS = 500;
const REDIS_CONNECT_TIMEOUT_MS = 2000;

/**
 * A fixed-window limiter of `setting.points` requests per
 * `setting.durationSeconds`. In memory by default; with `config.redisUrl` the
 * counters live in Redis so that every instance shares them, and while Redis
 * cannot answer each instance counts in its own memory (rate-limiter-flexible's
 * insurance limiter) instead of failing requests.
 */
export function createRateLimiter(
  app: FastifyInstance,
  deps: Pick<AppDeps, "config">,
  setting: RateLimitSetting,
  message = "Rate limit exceeded",
  postgres?: { pool: pg.Pool; table: string },
): RateLimiter {
  const limiter = createStoreLimiter(
    app,
    deps,
    { keyPrefix: "wa-inbox:rl", points: setting.points, duration: setting.durationSeconds },
    postgres,
  );

  const policy = `${setting.points};w=${setting.durationSeconds}`;
  const headers = (res: RateLimiterRes) => {
    const reset = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    return {
      reset,
      values: {
        "ratelimit-policy": policy,
        ratelimit: `limit=${setting.points}, remaining=${res.remainingPoints}, reset=${reset}`,
      },
    };
  };

  return {
    async consume(key, reply) {
      let res: RateLimiterRes;
      try {
        res = await limiter.consume(key);
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        const { reset, values } = headers(error);
        throw new ApiError(
          429,
          message,
          { retry_after_seconds: reset },
          { ...values, "retry-after": String(reset) },
        );
      }
      reply?.headers(headers(res).values);
    },
    // Best effort: a failed refund only leaves one attempt too many counted.
    async refund(key) {
      await limiter.reward(key, 1).catch(() => undefined);
    },
    async reset(key) {
      await limiter.delete(key).catch(() => undefined);
    },
  };
}

/**
 * A rate-limiter-flexible limiter on the shared store: Redis when
 * `config.redisUrl` is set (each instance counting in its own memory while
 * Redis cannot answer), else the Postgres table `postgres.table` when given
 * (so that several instances without Redis share the counters), else memory.
 */
export function createStoreLimiter(
  app: FastifyInstance,
  deps: Pick<AppDeps, "config">,
  options: IRateLimiterOptions,
  postgres?: { pool: pg.Pool; table: string },
): RateLimiterAbstract {
  const redisUrl = deps.config.redisUrl;
  if (redisUrl) {
    const store = redisStore(app, redisUrl);
    return new RateLimiterRedis({
      ...options,
      storeClient: store.client,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new InsuranceLimiter(options, () => store.degraded("a rate-limit command failed")),
    });
  }
  if (postgres) {
    // The table is made by a migration; expired rows are cleared every few minutes.
    return new RateLimiterPostgres({
      ...options,
      storeClient: postgres.pool,
      storeType: "pool",
      tableName: postgres.table,
      tableCreated: true,
      clearExpiredByTimeout: true,
    });
  }
  return new RateLimiterMemory(options);
}

/** The in-memory stand-in used while Redis is unavailable; it reports each use. */
class InsuranceLimiter extends RateLimiterMemory {
  constructor(
    options: IRateLimiterOptions,
    private readonly onUse: () => void,
  ) {
    super(options);
  }

  override consume(...args: Parameters<RateLimiterMemory["consume"]>) {
    this.onUse();
    return super.consume(...args);
  }
}

interface RedisStore {
  client: Redis;
  /** Logs, once per outage, that limits are now counted per instance. */
  degraded(reason: string): void;
}

// One connection per app, whatever the number of limiters.
const stores = new WeakMap<FastifyInstance, RedisStore>();

function redisStore(app: FastifyInstance, url: string): RedisStore {
  const existing = stores.get(app);
  if (existing) return existing;

  const client = new Redis(url, {
    connectionName: "wa-inbox-rate-limit",
    // Never queue or retry a command while disconnected: the request falls
    // back to memory at once instead of waiting for Redis to return.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
  });
  let down = false;
  const store: RedisStore = {
    client,
    degraded(reason) {
      if (down) return;
      down = true;
      // The URL may carry a password: it is never logged.
      app.log.warn(
        { reason },
        "Redis rate-limit store unavailable: rate limits are counted in this instance's memory until it is back",
      );
    },
  };
  client.on("error", (error: Error) => store.degraded(error.message));
  client.on("close", () => store.degraded("connection closed"));
  client.on("ready", () => {
    if (!down) return;
    down = false;
    app.log.info("Redis rate-limit store is back: rate limits are shared again");
  });
  stores.set(app, store);

  // Start serving with the shared store when it answers in time; otherwise
  // start anyway, counting in memory until it connects.
  app.addHook("onReady", async () => {
    if (client.status === "ready") return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off("ready", done);
        client.off("error", done);
        resolve();
      };
      const timer = setTimeout(done, REDIS_CONNECT_TIMEOUT_MS);
      client.on("ready", done);
      client.on("error", done);
    });
  });
  app.addHook("onClose", async () => {
    down = true; // a deliberate close is no outage to report
    if (client.status === "ready") {
      await client.quit().catch(() => client.disconnect());
    } else {
      client.disconnect();
    }
  });
  return store;
}
