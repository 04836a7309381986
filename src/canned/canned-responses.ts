/** Canned responses: saved replies of an account, found by shortcut. */

import { and, asc, eq } from "drizzle-orm";
import type { z } from "zod";
import type { CannedResponse } from "../contracts/account.js";
import type { Db } from "../db/client.js";
import { pgErrorCode } from "../db/errors.js";
import { cannedResponses } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";

type CannedRow = typeof cannedResponses.$inferSelect;

export const toCannedResponseJson = (row: CannedRow): z.infer<typeof CannedResponse> => ({
  id: row.id,
  shortcut: row.shortcut,
  text: row.text,
  created_by: row.createdBy,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
});

const shortcutTaken = (shortcut: string) =>
  new ApiError(409, `The shortcut "${shortcut}" is already used by another canned response`);

/** A write that would give two responses of the account one shortcut is a 409. */
async function uniqueShortcut<T>(shortcut: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (pgErrorCode(error) === "23505" && shortcut !== undefined) throw shortcutTaken(shortcut);
    throw error;
  }
}

/** Every canned response of the account, by shortcut. */
export async function listCannedResponses(db: Db, accountId: string) {
  const rows = await db
    .select()
    .from(cannedResponses)
    .where(eq(cannedResponses.accountId, accountId))
    .orderBy(asc(cannedResponses.shortcut));
  return rows.map(toCannedResponseJson);
}

export async function createCannedResponse(
  db: Db,
  input: { accountId: string; userId: string; shortcut: string; text: string },
) {
  const [row] = await uniqueShortcut(input.shortcut, () =>
    db
      .insert(cannedResponses)
      .values({
        accountId: input.accountId,
        createdBy: input.userId,
        shortcut: input.shortcut,
        text: input.text,
      })
      .returning(),
  );
  return toCannedResponseJson(row!);
}

/** Null when the response is not the account's. */
export async function findCannedResponse(db: Db, accountId: string, id: string) {
  if (!isUuid(id)) return null;
  const [row] = await db
    .select()
    .from(cannedResponses)
    .where(and(eq(cannedResponses.id, id), eq(cannedResponses.accountId, accountId)));
  return row ?? null;
}

export async function updateCannedResponse(
  db: Db,
  input: { accountId: string; id: string; patch: { shortcut?: string; text?: string }; now: Date },
) {
  if (!isUuid(input.id)) return null;
  const [row] = await uniqueShortcut(input.patch.shortcut, () =>
    db
      .update(cannedResponses)
      .set({ ...input.patch, updatedAt: input.now })
      .where(and(eq(cannedResponses.id, input.id), eq(cannedResponses.accountId, input.accountId)))
      .returning(),
  );
  return row ? toCannedResponseJson(row) : null;
}

/** True when a response was deleted. */
export async function deleteCannedResponse(db: Db, accountId: string, id: string) {
  if (!isUuid(id)) return false;
  const deleted = await db
    .delete(cannedResponses)
    .where(and(eq(cannedResponses.id, id), eq(cannedResponses.accountId, accountId)))
    .returning({ id: cannedResponses.id });
  return deleted.length > 0;
}
