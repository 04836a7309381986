import type pg from "pg";
import type { Jobs } from "../ports.js";

/** `sends`: the instance's send pipeline, whose sends in flight count as busy too. */
export function createJobs(pool: pg.Pool, sends?: { idle(): boolean }): Jobs {
  return {
    async drain({ timeoutMs = 20_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      let quiet = 0;
      // Two quiet looks in a row: a job may add the next one as it completes.
      while (quiet < 2) {
        const { rows } = await pool.query<{ busy: boolean }>(
          `select exists (
             select 1 from graphile_worker._private_jobs
              where locked_at is not null or (run_at <= now() and attempts < max_attempts)
           ) as busy`,
        );
        quiet = rows[0]?.busy || (sends && !sends.idle()) ? 0 : quiet + 1;
        if (quiet < 2) {
          if (Date.now() > deadline) throw new Error(`background jobs still busy after ${timeoutMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 15));
        }
      }
    },
  };
}

export type { Jobs } from "../ports.js";
