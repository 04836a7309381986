import { createTableRelationsHelpers, extractTablesRelationalConfig, type SQL } from "drizzle-orm";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { NodePgSession, NodePgTransaction } from "drizzle-orm/node-postgres/session";
import { PgDialect } from "drizzle-orm/pg-core";
import pg from "pg";
import { prepareMarkedStatements } from "./prepared.js";
import * as schema from "./schema/index.js";

// `$client` is the pool, or one pooled connection when work must stay on it (the flow runner).
export type Db = NodePgDatabase<typeof schema> & { $client: pg.Pool | pg.PoolClient };
/** A database handle or an open transaction: service functions accept either. */
export type DbOrTx = Db | Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  /** The connection string (background workers open their own connections with it). */
  url: string;
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function connectDatabase(url: string, options: { max?: number } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => undefined);
  prepareMarkedStatements(pool);
  const db = drizzle(pool, { schema });
  return { url, db, pool, close: () => pool.end() };
}

/** The schema as drizzle's relational queries read it: worked out once, not per transaction. */
const relationalSchema = (() => {
  const config = extractTablesRelationalConfig(schema, createTableRelationsHelpers);
  return { fullSchema: schema, schema: config.tables, tableNamesMap: config.tableNamesMap };
})();
const dialect = new PgDialect();

/** A drizzle transaction whose statements go through `connection` (one that a `begin` has opened). */
const transactionOn = (connection: { query(...args: unknown[]): unknown }) =>
  new NodePgTransaction(
    dialect,
    new NodePgSession(connection as unknown as pg.PoolClient, dialect, relationalSchema),
    relationalSchema,
  );

/**
 * Runs `work` in a transaction on one of the pool's connections, begun by
 * `opening`: a simple query (no parameters) of `begin` and the statements to
 * run first. The connection is pipelined while the transaction lasts (pg's
 * pipeline mode), so the opening goes out together with the work's first
 * statement instead of a round trip before it: PostgreSQL still runs them in
 * order, and should the opening fail, the statements behind it fail in the
 * aborted transaction and the opening's error is the one thrown. The work may
 * end the transaction with its last statement and the commit sent together
 * (commitWith). drizzle's own `transaction` sends `begin` alone; the
 * transaction given to `work` is drizzle's (queries, relational queries,
 * savepoints), on that connection. Commits when `work` resolves, rolls back
 * when it throws; a connection that cannot even roll back is dropped, not
 * given to the next caller.
 */
export async function transactionOpenedWith<T>(
  pool: pg.Pool,
  opening: string,
  work: (tx: DbOrTx) => Promise<T>,
): Promise<T> {
  const client = (await pool.connect()) as pg.PoolClient & { pipeline?: boolean };
  let broken: Error | undefined;
  const pipelines = typeof client.pipeline === "boolean";
  if (pipelines) client.pipeline = true;
  let openingFailed: { error: unknown } | undefined;
  const opened = client.query(opening).then(
    () => undefined,
    (error: unknown) => {
      openingFailed = { error };
    },
  );
  // What the work's statements go through: after commitWith's statement, the commit goes out right
  // behind it, and no statement may follow (it would run outside the transaction).
  let ending: { commit?: Promise<unknown> } | undefined;
  let ended = false;
  const connection = {
    query(...args: unknown[]): unknown {
      if (ending?.commit)
        return Promise.reject(new Error("The transaction has committed: no statement may follow"));
      const ran = (client.query as (...a: unknown[]) => unknown)(...args);
      if (ending) ending.commit = client.query("commit");
      return ran;
    },
  };
  try {
    const tx = transactionOn(connection) as unknown as DbOrTx;
    finishers.set(tx, async (query) => {
      if (ending) throw new Error("The transaction is ending already");
      ending = {};
      try {
        const result = await tx.execute(query);
        await ending.commit;
        ended = true;
        return result;
      } catch (error) {
        // A failed statement aborted the transaction, and the commit behind it rolled it back.
        await ending.commit?.catch(() => undefined);
        throw error;
      }
    });
    let result: T;
    try {
      result = await work(tx);
    } finally {
      await opened;
    }
    if (openingFailed) throw openingFailed.error;
    // A last statement that failed rolled the transaction back, even if the work went on regardless.
    if (ending && !ended) throw new Error("The transaction's last statement failed: nothing was committed");
    if (!ending) await client.query("commit");
    return result;
  } catch (error) {
    await client.query("rollback").catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw openingFailed ? openingFailed.error : error;
  } finally {
    // Every statement sent has been answered (the rollback or commit was the last): back to one at a time.
    if (pipelines) client.pipeline = false;
    client.release(broken);
  }
}

/** The transactions of transactionOpenedWith, and how each ends with its last statement. */
const finishers = new WeakMap<object, (query: SQL) => Promise<pg.QueryResult<Record<string, unknown>>>>();

/**
 * Runs `query` as the last statement of `tx` and commits: on a transaction
 * of transactionOpenedWith the two go out together (one round trip), and a
 * statement run on `tx` afterwards fails. Anything that must roll the
 * transaction back has to make `query` fail by itself (its answer is read
 * after the commit). On any other handle it only runs `query`, and the
 * caller's transaction, if any, commits as it would have.
 */
export async function commitWith(tx: DbOrTx, query: SQL): Promise<Record<string, unknown>[]> {
  const finish = finishers.get(tx);
  return (finish ? await finish(query) : await tx.execute<Record<string, unknown>>(query)).rows;
}

/** A statement's way of refusing to run in a shared transaction (see transactionSharedBy). */
export class NotShareable extends Error {
  constructor() {
    super("A savepoint cannot be taken in a transaction shared by several works");
    this.name = "NotShareable";
  }
}

/**
 * Runs several `works` side by side in one transaction on one pipelined
 * connection, begun by `opening` (as in transactionOpenedWith), and commits
 * once if every work resolved: all of them are written, or none. A work that
 * throws (or a statement that fails, which aborts the transaction under all
 * of them) rolls everything back, and the answer is `null`: each work may
 * then be run again on its own. Each work has its own handle; a savepoint
 * (drizzle's nested `transaction`) is refused, since rolling one back would
 * undo the other works' statements sent after it. commitWith only runs its
 * statement on such a handle.
 */
export async function transactionSharedBy(
  pool: pg.Pool,
  opening: string,
  works: Array<(tx: DbOrTx) => Promise<unknown>>,
): Promise<unknown[] | null> {
  const client = (await pool.connect()) as pg.PoolClient & { pipeline?: boolean };
  const pipelines = typeof client.pipeline === "boolean";
  if (pipelines) client.pipeline = true;
  let broken: Error | undefined;
  let failed = false;
  const opened = client.query(opening).catch(() => {
    failed = true;
  });
  const connection = {
    query: (...args: unknown[]): unknown => (client.query as (...a: unknown[]) => unknown)(...args),
  };
  const handle = () => {
    const tx = transactionOn(connection);
    tx.transaction = () => Promise.reject(new NotShareable());
    return tx as unknown as DbOrTx;
  };
  try {
    const settled = await Promise.allSettled(works.map((work) => work(handle())));
    await opened;
    if (failed || settled.some((one) => one.status === "rejected")) {
      await client.query("rollback");
      return null;
    }
    // A statement that failed after every work had ended (one that caught its error) aborted the
    // transaction: PostgreSQL then answers the commit with a rollback.
    const committed = await client.query("commit");
    if (committed.command !== "COMMIT") return null;
    return settled.map((one) => (one as PromiseFulfilledResult<unknown>).value);
  } catch (error) {
    // The commit (or the rollback) failed: nothing was written.
    await client.query("rollback").catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    if (broken) throw error;
    return null;
  } finally {
    if (pipelines) client.pipeline = false;
    client.release(broken);
  }
}
