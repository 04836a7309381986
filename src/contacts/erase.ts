/**
 * Erasure and merging of contacts. Erasure removes every row about the
 * customer in one transaction (the contact; its conversation, messages,
 * reactions, flow runs and their events follow by cascade; the account's
 * event log entries that carry them are deleted too) and adds, in that same
 * transaction, the job that deletes their stored media files.
 */
import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { contacts, conversations, messages } from "../db/schema/index.js";
import { mediaKey } from "../media/download.js";
import { addJob } from "../queue/add.js";

export const ERASE_MEDIA_TASK = "erase-media";

/** Erases the account's contact; false when there is no such contact. */
export async function eraseContact(db: Db, input: { accountId: string; contactId: string }) {
  return db.transaction(async (tx) => {
    const [contact] = await tx
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.id, input.contactId), eq(contacts.accountId, input.accountId)))
      .for("update");
    if (!contact) return false;
    const [conversation] = await tx
      .select({ id: conversations.id })
      .from(conversations)
      .where(eq(conversations.contactId, contact.id));
    if (conversation) {
      const withFiles = await tx
        .select({ id: messages.id })
        .from(messages)
        .where(and(eq(messages.conversationId, conversation.id), isNotNull(messages.media)));
      if (withFiles.length > 0) {
        await addJob(tx, ERASE_MEDIA_TASK, { keys: withFiles.map((m) => mediaKey(input.accountId, m.id)) });
      }
      await tx.execute(sql`
        delete from account_events
         where account_id = ${input.accountId}
           and (data->>'conversation_id' = ${conversation.id}
                or data->>'contact_id' = ${contact.id}
                or (type = 'conversation.updated' and data->>'id' = ${conversation.id}))`);
    } else {
      await tx.execute(sql`
        delete from account_events where account_id = ${input.accountId} and data->>'contact_id' = ${contact.id}`);
    }
    // Cascades: conversation, messages, reactions, receipts, flow runs and their events.
    await tx.delete(contacts).where(eq(contacts.id, contact.id));
    return true;
  });
}

/**
 * Moves `fromId`'s conversation, messages, tags and attributes into `intoId`
 * and deletes `fromId`, in one transaction. The kept contact's attributes win
 * over the other's; an opt-out on either stands; the kept contact's identity
 * (WhatsApp id, phone, BSUID) stays, and the other's fills what it lacks.
 * Returns false when either contact is not the account's.
 */
export async function mergeContacts(
  db: Db,
  input: { accountId: string; intoId: string; fromId: string; now: Date },
) {
  return db.transaction(async (tx) => {
    const rows = await tx
      .select()
      .from(contacts)
      .where(
        and(
          eq(contacts.accountId, input.accountId),
          sql`${contacts.id} in (${input.intoId}, ${input.fromId})`,
        ),
      )
      .orderBy(contacts.id)
      .for("update");
    const into = rows.find((r) => r.id === input.intoId);
    const from = rows.find((r) => r.id === input.fromId);
    if (!into || !from) return false;
    const convs = await tx
      .select()
      .from(conversations)
      .where(sql`${conversations.contactId} in (${into.id}, ${from.id})`)
      .for("update");
    const intoConv = convs.find((c) => c.contactId === into.id);
    const fromConv = convs.find((c) => c.contactId === from.id);

    // Runs: the other's finished runs come along; its active run ends when the kept contact has one.
    await tx.execute(sql`
      update flow_runs set status = 'failed', end_reason = 'contact_merged', ended_at = ${input.now}
       where contact_id = ${from.id} and status = 'active'
         and exists (select 1 from flow_runs r where r.contact_id = ${into.id} and r.status = 'active')`);
    await tx.execute(sql`update flow_runs set contact_id = ${into.id} where contact_id = ${from.id}`);

    if (fromConv && intoConv) {
      await tx.execute(
        sql`update messages set conversation_id = ${intoConv.id} where conversation_id = ${fromConv.id}`,
      );
      await tx.execute(
        sql`update message_reactions set conversation_id = ${intoConv.id} where conversation_id = ${fromConv.id}`,
      );
      await tx.execute(
        sql`update flow_runs set conversation_id = ${intoConv.id} where conversation_id = ${fromConv.id}`,
      );
      await tx.execute(sql`
        update conversations set
          last_message_at = greatest(last_message_at, ${fromConv.lastMessageAt}),
          customer_message_at = greatest(customer_message_at, ${fromConv.customerMessageAt}),
          unread_count = unread_count + ${fromConv.unreadCount},
          updated_at = ${input.now}
         where id = ${intoConv.id}`);
      await tx.delete(conversations).where(eq(conversations.id, fromConv.id));
    } else if (fromConv) {
      await tx
        .update(conversations)
        .set({ contactId: into.id, updatedAt: input.now })
        .where(eq(conversations.id, fromConv.id));
    }

    await tx.delete(contacts).where(eq(contacts.id, from.id));
    await tx
      .update(contacts)
      .set({
        name: into.name ?? from.name,
        phone: into.phone ?? from.phone,
        bsuid: into.bsuid ?? from.bsuid,
        username: into.username ?? from.username,
        tags: [...new Set([...into.tags, ...from.tags])],
        attributes: { ...from.attributes, ...into.attributes },
        optedOut: into.optedOut || from.optedOut,
        optedOutAt: into.optedOut ? into.optedOutAt : from.optedOutAt,
        optedInAt: into.optedInAt ?? from.optedInAt,
        optInSource: into.optInSource ?? from.optInSource,
        updatedAt: input.now,
      })
      .where(eq(contacts.id, into.id));
    return true;
  });
}
