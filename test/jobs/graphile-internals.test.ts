import { readFileSync } from "node:fs";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/harness.js";

/**
 * The job queue is graphile-worker, used mostly through its public API (add_job, remove_job,
 * force_unlock_workers, the runner). A few hot or recovery paths read and write its private
 * tables directly: a customer queue's next job (src/jobs/follow-ups.ts), reaping dead workers
 * (src/jobs/worker.ts), waiting for quiet (src/jobs/drain.ts), postponing settle jobs after a
 * restart (src/sending/outbound.ts), whether a campaign's held-back event is queued (src/campaigns/events.ts), the index of migration 0011,
 * the jobs an instance adds already locked for itself (migration 0025, src/jobs/local-start.ts), and jobs due later added,
 * and settle jobs removed, without a NOTIFY (migration 0026, src/queue/add.ts). So the version is pinned
 * exactly in package.json, and this test fails when an upgrade changes what those paths rely on.
 */
const USED: Record<string, string[]> = {
  _private_jobs: [
    "id",
    "key",
    "job_queue_id",
    "task_id",
    "payload",
    "priority",
    "run_at",
    "attempts",
    "max_attempts",
    "last_error",
    "locked_at",
    "locked_by",
    "is_available",
    "updated_at",
    "flags",
    "revision",
  ],
  _private_tasks: ["id", "identifier"],
  _private_job_queues: ["id", "queue_name", "locked_at", "locked_by"],
};

describe("graphile-worker's internals this service relies on", () => {
  it("is pinned to one exact version", () => {
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as {
      dependencies: Record<string, string>;
    };
    const installed = JSON.parse(readFileSync("node_modules/graphile-worker/package.json", "utf8")) as {
      version: string;
    };
    expect(manifest.dependencies["graphile-worker"]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(installed.version).toBe(manifest.dependencies["graphile-worker"]);
  });

  it("has the private tables and columns the direct statements use, and the functions they call", async () => {
    const db = await createTestDatabase();
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const { rows } = await pool.query<{ table_name: string; column_name: string }>(
        `select table_name, column_name from information_schema.columns where table_schema = 'graphile_worker'`,
      );
      for (const [table, columns] of Object.entries(USED)) {
        const present = rows.filter((r) => r.table_name === table).map((r) => r.column_name);
        expect(present, `graphile_worker.${table}`).toEqual(expect.arrayContaining(columns));
      }
      const functions = await pool.query<{ proname: string }>(
        `select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'graphile_worker'`,
      );
      expect(functions.rows.map((r) => r.proname)).toEqual(
        expect.arrayContaining(["add_job", "add_jobs", "remove_job", "force_unlock_workers"]),
      );
      const types = await pool.query(
        `select 1 from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = 'graphile_worker' and t.typname = 'job_spec'`,
      );
      expect(types.rowCount).toBe(1);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});
