import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/client.js";
import { messageReactions, messages } from "../db/schema/index.js";
import type { InboundMessageStored } from "../events.js";
import { nextMessageTime, touchConversation, upsertThread } from "../inbox/threads.js";
import { STATUS_PREDECESSORS } from "./message-status.js";
import type { InboundMessage, InboundReaction, StatusUpdate, WebhookChange } from "./webhook-payload.js";

export interface StoredChange {
  /** Customer messages stored by this change (duplicates and reactions excluded). */
  inbound: InboundMessageStored[];
  /** Parts skipped for a reason worth logging. */
  notes: string[];
}

interface Thread {
  contactId: string;
  conversationId: string;
  /** Whether the conversation already holds a customer message. */
  hasInbound: boolean;
}

/**
 * Stores one change of a webhook batch in one transaction: messages (once per
 * upstream id, however often and however concurrently Meta delivers them),
 * customer reactions and status updates of outbound messages.
 */
export async function storeChange(
  db: Db,
  input: { accountId: string; change: WebhookChange; now: () => Date },
): Promise<StoredChange> {
  return withDeadlockRetry(() =>
    db.transaction(async (tx) => {
      const result: StoredChange = { inbound: [], notes: [] };
      const threads = new Map<string, Thread>();
      const thread = async (waId: string) => {
        let found = threads.get(waId);
        if (!found) {
          const name = input.change.profiles.get(waId) ?? null;
          found = await upsertThread(tx, { accountId: input.accountId, waId, name, now: input.now() });
          threads.set(waId, found);
        }
        return found;
      };

      for (const item of input.change.items) {
        if (item.kind === "reaction") {
          const note = await storeReaction(tx, input.accountId, item, thread);
          if (note) result.notes.push(`reaction ${item.upstreamId}: ${note}`);
          continue;
        }
        const stored = await storeMessage(tx, input.accountId, item, await thread(item.from), input.now);
        if (stored) result.inbound.push(stored);
      }
      for (const update of input.change.statuses) await applyStatus(tx, input.accountId, update, input.now());
      return result;
    }),
  );
}

async function storeMessage(
  tx: DbOrTx,
  accountId: string,
  message: InboundMessage,
  thread: Thread,
  now: () => Date,
): Promise<InboundMessageStored | null> {
  const createdAt = nextMessageTime(now());
  const [row] = await tx
    .insert(messages)
    .values({
      accountId,
      conversationId: thread.conversationId,
      messageId: message.upstreamId,
      direction: "inbound",
      senderType: "customer",
      type: message.type,
      text: message.text,
      interactive: message.interactive as Record<string, unknown> | null,
      media: message.media,
      payload: message.payload,
      contextMessageId: message.contextMessageId,
      status: "received",
      upstreamTimestamp: message.timestamp,
      createdAt,
      updatedAt: createdAt,
    })
    .onConflictDoNothing({ target: [messages.accountId, messages.messageId] })
    .returning({ id: messages.id });
  if (!row) return null;

  const firstInbound = !thread.hasInbound;
  thread.hasInbound = true;
  await touchConversation(tx, {
    conversationId: thread.conversationId,
    at: createdAt,
    reopen: true,
    now: now(),
  });
  return {
    accountId,
    contactId: thread.contactId,
    conversationId: thread.conversationId,
    messageId: row.id,
    firstInbound,
    messageType: message.type,
    text: message.text,
  };
}

/** Mirrors a customer's reaction; returns why it was skipped, if it was. */
async function storeReaction(
  tx: DbOrTx,
  accountId: string,
  reaction: InboundReaction,
  thread: (waId: string) => Promise<Thread>,
): Promise<string | null> {
  const [target] = await tx
    .select({ id: messages.id, conversationId: messages.conversationId })
    .from(messages)
    .where(and(eq(messages.accountId, accountId), eq(messages.messageId, reaction.targetMessageId)));
  if (!target) return "target message unknown";
  const { contactId, conversationId } = await thread(reaction.from);
  // A customer reacts within their own conversation only.
  if (conversationId !== target.conversationId) return "target message is in another conversation";

  const key = and(
    eq(messageReactions.messageId, target.id),
    eq(messageReactions.actorType, "customer"),
    eq(messageReactions.actorId, contactId),
  );
  if (reaction.emoji === null) {
    await tx.delete(messageReactions).where(key);
    return null;
  }
  await tx
    .insert(messageReactions)
    .values({
      accountId,
      messageId: target.id,
      conversationId,
      actorType: "customer",
      actorId: contactId,
      emoji: reaction.emoji,
    })
    .onConflictDoUpdate({
      target: [messageReactions.messageId, messageReactions.actorType, messageReactions.actorId],
      set: { emoji: reaction.emoji, updatedAt: sql`now()` },
    });
  return null;
}

/** Moves an outbound message forward (see STATUS_PREDECESSORS); stale or unknown updates change nothing. */
async function applyStatus(tx: DbOrTx, accountId: string, update: StatusUpdate, now: Date) {
  await tx
    .update(messages)
    .set({
      status: update.status,
      ...(update.status === "failed" ? { error: update.error ?? { message: "Delivery failed" } } : {}),
      updatedAt: now,
    })
    .where(
      and(
        eq(messages.accountId, accountId),
        eq(messages.messageId, update.upstreamId),
        eq(messages.direction, "outbound"),
        inArray(messages.status, STATUS_PREDECESSORS[update.status]),
      ),
    );
}

const RETRYABLE = new Set(["40P01", "40001"]);

/** Two changes locking the same contacts in opposite orders deadlock; the loser tries again. */
async function withDeadlockRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 3 || !RETRYABLE.has(pgCode(error) ?? "")) throw error;
    }
  }
}

/** The PostgreSQL error code, also when drizzle wraps the driver's error. */
export function pgCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === "string" ? code : undefined;
}
