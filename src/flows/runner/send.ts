import { and, eq, sql } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import { prepared } from "../../db/prepared.js";
import { conversations, messages, messagingConfigs } from "../../db/schema/index.js";
import { nextMessageTime } from "../../inbox/threads.js";
import { addJob } from "../../jobs/queue.js";
import { customerQueue } from "../../messaging/webhook-payload.js";
import type { BuiltMessage } from "./outbound.js";
import type { RunRow } from "./store.js";

export const SEND_BOT_MESSAGE_TASK = "send-bot-message";
export const RESUME_WAIT_TASK = "resume-wait";

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

type Queued = { ok: true; messageId: string } | { ok: false; reason: string; message: string };

/**
 * Stores a bot message `pending` and adds its send job, both in the advance's
 * transaction: the message exists exactly when its job does. The job runs on
 * the customer's queue, after whatever of theirs is already waiting there.
 * (An agent's message takes insertPendingMessage; this is the same insert and
 * conversation update, with the job, in one round trip.)
 */
export async function queueBotMessage(
  db: DbOrTx,
  input: {
    run: RunRow;
    contact: { phone: string | null; waId: string };
    message: BuiltMessage;
    steps: number;
    now: Date;
    readMessageId: string | null;
    /** The channel's number, when the caller knows it already. */
    phoneNumberId?: string;
  },
): Promise<Queued> {
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
  if (!input.contact.phone)
    return { ok: false, reason: "send_failed", message: "The contact has no phone number" };
  const { outbound, text } = input.message;
  const createdAt = nextMessageTime(input.now).toISOString();
  // One statement: the message, its conversation's activity (after the message, so that the
  // conversation's event shows it as the last one) and the send job, whose payload is a
  // BotSendPayload.
  const { rows } = await db.execute<{ id: string }>(
    prepared(sql`
    with message as (
      insert into ${messages} (account_id, conversation_id, direction, sender_type, type, text, payload,
                               status, created_at, updated_at)
      values (${run.accountId}, ${run.conversationId}, 'outbound', 'bot', ${outbound.type}, ${text},
              ${outbound.type === "text" ? null : JSON.stringify(outbound)}::jsonb, 'pending',
              ${createdAt}::timestamptz, ${createdAt}::timestamptz)
      returning id
    ), conversation as (
      update ${conversations}
         set last_message_at = greatest(last_message_at, ${createdAt}::timestamptz),
             updated_at = ${createdAt}::timestamptz
       where id = ${run.conversationId} and exists (select 1 from message)
    )
    select message.id,
           graphile_worker.add_job(
             identifier := ${SEND_BOT_MESSAGE_TASK},
             payload := jsonb_strip_nulls(jsonb_build_object(
               'messageId', message.id, 'runId', ${run.id}::text, 'steps', ${input.steps}::integer,
               'readMessageId', ${input.readMessageId}::text))::json,
             queue_name := ${customerQueue(config.phoneNumberId, input.contact.waId)}::text,
             max_attempts := 3) is not null as queued
      from message`),
  );
  const row = rows[0];
  if (!row) throw new Error("The bot message was not stored");
  return { ok: true, messageId: row.id };
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
