import { sql } from "drizzle-orm";

/**
 * A select-list expression that lets the statement's own transaction commit
 * without waiting for its WAL to reach the disk (`synchronous_commit = off`
 * for that transaction only; the session keeps its setting). Two writes use it:
 *
 * - Storing a webhook delivery's change while the delivery's job still exists:
 *   its input is durable elsewhere and kept there until a later synchronous
 *   commit. PostgreSQL writes its WAL in order, so the later commit that
 *   removes the job (or the bot's advance, committed before its reply goes to
 *   Meta) flushes this one with it; a crash of the database before that loses
 *   both, and the job runs again. What is lost is never a message: only the
 *   wait for a flush that a later commit makes anyway.
 * - Reserving a number's send slots: sending/rate.ts (RESERVE_UNFLUSHED) says
 *   why, and what a crash of the database can lose.
 */
export const commitUnflushedText = "set_config('synchronous_commit', 'off', true) is not null";

/** commitUnflushedText for a drizzle statement. */
export const commitUnflushed = sql.raw(commitUnflushedText);
