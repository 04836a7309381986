/**
 * Contacts: the account's customers, with the tags, attributes and opt-out
 * that agents keep on them.
 */
import { and, desc, eq, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/client.js";
import { contacts, conversations } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { decodeCursor, encodeCursor } from "../http/pagination.js";
import { toContactJson } from "../inbox/json.js";
import { searchPatterns } from "../inbox/search.js";

/** An agent's message to an opted-out contact (product: 422 `opted_out`). */
export const optedOutError = () =>
  new ApiError(422, "The contact has opted out: agents cannot message them", { code: "opted_out" });

const withConversation = (row: { contact: typeof contacts.$inferSelect; conversationId: string | null }) => ({
  ...toContactJson(row.contact),
  conversation_id: row.conversationId,
});

/** Newest contacts first; `q` finds by name or phone (indexed), `tag` by one tag. */
export async function listContacts(
  db: Db,
  input: { accountId: string; limit: number; cursor?: string; q?: string; tag?: string },
) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  const search = input.q ? searchPatterns(input.q) : null;
  const rows = await db
    .select({ contact: contacts, conversationId: conversations.id })
    .from(contacts)
    .leftJoin(conversations, eq(conversations.contactId, contacts.id))
    .where(
      and(
        eq(contacts.accountId, input.accountId),
        input.tag ? sql`${contacts.tags} @> array[${input.tag}]::text[]` : undefined,
        search
          ? sql`(${contacts.name} ilike ${search.text}${search.phone ? sql` or ${contacts.phone} like ${search.phone}` : sql``})`
          : undefined,
        after
          ? sql`(${contacts.createdAt}, ${contacts.id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  const last = page.at(-1)?.contact;
  return {
    contacts: page.map(withConversation),
    next_cursor: rows.length > input.limit && last ? encodeCursor({ at: last.createdAt, id: last.id }) : null,
  };
}

/** The contact with its conversation id, or null when it is not the account's. */
export async function getContact(db: DbOrTx, accountId: string, id: string) {
  if (!isUuid(id)) return null;
  const [row] = await db
    .select({ contact: contacts, conversationId: conversations.id })
    .from(contacts)
    .leftJoin(conversations, eq(conversations.contactId, contacts.id))
    .where(and(eq(contacts.id, id), eq(contacts.accountId, accountId)));
  return row ? withConversation(row) : null;
}

export interface ContactPatch {
  name?: string | null;
  tags?: string[];
  attributes?: Record<string, string>;
  opted_out?: boolean;
}

/** Applies the supplied fields (each replaces the stored value); null when the contact is not the account's. */
export async function updateContact(
  db: Db,
  input: { accountId: string; id: string; patch: ContactPatch; now: Date },
) {
  if (!isUuid(input.id)) return null;
  const { patch } = input;
  const updated = await db
    .update(contacts)
    .set({
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.tags !== undefined && { tags: patch.tags }),
      ...(patch.attributes !== undefined && { attributes: patch.attributes }),
      ...(patch.opted_out !== undefined && { optedOut: patch.opted_out }),
      updatedAt: input.now,
    })
    .where(and(eq(contacts.id, input.id), eq(contacts.accountId, input.accountId)))
    .returning({ id: contacts.id });
  if (updated.length === 0) return null;
  return getContact(db, input.accountId, input.id);
}
