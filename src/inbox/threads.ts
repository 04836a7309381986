import { type SQL, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { contacts, conversations } from "../db/schema/index.js";
import { isBsuid, toUpstreamPhone } from "../upstream/graph.js";

let lastMessageMs = 0;

/**
 * Creation time for a new message row: the clock, nudged forward so that rows
 * written by this process within one millisecond (a batch of a hundred
 * messages, say) still list in the order they were stored.
 */
export function nextMessageTime(now: Date): Date {
  lastMessageMs = Math.max(now.getTime(), lastMessageMs + 1);
  return new Date(lastMessageMs);
}

/**
 * The contact for a WhatsApp id and its conversation, created when missing.
 * A newer profile name replaces the stored one. Both upserts lock their row
 * until the transaction ends, so concurrent writers to one conversation take
 * turns.
 */
export async function upsertThread(
  tx: DbOrTx,
  input: { accountId: string; waId: string; name: string | null; now: Date },
): Promise<{ contactId: string; conversationId: string }> {
  const [contact] = await tx
    .insert(contacts)
    .values({
      accountId: input.accountId,
      waId: input.waId,
      name: input.name,
      phone: isBsuid(input.waId) ? null : toUpstreamPhone(input.waId),
    })
    .onConflictDoUpdate({
      target: [contacts.accountId, contacts.waId],
      set: {
        name: sql`coalesce(excluded.name, ${contacts.name})`,
        updatedAt: input.now,
      },
    })
    .returning({ id: contacts.id });
  if (!contact) throw new Error("contact upsert returned nothing");
  const [conversation] = await tx
    .insert(conversations)
    .values({ accountId: input.accountId, contactId: contact.id, lastMessageAt: input.now })
    .onConflictDoUpdate({
      target: conversations.contactId,
      set: { updatedAt: sql`${conversations.updatedAt}` },
    })
    .returning({ id: conversations.id });
  if (!conversation) throw new Error("conversation upsert returned nothing");
  return { contactId: contact.id, conversationId: conversation.id };
}

/**
 * Records activity on a conversation at `at` (the inbox lists by
 * last_message_at), as a statement that can also stand in a CTE; `onlyIf`
 * adds a condition (that the message it belongs to was stored).
 */
export const touchConversationSql = (conversationId: string, at: Date, onlyIf?: SQL) => sql`
  update ${conversations}
     set last_message_at = greatest(last_message_at, ${at.toISOString()}::timestamptz),
         updated_at = ${at.toISOString()}::timestamptz
   where id = ${conversationId}::uuid${onlyIf ? sql` and ${onlyIf}` : sql``}`;

/** Records activity on a conversation at `at` (see touchConversationSql). */
export async function touchConversation(tx: DbOrTx, input: { conversationId: string; at: Date }) {
  await tx.execute(touchConversationSql(input.conversationId, input.at));
}
