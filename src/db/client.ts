import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
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
