import { and, eq, sql } from "drizzle-orm";
import { adoptWhatsAppId, isBsuid } from "../../contacts/identity.js";
import { prepared } from "../../db/prepared.js";
import { contacts, conversations, flowRuns, messages, messagingConfigs } from "../../db/schema/index.js";
import type { AppDeps } from "../../deps.js";
import { contextFor } from "../../flows/runner/dispatch.js";
import { continueAfterSend, failRun, guardRun } from "../../flows/runner/engine.js";
import { type BotSendPayload, SEND_BOT_MESSAGE_TASK } from "../../flows/runner/send.js";
import { lockActiveRun, withContactLock } from "../../flows/runner/store.js";
import { customerQueue } from "../../messaging/webhook-payload.js";
import { GraphApiError, type OutboundMessage, toUpstreamPhone } from "../../upstream/graph.js";
import { addJob } from "../queue.js";
import type { Task } from "../types.js";

/** Sends of one message, the first included, while Meta provably does not take it. */
export const MAX_SEND_ATTEMPTS = 6;

/** Meta's codes that say the message was refused for throughput or rate, not taken. */
const RATE_CODES = new Set([4, 80007, 130429, 131056]);

export type SendFailure = "retry" | "unknown" | "final";

/**
 * Whether Meta provably did not take the message (retry), cannot be known to
 * have taken it or not (unknown: never sent again, since Meta has no
 * idempotency key), or refused it for good (final).
 */
export function classifySendError(error: unknown): SendFailure {
  if (!(error instanceof GraphApiError)) return "unknown";
  switch (error.kind) {
    case "api":
      if (error.code !== undefined && RATE_CODES.has(error.code)) return "retry";
      return (error.status ?? 0) >= 500 ? "retry" : "final";
    case "network":
      return error.refused ? "retry" : "unknown";
    case "timeout":
      return "unknown";
    default:
      // An answer without Meta's error envelope: a 5xx may come from a proxy after Meta took it.
      return (error.status ?? 0) >= 500 || error.status === undefined ? "unknown" : "final";
  }
}

/** Exponential backoff with full jitter: about 2 s, 4 s, 8 s ... capped at 5 minutes. */
export function retryDelayMs(attempt: number, random = Math.random): number {
  const ceiling = Math.min(300_000, 2_000 * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

const UNKNOWN_OUTCOME =
  "The send was interrupted after the request went out; Meta may or may not have delivered it, so it is not sent again";

/**
 * Sends one queued bot message and moves its run on. Marks the message as
 * being sent (committed) before the upstream call: a job that finds that mark
 * (the process died between sending and recording) does not send again, and
 * ends the run `failed` with reason `send_outcome_unknown`.
 */
export const sendBotMessage: Task = async (raw, deps, job) => {
  const payload = raw as unknown as BotSendPayload;
  try {
    await send(payload, deps);
  } catch (error) {
    // A bot message never stays pending: the job's last attempt records the failure.
    if (job.attempt >= job.maxAttempts) {
      await recordFailure(
        deps,
        payload,
        { message: "The message could not be sent (internal error)" },
        "internal_error",
      );
    }
    throw error;
  }
};

async function send(payload: BotSendPayload, deps: AppDeps) {
  const attempt = payload.attempt ?? 1;
  const { db } = deps;

  const claimed = await claimSend(deps, payload);
  if (!claimed) {
    const [seen] = await db.select().from(messages).where(eq(messages.id, payload.messageId));
    if (seen?.status === "pending") {
      await recordFailure(
        deps,
        payload,
        { message: UNKNOWN_OUTCOME, kind: "unknown_outcome" },
        "send_outcome_unknown",
      );
    }
    return;
  }

  const target = sendTarget(deps, payload, claimed);
  if (!target.ok) {
    await recordFailure(deps, payload, { message: target.problem }, target.reason);
    return;
  }

  if (payload.readMessageId && attempt === 1) {
    // Blue ticks and "typing..." for the message being answered; a failure here holds nothing up.
    await deps.graph
      .markRead(target.token, target.phoneNumberId, payload.readMessageId, { typing: true })
      .catch((error: unknown) =>
        deps.log.info({ err: error, messageId: payload.messageId }, "read receipt before a bot reply failed"),
      );
  }

  let upstreamId: string;
  try {
    const outbound = (claimed.payload as OutboundMessage | null) ?? {
      type: "text",
      text: { body: claimed.text ?? "" },
    };
    const sent = await deps.graph.sendMessage(target.token, target.phoneNumberId, target.to, outbound);
    upstreamId = sent.messageId;
    // (A failure to note Meta's id must not count as a failed send.)
    await adoptWhatsAppId(deps.db, { contactId: target.contactId, waId: sent.waId }).catch((error: unknown) =>
      deps.log.warn({ err: error }, "the WhatsApp id Meta answered could not be stored"),
    );
  } catch (error) {
    const kind = classifySendError(error);
    const details =
      error instanceof GraphApiError ? error.toJSON() : { message: "The message could not be sent" };
    if (kind === "retry" && attempt < MAX_SEND_ATTEMPTS) {
      await db.transaction(async (tx) => {
        await tx.update(messages).set({ sendStartedAt: null }).where(eq(messages.id, payload.messageId));
        await addJob(
          tx,
          SEND_BOT_MESSAGE_TASK,
          { ...payload, attempt: attempt + 1 },
          {
            queueName: target.queue,
            runAt: new Date(Date.now() + retryDelayMs(attempt)),
            maxAttempts: 3,
          },
        );
      });
      deps.log.warn(
        { messageId: payload.messageId, attempt, code: (details as { code?: unknown }).code ?? null },
        "bot send refused; retrying",
      );
      return;
    }
    if (kind === "unknown") {
      await recordFailure(
        deps,
        payload,
        { ...details, message: `${UNKNOWN_OUTCOME} (${details.message})` },
        "send_outcome_unknown",
      );
    } else {
      await recordFailure(deps, payload, details, "send_failed");
    }
    return;
  }

  const sentAt = deps.now();
  await withContactLock(
    deps.pool,
    { accountId: claimed.accountId, contactId: target.contactId },
    async (tx) => {
      await tx
        .update(messages)
        .set({ status: "sent", messageId: upstreamId, updatedAt: sentAt })
        .where(eq(messages.id, payload.messageId));
      const run = await lockActiveRun(tx, payload.runId);
      if (run?.awaitingMessageId !== payload.messageId) return;
      const ctx = await contextFor(tx, deps, run);
      if (!ctx) return;
      ctx.steps = payload.steps;
      await guardRun(ctx, () =>
        continueAfterSend(ctx, { messageId: payload.messageId, upstreamId, type: claimed.type, at: sentAt }),
      );
    },
  );
}

type Target =
  | {
      ok: true;
      token: string;
      phoneNumberId: string;
      to: string;
      contactId: string;
      queue: string | undefined;
    }
  | { ok: false; problem: string; reason: string };

interface Claimed {
  accountId: string;
  type: string;
  text: string | null;
  payload: unknown;
  /** Where it goes, as found when claimed (null: the conversation is gone). */
  contactId: string | null;
  phone: string | null;
  waId: string | null;
  runStatus: string | null;
  awaiting: string | null;
  phoneNumberId: string | null;
  accessToken: string | null;
}

/**
 * Marks the message as being sent (committed before the upstream call) and
 * reads where it goes, in one statement; null when it is not `pending` or a
 * send of it had already started.
 */
async function claimSend(deps: AppDeps, payload: BotSendPayload): Promise<Claimed | null> {
  const { rows } = await deps.db.execute<Claimed & Record<string, unknown>>(
    prepared(sql`
    with claimed as (
      update ${messages} set send_started_at = ${deps.now().toISOString()}::timestamptz
       where id = ${payload.messageId} and status = 'pending' and send_started_at is null
      returning account_id, conversation_id, type, text, payload
    )
    select c.account_id as "accountId", c.type, c.text, c.payload,
           k.id as "contactId", k.phone, k.wa_id as "waId",
           r.status as "runStatus", r.awaiting_message_id as "awaiting",
           mc.phone_number_id as "phoneNumberId", mc.access_token as "accessToken"
      from claimed c
      left join ${conversations} v on v.id = c.conversation_id
      left join ${contacts} k on k.id = v.contact_id
      left join ${flowRuns} r on r.id = ${payload.runId}
      left join ${messagingConfigs} mc on mc.account_id = c.account_id`),
  );
  return rows[0] ?? null;
}

/** Where the message goes, checked again at send time: the run, the channel, the number. */
function sendTarget(deps: AppDeps, payload: BotSendPayload, row: Claimed): Target {
  if (!row.contactId || !row.waId) {
    return { ok: false, problem: "The conversation no longer exists", reason: "send_failed" };
  }
  if (row.runStatus !== "active" || row.awaiting !== payload.messageId) {
    return {
      ok: false,
      problem: "Not sent: the flow run ended before the message's turn came",
      reason: "run_ended",
    };
  }
  if (!row.phoneNumberId || !row.accessToken) {
    return {
      ok: false,
      problem: "The messaging channel is not configured for this account",
      reason: "send_failed",
    };
  }
  // No phone: the customer's BSUID, their WhatsApp id then (Meta withholds their number).
  const to = row.phone ? toUpstreamPhone(row.phone) : isBsuid(row.waId) ? row.waId : null;
  if (!to) return { ok: false, problem: "The contact has no phone number", reason: "send_failed" };
  let token: string;
  try {
    token = deps.cipher.decrypt(row.accessToken);
  } catch {
    return {
      ok: false,
      problem: "The stored access token cannot be decrypted: reconnect the messaging channel",
      reason: "send_failed",
    };
  }
  const queue = customerQueue(row.phoneNumberId, row.waId);
  return { ok: true, token, phoneNumberId: row.phoneNumberId, to, contactId: row.contactId, queue };
}

/** Marks the message failed and ends its run `failed` (when it still waits for this message). */
async function recordFailure(
  deps: AppDeps,
  payload: BotSendPayload,
  error: Record<string, unknown> & { message: string },
  reason: string,
) {
  const [message] = await deps.db
    .update(messages)
    .set({ status: "failed", error, updatedAt: deps.now() })
    .where(and(eq(messages.id, payload.messageId), eq(messages.status, "pending")))
    .returning({ accountId: messages.accountId, conversationId: messages.conversationId });
  if (!message || reason === "run_ended") return;
  const [conversation] = await deps.db
    .select({ contactId: conversations.contactId })
    .from(conversations)
    .where(eq(conversations.id, message.conversationId));
  if (!conversation) return;
  await withContactLock(
    deps.pool,
    { accountId: message.accountId, contactId: conversation.contactId },
    async (tx) => {
      const run = await lockActiveRun(tx, payload.runId);
      if (run?.awaitingMessageId !== payload.messageId) return;
      const ctx = await contextFor(tx, deps, run);
      if (!ctx) return;
      await guardRun(ctx, async () =>
        failRun(ctx, reason, error.message, run.currentNodeKey, {
          upstream: error,
          message_id: payload.messageId,
        }),
      );
    },
  );
}
