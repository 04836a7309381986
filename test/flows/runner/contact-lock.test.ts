import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commitWith, type DbOrTx, transactionOpenedWith } from "../../../src/db/client.js";
import { prepareMarkedStatements } from "../../../src/db/prepared.js";
import { onCommit, withContactLock } from "../../../src/flows/runner/store.js";
import { createTestDatabase } from "../../helpers/harness.js";

/**
 * withContactLock begins its transaction and takes the contact's lock in one
 * round trip (transactionOpenedWith, src/db/client.ts: a drizzle transaction
 * on a connection whose `begin` the caller sends, pipelined with the work's
 * first statement): what every advance and every send's record rely on.
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;

const rows = async () =>
  (await pool.query<{ label: string }>("select label from lock_probe order by id")).rows.map((r) => r.label);
const insert = (db: DbOrTx, label: string) =>
  db.execute(sql`insert into lock_probe (label) values (${label})`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it. */
function signal(): { done: Promise<void>; give: () => void } {
  let give!: () => void;
  const done = new Promise<void>((resolve) => {
    give = resolve;
  });
  return { done, give };
}

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  // A connection still closing when the database is dropped at the end reports it: nothing to do.
  pool.on("error", () => undefined);
  prepareMarkedStatements(pool);
  await pool.query("create table lock_probe (id serial primary key, label text not null)");
});

afterAll(async () => {
  await pool.end();
  await database.drop();
});

describe("withContactLock", () => {
  it("is built on the exact drizzle-orm version whose transaction classes it uses", () => {
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies["drizzle-orm"]).toMatch(/^\d+\.\d+\.\d+$/);
    const installed = JSON.parse(readFileSync("node_modules/drizzle-orm/package.json", "utf8")) as {
      version: string;
    };
    expect(installed.version).toBe(manifest.dependencies["drizzle-orm"]);
  });

  it("runs one contact's transactions one after another, and other contacts' beside them", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    const other = { accountId: contact.accountId, contactId: randomUUID() };
    const locked = signal();
    const otherDone = signal();
    const first = withContactLock(pool, contact, async (db) => {
      await insert(db, "first: start");
      locked.give();
      // The other contact's transaction runs while this one holds its lock; the same contact's
      // second one gets time to run too, and must not.
      await otherDone.done;
      await sleep(300);
      await insert(db, "first: end");
    });
    await locked.done;
    const second = withContactLock(pool, contact, (db) => insert(db, "second"));
    const beside = withContactLock(pool, other, (db) => insert(db, "other contact")).then(otherDone.give);
    await Promise.all([first, second, beside]);
    expect(await rows()).toEqual(["first: start", "other contact", "first: end", "second"]);
  });

  it("writes nothing of a transaction that throws, runs none of its commit hooks, and frees lock and connection", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    let hookRan = false;
    await expect(
      withContactLock(pool, contact, async (db) => {
        await insert(db, "rolled back");
        const registered = onCommit(db, async () => {
          hookRan = true;
        });
        expect(registered).toBe(true);
        throw new Error("the advance failed");
      }),
    ).rejects.toThrow("the advance failed");
    expect(await rows()).toEqual([]);
    expect(hookRan).toBe(false);
    expect(pool.idleCount).toBe(pool.totalCount);
    // The lock went with the transaction: the next one of the same contact does not wait.
    const started = Date.now();
    await withContactLock(pool, contact, (db) => insert(db, "next"));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await rows()).toEqual(["next"]);
  });

  it("runs commit hooks once the writes are visible to every connection", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    let seen: string[] = [];
    await withContactLock(pool, contact, async (db) => {
      await insert(db, "committed");
      onCommit(db, async () => {
        seen = await rows();
      });
    });
    expect(seen).toEqual(["committed"]);
  });

  it("gives a working drizzle transaction: queries, relational queries and nested savepoints", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    const flows = await withContactLock(pool, contact, async (db) => {
      await insert(db, "outer");
      await db
        .transaction(async (inner) => {
          await insert(inner, "inner, rolled back");
          throw new Error("inner");
        })
        .catch(() => undefined);
      return db.query.flows.findMany({ limit: 1 });
    });
    expect(flows).toEqual([]);
    expect(await rows()).toEqual(["outer"]);
  });

  it("locks keys that are not UUIDs too, passing them as a parameter, never as text of the statement", async () => {
    await pool.query("truncate lock_probe");
    const odd = { accountId: "x'); drop table lock_probe; --", contactId: "y" };
    const locked = signal();
    const first = withContactLock(pool, odd, async (db) => {
      await insert(db, "odd: start");
      locked.give();
      await sleep(300);
      await insert(db, "odd: end");
    });
    await locked.done;
    const second = withContactLock(pool, odd, (db) => insert(db, "odd: second"));
    await Promise.all([first, second]);
    expect(await rows()).toEqual(["odd: start", "odd: end", "odd: second"]);
  });
  it("sends the work's first statement behind the opening before the opening is answered", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    const key = `flow-runner:${contact.accountId}:${contact.contactId}`;
    // Another connection holds the contact's lock, so the opening cannot be answered until it lets go.
    const holder = await pool.connect();
    await holder.query("begin");
    await holder.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [key]);
    const written: string[] = [];
    const watched = new WeakSet<object>();
    const watch = (client: pg.PoolClient) => {
      const stream = (
        client as unknown as { connection: { stream: { write: (...a: unknown[]) => boolean } } }
      ).connection.stream;
      if (watched.has(stream)) return;
      watched.add(stream);
      const write = stream.write.bind(stream);
      stream.write = (chunk: unknown, ...rest: unknown[]) => {
        if (Buffer.isBuffer(chunk)) written.push(chunk.toString("latin1"));
        return write(chunk, ...rest);
      };
    };
    // Every idle connection of the pool is watched, whichever the transaction gets.
    const idle = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    for (const client of idle) {
      watch(client);
      client.release();
    }
    let answered = false;
    const run = withContactLock(pool, contact, async (db) => {
      await insert(db, "behind the opening");
      answered = true;
    });
    await sleep(300);
    expect(answered).toBe(false);
    expect(written.some((chunk) => chunk.includes("pg_advisory_xact_lock"))).toBe(true);
    expect(written.some((chunk) => chunk.includes("insert into lock_probe"))).toBe(true);
    await holder.query("commit");
    holder.release();
    await run;
    expect(await rows()).toEqual(["behind the opening"]);
  });

  it("throws an opening's failure, writes none of the work, and gives the connection back unpipelined", async () => {
    await pool.query("truncate lock_probe");
    const solo = new pg.Pool({ connectionString: database.url, max: 1 });
    solo.on("error", () => undefined);
    try {
      await expect(
        transactionOpenedWith(solo, "begin; select 1 / 0", async (db) => {
          await insert(db, "after a failed opening");
        }),
      ).rejects.toThrow("division by zero");
      const client = (await solo.connect()) as pg.PoolClient & { pipeline?: boolean };
      try {
        expect(client.pipeline).toBe(false);
        expect((await client.query("select 2 as two")).rows).toEqual([{ two: 2 }]);
      } finally {
        client.release();
      }
      expect(await rows()).toEqual([]);
    } finally {
      await solo.end();
    }
  });
  it("sends a last statement and the commit together, and refuses a statement after them", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    const written: string[] = [];
    const idle = await Promise.all([pool.connect(), pool.connect(), pool.connect(), pool.connect()]);
    for (const client of idle) {
      const stream = (
        client as unknown as { connection: { stream: { write: (...a: unknown[]) => boolean } } }
      ).connection.stream;
      const write = stream.write.bind(stream);
      stream.write = (chunk: unknown, ...rest: unknown[]) => {
        if (Buffer.isBuffer(chunk)) written.push(chunk.toString("latin1"));
        return write(chunk, ...rest);
      };
      client.release();
    }
    let commitSentBeforeAnswer = false;
    let after: unknown;
    await withContactLock(pool, contact, async (db) => {
      await insert(db, "first");
      const last = commitWith(db, sql`insert into lock_probe (label) select 'last' from pg_sleep(0.3)`);
      await sleep(100);
      // The statement is still running in PostgreSQL, and the commit is on its way behind it.
      commitSentBeforeAnswer = written.some((chunk) => /Q[\s\S]{4}commit\0/.test(chunk));
      await last;
      after = await insert(db, "after the commit").catch((error: Error) => error);
    });
    expect(commitSentBeforeAnswer).toBe(true);
    expect(after).toBeInstanceOf(Error);
    // drizzle names the statement, and gives the reason as the cause.
    expect(String((after as Error & { cause?: Error }).cause?.message)).toContain("no statement may follow");
    expect(await rows()).toEqual(["first", "last"]);
    expect(pool.idleCount).toBe(pool.totalCount);
  });

  it("rolls the whole transaction back when its last statement fails", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    let hookRan = false;
    await expect(
      withContactLock(pool, contact, async (db) => {
        await insert(db, "rolled back");
        onCommit(db, async () => {
          hookRan = true;
        });
        await commitWith(
          db,
          sql`insert into lock_probe (label) values ((1 / (select count(*) - 1 from lock_probe))::text)`,
        );
      }),
    ).rejects.toMatchObject({ cause: { message: "division by zero" } });
    expect(await rows()).toEqual([]);
    expect(hookRan).toBe(false);
    // The lock went with the transaction, and the connection works unpipelined.
    await withContactLock(pool, contact, (db) => insert(db, "next"));
    expect(await rows()).toEqual(["next"]);
  });
  it("reports nothing committed when the work goes on after its last statement failed", async () => {
    await pool.query("truncate lock_probe");
    const contact = { accountId: randomUUID(), contactId: randomUUID() };
    await expect(
      withContactLock(pool, contact, async (db) => {
        await insert(db, "rolled back");
        await commitWith(db, sql`select 1 / (select count(*) - 1 from lock_probe)`).catch(() => undefined);
      }),
    ).rejects.toThrow("nothing was committed");
    expect(await rows()).toEqual([]);
  });
});
