import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectDatabase, type Database } from "../../src/db/client.js";
import { prepared, preparedText } from "../../src/db/prepared.js";
import { createTestDatabase } from "../helpers/harness.js";

// Statements marked with prepared() run as named prepared statements on the app's connections
// (src/db/prepared.ts); every other statement stays unnamed, planned at each execution.

let database: Database;
let owned: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  owned = await createTestDatabase();
  database = connectDatabase(owned.url, { max: 1 });
});
afterAll(async () => {
  await database.close();
  await owned.drop();
});

/** The session's prepared statements, as PostgreSQL lists them. */
async function preparedStatements(db: { execute: ReturnType<typeof drizzle>["execute"] }) {
  const { rows } = await db.execute<{ name: string; statement: string }>(
    sql`select name, statement from pg_prepared_statements order by prepare_time`,
  );
  return rows;
}

describe("prepared statements", () => {
  it("prepares a marked statement once per connection and reuses it with new parameters", async () => {
    const client = await database.pool.connect();
    try {
      const db = drizzle(client);
      const marked = (n: number) => prepared(sql`select ${n}::int + 1 as next`);
      const answers = [];
      for (const n of [1, 2, 3]) answers.push((await db.execute<{ next: number }>(marked(n))).rows[0]?.next);
      expect(answers).toEqual([2, 3, 4]);
      const statements = await preparedStatements(db);
      expect(statements).toHaveLength(1);
      expect(statements[0]!.name).toMatch(/^p_[0-9a-f]{24}$/);
      expect(statements[0]!.statement).toContain("select $1::int + 1 as next");
    } finally {
      client.release();
    }
  });

  it("leaves unmarked statements unnamed, and gives different texts different names", async () => {
    const client = await database.pool.connect();
    try {
      const db = drizzle(client);
      await db.execute(sql`select ${1}::int as plain`);
      await db.execute(prepared(sql`select ${1}::int as one`));
      await db.execute(prepared(sql`select ${1}::int as other`));
      const statements = await preparedStatements(db);
      expect(statements.some((s) => s.statement.includes("as plain"))).toBe(false);
      const ours = statements.filter((s) => /as (one|other)/.test(s.statement));
      expect(new Set(ours.map((s) => s.name)).size).toBe(2);
    } finally {
      client.release();
    }
  });

  it("prepares a marked statement given as text with its values, as the job queue's pool runs them", async () => {
    const client = await database.pool.connect();
    try {
      const text = preparedText("select $1::int * 2 as twice");
      const first = await client.query<{ twice: number }>(text, [21]);
      const second = await client.query<{ twice: number }>(text, [5]);
      expect([first.rows[0]?.twice, second.rows[0]?.twice]).toEqual([42, 10]);
      const { rows } = await client.query<{ statement: string }>(
        "select statement from pg_prepared_statements",
      );
      expect(rows.filter((r) => r.statement.includes("as twice"))).toHaveLength(1);
    } finally {
      client.release();
    }
  });
});
