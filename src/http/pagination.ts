import { z } from "zod";
import { ApiError } from "./errors.js";
import { isUuid } from "./ids.js";

/** A keyset position: the (timestamp, id) of the last row of a page. */
export interface Position {
  at: Date;
  id: string;
}

export const encodeCursor = (p: Position) =>
  Buffer.from(JSON.stringify([p.at.toISOString(), p.id])).toString("base64url");

/** Longer than any cursor encodeCursor writes. */
const CURSOR_MAX_LENGTH = 128;
// A timestamp as toISOString writes it for years 1-9999: every one PostgreSQL can hold.
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Opaque to clients; anything that is not a cursor we issued is a 400, before
 * it reaches SQL (a year PostgreSQL cannot hold included).
 */
export function decodeCursor(cursor: string): Position {
  try {
    if (cursor.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error("not ours");
    const value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "string" &&
      ISO_TIMESTAMP.test(value[0]) &&
      isUuid(value[1])
    ) {
      const at = new Date(value[0]);
      if (!Number.isNaN(at.getTime()) && at.getUTCFullYear() >= 1) return { at, id: value[1] };
    }
  } catch {
    // Falls through to the 400.
  }
  throw new ApiError(400, "cursor: invalid cursor");
}

export const PAGE_LIMIT_MAX = 200;

/** `?limit=&cursor=` of a keyset-paged list (default 50 rows). */
export const pageQuery = z.object({
  limit: z.coerce
    .number({ error: `must be a whole number from 1 to ${PAGE_LIMIT_MAX}` })
    .int(`must be a whole number from 1 to ${PAGE_LIMIT_MAX}`)
    .min(1, `must be a whole number from 1 to ${PAGE_LIMIT_MAX}`)
    .max(PAGE_LIMIT_MAX, `must be a whole number from 1 to ${PAGE_LIMIT_MAX}`)
    .default(50),
  cursor: z.string({ error: "must be given once" }).min(1).optional(),
});
