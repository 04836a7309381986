import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../src/db/embedded.js";
import { runMigrations } from "../../src/db/migrate.js";

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    databasePrefix: string;
  }
}

/**
 * One PostgreSQL for the whole run: embedded by default, or the server named by
 * TEST_DATABASE_URL. Migrations are applied once to a template database; each
 * test file clones it (see harness.ts).
 */
export default async function setup(project: TestProject) {
  let embedded: EmbeddedPostgres | undefined;
  let dataDir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl) {
    console.log(`tests use the PostgreSQL server named by TEST_DATABASE_URL`);
  } else {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wa-inbox-test-"));
    // The embedded server runs as its own user, which must be able to reach the folder.
    await fs.chmod(dataDir, 0o755);
    embedded = await startEmbeddedPostgres({ dataDir, log: { info: () => {}, warn: console.warn } });
    adminUrl = embedded.url;
  }

  const prefix = `wa_test_${randomBytes(4).toString("hex")}`;
  const template = `${prefix}_template`;
  await withClient(adminUrl, (c) => c.query(`create database ${template}`));
  await runMigrations(withDatabase(adminUrl, template));

  project.provide("adminUrl", adminUrl);
  project.provide("templateDatabase", template);
  project.provide("databasePrefix", prefix);

  return async () => {
    if (embedded) {
      await embedded.stop();
      if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
      return;
    }
    await withClient(adminUrl, async (c) => {
      const { rows } = await c.query<{ datname: string }>(
        "select datname from pg_database where datname like $1",
        [`${prefix}%`],
      );
      for (const { datname } of rows) {
        await c.query(`drop database if exists ${c.escapeIdentifier(datname)} with (force)`);
      }
    });
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
