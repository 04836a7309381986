import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { isUuid } from "../http/ids.js";
import type { EventJson } from "./types.js";

/**
 * Reading the account event log in commit-safe order.
 *
 * Events are ordered by (tx_id, seq): the writing transaction's id, then the
 * row's sequence number. A reader only takes events whose transaction is
 * older than the oldest transaction still running in this database (see
 * readyBound), and every event written later belongs to a transaction at or
 * above that one, so it sorts after everything already read: a cursor never
 * skips an event that commits late, which a plain serial id would (ids are
 * handed out when written, not when committed).
 */

/** A place in an account's log: everything at or before it has been read. */
export interface Position {
  tx: string;
  seq: number;
}

interface EventRow extends Record<string, unknown> {
  id: string;
  seq: string;
  tx_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
  ready: boolean;
  /** The statement's snapshot (`xmin:xmax:xip,…`), on rows its xmin holds back. */
  snapshot: string | null;
}

export interface EventBatch {
  events: EventJson[];
  /** Position after the last event returned (the input position when none). */
  position: Position | null;
  /** Events exist past the returned ones but their transaction's neighbours are still running: read again soon. */
  waiting: boolean;
  /** The page was full: more events may follow at once. */
  full: boolean;
}

/** Which events to read: the account's, after a position (from the start when null), a page at most. */
export interface EventsWanted {
  accountId: string;
  after: Position | null;
  limit: number;
}

export async function readEvents(db: DbOrTx, input: EventsWanted): Promise<EventBatch> {
  let rows = await readRows(db, input);
  let bound: bigint | null = null;
  const held = rows.find((row) => !row.ready)?.snapshot;
  if (held) {
    // The server-wide xmin holds some back: which of its transactions are this database's?
    const running = await runningTransactions(db);
    const ready = readyBound(held, running);
    bound = ready.bound;
    if (!ready.placed) {
      // Held back by one that ended before that look, or one it cannot place: read again, in a
      // snapshot taken after the look, which places every transaction older than these events.
      rows = await readRows(db, input);
      const again = rows.find((row) => !row.ready)?.snapshot;
      bound = again ? readyBound(again, running).bound : null;
    }
  }
  const events: EventJson[] = [];
  let position = input.after;
  let waiting = false;
  for (const row of rows) {
    if (!row.ready && (bound === null || BigInt(row.tx_id) >= bound)) {
      waiting = true;
      break;
    }
    events.push({ id: row.id, type: row.type, created_at: row.created_at, data: row.data });
    position = { tx: row.tx_id, seq: Number(row.seq) };
  }
  return { events, position, waiting, full: !waiting && rows.length === input.limit };
}

async function readRows(db: DbOrTx, input: EventsWanted): Promise<EventRow[]> {
  const { after } = input;
  const { rows } = await db.execute<EventRow>(sql`
    select id, seq::text as seq, tx_id::text as tx_id, type, data,
           to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
           tx_id < pg_snapshot_xmin(pg_current_snapshot()) as ready,
           case when tx_id >= pg_snapshot_xmin(pg_current_snapshot()) then pg_current_snapshot()::text end
             as snapshot
    from account_events
    where account_id = ${input.accountId}
      ${after ? sql`and (tx_id, seq) > (${after.tx}::xid8, ${after.seq}::bigint)` : sql``}
    order by tx_id, seq
    limit ${input.limit}`);
  return rows;
}

/** Where an event of the account sits in the log; null for an unknown (or purged, or foreign) id. */
export async function positionOf(db: DbOrTx, accountId: string, eventId: string): Promise<Position | null> {
  if (!isUuid(eventId)) return null;
  const { rows } = await db.execute<{ tx: string; seq: string }>(sql`
    select tx_id::text as tx, seq::text as seq from account_events
    where id = ${eventId} and account_id = ${accountId}`);
  const row = rows[0];
  return row ? { tx: row.tx, seq: Number(row.seq) } : null;
}

/** The log's current end: what a new stream starts after (later events are all "new"). */
export async function endOfLog(db: DbOrTx): Promise<Position> {
  const running = await runningTransactions(db);
  const { rows } = await db.execute<{ snapshot: string }>(
    sql`select pg_current_snapshot()::text as snapshot`,
  );
  // seq starts at 1, so (bound, 0) comes before every event of transaction `bound` and later.
  return { tx: String(readyBound(rows[0]!.snapshot, running).bound), seq: 0 };
}

/**
 * The server's running transactions, by their 32-bit ids as pg_stat_activity
 * shows them: true for those of a backend connected to another database. A
 * transaction's database never changes, so what this finds stays true.
 */
async function runningTransactions(db: DbOrTx): Promise<Map<bigint, boolean>> {
  const { rows } = await db.execute<{ xid: string; elsewhere: boolean }>(sql`
    select backend_xid::text as xid,
           datid is distinct from (select oid from pg_database where datname = current_database()) as elsewhere
      from pg_stat_activity where backend_xid is not null`);
  return new Map(rows.map((row) => [BigInt(row.xid), row.elsewhere]));
}

/**
 * The oldest transaction of a snapshot that may still write events (or the
 * snapshot's xmax when none): the events of every transaction below it are
 * committed, and visible in that snapshot, or never will be.
 *
 * The snapshot's own xmin is that bound for the whole server: a transaction
 * writing in another database (another application, a migration, a
 * `CREATE DATABASE`) would hold every account's events back for as long as it
 * runs. Those `running` shows in another database are set aside. One it does
 * not show (ended since it was looked at, started after, or prepared) still
 * holds the log back: `placed` is false when such a one is the bound. In a
 * snapshot taken after that look, every transaction older than the events
 * committed before it is placed.
 */
function readyBound(snapshot: string, running: Map<bigint, boolean>): { bound: bigint; placed: boolean } {
  const [, xmax = "0", list = ""] = snapshot.split(":");
  let bound = BigInt(xmax);
  let placed = true;
  for (const id of list === "" ? [] : list.split(",")) {
    const tx = BigInt(id);
    const elsewhere = running.get(tx & 0xffffffffn);
    if (tx < bound && elsewhere !== true) {
      bound = tx;
      placed = elsewhere === false;
    }
  }
  return { bound, placed };
}

export async function findEvent(db: DbOrTx, accountId: string, eventId: string): Promise<EventJson | null> {
  if (!isUuid(eventId)) return null;
  const { rows } = await db.execute<EventRow>(sql`
    select id, type, data, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
    from account_events where id = ${eventId} and account_id = ${accountId}`);
  const row = rows[0];
  return row ? { id: row.id, type: row.type, created_at: row.created_at, data: row.data } : null;
}

export const EVENT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Deletes events (and delivery log rows) older than the retention, in bounded batches. */
export async function purgeOldEvents(db: DbOrTx, now: Date, batch = 5_000): Promise<number> {
  const cutoff = new Date(now.getTime() - EVENT_RETENTION_MS).toISOString();
  let deleted = 0;
  for (const table of ["account_events", "webhook_deliveries"]) {
    for (;;) {
      const result = await db.execute(sql`
        delete from ${sql.identifier(table)} where id in (
          select id from ${sql.identifier(table)} where created_at < ${cutoff}::timestamptz limit ${batch})`);
      const count = result.rowCount ?? 0;
      deleted += count;
      if (count < batch) break;
    }
  }
  return deleted;
}
