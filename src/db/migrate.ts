import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { Logger, runMigrations as runJobQueueMigrations } from "graphile-worker";
import pg from "pg";

export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

// An arbitrary constant shared by every instance of the service.
const MIGRATION_LOCK_ID = 727_314_001;

const quietLogger = new Logger(() => () => undefined);

/**
 * Applies pending migrations under a session-level advisory lock, so instances
 * that start together take turns: the first migrates, the others find nothing
 * left to do.
 */
export async function runMigrations(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
    // The job queue's own schema (graphile_worker) first: our migrations may call add_job.
    // On a pool of our own that we end here: an idle connection of it that the server closes
    // (a test dropping its database) is not an uncaught error.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on("error", () => undefined);
    try {
      await runJobQueueMigrations({ pgPool: pool, logger: quietLogger });
    } finally {
      await pool.end();
    }
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}
