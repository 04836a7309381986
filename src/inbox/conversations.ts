import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { contacts, conversations, messageReactions, messages } from "../db/schema/index.js";
import { isUuid } from "../http/ids.js";
import { decodeCursor, encodeCursor } from "../http/pagination.js";
import { type ReactionJson, toConversationJson, toMessageJson } from "./json.js";

export interface PageInput {
  limit: number;
  cursor?: string;
}

/** The account's conversations, most recent activity first, each with its contact and last message. */
export async function listConversations(db: Db, input: PageInput & { accountId: string }) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await db
    .select({ conversation: conversations, contact: contacts })
    .from(conversations)
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(
      and(
        eq(conversations.accountId, input.accountId),
        after
          ? sql`(${conversations.lastMessageAt}, ${conversations.id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(conversations.lastMessageAt), desc(conversations.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);

  const ids = page.map((r) => r.conversation.id);
  // One index probe per conversation (newest message first), however long the conversations are.
  const lasts = ids.length
    ? await db
        .select()
        .from(messages)
        .where(
          inArray(
            messages.id,
            sql`(select last.id from unnest(array[${sql.join(
              ids.map((id) => sql`${id}::uuid`),
              sql`, `,
            )}]) as page(id)
              cross join lateral (select m.id from ${messages} m where m.conversation_id = page.id
                order by m.created_at desc, m.id desc limit 1) last)`,
          ),
        )
    : [];
  const lastOf = new Map(lasts.map((m) => [m.conversationId, m]));

  const last = page.at(-1)?.conversation;
  return {
    conversations: page.map((r) =>
      toConversationJson(r.conversation, r.contact, lastOf.get(r.conversation.id) ?? null),
    ),
    next_cursor:
      rows.length > input.limit && last ? encodeCursor({ at: last.lastMessageAt, id: last.id }) : null,
  };
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

/** A conversation's messages in the order they were stored, each with its reactions. */
export async function listMessages(db: Db, input: PageInput & { conversationId: string }) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await db
    .select()
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, input.conversationId),
        after
          ? sql`(${messages.createdAt}, ${messages.id}) > (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(asc(messages.createdAt), asc(messages.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);

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
    list.push({ actor_type: r.actorType, actor_id: r.actorId, emoji: r.emoji });
    reactionsOf.set(r.messageId, list);
  }

  const last = page.at(-1);
  return {
    messages: page.map((m) => toMessageJson(m, reactionsOf.get(m.id) ?? [])),
    next_cursor: rows.length > input.limit && last ? encodeCursor({ at: last.createdAt, id: last.id }) : null,
  };
}
