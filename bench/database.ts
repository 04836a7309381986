import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { startEmbeddedPostgres } from "../src/db/embedded.js";
import { runMigrations } from "../src/db/migrate.js";

/**
 * A freshly migrated database for a bench script: on the server named by
 * `--database-url=`, else on an embedded PostgreSQL of its own. What must be
 * undone afterwards (the database, the server, its folder) is put first on
 * `cleanups`, to be run in order.
 */
export async function benchDatabase(
  label: string,
  log: (message: string) => void,
  cleanups: Array<() => Promise<unknown>>,
): Promise<string> {
  let admin = process.argv.find((a) => a.startsWith("--database-url="))?.slice("--database-url=".length);
  if (!admin) {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `wa-${label}-bench-`));
    await fs.chmod(dataDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir, log: { info: () => {}, warn: log } });
    cleanups.unshift(() => fs.rm(dataDir, { recursive: true, force: true }));
    cleanups.unshift(() => embedded.stop());
    admin = embedded.url;
  }
  const name = `${label}_bench_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  cleanups.unshift(async () => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  });
  await runMigrations(url.toString());
  return url.toString();
}
