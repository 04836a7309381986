/**
 * Contacts: the account's customers, with the tags, attributes and opt-out
 * that agents keep on them.
 */

import { and, desc, eq, or, sql } from "drizzle-orm";
import type { z } from "zod";
import type { ContactDetail } from "../contracts/contacts.js";
import type { Db, DbOrTx } from "../db/client.js";
import { inlineTimestamp, jsonFieldsSql } from "../db/json-sql.js";
import { contacts, conversations } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { decodeCursor, encodeCursor } from "../http/pagination.js";
import { toContactJson } from "./json.js";
import { containsText, nameProbe, phonePattern } from "./search.js";

/** An agent's message to an opted-out contact (product: 422 `opted_out`). */
export const optedOutError = () =>
  new ApiError(422, "The contact has opted out: agents cannot message them", { code: "opted_out" });

type ContactRow = typeof contacts.$inferSelect;

/** A contact as the contacts API shows it: the inbox's fields, consent and the WhatsApp username identity. */
export const toContactDetailJson = (c: ContactRow) => ({
  ...toContactJson(c),
  opted_out_at: c.optedOutAt,
  opted_in_at: c.optedInAt,
  opt_in_source: c.optInSource,
  bsuid: c.bsuid,
  username: c.username,
});

const withConversation = (row: {
  contact: ContactRow;
  conversationId: string | null;
}): z.infer<typeof ContactDetail> => ({
  ...toContactDetailJson(row.contact),
  conversation_id: row.conversationId,
});

/** Which contacts a list or an export takes. */
export interface ContactFilter {
  q?: string;
  /** The part of `q` the name and username index is probed with (nameProbe; default `q` itself). */
  probe?: string;
  tag?: string;
  opted_out?: boolean;
  /** An attribute's key, and optionally the value it must have. */
  attribute?: string;
  value?: string;
}

/** The filter as a condition on contacts. */
export function contactFilterSql(accountId: string, filter: ContactFilter) {
  const { q } = filter;
  const phone = q ? phonePattern(q) : null;
  return and(
    eq(contacts.accountId, accountId),
    filter.tag ? sql`${contacts.tags} @> array[${filter.tag}]::text[]` : undefined,
    filter.opted_out === undefined ? undefined : eq(contacts.optedOut, filter.opted_out),
    filter.attribute
      ? filter.value === undefined
        ? sql`${contacts.attributes} ? ${filter.attribute}`
        : sql`${contacts.attributes} @> ${JSON.stringify({ [filter.attribute]: filter.value })}::jsonb`
      : undefined,
    q
      ? sql`(${containsText(contacts.name, q, filter.probe)}${phone ? sql` or ${contacts.phone} like ${phone}` : sql``} or ${containsText(contacts.username, q, filter.probe)})`
      : undefined,
  );
}

/**
 * Newest contacts first; `q` finds by name, phone or username, `tag` by one tag, and by opt-out or
 * attribute. `{ contacts, next_cursor }` as JSON text, each contact built by PostgreSQL in the
 * page's one statement (CONTACT_JSON_SQL).
 */
export async function listContacts(
  db: Db,
  input: { accountId: string; limit: number; cursor?: string } & ContactFilter,
): Promise<string> {
  const probe = input.q ? await nameProbe(db, input.q) : undefined;
  const { rows } = await db.execute<{ id: string; at: string; body: string }>(
    contactPageQuery(db, { ...input, probe }).getSQL(),
  );
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > input.limit && last ? encodeCursor({ at: new Date(last.at), id: last.id }) : null;
  return `{"contacts":[${page.map((r) => r.body).join(",")}],"next_cursor":${JSON.stringify(nextCursor)}}`;
}

/** withConversation as SQL (read back from it: src/db/json-sql.ts), on the rows as drizzle names them. */
const CONTACT_JSON_SQL = (() => {
  const conversationId = "\u0001conversation_id";
  const fields = jsonFieldsSql(
    contacts,
    '"contacts"',
    (k) => withConversation({ contact: k as ContactRow, conversationId }),
    { timestamp: inlineTimestamp, computed: { conversation_id: '"conversations"."id"' } },
  );
  return sql.raw(`json_build_object(${fields.join(", ")})::text`);
})();

/**
 * The statement of one page of the filtered contacts (a row more than the page, to tell whether
 * more follow): each row's id, its created_at as Date#toJSON writes it (the cursor) and its API
 * JSON as text.
 */
export function contactPageQuery(
  db: DbOrTx,
  input: { accountId: string; limit: number; cursor?: string } & ContactFilter,
) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  return db
    .select({
      // Named: listContacts reads the rows by name.
      id: sql<string>`${contacts.id}`.as("id"),
      at: sql<string>`${sql.raw(inlineTimestamp('"contacts"."created_at"'))}`.as("at"),
      body: sql<string>`${CONTACT_JSON_SQL}`.as("body"),
    })
    .from(contacts)
    .leftJoin(conversations, eq(conversations.contactId, contacts.id))
    .where(
      and(
        contactFilterSql(input.accountId, input),
        after
          ? sql`(${contacts.createdAt}, ${contacts.id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(input.limit + 1);
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
  opt_in_source?: string | null;
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
      ...(patch.opted_out !== undefined && {
        optedOut: patch.opted_out,
        // The time of the change; the same value again keeps the time it was first set.
        optedOutAt: patch.opted_out
          ? sql`case when ${contacts.optedOut} then ${contacts.optedOutAt} else ${input.now} end`
          : null,
        ...(!patch.opted_out && {
          optedInAt: sql`case when ${contacts.optedOut} then ${input.now}::timestamptz else ${contacts.optedInAt} end`,
        }),
      }),
      ...(patch.opt_in_source !== undefined && {
        optInSource: patch.opt_in_source,
        optedInAt: patch.opt_in_source === null ? null : input.now,
      }),
      updatedAt: input.now,
    })
    .where(and(eq(contacts.id, input.id), eq(contacts.accountId, input.accountId)))
    .returning({ id: contacts.id });
  if (updated.length === 0) return null;
  return getContact(db, input.accountId, input.id);
}

export interface NewContact {
  /** Normalised: digits with the country code. */
  phone: string;
  name?: string | null;
  tags?: string[];
  attributes?: Record<string, string>;
  opt_in_source?: string | null;
}

/** 409 naming the contact that has the number already. */
const duplicateError = (contactId: string) =>
  new ApiError(409, "A contact with this phone number exists already", { contact_id: contactId });

/** The account's contact with this number (as its WhatsApp id or its phone), if any. */
export async function findByPhone(db: DbOrTx, accountId: string, phone: string) {
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.accountId, accountId), or(eq(contacts.waId, phone), eq(contacts.phone, phone))))
    .limit(1);
  return row?.id ?? null;
}

/**
 * Adds a contact the business brings (its WhatsApp id is the number until
 * Meta names another); 409 `{ contact_id }` when the number is taken.
 */
export async function createContact(db: Db, input: { accountId: string; contact: NewContact; now: Date }) {
  const { contact } = input;
  const existing = await findByPhone(db, input.accountId, contact.phone);
  if (existing) throw duplicateError(existing);
  const source = contact.opt_in_source ?? null;
  const [row] = await db
    .insert(contacts)
    .values({
      accountId: input.accountId,
      waId: contact.phone,
      phone: contact.phone,
      name: contact.name ?? null,
      tags: contact.tags ?? [],
      attributes: contact.attributes ?? {},
      optInSource: source,
      optedInAt: source ? input.now : null,
      createdAt: input.now,
      updatedAt: input.now,
    })
    .onConflictDoNothing()
    .returning();
  if (!row) {
    // A concurrent writer took the number between the check and the insert.
    const winner = await findByPhone(db, input.accountId, contact.phone);
    throw duplicateError(winner ?? "");
  }
  return withConversation({ contact: row, conversationId: null });
}

/**
 * Sets or clears a contact's opt-out (a STOP or START keyword): true when it
 * changed. The times are those of the change.
 */
export async function setOptedOut(db: DbOrTx, input: { contactId: string; optedOut: boolean; now: Date }) {
  const changed = await db
    .update(contacts)
    .set(
      input.optedOut
        ? { optedOut: true, optedOutAt: input.now, updatedAt: input.now }
        : { optedOut: false, optedOutAt: null, optedInAt: input.now, updatedAt: input.now },
    )
    .where(and(eq(contacts.id, input.contactId), eq(contacts.optedOut, !input.optedOut)))
    .returning({ id: contacts.id });
  return changed.length > 0;
}
