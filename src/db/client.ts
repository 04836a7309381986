import { createTableRelationsHelpers, extractTablesRelationalConfig } from "drizzle-orm";
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

/**
 * Runs `work` in a transaction on one of the pool's connections, begun by
 * `opening`: a simple query (no parameters) of `begin` and the statements to
 * run first. The connection is pipelined while the transaction lasts (pg's
 * pipeline mode), so the opening goes out together with the work's first
 * statement instead of a round trip before it: PostgreSQL still runs them in
 * order, and should the opening fail, the statements behind it fail in the
 * aborted transaction and the opening's error is the one thrown. drizzle's
 * own `transaction` sends `begin` alone; the transaction given to `work` is
 * drizzle's (queries, relational queries, savepoints), on that connection.
 * Commits when `work` resolves, rolls back when it throws; a connection that
 * cannot even roll back is dropped, not given to the next caller.
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
  try {
    const tx = new NodePgTransaction(
      dialect,
      new NodePgSession(client, dialect, relationalSchema),
      relationalSchema,
    ) as unknown as DbOrTx;
    let result: T;
    try {
      result = await work(tx);
    } finally {
      await opened;
    }
    if (openingFailed) throw openingFailed.error;
    await client.query("commit");
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
