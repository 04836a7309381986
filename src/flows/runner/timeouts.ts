import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import type { Database } from "../../db/client.js";
import * as schema from "../../db/schema/index.js";
import { DEFAULT_FALLBACK_POLICY, flowRunEvents } from "../../db/schema/index.js";
import { MAX_TIMEOUT_HOURS } from "../triggers.js";

/** Runs ended per statement; a sweep repeats until none is left. */
const SWEEP_BATCH = 500;

/**
 * Ends `timed_out` every active run whose last activity is older than its
 * flow's on_timeout_hours (an invalid or missing value counts as the default,
 * like resolveFallbackPolicy), with a `timeout` event. Only one instance
 * sweeps at a time: the others find the advisory lock taken and skip.
 */
export async function sweepTimedOutRuns(
  deps: { pool: Database["pool"] },
  now: Date,
): Promise<{ swept: boolean; timedOut: number }> {
  const client = await deps.pool.connect();
  let broken: Error | undefined;
  try {
    const locked = await client.query<{ locked: boolean }>(
      "select pg_try_advisory_lock(hashtextextended('flow-runner:timeout-sweep', 0)) as locked",
    );
    if (!locked.rows[0]?.locked) return { swept: false, timedOut: 0 };
    try {
      const db = drizzle(client, { schema });
      const hours = sql`(case
        when jsonb_typeof(f.fallback_policy -> 'on_timeout_hours') = 'number'
          and (f.fallback_policy ->> 'on_timeout_hours')::float8 > 0
          and (f.fallback_policy ->> 'on_timeout_hours')::float8 <= ${MAX_TIMEOUT_HOURS}
        then (f.fallback_policy ->> 'on_timeout_hours')::float8
        else ${DEFAULT_FALLBACK_POLICY.on_timeout_hours}::float8 end)`;
      let timedOut = 0;
      for (;;) {
        const ended = await db.transaction(async (tx) => {
          const rows = await tx.execute<{
            id: string;
            flow_id: string;
            current_node_key: string | null;
            hours: number;
          }>(sql`
          update flow_runs r
          set status = 'timed_out', end_reason = 'timeout', ended_at = ${now}, last_activity_at = ${now},
              question_sent_at = null
          from (
            select r2.id, ${hours} as hours
            from flow_runs r2 join flows f on f.id = r2.flow_id
            where r2.status = 'active' and r2.resume_at is null and r2.awaiting_message_id is null
              and r2.last_activity_at < ${now}::timestamptz - make_interval(secs => ${hours} * 3600)
            limit ${SWEEP_BATCH}
            for update of r2 skip locked
          ) due
          where r.id = due.id and r.status = 'active'
          returning r.id, r.flow_id, r.current_node_key, due.hours`);
          // Same transaction: the ended runs stay locked, so a flow deletion
          // cannot remove them before their events are written.
          if (rows.rows.length > 0) {
            await tx.insert(flowRunEvents).values(
              rows.rows.map((row) => ({
                runId: row.id,
                flowId: row.flow_id,
                eventType: "timeout",
                nodeKey: row.current_node_key,
                payload: { on_timeout_hours: Number(row.hours) },
                createdAt: now,
              })),
            );
          }
          return rows;
        });
        timedOut += ended.rows.length;
        if (ended.rows.length < SWEEP_BATCH) return { swept: true, timedOut };
      }
    } finally {
      await client.query("select pg_advisory_unlock(hashtextextended('flow-runner:timeout-sweep', 0))");
    }
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}
