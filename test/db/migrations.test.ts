import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR, runMigrations } from "../../src/db/migrate.js";
import { createTestDatabase } from "../helpers/harness.js";

describe("migrations", () => {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as {
    entries: Array<{ idx: number; when: number; tag: string }>;
  };

  it("have journal timestamps that strictly increase", () => {
    expect(journal.entries.length).toBeGreaterThan(0);
    for (let i = 1; i < journal.entries.length; i++) {
      const [before, after] = [journal.entries[i - 1]!, journal.entries[i]!];
      expect(after.when, `${after.tag} must be newer than ${before.tag}`).toBeGreaterThan(before.when);
      expect(after.idx).toBe(before.idx + 1);
    }
  });

  it("can run from several instances at once and apply each migration once", async () => {
    const db = await createTestDatabase();
    try {
      // The template is already migrated: running again, concurrently, must be a no-op.
      await Promise.all([runMigrations(db.url), runMigrations(db.url), runMigrations(db.url)]);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client.query("select count(*)::int as n from drizzle.__drizzle_migrations");
      await client.end();
      expect(rows[0].n).toBe(journal.entries.length);
    } finally {
      await db.drop();
    }
  });
});
