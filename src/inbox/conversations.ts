import { and, asc, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import { ACTIVE, automationForChange, pausedColumns, toAutomationJson } from "../bots/automation.js";
import { toContactJson } from "../contacts/json.js";
import { containsText, phonePattern, type SearchProbes, searchProbes } from "../contacts/search.js";
import type { Db } from "../db/client.js";
import { inlineTimestamp, jsonFieldsSql, sampleRow } from "../db/json-sql.js";
import { prepared } from "../db/prepared.js";
import { contacts, conversations, messageReactions, messages, profiles } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { decodeCursor, encodeCursor } from "../http/pagination.js";
import { type ReactionJson, toConversationJson, toMessageJson, toReactionJson } from "./json.js";
import { WINDOW_MS } from "./window.js";

export interface PageInput {
  limit: number;
  cursor?: string;
}

export type ConversationStatus = (typeof conversations.$inferSelect)["status"];

export interface ConversationFilters {
  status?: ConversationStatus;
  /** A user id, or null for unassigned conversations. */
  assignedTo?: string | null;
  /** A tag of the conversation's contact. */
  tag?: string;
  /** Substring of the contact's name or phone, or of any message's text. */
  q?: string;
  /** The parts of `q` the trigram indexes are probed with (searchProbes; default `q` itself). */
  probes?: SearchProbes;
}

/**
 * The account's conversations, most recent activity first, each with its
 * contact and last message, narrowed by the filters: `{ conversations,
 * next_cursor }` as JSON text, each conversation built by PostgreSQL in the
 * page's one statement (CONVERSATION_JSON_SQL). Search reads the pg_trgm
 * indexes of contact names and phones and of message texts.
 */
export async function listConversations(
  db: Db,
  input: PageInput & ConversationFilters & { accountId: string },
): Promise<string> {
  const probes = input.q ? await searchProbes(db, input.q) : undefined;
  const query = conversationPageQuery(db, { ...input, probes }).getSQL();
  // The statement's text depends only on which filters are given: it is prepared (planned once
  // per connection), except with a search or a tag, whose best plan depends on the value (how
  // many rows a trigram pattern or a tag finds), which a generic plan cannot weigh.
  const { rows } = await db.execute<{ id: string; at: string; body: string }>(
    input.q || input.tag ? query : prepared(query),
  );
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > input.limit && last ? encodeCursor({ at: new Date(last.at), id: last.id }) : null;
  return `{"conversations":[${page.map((r) => r.body).join(",")}],"next_cursor":${JSON.stringify(nextCursor)}}`;
}

/** A conversation's automation as toAutomationJson writes it; `paused` is true while a pause is in force. */
const automationJsonSql = (c: string, paused: string) =>
  jsonFieldsSql(conversations, c, () => toAutomationJson({ state: "paused", until: null, reason: null }), {
    computed: {
      state: `case when ${paused} then 'paused' else 'active' end`,
      until: `case when ${paused} then ${inlineTimestamp(`${c}.automation_until`)} end`,
      reason: `case when ${paused} then ${c}.automation_reason end`,
    },
  });

/**
 * toConversationJson as SQL (read back from it and from toContactJson and
 * toMessageJson: src/db/json-sql.ts), on the rows of `conversations` and
 * `contacts` as drizzle names them; the last message is one index probe.
 * The automation's pause is weighed at the statement's now() (the serializer's `now`).
 */
const CONVERSATION_JSON_SQL = (() => {
  const c = '"conversations"';
  const paused = `(${c}.automation_state = 'paused' and (${c}.automation_until is null or ${c}.automation_until > now()))`;
  const contact = jsonFieldsSql(contacts, '"contacts"', (k) => toContactJson(k as never), {
    timestamp: inlineTimestamp,
  });
  const message = jsonFieldsSql(messages, "m", (m) => toMessageJson(m as never), {
    timestamp: inlineTimestamp,
  });
  const { row: contactRow } = sampleRow(contacts, 1000);
  const conversation = jsonFieldsSql(
    conversations,
    c,
    (row) => toConversationJson(row as never, contactRow as never, null),
    {
      timestamp: inlineTimestamp,
      computed: {
        automation: `json_build_object(${automationJsonSql(c, paused).join(", ")})`,
        window_expires_at: inlineTimestamp(
          `(${c}.customer_message_at + interval '${WINDOW_MS} milliseconds')`,
        ),
        contact: `json_build_object(${contact.join(", ")})`,
        last_message: `(select json_build_object(${message.join(", ")}) from messages m
          where m.conversation_id = ${c}.id order by m.created_at desc, m.id desc limit 1)`,
      },
    },
  );
  return sql.raw(`json_build_object(${conversation.join(", ")})::text`);
})();

/**
 * The statement of one page of the filtered list (a row more than the page, to tell whether
 * more follow): each row's id, its last_message_at as Date#toJSON writes it (the cursor) and
 * its API JSON as text.
 */
export function conversationPageQuery(
  db: Db,
  input: PageInput & ConversationFilters & { accountId: string },
) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  return db
    .select({
      // Named: listConversations reads the rows by name (db.execute, to run it prepared).
      id: sql<string>`${conversations.id}`.as("id"),
      at: sql<string>`${sql.raw(inlineTimestamp('"conversations"."last_message_at"'))}`.as("at"),
      body: sql<string>`${CONVERSATION_JSON_SQL}`.as("body"),
    })
    .from(conversations)
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(
      and(
        eq(conversations.accountId, input.accountId),
        input.status ? eq(conversations.status, input.status) : undefined,
        input.assignedTo === null
          ? isNull(conversations.assignedTo)
          : input.assignedTo
            ? eq(conversations.assignedTo, input.assignedTo)
            : undefined,
        input.tag ? sql`${contacts.tags} @> array[${input.tag}]::text[]` : undefined,
        input.q ? matchingSearch(input.accountId, input.q, input.probes) : undefined,
        after
          ? sql`(${conversations.lastMessageAt}, ${conversations.id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(conversations.lastMessageAt), desc(conversations.id))
    .limit(input.limit + 1);
}

/**
 * The account's conversations whose contact's name or phone, or any of whose
 * messages, contains the text: each arm a bitmap scan of its trigram index.
 */
function matchingSearch(accountId: string, q: string, probes: SearchProbes = { name: q, text: q }) {
  const phone = phonePattern(q);
  const name = containsText(sql.raw("ct.name"), q, probes.name);
  const text = containsText(sql.raw("m.text"), q, probes.text);
  return sql`${conversations.id} in (
    select cv.id from ${contacts} ct join ${conversations} cv on cv.contact_id = ct.id
      where ct.account_id = ${accountId} and (${name}${phone ? sql` or ct.phone like ${phone}` : sql``})
    union
    select m.conversation_id from ${messages} m
      where m.account_id = ${accountId} and ${text})`;
}

/** How many conversations are in each status, and how many open ones are the caller's or nobody's. */
export async function countConversations(db: Db, input: { accountId: string; userId: string }) {
  const [row] = await db
    .select({
      open: sql<number>`count(*) filter (where ${conversations.status} = 'open')::int`,
      pending: sql<number>`count(*) filter (where ${conversations.status} = 'pending')::int`,
      closed: sql<number>`count(*) filter (where ${conversations.status} = 'closed')::int`,
      mine: sql<number>`count(*) filter (where ${conversations.status} <> 'closed' and ${conversations.assignedTo} = ${input.userId})::int`,
      unassigned: sql<number>`count(*) filter (where ${conversations.status} <> 'closed' and ${conversations.assignedTo} is null)::int`,
      unread: sql<number>`count(*) filter (where ${conversations.status} <> 'closed' and ${conversations.unreadCount} > 0)::int`,
    })
    .from(conversations)
    .where(eq(conversations.accountId, input.accountId));
  return row ?? { open: 0, pending: 0, closed: 0, mine: 0, unassigned: 0, unread: 0 };
}

/** The conversation as the API shows it (contact and last message), or null. */
export async function getConversationJson(db: Db, accountId: string, id: string) {
  const found = await findConversation(db, accountId, id);
  if (!found) return null;
  const [last] = await db
    .select()
    .from(messages)
    .where(eq(messages.conversationId, id))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(1);
  return toConversationJson(found.conversation, found.contact, last ?? null);
}

/** PATCH's automation: pause (for some minutes, or until resumed) or resume. */
export type AutomationPatch = { state: "paused"; minutes?: number } | { state: "active" };

/**
 * Sets a conversation's status, assignee and/or automation. The assignee must
 * be a member of the account (400); null unassigns. Assigning a person pauses
 * the automation, unassigning ends that pause, closing re-arms it (see
 * automationForChange); an explicit `automation` wins over those. Null when
 * the conversation is not the account's.
 */
export async function updateConversation(
  db: Db,
  input: {
    accountId: string;
    id: string;
    patch: { status?: ConversationStatus; assigned_to?: string | null; automation?: AutomationPatch };
    now: Date;
  },
) {
  const { patch } = input;
  if (patch.assigned_to) {
    const [member] = await db
      .select({ userId: profiles.userId })
      .from(profiles)
      .where(and(eq(profiles.userId, patch.assigned_to), eq(profiles.accountId, input.accountId)));
    if (!member) throw new ApiError(400, "assigned_to: must be a member of the account");
  }
  const updated = await db.transaction(async (tx) => {
    const [before] = await tx
      .select()
      .from(conversations)
      .where(and(eq(conversations.id, input.id), eq(conversations.accountId, input.accountId)))
      .for("no key update");
    if (!before) return false;
    const { automation } = patch;
    await tx
      .update(conversations)
      .set({
        ...(patch.status !== undefined && { status: patch.status }),
        ...(patch.assigned_to !== undefined && { assignedTo: patch.assigned_to }),
        ...automationForChange(before, { assignedTo: patch.assigned_to, status: patch.status }),
        ...(automation?.state === "active" && ACTIVE),
        ...(automation?.state === "paused" &&
          pausedColumns(
            "manual",
            automation.minutes === undefined
              ? null
              : new Date(input.now.getTime() + automation.minutes * 60_000),
          )),
        updatedAt: input.now,
      })
      .where(eq(conversations.id, input.id));
    return true;
  });
  if (!updated) return null;
  return getConversationJson(db, input.accountId, input.id);
}

/** The conversation and its contact, when it belongs to the account; malformed ids match nothing. */
export async function findConversation(db: Db, accountId: string, id: string) {
  if (!isUuid(id)) return null;
  const [row] = await db
    .select({ conversation: conversations, contact: contacts })
    .from(conversations)
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(and(eq(conversations.id, id), eq(conversations.accountId, accountId)));
  return row ?? null;
}

/**
 * A conversation's messages in the order they were stored, each with its reactions. `newest`
 * walks from the latest message back: the first page is the latest `limit` messages, and
 * `next_cursor` leads to the ones before them; each page is still oldest first.
 */
export async function listMessages(
  db: Db,
  input: PageInput & { conversationId: string; order?: "oldest" | "newest" },
) {
  const from = input.cursor ? decodeCursor(input.cursor) : null;
  const newest = input.order === "newest";
  const rows = await db
    .select()
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, input.conversationId),
        from
          ? newest
            ? sql`(${messages.createdAt}, ${messages.id}) < (${from.at.toISOString()}::timestamptz, ${from.id}::uuid)`
            : sql`(${messages.createdAt}, ${messages.id}) > (${from.at.toISOString()}::timestamptz, ${from.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(
      ...(newest
        ? [desc(messages.createdAt), desc(messages.id)]
        : [asc(messages.createdAt), asc(messages.id)]),
    )
    .limit(input.limit + 1);
  const walked = rows.slice(0, input.limit);
  const page = newest ? [...walked].reverse() : walked;

  const reactions = page.length
    ? await db
        .select()
        .from(messageReactions)
        .where(
          inArray(
            messageReactions.messageId,
            page.map((m) => m.id),
          ),
        )
        .orderBy(asc(messageReactions.createdAt), asc(messageReactions.id))
    : [];
  const reactionsOf = new Map<string, ReactionJson[]>();
  for (const r of reactions) {
    const list = reactionsOf.get(r.messageId) ?? [];
    list.push(toReactionJson(r));
    reactionsOf.set(r.messageId, list);
  }

  const last = walked.at(-1);
  return {
    messages: page.map((m) => toMessageJson(m, reactionsOf.get(m.id) ?? [])),
    next_cursor: rows.length > input.limit && last ? encodeCursor({ at: last.createdAt, id: last.id }) : null,
  };
}
