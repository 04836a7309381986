import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import { messagingConfigs } from "../../db/schema/index.js";
import {
  type ClaimChannel,
  insertPendingMessage,
  type PendingMessageInput,
  pendingMessageParts,
} from "../../inbox/send.js";
import { addJob } from "../../queue/add.js";
import { customerQueue } from "../../queue/names.js";
import { SEND_BOT_MESSAGE_TASK, SETTLE_SEND_TASK } from "../../queue/tasks.js";
import { isBsuid } from "../../upstream/graph.js";
import type { BuiltMessage } from "./outbound.js";
import type { RunRow } from "./store.js";

export { SEND_BOT_MESSAGE_TASK };
export const RESUME_WAIT_TASK = "resume-wait";
/** A message's settle job key: this and its id. */
export const SETTLE_KEY_PREFIX = "settle-send:";

/** What a send job carries: the message, its run, and the steps its advance had taken. */
export interface BotSendPayload {
  messageId: string;
  runId: string;
  steps: number;
  /** Attempts made so far (retries after a provable non-delivery). */
  attempt?: number;
  /** Meta's id of the customer message to mark read (with a typing indicator) before sending. */
  readMessageId?: string | null;
}

type Queued =
  | { ok: true; messageId: string; channel?: ClaimChannel }
  | { ok: false; reason: string; message: string };

/** A claimed bot message whose insert goes with the advance's run write (see RunWrites.alongside). */
export type DeferredBotMessage = {
  ok: true;
  messageId: string;
  parts: ReturnType<typeof pendingMessageParts>;
};

/**
 * Stores a bot message `pending` and adds its send job, both in the advance's
 * transaction: the message exists exactly when its job does. The job runs on
 * the customer's queue, after whatever of theirs is already waiting there.
 */
export async function queueBotMessage(db: DbOrTx, input: BotMessageInput): Promise<Queued> {
  const prepared = await botMessage(db, input);
  if (!prepared.ok) return prepared;
  const row = await insertPendingMessage(db, prepared.input);
  return { ok: true, messageId: row.id, channel: row.channel };
}

/**
 * queueBotMessage's checks, with the message claimed (`claimedSettleAt` is
 * required) and not yet written: its statement's parts, for the advance's run
 * write to carry (one round trip less). The message's id is chosen here.
 */
export async function deferBotMessage(
  db: DbOrTx,
  input: BotMessageInput & { claimedSettleAt: Date },
): Promise<DeferredBotMessage | Exclude<Queued, { ok: true }>> {
  const id = randomUUID();
  const prepared = await botMessage(db, input, id);
  if (!prepared.ok) return prepared;
  return { ok: true, messageId: id, parts: pendingMessageParts(prepared.input) };
}

interface BotMessageInput {
  run: RunRow;
  contact: { phone: string | null; waId: string };
  message: BuiltMessage;
  steps: number;
  now: Date;
  readMessageId: string | null;
  /** The channel's number, when the caller knows it already. */
  phoneNumberId?: string;
  /**
   * Store the message claimed for a send by this instance, handed to its send
   * pipeline once the advance commits (see sending/outbound.ts, sendClaimed),
   * with its settle job due then instead of a send job.
   */
  claimedSettleAt?: Date;
}

/** What insertPendingMessage is given for a bot message, or why none can be queued. */
async function botMessage(
  db: DbOrTx,
  input: BotMessageInput,
  id?: string,
): Promise<{ ok: true; input: PendingMessageInput } | Exclude<Queued, { ok: true }>> {
  const { run } = input;
  if (!run.conversationId) {
    return { ok: false, reason: "send_failed", message: "The run has no conversation to write to" };
  }
  const [config] = input.phoneNumberId
    ? [{ phoneNumberId: input.phoneNumberId }]
    : await db
        .select({ phoneNumberId: messagingConfigs.phoneNumberId })
        .from(messagingConfigs)
        .where(eq(messagingConfigs.accountId, run.accountId));
  if (!config) {
    return {
      ok: false,
      reason: "send_failed",
      message: "The messaging channel is not configured for this account",
    };
  }
  // (A contact without a phone is reached by its BSUID, its WhatsApp id then.)
  if (!input.contact.phone && !isBsuid(input.contact.waId))
    return { ok: false, reason: "send_failed", message: "The contact has no phone number" };
  const payload: Omit<BotSendPayload, "messageId"> = {
    runId: run.id,
    steps: input.steps,
    ...(input.readMessageId ? { readMessageId: input.readMessageId } : {}),
  };
  return {
    ok: true,
    input: {
      ...(id ? { id } : {}),
      accountId: run.accountId,
      conversationId: run.conversationId,
      userId: null,
      sender: "bot",
      text: input.message.text,
      outbound: input.message.outbound,
      now: input.now,
      ...(input.claimedSettleAt
        ? {
            claim: {
              task: SETTLE_SEND_TASK,
              payload,
              runAt: input.claimedSettleAt,
              jobKeyPrefix: SETTLE_KEY_PREFIX,
              maxAttempts: 5,
            },
          }
        : {
            sendJob: {
              task: SEND_BOT_MESSAGE_TASK,
              payload,
              queueName: customerQueue(config.phoneNumberId, input.contact.waId),
              maxAttempts: 3,
            },
          }),
    },
  };
}

/** Schedules the end of a `wait` node: once, on whichever instance is free then. */
export async function scheduleResume(
  db: DbOrTx,
  input: { run: RunRow; contact: { waId: string }; nodeKey: string; at: Date },
) {
  const [config] = await db
    .select({ phoneNumberId: messagingConfigs.phoneNumberId })
    .from(messagingConfigs)
    .where(and(eq(messagingConfigs.accountId, input.run.accountId)));
  await addJob(
    db,
    RESUME_WAIT_TASK,
    { runId: input.run.id, nodeKey: input.nodeKey },
    {
      runAt: input.at,
      jobKey: `wait:${input.run.id}`,
      queueName: config ? customerQueue(config.phoneNumberId, input.contact.waId) : undefined,
    },
  );
}
