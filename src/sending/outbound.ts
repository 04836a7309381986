import { and, eq, sql } from "drizzle-orm";
import type pg from "pg";
import { adoptWhatsAppId, isBsuid } from "../contacts/identity.js";
import type { DbOrTx } from "../db/client.js";
import { prepared } from "../db/prepared.js";
import { contacts, conversations, flowRuns, messages, messagingConfigs } from "../db/schema/index.js";
import { lockRunContext } from "../flows/runner/dispatch.js";
import {
  continueAfterSend,
  failRun,
  guardRun,
  type RunContext,
  type RunnerDeps,
} from "../flows/runner/engine.js";
import { withContactLock } from "../flows/runner/store.js";
import type { ClaimedSend } from "../ports.js";
import { addJob, addJobSql, removeJobSql } from "../queue/add.js";
import { customerQueue } from "../queue/names.js";
import {
  SEND_BOT_MESSAGE_TASK,
  SEND_MESSAGE_TASK,
  SETTLE_SEND_TASK,
  type SendPayload,
} from "../queue/tasks.js";
import { GraphApiError, type OutboundMessage, toUpstreamPhone } from "../upstream/graph.js";
import { campaignSendOutcome } from "./outcomes.js";
import type { SendPriority, SendResult } from "./pipeline.js";

export { SEND_BOT_MESSAGE_TASK, SEND_MESSAGE_TASK, SETTLE_SEND_TASK };

/**
 * The durable half of a send (product.md sections 10 and 17). A send job
 * claims the message (`send_started_at`) and, in the same statement, adds the
 * message's settle job, due after SEND_UNKNOWN_WINDOW_S; then the HTTP call goes
 * to the instance's send pipeline and the job is done: no job slot and no
 * database connection wait on Meta. Meta's answer is recorded when it comes
 * (and the settle job removed). Whatever interrupts that (a timeout, a dropped
 * connection, kill -9) leaves the settle job, which resolves the send: a
 * status webhook naming the message (Meta echoes our id in
 * `biz_opaque_callback_data`) has recorded it sent by then; otherwise it is
 * sent once more, and only once.
 */

/** Graphile priority of campaign sends: every customer-facing job is taken first. */
export const CAMPAIGN_JOB_PRIORITY = 10;

/** Sends of one message, the first included, while Meta provably does not take it. */
export const MAX_SEND_ATTEMPTS = 6;

/** What a send job carries. */
export type { SendPayload };

const RATE_CODES = new Set([4, 80007, 130429, 131056]);

export type SendFailure = "retry" | "unknown" | "final";

/**
 * Whether Meta provably did not take the message (retry), cannot be known to
 * have taken it or not (unknown: resolved by the settle job), or refused it
 * for good (final).
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
  "The send was interrupted twice after the request went out and Meta never reported the message: it is not sent a third time";

const settleKey = (messageId: string) => `settle-send:${messageId}`;
const json = (value: unknown) => JSON.stringify(value);

/**
 * Enqueues the send of a stored `pending` outbound message at campaign
 * priority: after every customer-facing send, at the number's
 * `messages_per_second`, exactly once as section 10 says. Add it in the
 * transaction that stores the message. The message's status then moves as
 * Meta answers (`sent`, then status webhooks; `failed` with `error`).
 */
export async function enqueueCampaignSend(db: DbOrTx, input: { messageId: string; queueName?: string }) {
  await addJob(
    db,
    SEND_MESSAGE_TASK,
    { messageId: input.messageId, priority: "campaign" },
    {
      priority: CAMPAIGN_JOB_PRIORITY,
      maxAttempts: 3,
      ...(input.queueName ? { queueName: input.queueName } : {}),
    },
  );
}

/**
 * enqueueCampaignSend for many stored `pending` messages in one statement (a
 * campaign's claimed batch): each its own send job at campaign priority.
 */
export async function enqueueCampaignSends(db: DbOrTx, messageIds: string[]) {
  if (messageIds.length === 0) return;
  await db.execute(sql`
    select count(${addJobSql(
      SEND_MESSAGE_TASK,
      sql`json_build_object('messageId', id, 'priority', 'campaign')`,
      { priority: CAMPAIGN_JOB_PRIORITY, maxAttempts: 3 },
    )}) from unnest(${sql.param(messageIds)}::uuid[]) as id`);
}

/** What a send needs of the instance. */
export type SendDeps = RunnerDeps;

/** A claimed message and where it goes. */
export type Claimed = ClaimedSend;

/**
 * Marks the message as being sent and adds its settle job, in one statement,
 * and reads where it goes; null when it is not `pending` or a send of it is
 * already under way.
 */
async function claimSend(deps: SendDeps, payload: SendPayload): Promise<Claimed | null> {
  // Not before this instance is surely done with the send (answered, timed out or handed back),
  // then the window for Meta's status.
  const windowEnd = settleDueAt(deps);
  const { rows } = await deps.db.execute<Claimed & Record<string, unknown>>(
    prepared(sql`
    with claimed as (
      update ${messages} set send_started_at = ${deps.now().toISOString()}::timestamptz
       where id = ${payload.messageId} and status = 'pending' and send_started_at is null
         and message_id is null
      returning account_id, conversation_id, type, text, payload, campaign_id, send_resent_at
    )
    select c.account_id as "accountId", c.type, c.text, c.payload,
           c.campaign_id as "campaignId", c.send_resent_at is null as "firstTry",
           k.id as "contactId", k.phone, k.wa_id as "waId",
           r.status as "runStatus", r.awaiting_message_id as "awaiting",
           mc.phone_number_id as "phoneNumberId", mc.access_token as "accessToken",
           mc.messages_per_second as "limit",
           ${addJobSql(SETTLE_SEND_TASK, sql`${json(payload)}::json`, {
             runAt: windowEnd,
             jobKey: settleKey(payload.messageId),
             maxAttempts: 5,
           })} is not null as settled
      from claimed c
      left join ${conversations} v on v.id = c.conversation_id
      left join ${contacts} k on k.id = v.contact_id
      left join ${flowRuns} r on r.id = ${payload.runId ?? null}::uuid
      left join ${messagingConfigs} mc on mc.account_id = c.account_id`),
  );
  return rows[0] ?? null;
}

type Target =
  | {
      ok: true;
      token: string;
      phoneNumberId: string;
      to: string;
      contactId: string;
      waId: string;
      queue: string;
      limit: number;
    }
  | { ok: false; problem: string; reason: string };

/** Where the message goes, checked again at send time: the run, the channel, the number. */
function sendTarget(deps: SendDeps, payload: SendPayload, row: Claimed): Target {
  if (!row.contactId || !row.waId) {
    return { ok: false, problem: "The conversation no longer exists", reason: "send_failed" };
  }
  if (payload.runId && (row.runStatus !== "active" || row.awaiting !== payload.messageId)) {
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
  return {
    ok: true,
    token,
    phoneNumberId: row.phoneNumberId,
    to,
    contactId: row.contactId,
    waId: row.waId,
    queue: customerQueue(row.phoneNumberId, row.waId),
    limit: row.limit ?? 80,
  };
}

/**
 * Claims the message and hands its HTTP call to the send pipeline; returns
 * once the call is under way (or waiting for its number's slot), not when
 * Meta answers. The answer is recorded by the pipeline's follow-up.
 */
export async function startSend(deps: SendDeps, payload: SendPayload): Promise<void> {
  const priority = payload.priority ?? "customer";
  // Backpressure: a full pipeline holds the job here, before anything is claimed.
  await deps.sends.admit(priority);
  const claimed = await claimSend(deps, payload);
  if (!claimed) return; // sent, failed, or under way elsewhere: its settle job resolves it
  await handOver(deps, payload, claimed, priority);
}

/** The longest a claimed bot message waits for room in the pipeline before it joins it anyway. */
const ADMIT_CLAIMED_MS = 5_000;

/** When the settle job of a send claimed now is due: after this instance is surely done with it, and the window. */
export const settleDueAt = (deps: Pick<SendDeps, "sends" | "config">) =>
  // Job times are the real clock's (deps.now may be a test's).
  new Date(Date.now() + deps.sends.settleAfterMs + deps.config.sendUnknownWindowS * 1000);

/**
 * A bot message stored claimed, with its settle job, by the advance that
 * queued it (flows/runner/engine.ts), handed to the send pipeline once that
 * advance committed: what the send job would have done after its claim, minus
 * the job and the claim's statement. Never throws (the settle job resolves a
 * send whose hand-over failed).
 */
export async function sendClaimed(deps: SendDeps, payload: SendPayload, claimed: Claimed): Promise<void> {
  // Backpressure on the job that queued it, as a send job gets in startSend, but bounded: the message
  // is claimed already, and must reach the pipeline long before its settle job is due.
  let waited: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    deps.sends.admit("customer"),
    new Promise<void>((resolve) => {
      waited = setTimeout(resolve, ADMIT_CLAIMED_MS);
    }),
  ]);
  clearTimeout(waited);
  await handOver(deps, payload, claimed, "customer").catch((error: unknown) =>
    deps.log.error({ err: error, messageId: payload.messageId }, "handing a claimed send over failed"),
  );
}

async function handOver(deps: SendDeps, payload: SendPayload, claimed: Claimed, priority: SendPriority) {
  const target = sendTarget(deps, payload, claimed);
  if (!target.ok) {
    await recordFailure(deps, payload, { message: target.problem }, target.reason);
    return;
  }

  if (payload.readMessageId && (payload.attempt ?? 1) === 1) {
    // Blue ticks and "typing..." for the message being answered, side by side with the reply:
    // best effort (never retried), so it never delays the reply.
    deps.sends.track(
      deps.graph
        .markRead(target.token, target.phoneNumberId, payload.readMessageId, { typing: true })
        .catch((error: unknown) =>
          deps.log.info(
            { err: error, messageId: payload.messageId },
            "read receipt before a bot reply failed",
          ),
        ),
    );
  }

  const outbound = (claimed.payload as OutboundMessage | null) ?? {
    type: "text",
    text: { body: claimed.text ?? "" },
  };
  const result = deps.sends.send({
    messageId: payload.messageId,
    phoneNumberId: target.phoneNumberId,
    token: target.token,
    to: target.to,
    message: outbound,
    limit: target.limit,
    priority,
    // Checked once more before the HTTP call: a cancel or pause since the claim withdraws it.
    campaignId: claimed.firstTry ? claimed.campaignId : null,
  });
  deps.sends.track(
    result
      .then((answer) =>
        recordResult(
          deps,
          payload,
          { ...target, accountId: claimed.accountId, type: claimed.type, campaignId: claimed.campaignId },
          answer,
        ),
      )
      .catch((error: unknown) =>
        // The settle job is still there: the send is resolved after the window.
        deps.log.error({ err: error, messageId: payload.messageId }, "recording a send's answer failed"),
      ),
  );
}

type Recorded = Extract<Target, { ok: true }> & {
  accountId: string;
  type: string;
  campaignId: string | null;
};

async function recordResult(deps: SendDeps, payload: SendPayload, target: Recorded, result: SendResult) {
  const attempt = payload.attempt ?? 1;
  if (result.kind === "sent") {
    // Meta's WhatsApp id for a rewritten number becomes the contact's (a failure here is no failed send);
    // nothing to write when Meta answered the id the contact has (as nearly always).
    if (result.sent.waId && result.sent.waId !== target.waId) {
      await adoptWhatsAppId(deps.db, { contactId: target.contactId, waId: result.sent.waId }).catch(
        (error: unknown) =>
          deps.log.warn({ err: error }, "the WhatsApp id Meta answered could not be stored"),
      );
    }
    await recordSent(deps, payload, {
      accountId: target.accountId,
      campaignId: target.campaignId,
      contactId: target.contactId,
      upstreamId: result.sent.messageId,
      type: target.type,
    });
    return;
  }
  if (result.kind === "released") {
    // Never went out (closing, or too long without a slot): another worker takes it at once.
    await deps.db.transaction(async (tx) => {
      await tx
        .update(messages)
        .set({ sendStartedAt: null })
        .where(and(eq(messages.id, payload.messageId), eq(messages.status, "pending")));
      await addJob(
        tx,
        SETTLE_SEND_TASK,
        { ...payload },
        { jobKey: settleKey(payload.messageId), maxAttempts: 5 },
      );
    });
    return;
  }
  if (result.kind === "withdrawn") {
    // Never went out, and never will: its campaign was cancelled or paused since the claim.
    await deps.db.transaction(async (tx) => {
      await tx.execute(sql`select ${removeJobSql(settleKey(payload.messageId))}`);
      const [message] = await tx
        .select({ campaignId: messages.campaignId })
        .from(messages)
        .where(
          and(
            eq(messages.id, payload.messageId),
            eq(messages.status, "pending"),
            sql`${messages.messageId} is null`,
          ),
        )
        .for("update");
      if (message?.campaignId) {
        await campaignSendOutcome(tx, {
          messageId: payload.messageId,
          campaignId: message.campaignId,
          status: "withdrawn",
        });
      }
    });
    return;
  }
  const { error } = result;
  const kind = classifySendError(error);
  const details =
    error instanceof GraphApiError ? error.toJSON() : { message: "The message could not be sent" };
  if (kind === "retry" && attempt < MAX_SEND_ATTEMPTS) {
    await deps.db.transaction(async (tx) => {
      await tx.update(messages).set({ sendStartedAt: null }).where(eq(messages.id, payload.messageId));
      await tx.execute(sql`select ${removeJobSql(settleKey(payload.messageId))}`);
      await addJob(
        tx,
        payload.runId ? SEND_BOT_MESSAGE_TASK : SEND_MESSAGE_TASK,
        { ...payload, attempt: attempt + 1 },
        {
          queueName: payload.priority === "campaign" ? undefined : target.queue,
          runAt: new Date(Date.now() + retryDelayMs(attempt)),
          maxAttempts: 3,
          priority: payload.priority === "campaign" ? CAMPAIGN_JOB_PRIORITY : undefined,
        },
      );
    });
    deps.log.warn(
      { messageId: payload.messageId, attempt, code: (details as { code?: unknown }).code ?? null },
      "send refused for now; retrying",
    );
    return;
  }
  if (kind === "unknown") {
    // Meta may have taken it: its status webhook will say so. Settled after the window from now.
    await addJob(
      deps.db,
      SETTLE_SEND_TASK,
      { ...payload },
      {
        jobKey: settleKey(payload.messageId),
        runAt: new Date(Date.now() + deps.config.sendUnknownWindowS * 1000),
        maxAttempts: 5,
      },
    );
    deps.log.warn(
      { messageId: payload.messageId, kind: details.message },
      "send outcome unknown; settled later",
    );
    return;
  }
  await recordFailure(deps, payload, details, "send_failed");
}

/**
 * Records the message sent with Meta's id (unless a status webhook naming it
 * did first), drops its settle job, and moves its run on.
 */
async function recordSent(
  deps: SendDeps,
  payload: SendPayload,
  sent: { accountId: string; campaignId: string | null; contactId: string; upstreamId: string; type: string },
) {
  const sentAt = deps.now();
  const key = { accountId: sent.accountId, contactId: sent.contactId };
  const record = async (tx: DbOrTx) => {
    // The message and its settle job in one statement; the run's context read beside it, in the same
    // round trip (the transaction's connection is pipelined, see transactionOpenedWith): it does not
    // depend on that update, and both hold the contact's lock.
    const [{ rows }, ctx] = await Promise.all([
      tx.execute<{ campaign_id: string | null }>(
        prepared(sql`
      with sent as (
        update ${messages}
           set message_id = coalesce(message_id, ${sent.upstreamId}::text),
               status = case when status = 'pending' then 'sent' else status end,
               updated_at = ${sentAt.toISOString()}::timestamptz
         where id = ${payload.messageId}::uuid
        returning campaign_id
      )
      select (select campaign_id from sent) as campaign_id,
             (${removeJobSql(settleKey(payload.messageId))}).id is not null as removed`),
      ),
      payload.runId ? lockRunContext(tx, deps, payload.runId) : null,
    ]);
    const campaignId = rows[0]?.campaign_id;
    if (campaignId)
      await campaignSendOutcome(tx, { messageId: payload.messageId, campaignId, status: "sent" });
    await continueRun(ctx, payload, { upstreamId: sent.upstreamId, type: sent.type, at: sentAt });
  };
  // A campaign message's record also moves its recipient and its campaign's counts, which the
  // campaign row's lock orders: that takes a transaction of its own, not one shared with other contacts.
  await (sent.campaignId
    ? withContactLock(deps.pool, key, record)
    : deps.contactTransactions.run(key, record));
}

/** Moves on the run `ctx` (read under the contact's lock) if it still waits for this message. */
async function continueRun(
  ctx: RunContext | null,
  payload: SendPayload,
  sent: { upstreamId: string; type: string; at: Date },
) {
  if (!payload.runId || ctx?.run.awaitingMessageId !== payload.messageId) return;
  ctx.steps = payload.steps ?? 0;
  // The run's write is the transaction's last statement: it goes out with the commit.
  await guardRun(
    ctx,
    () =>
      continueAfterSend(ctx, {
        messageId: payload.messageId,
        upstreamId: sent.upstreamId,
        type: sent.type,
        at: sent.at,
      }),
    { last: true },
  );
}

const ABANDONED =
  "The message could not be sent: its send job failed every attempt before the request went out";

/**
 * A send job's last attempt failed before its claim (the message never went
 * out, no settle job exists): the message is `failed` (a campaign recipient
 * too, `send_failed`, which retry-failed requeues) instead of `pending` for
 * ever. Nothing happens to a message whose send was claimed: its settle job
 * resolves it.
 */
export async function abandonUnsentSend(deps: SendDeps, payload: SendPayload, cause: unknown) {
  deps.log.error(
    { err: cause, messageId: payload.messageId },
    "a send job failed its last attempt before sending: the message is failed",
  );
  await recordFailure(deps, payload, { message: ABANDONED }, "send_failed", { unsentOnly: true });
}

/**
 * Messages of the given ids that are `pending`, not claimed and have no send
 * or settle job left that could still run (their jobs failed every attempt):
 * each is failed as abandonUnsentSend does (a resend's: `unknown_outcome`, its
 * first try may have reached Meta). Answers how many were failed.
 */
export async function failOrphanedSends(deps: SendDeps, messageIds: string[]): Promise<number> {
  if (messageIds.length === 0) return 0;
  const { rows } = await deps.db.execute<{ id: string; resent: boolean }>(sql`
    select m.id, m.send_resent_at is not null as resent from ${messages} m
     where m.id = any(${sql.param(messageIds)}::uuid[])
       and m.status = 'pending' and m.send_started_at is null and m.message_id is null
       and m.id::text not in (
         select j.payload->>'messageId' from graphile_worker._private_jobs j
           join graphile_worker._private_tasks t on t.id = j.task_id
          where t.identifier in (${SEND_MESSAGE_TASK}, ${SEND_BOT_MESSAGE_TASK}, ${SETTLE_SEND_TASK})
            and j.payload->>'messageId' is not null
            and (j.attempts < j.max_attempts or j.locked_at is not null))`);
  for (const row of rows) {
    deps.log.error({ messageId: row.id }, "a send whose jobs all failed before sending is failed");
    await recordFailure(
      deps,
      { messageId: row.id },
      row.resent ? { message: UNKNOWN_OUTCOME, kind: "unknown_outcome" } : { message: ABANDONED },
      "send_failed",
      { unsentOnly: true },
    );
  }
  return rows.length;
}

/** Marks the message failed and ends its run `failed` (when it still waits for this message). */
async function recordFailure(
  deps: SendDeps,
  payload: SendPayload,
  error: Record<string, unknown> & { message: string },
  reason: string,
  options: { unsentOnly?: boolean } = {},
) {
  const message = await deps.db.transaction(async (tx) => {
    const [failed] = await tx
      .update(messages)
      .set({ status: "failed", error, updatedAt: deps.now() })
      .where(
        and(
          eq(messages.id, payload.messageId),
          eq(messages.status, "pending"),
          options.unsentOnly
            ? sql`${messages.sendStartedAt} is null and ${messages.messageId} is null`
            : undefined,
        ),
      )
      .returning({
        accountId: messages.accountId,
        conversationId: messages.conversationId,
        campaignId: messages.campaignId,
      });
    await tx.execute(sql`select ${removeJobSql(settleKey(payload.messageId))}`);
    if (failed?.campaignId) {
      await campaignSendOutcome(tx, {
        messageId: payload.messageId,
        campaignId: failed.campaignId,
        status: "failed",
        error,
      });
    }
    return failed;
  });
  if (!message || reason === "run_ended" || !payload.runId) return;
  const runId = payload.runId;
  const [conversation] = await deps.db
    .select({ contactId: conversations.contactId })
    .from(conversations)
    .where(eq(conversations.id, message.conversationId));
  if (!conversation) return;
  await withContactLock(
    deps.pool,
    { accountId: message.accountId, contactId: conversation.contactId },
    async (tx) => {
      const ctx = await lockRunContext(tx, deps, runId);
      if (ctx?.run.awaitingMessageId !== payload.messageId) return;
      const { run } = ctx;
      await guardRun(ctx, async () =>
        failRun(ctx, reason, error.message, run.currentNodeKey, {
          upstream: error,
          message_id: payload.messageId,
        }),
      );
    },
  );
}

/**
 * The settle job: due SEND_UNKNOWN_WINDOW_S after a send was claimed (or at
 * once when a status webhook named it, or a send was handed back unsent).
 */
export async function settleSend(deps: SendDeps, payload: SendPayload): Promise<void> {
  const { rows } = await deps.db.execute<{
    status: string;
    upstream_id: string | null;
    started: boolean;
    resent: boolean;
    account_id: string;
    type: string;
    contact_id: string | null;
  }>(sql`
    select m.status, m.message_id as upstream_id, m.send_started_at is not null as started,
           m.send_resent_at is not null as resent, m.account_id, m.type, v.contact_id
      from ${messages} m left join ${conversations} v on v.id = m.conversation_id
     where m.id = ${payload.messageId}::uuid`);
  const row = rows[0];
  if (!row) return;
  if (!payload.runId) {
    // Named by a status webhook, which knows no run: the run waiting for this message, if one does.
    const { rows: runs } = await deps.db.execute<{ id: string }>(sql`
      select id from ${flowRuns} where awaiting_message_id = ${payload.messageId}::uuid and status = 'active'`);
    if (runs[0]) payload = { ...payload, runId: runs[0].id };
  }
  if (row.upstream_id !== null) {
    // Sent (recorded, or named by Meta's status webhook): the run goes on if it still waits for it.
    if (payload.runId && row.contact_id) {
      const contactId = row.contact_id;
      const runId = payload.runId;
      await withContactLock(deps.pool, { accountId: row.account_id, contactId }, async (tx) =>
        continueRun(await lockRunContext(tx, deps, runId), payload, {
          upstreamId: row.upstream_id as string,
          type: row.type,
          at: deps.now(),
        }),
      );
    }
    return;
  }
  if (row.status !== "pending") return;
  if (!row.started) {
    // Handed back unsent (or never reached the pipeline): its send starts now.
    await startSend(deps, payload);
    return;
  }
  if (!row.resent) {
    const { rows: marked } = await deps.db.execute(sql`
      update ${messages} set send_resent_at = ${deps.now().toISOString()}::timestamptz, send_started_at = null
       where id = ${payload.messageId}::uuid and status = 'pending' and message_id is null
         and send_resent_at is null
      returning id`);
    if (marked.length === 0) return;
    deps.log.warn(
      { messageId: payload.messageId, windowS: deps.config.sendUnknownWindowS },
      "no status named a send of unknown outcome within the window: sending it once more",
    );
    await startSend(deps, payload);
    return;
  }
  await recordFailure(
    deps,
    payload,
    { message: UNKNOWN_OUTCOME, kind: "unknown_outcome" },
    "send_outcome_unknown",
  );
}

/**
 * At an instance's start: settle jobs of sends whose outcome is unknown (claimed, never recorded)
 * are due no earlier than one window from now. Meta's statuses for them were posted while the
 * service may have been down, and come again (Meta retries) once it is up: resolving those sends
 * before the webhook had a window to hear them would send some twice. Jobs of sends handed back
 * unsent keep their time.
 */
export async function postponeUnknownSettles(pool: pg.Pool, windowS: number): Promise<number> {
  const { rowCount } = await pool.query(
    `update graphile_worker._private_jobs j set run_at = now() + make_interval(secs => $2)
       from graphile_worker._private_tasks t, messages m
      where t.id = j.task_id and t.identifier = $1 and j.locked_at is null
        and j.run_at < now() + make_interval(secs => $2)
        and m.id = (j.payload->>'messageId')::uuid
        and m.status = 'pending' and m.send_started_at is not null and m.message_id is null`,
    [SETTLE_SEND_TASK, windowS],
  );
  return rowCount ?? 0;
}
