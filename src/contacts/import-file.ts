/**
 * The uploaded file as stored (bytea in contact_import_files), read a piece at
 * a time: by the job for its count and its first bytes, and by the parsing
 * thread (import-worker.ts), on a connection of its own, for the records.
 * Plain pg queries: the parsing thread loads no more than it needs.
 */
import type pg from "pg";

/** Read a piece at a time (256 KB), so memory does not grow with the file. */
export const FILE_CHUNK = 256 * 1024;

const PIECE_SQL =
  "select substring(data from $1 for $2) as piece from contact_import_files where import_id = $3";

/** The bytes of the stored file from `offset` (0-based), at most `length` of them. */
export async function filePiece(db: pg.Pool | pg.Client, importId: string, offset: number, length: number) {
  const { rows } = await db.query<{ piece: Buffer }>(PIECE_SQL, [offset + 1, length, importId]);
  const piece = rows[0]?.piece;
  if (!piece) throw new Error("The uploaded file is gone");
  return piece;
}

/** The stored file's pieces in order. */
export async function* storedFile(db: pg.Pool | pg.Client, importId: string, size: number) {
  for (let offset = 0; offset < size; offset += FILE_CHUNK) yield filePiece(db, importId, offset, FILE_CHUNK);
}
