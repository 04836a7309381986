import { ApiError } from "./errors.js";
import { isUuid } from "./ids.js";

/** A keyset position: the (timestamp, id) of the last row of a page. */
export interface Position {
  at: Date;
  id: string;
}

export const encodeCursor = (p: Position) =>
  Buffer.from(JSON.stringify([p.at.toISOString(), p.id])).toString("base64url");

/** Opaque to clients; anything that is not a cursor we issued is a 400. */
export function decodeCursor(cursor: string): Position {
  try {
    const value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && isUuid(value[1])) {
      const at = new Date(value[0]);
      if (!Number.isNaN(at.getTime())) return { at, id: value[1] };
    }
  } catch {
    // Falls through to the 400.
  }
  throw new ApiError(400, "cursor: invalid cursor");
}
