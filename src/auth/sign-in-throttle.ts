import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import { type RateLimiterAbstract, RateLimiterRes } from "rate-limiter-flexible";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { createStoreLimiter } from "../http/rate-limit.js";

/** Failures of one (email, client) pair are remembered this long (a success forgets them). */
const PAIR_MEMORY_SECONDS = 24 * 60 * 60;
/** The first back-off; each further failure doubles it, up to the window of SIGN_IN_RATE_LIMIT. */
const FIRST_BACK_OFF_SECONDS = 1;
/** Over the per-email budget, an attempt waits this long, doubling per further failure, up to SLOW_MAX_MS. */
const SLOW_FIRST_MS = 250;
const SLOW_MAX_MS = 4_000;

const TABLE = "sign_in_attempts";
const REFUSED = "Too many failed sign-ins; try again later";

/** An attempt the throttle let through: report how it ended. */
export interface SignInAttempt {
  /** The password was wrong (401): the attempt stays counted. */
  failed(): Promise<void>;
  /** Signed in: the pair's failures are forgotten. */
  succeeded(): Promise<void>;
  /** Neither (bad input, refused origin, an error): the attempt is given back. */
  voided(): Promise<void>;
}

export interface SignInThrottle {
  /**
   * Counts one sign-in attempt for `email` from `client` before its password
   * is checked, so that concurrent attempts cannot overshoot. Throws 429 when
   * the client is over its budget or the pair is backing off; waits (never
   * refuses) when the email as a whole is over its budget.
   */
  begin(email: string | undefined, client: string): Promise<SignInAttempt>;
}

/**
 * Sign-in throttling that does not lock a victim out:
 * - per (email, client) pair: SIGN_IN_RATE_LIMIT's count of failures are
 *   free, then each attempt opens a back-off window (1 s, 2 s, 4 s, ... up to
 *   the setting's window) during which the pair is refused with 429;
 * - per client address, over every email: SIGN_IN_IP_RATE_LIMIT failures per
 *   window, then 429 (a guesser trying many emails);
 * - per email, over every client: SIGN_IN_EMAIL_RATE_LIMIT failures per window,
 *   then each attempt is slowed (up to 4 s), never refused, so that an attacker
 *   elsewhere cannot keep the owner of the email from signing in.
 * The counters live in Redis with REDIS_URL, else in Postgres, so every
 * instance shares them. Emails are keyed by a hash, never stored in clear.
 */
/**
 * How a throttle names an email: a hash, so the counters' store (PostgreSQL or
 * Redis) never holds the address, and any input (a NUL, a megabyte) makes a
 * short, storable key.
 */
export const emailThrottleKey = (email: string) =>
  createHash("sha256").update(email).digest("hex").slice(0, 40);

export function createSignInThrottle(
  app: FastifyInstance,
  deps: Pick<AppDeps, "config" | "pool">,
): SignInThrottle {
  const { signInRateLimit: pair, signInIpRateLimit: address, signInEmailRateLimit: email } = deps.config;
  const postgres = { pool: deps.pool, table: TABLE };
  const limiter = (keyPrefix: string, points: number, duration: number) =>
    createStoreLimiter(app, deps, { keyPrefix, points, duration }, postgres);
  const pairFailures = limiter("sign-in:pair", Number.MAX_SAFE_INTEGER, PAIR_MEMORY_SECONDS);
  const pairBackOff = limiter("sign-in:back-off", 1, pair.durationSeconds);
  const addressFailures = limiter("sign-in:address", address.points, address.durationSeconds);
  const emailFailures = limiter("sign-in:email", email.points, email.durationSeconds);

  const backOffSeconds = (failures: number) =>
    Math.min(FIRST_BACK_OFF_SECONDS * 2 ** Math.min(failures - pair.points, 30), pair.durationSeconds);

  return {
    async begin(rawEmail, client) {
      const addressKey = client;
      await take(addressFailures, addressKey);
      if (rawEmail === undefined) {
        return {
          failed: async () => undefined,
          succeeded: () => give(addressFailures, addressKey),
          voided: () => give(addressFailures, addressKey),
        };
      }
      const emailKey = emailThrottleKey(rawEmail);
      const pairKey = `${emailKey}:${client}`;

      const failures = (await pairFailures.consume(pairKey)).consumedPoints;
      if (failures >= pair.points) {
        // Beyond the free failures, one attempt per back-off window gets through.
        try {
          await pairBackOff.consume(pairKey, 1, { customDuration: backOffSeconds(failures) });
        } catch (error) {
          await Promise.all([give(pairFailures, pairKey), give(addressFailures, addressKey)]);
          throw refusal(error);
        }
      }

      const over = await emailFailures.consume(emailKey).then(
        () => 0,
        (error: unknown) => {
          if (!(error instanceof RateLimiterRes)) throw error;
          return error.consumedPoints - email.points;
        },
      );
      if (over > 0) await sleep(Math.min(SLOW_FIRST_MS * 2 ** Math.min(over - 1, 20), SLOW_MAX_MS));

      return {
        failed: async () => undefined,
        async succeeded() {
          // The email's own budget is not reset: an attacker's failures elsewhere still count.
          await Promise.all([
            forget(pairFailures, pairKey),
            forget(pairBackOff, pairKey),
            give(addressFailures, addressKey),
            give(emailFailures, emailKey),
          ]);
        },
        async voided() {
          await Promise.all([
            give(pairFailures, pairKey),
            give(addressFailures, addressKey),
            give(emailFailures, emailKey),
          ]);
        },
      };
    },
  };
}

/** Counts one against `key`; over the budget, gives it back and throws 429. */
async function take(limiter: RateLimiterAbstract, key: string) {
  try {
    await limiter.consume(key);
  } catch (error) {
    await give(limiter, key);
    throw refusal(error);
  }
}

// Best effort: a failed give-back only leaves one attempt too many counted.
const give = (limiter: RateLimiterAbstract, key: string) =>
  limiter.reward(key, 1).then(
    () => undefined,
    () => undefined,
  );
const forget = (limiter: RateLimiterAbstract, key: string) =>
  limiter.delete(key).then(
    () => undefined,
    () => undefined,
  );

function refusal(error: unknown): unknown {
  if (!(error instanceof RateLimiterRes)) return error;
  const seconds = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
  return new ApiError(429, REFUSED, { retry_after_seconds: seconds }, { "retry-after": String(seconds) });
}
