import { and, eq, gt, sql } from "drizzle-orm";
import { getBusinessHours, isOpenAt, wasOpenBetween } from "../../bots/hours.js";
import type { DbOrTx } from "../../db/client.js";
import { contacts, conversations, messages } from "../../db/schema/index.js";
import type { AppDeps } from "../../deps.js";
import { ApiError } from "../../http/errors.js";
import { sendAgentText } from "../../inbox/send.js";

/** No away message within this long after an agent's message: a person is there. */
export const AWAY_QUIET_AFTER_AGENT_MS = 5 * 60_000;

/**
 * The away message, for a customer message no flow took, written while the
 * business is closed: once per closed period per conversation (the
 * conversation remembers when it got one; a later one goes only once the
 * business has been open since), never to an opted-out contact, and not
 * within 5 minutes of an agent's message. The conversation is marked before
 * the send, so a repeated offer never sends twice. True when it was sent.
 */
export async function sendAwayMessage(
  deps: Pick<AppDeps, "db" | "cipher" | "sends" | "now">,
  input: { accountId: string; conversationId: string },
): Promise<boolean> {
  const { db } = deps;
  const now = deps.now();
  const hours = await getBusinessHours(db, input.accountId);
  if (!hours?.awayMessage || isOpenAt(hours, now)) return false;
  const [row] = await db
    .select({ awaySentAt: conversations.awaySentAt, phone: contacts.phone, optedOut: contacts.optedOut })
    .from(conversations)
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(and(eq(conversations.id, input.conversationId), eq(conversations.accountId, input.accountId)));
  if (!row || row.optedOut) return false;
  if (row.awaySentAt && !wasOpenBetween(hours, row.awaySentAt, now)) return false;
  if (await agentWroteSince(db, input.conversationId, new Date(now.getTime() - AWAY_QUIET_AFTER_AGENT_MS))) {
    return false;
  }
  const claimed = await db
    .update(conversations)
    .set({ awaySentAt: now })
    .where(
      and(
        eq(conversations.id, input.conversationId),
        sql`${conversations.awaySentAt} is not distinct from ${row.awaySentAt?.toISOString() ?? null}::timestamptz`,
      ),
    )
    .returning({ id: conversations.id });
  if (claimed.length === 0) return false;
  try {
    await sendAgentText(deps, {
      accountId: input.accountId,
      userId: null,
      sender: "bot",
      conversationId: input.conversationId,
      contactPhone: row.phone,
      text: hours.awayMessage,
    });
  } catch (error) {
    // A refused send is stored on the message as failed; the period's away message is spent.
    if (!(error instanceof ApiError)) throw error;
  }
  return true;
}

async function agentWroteSince(db: DbOrTx, conversationId: string, since: Date) {
  const [row] = await db
    .select({ id: messages.id })
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, conversationId),
        eq(messages.senderType, "agent"),
        gt(messages.createdAt, since),
      ),
    )
    .limit(1);
  return row !== undefined;
}
