import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DbOrTx } from "../../../src/db/client.js";
import { prepareMarkedStatements } from "../../../src/db/prepared.js";
import { createContactTransactions, onCommit } from "../../../src/flows/runner/store.js";
import { createTestDatabase } from "../../helpers/harness.js";

/**
 * The hot path's contact-locked transactions, several contacts to one
 * (createContactTransactions, src/flows/runner/store.ts): what a customer
 * message's advance and a bot send's record go through.
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;

const contact = (accountId = randomUUID()) => ({ accountId, contactId: randomUUID() });
const labels = async () =>
  (await pool.query<{ label: string }>("select label from batch_probe order by label")).rows.map(
    (r) => r.label,
  );
const insert = (db: DbOrTx, label: string) =>
  db.execute(sql`insert into batch_probe (label) values (${label})`);
/** Inserts `label` and answers the id of the transaction it was written in. */
const insertAndTell = async (db: DbOrTx, label: string) => {
  await insert(db, label);
  const { rows } = await db.execute<{ xid: string }>(sql`select txid_current()::text as xid`);
  return rows[0]?.xid;
};
const lockKey = (key: { accountId: string; contactId: string }) =>
  `flow-runner:${key.accountId}:${key.contactId}`;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 6 });
  pool.on("error", () => undefined);
  prepareMarkedStatements(pool);
  await pool.query("create table batch_probe (label text primary key)");
});

afterAll(async () => {
  await pool.end();
  await database.drop();
});

describe("contact transactions shared by several contacts", () => {
  it("writes the works asked for together in one transaction, and runs each one's hooks after its commit", async () => {
    await pool.query("truncate batch_probe");
    const transactions = createContactTransactions(pool);
    const seenByHooks: string[][] = [];
    const keys = [contact(), contact(), contact()];
    const xids = await Promise.all(
      keys.map((key, i) =>
        transactions.run(key, async (db) => {
          const xid = await insertAndTell(db, `contact ${i}`);
          // A hook sees every work of the transaction committed, from another connection.
          onCommit(db, async () => {
            seenByHooks.push(await labels());
          });
          return xid;
        }),
      ),
    );
    expect(new Set(xids).size).toBe(1);
    expect(await labels()).toEqual(["contact 0", "contact 1", "contact 2"]);
    expect(seenByHooks).toEqual([
      ["contact 0", "contact 1", "contact 2"],
      ["contact 0", "contact 1", "contact 2"],
      ["contact 0", "contact 1", "contact 2"],
    ]);
  });

  it("holds each contact's lock while its works run", async () => {
    const transactions = createContactTransactions(pool);
    const keys = [contact(), contact()];
    const free = async (key: { accountId: string; contactId: string }) => {
      const { rows } = await pool.query<{ got: boolean }>(
        "select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as got",
        [lockKey(key)],
      );
      return rows[0]?.got;
    };
    const during = await Promise.all(
      keys.map((key) =>
        transactions.run(key, async (db) => {
          // A work's statements go behind the opening that takes the locks, as this one does.
          await db.execute(sql`select 1`);
          return free(key);
        }),
      ),
    );
    expect(during).toEqual([false, false]);
    expect(await Promise.all(keys.map(free))).toEqual([true, true]);
  });

  it("runs a contact's works one after another, each in a transaction of its own", async () => {
    await pool.query("truncate batch_probe");
    const transactions = createContactTransactions(pool);
    const key = contact();
    const other = contact(key.accountId);
    const [first, second, beside] = await Promise.all([
      transactions.run(key, (db) => insertAndTell(db, "first")),
      // The same contact's second work sees the first one's row: it ran after that commit.
      transactions.run(key, async (db) => {
        const { rows } = await db.execute<{ n: number }>(
          sql`select count(*)::int as n from batch_probe where label = 'first'`,
        );
        return { xid: await insertAndTell(db, "second"), sawFirst: rows[0]?.n === 1 };
      }),
      transactions.run(other, (db) => insertAndTell(db, "other contact")),
    ]);
    expect(second.sawFirst).toBe(true);
    expect(second.xid).not.toBe(first);
    expect(beside).toBe(first);
    expect(await labels()).toEqual(["first", "other contact", "second"]);
  });

  it("writes the others once when one work throws, and gives that work's error to its caller alone", async () => {
    await pool.query("truncate batch_probe");
    const transactions = createContactTransactions(pool);
    const tries: string[] = [];
    const outcomes = await Promise.allSettled(
      ["a", "b", "c"].map((label) =>
        transactions.run(contact(), async (db) => {
          tries.push(label);
          await insert(db, label);
          if (label === "b") throw new Error("the flow failed");
          return label;
        }),
      ),
    );
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message))).toEqual([
      "a",
      "the flow failed",
      "c",
    ]);
    // Each ran a second time on its own after the shared transaction rolled back.
    expect(tries.sort()).toEqual(["a", "a", "b", "b", "c", "c"]);
    expect(await labels()).toEqual(["a", "c"]);
  });

  it("writes nothing of a transaction whose statement failed, though the work that sent it went on", async () => {
    await pool.query("truncate batch_probe");
    await pool.query("insert into batch_probe (label) values ('taken')");
    const transactions = createContactTransactions(pool);
    const hooks: string[] = [];
    let fineWritten!: () => void;
    const written = new Promise<void>((resolve) => {
      fineWritten = resolve;
    });
    const results = await Promise.all([
      transactions.run(contact(), async (db) => {
        await insert(db, "fine");
        fineWritten();
        onCommit(db, async () => {
          hooks.push("fine");
        });
        return "fine";
      }),
      // Fails a statement after the other work's has gone through, and catches its own error: the
      // shared transaction is aborted all the same, and must not be taken for committed
      // (PostgreSQL answers the commit of an aborted transaction with a rollback, not an error).
      transactions.run(contact(), async (db) => {
        await written;
        const failed = await insert(db, "taken").then(
          () => false,
          () => true,
        );
        return failed ? "duplicate" : "inserted";
      }),
    ]);
    expect(results).toEqual(["fine", "duplicate"]);
    expect(await labels()).toEqual(["fine", "taken"]);
    // The hook ran once, after the commit that wrote its row (its own, the second time).
    expect(hooks).toEqual(["fine"]);
  });

  it("gives a work that takes a savepoint a transaction of its own, where the savepoint works", async () => {
    await pool.query("truncate batch_probe");
    const transactions = createContactTransactions(pool);
    const results = await Promise.all([
      transactions.run(contact(), (db) => insertAndTell(db, "plain")),
      transactions.run(contact(), async (db) => {
        await db.transaction(async (savepoint) => {
          await insert(savepoint, "in a savepoint");
        });
        return insertAndTell(db, "after the savepoint");
      }),
    ]);
    expect(results[0]).not.toBe(results[1]);
    expect(await labels()).toEqual(["after the savepoint", "in a savepoint", "plain"]);
  });

  it("takes the locks of two transactions in one order, so they never wait on each other", async () => {
    await pool.query("truncate batch_probe");
    const keys = Array.from({ length: 8 }, () => contact());
    // A transaction of another instance holds one contact in the middle while two instances'
    // transactions ask for all eight in opposite orders: each takes what it can before it.
    const holder = await pool.connect();
    await holder.query("begin");
    await holder.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [lockKey(keys[3]!)]);
    const one = createContactTransactions(pool);
    const two = createContactTransactions(pool);
    let tries = 0;
    const work = (label: string) => (db: DbOrTx) => {
      tries++;
      return insert(db, label);
    };
    const both = Promise.all([
      ...keys.map((key, i) => one.run(key, work(`one ${i}`))),
      ...[...keys].reverse().map((key, i) => two.run(key, work(`two ${i}`))),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await holder.query("commit");
    holder.release();
    await both;
    expect(await labels()).toHaveLength(16);
    // No deadlock rolled either back (its works would then have run again, each on its own).
    expect(tries).toBe(16);
  });
});
