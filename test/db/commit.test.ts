import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectDatabase, type Database, type DbOrTx } from "../../src/db/client.js";
import { commitUnflushed } from "../../src/db/commit.js";
import { prepared } from "../../src/db/prepared.js";
import { createTestDatabase } from "../helpers/harness.js";

// commitUnflushed lets one statement's transaction commit without waiting for the disk
// (src/db/commit.ts). What must hold: the write is committed and seen by others at once,
// and the connection, back in the pool, commits everything after it synchronously again
// (the bot's advance, which must be on disk before its reply goes to Meta, may run on it next).

let database: Database;
let owned: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  owned = await createTestDatabase();
  // One connection: the statement after the unflushed one runs on the same session.
  database = connectDatabase(owned.url, { max: 1 });
  await database.db.execute(sql`create table commit_probe (n int primary key)`);
});
afterAll(async () => {
  await database.close();
  await owned.drop();
});

const setting = async (db: DbOrTx) =>
  (await db.execute<{ value: string }>(sql`select current_setting('synchronous_commit') as value`)).rows[0]
    ?.value;

describe("a statement committed unflushed", () => {
  it("is committed at once, and the session commits synchronously again after it", async () => {
    for (const n of [1, 2]) {
      const { rows } = await database.db.execute<{ n: number }>(
        prepared(sql`with row as (insert into commit_probe (n) values (${n}::int) returning n)
                     select row.n, ${commitUnflushed} as unflushed from row`),
      );
      expect(rows.map((r) => r.n)).toEqual([n]);
      expect(await setting(database.db)).toBe("on");
    }
    const other = connectDatabase(owned.url, { max: 1 });
    try {
      const seen = await other.db.execute<{ n: number }>(sql`select n from commit_probe order by n`);
      expect(seen.rows.map((r) => r.n)).toEqual([1, 2]);
    } finally {
      await other.close();
    }
  });

  it("holds for its own transaction only when it runs inside one", async () => {
    const during = await database.db.transaction(async (tx) => {
      await tx.execute(sql`select ${commitUnflushed}`);
      return setting(tx);
    });
    expect(during).toBe("off");
    expect(await setting(database.db)).toBe("on");
  });
});
