import { and, eq, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { prepared } from "../db/prepared.js";
import {
  campaignRecipients,
  campaigns,
  messages,
  messageTemplates,
  messagingConfigs,
} from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { nextMessageTime } from "../inbox/threads.js";
import { classifySendError } from "../jobs/tasks/send-bot-message.js";
import { GraphApiError, type OutboundMessage, type SentMessage } from "../upstream/graph.js";
import { campaignUpdated } from "./events.js";
import { type CampaignParameters, fillParameters, renderForContact, templateShape } from "./parameters.js";

export const CAMPAIGN_SEND_TASK = "campaign-send";
/** Jobs that send one campaign at once (on any instances); each claims its own batches. */
export const CAMPAIGN_SEND_JOBS = 2;
/** Below customer-facing jobs (priority 0): replies, agent sends and reactions go first. */
export const CAMPAIGN_JOB_PRIORITY = 10;
/** Recipients one claim takes: their sends are in flight together. */
export const CAMPAIGN_BATCH = 25;
/** How long one job run sends before handing its place back to the queue. */
const RUN_SLICE_MS = 5_000;
/** Meta's per-user marketing limit: deferred this long, then tried once more. */
export const DEFER_MS = 24 * 60 * 60 * 1000;
/** A recipient claimed this long ago and never recorded was being sent by a process that died. */
export const SENDING_STALE_MS = 120_000;

/** A send Meta refused for throughput waits this long before its next claim. */
const REQUEUE_DELAY_MS = 2_000;
/** Meta's codes that say the template itself stopped (paused or disabled by Meta). */
const TEMPLATE_STOPPED = new Set([132015, 132016]);
const MARKETING_LIMIT = 131049;

const recipientKey = (campaignId: string, contactId: string) =>
  and(eq(campaignRecipients.campaignId, campaignId), eq(campaignRecipients.contactId, contactId));

/** Adds the campaign's send jobs (one per slot; a slot's job that has not started is replaced, not doubled). */
export async function enqueueCampaignSends(tx: DbOrTx, campaignId: string, runAt?: Date | null) {
  for (let slot = 0; slot < CAMPAIGN_SEND_JOBS; slot++) {
    await tx.execute(sql`select graphile_worker.add_job(
      identifier := ${CAMPAIGN_SEND_TASK}::text,
      payload := ${JSON.stringify({ campaignId })}::json,
      run_at := ${runAt ? runAt.toISOString() : null}::timestamptz,
      job_key := ${`${CAMPAIGN_SEND_TASK}:${campaignId}:${slot}`}::text,
      priority := ${CAMPAIGN_JOB_PRIORITY}::integer,
      max_attempts := 25)`);
  }
}

/**
 * The one upstream call of a campaign send: the template message stored in
 * the recipient's conversation, sent with today's Graph API client. (The
 * send pipeline's rate and callback-data resolution attach here.)
 */
export async function sendCampaignMessage(
  deps: Pick<AppDeps, "graph">,
  input: { token: string; phoneNumberId: string; to: string; outbound: OutboundMessage; messageId: string },
): Promise<SentMessage> {
  return deps.graph.sendMessage(input.token, input.phoneNumberId, input.to, input.outbound);
}

interface Claimed {
  contact_id: string;
  attempts: number;
  name: string | null;
  phone: string | null;
  attributes: Record<string, unknown>;
  opted_out: boolean;
}

type Outcome =
  | { status: "sent"; upstreamId: string }
  | { status: "failed"; code: string; title: string; error: Record<string, unknown> }
  | { status: "deferred"; code: string; title: string; error: Record<string, unknown> }
  | { status: "unknown"; error: Record<string, unknown> }
  | { status: "requeue"; error: Record<string, unknown>; pauseReason?: string };

/**
 * The `campaign-send` task: while the campaign runs, claims batches of its
 * queued recipients and sends them. Exactly once per recipient: a claim
 * moves the recipient `queued` -> `sending` and writes its message row in one
 * transaction, committed before the upstream call; nothing ever sends a
 * recipient that is not `queued` (or `deferred` and due). A process that
 * dies mid-send leaves the recipient `sending` and its message `pending`;
 * after SENDING_STALE_MS a later run records it `unknown` (error
 * `unknown_outcome`), never sends it again, and the campaign can complete.
 */
export async function runCampaignSends(deps: AppDeps, campaignId: string): Promise<void> {
  const started = Date.now();
  for (;;) {
    const campaign = await beginRunning(deps, campaignId);
    if (!campaign) return;
    const context = await sendContext(deps, campaign);
    if ("problem" in context) {
      await pauseCampaign(deps.db, campaignId, context.problem);
      return;
    }
    const claimed = await claimBatch(deps, campaign, context);
    if (claimed.length === 0) {
      if (await settle(deps, campaignId)) continue;
      return;
    }
    const outcomes = await Promise.all(
      claimed.map(async (c) => {
        try {
          const sent = await sendCampaignMessage(deps, {
            ...context,
            to: c.to,
            outbound: c.outbound,
            messageId: c.messageId,
          });
          return { c, outcome: { status: "sent", upstreamId: sent.messageId } as Outcome };
        } catch (error) {
          return { c, outcome: outcomeOf(error, c.attempts) };
        }
      }),
    );
    let pauseReason: string | undefined;
    for (const { c, outcome } of outcomes) {
      await record(deps, c, outcome);
      if (outcome.status === "requeue" && outcome.pauseReason) pauseReason = outcome.pauseReason;
    }
    if (pauseReason) await pauseCampaign(deps.db, campaignId, pauseReason);
    await campaignUpdated(deps.db, campaignId);
    if (Date.now() - started > RUN_SLICE_MS) {
      // Hand the slot back to the queue: other work (and a stopping instance) gets its turn.
      await enqueueCampaignSends(deps.db, campaignId);
      return;
    }
  }
}

/** The campaign if it runs (a scheduled one whose time came starts now); null otherwise. */
async function beginRunning(deps: AppDeps, campaignId: string) {
  const [campaign] = await deps.db
    .update(campaigns)
    .set({
      status: "running",
      startedAt: sql`coalesce(${campaigns.startedAt}, now())`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(campaigns.id, campaignId),
        eq(campaigns.status, "scheduled"),
        sql`coalesce(${campaigns.scheduledAt}, now()) <= now()`,
      ),
    )
    .returning();
  if (campaign) {
    await campaignUpdated(deps.db, campaignId);
    return campaign;
  }
  const [current] = await deps.db.select().from(campaigns).where(eq(campaigns.id, campaignId));
  return current?.status === "running" ? current : null;
}

type Context = {
  token: string;
  phoneNumberId: string;
  shape: ReturnType<typeof templateShape>;
  filled: Extract<ReturnType<typeof fillParameters>, { ok: true }>["filled"];
};

async function sendContext(
  deps: AppDeps,
  campaign: typeof campaigns.$inferSelect,
): Promise<Context | { problem: string }> {
  const [config] = await deps.db
    .select({ phoneNumberId: messagingConfigs.phoneNumberId, accessToken: messagingConfigs.accessToken })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, campaign.accountId));
  if (!config) return { problem: "channel_not_configured" };
  let token: string;
  try {
    token = deps.cipher.decrypt(config.accessToken);
  } catch {
    return { problem: "channel_token_unreadable" };
  }
  const [template] = await deps.db
    .select({ status: messageTemplates.status, components: messageTemplates.components })
    .from(messageTemplates)
    .where(
      and(
        eq(messageTemplates.accountId, campaign.accountId),
        eq(messageTemplates.name, campaign.templateName),
        eq(messageTemplates.language, campaign.templateLanguage),
      ),
    );
  if (!template) return { problem: "template_missing" };
  if (template.status !== "APPROVED") return { problem: `template_${template.status.toLowerCase()}` };
  const shape = templateShape(template.components);
  const filled = fillParameters(shape, campaign.parameters as CampaignParameters);
  if (!filled.ok) return { problem: "template_changed" };
  return { token, phoneNumberId: config.phoneNumberId, shape, filled: filled.filled };
}

interface ClaimedSend {
  campaignId: string;
  contactId: string;
  messageId: string;
  to: string;
  outbound: OutboundMessage;
  attempts: number;
}

/**
 * Claims up to CAMPAIGN_BATCH due recipients and, in the same transaction,
 * writes each one's template message (pending, `campaign_id`) in its
 * conversation (created when the contact has none), or records why it is
 * skipped (opted out since the snapshot, no number, a value left empty).
 */
async function claimBatch(deps: AppDeps, campaign: typeof campaigns.$inferSelect, context: Context) {
  return deps.db.transaction(async (tx) => {
    const { rows } = await tx.execute<Claimed & Record<string, unknown>>(
      prepared(sql`
      with due as (
        select contact_id from ${campaignRecipients}
         where campaign_id = ${campaign.id}::uuid and status = 'queued'
           and coalesce(next_attempt_at, '-infinity') <= now()
         order by contact_id
         limit ${CAMPAIGN_BATCH}
         for update skip locked
      ), claimed as (
        update ${campaignRecipients} r
           set status = 'sending', attempts = r.attempts + 1, claimed_at = now(), updated_at = now()
          from due where r.campaign_id = ${campaign.id}::uuid and r.contact_id = due.contact_id
        returning r.contact_id, r.attempts
      )
      select claimed.contact_id, claimed.attempts, c.name, c.phone, c.attributes, c.opted_out
        from claimed join contacts c on c.id = claimed.contact_id
       order by claimed.contact_id`),
    );
    const skipped: Array<{ id: string; reason: string }> = [];
    const sends: Array<Claimed & { text: string; outbound: OutboundMessage }> = [];
    for (const row of rows) {
      if (row.opted_out) skipped.push({ id: row.contact_id, reason: "opted_out" });
      else if (!row.phone) skipped.push({ id: row.contact_id, reason: "no_address" });
      else {
        const rendered = renderForContact(context.shape, context.filled, row);
        if (rendered.missing) skipped.push({ id: row.contact_id, reason: "missing_value" });
        else {
          const outbound: OutboundMessage = {
            type: "template",
            template: {
              name: campaign.templateName,
              language: { code: campaign.templateLanguage },
              ...(rendered.components.length ? { components: rendered.components } : {}),
            },
          };
          sends.push({ ...row, text: rendered.text, outbound });
        }
      }
    }
    for (const s of skipped) {
      await tx
        .update(campaignRecipients)
        .set({ status: "skipped", skippedReason: s.reason, updatedAt: sql`now()` })
        .where(recipientKey(campaign.id, s.id));
    }
    if (sends.length === 0) return [];
    const now = deps.now();
    const { rows: threads } = await tx.execute<{ id: string; contact_id: string }>(sql`
      insert into conversations (account_id, contact_id, last_message_at)
      select ${campaign.accountId}::uuid, contact_id, ${now.toISOString()}::timestamptz
        from unnest(${sql.param(sends.map((s) => s.contact_id))}::uuid[]) as contact_id
      on conflict (contact_id) do update
        set last_message_at = greatest(conversations.last_message_at, excluded.last_message_at),
            updated_at = excluded.last_message_at
      returning id, contact_id`);
    const conversationOf = new Map(threads.map((t) => [t.contact_id, t.id]));
    const inserted = await tx
      .insert(messages)
      .values(
        sends.map((s) => {
          const at = nextMessageTime(now);
          return {
            accountId: campaign.accountId,
            conversationId: conversationOf.get(s.contact_id) as string,
            direction: "outbound" as const,
            senderType: "bot" as const,
            type: "template",
            text: s.text,
            payload: s.outbound as unknown as Record<string, unknown>,
            status: "pending" as const,
            sendStartedAt: now,
            campaignId: campaign.id,
            createdAt: at,
            updatedAt: at,
          };
        }),
      )
      .returning({ id: messages.id, conversationId: messages.conversationId });
    const claimedSends: ClaimedSend[] = [];
    for (const [i, s] of sends.entries()) {
      const messageId = inserted[i]?.id as string;
      await tx.update(campaignRecipients).set({ messageId }).where(recipientKey(campaign.id, s.contact_id));
      claimedSends.push({
        campaignId: campaign.id,
        contactId: s.contact_id,
        messageId,
        to: s.phone as string,
        outbound: s.outbound,
        attempts: s.attempts,
      });
    }
    return claimedSends;
  });
}

function outcomeOf(error: unknown, attempts: number): Outcome {
  const details =
    error instanceof GraphApiError ? error.toJSON() : { message: "The message could not be sent" };
  const code = error instanceof GraphApiError ? error.code : undefined;
  const title = error instanceof GraphApiError ? error.message : "The message could not be sent";
  if (code !== undefined && TEMPLATE_STOPPED.has(code)) {
    return {
      status: "requeue",
      error: details,
      pauseReason: code === 132015 ? "template_paused" : "template_disabled",
    };
  }
  if (code === MARKETING_LIMIT && attempts < 2) {
    return { status: "deferred", code: String(code), title, error: details };
  }
  const kind = classifySendError(error);
  if (kind === "retry") return { status: "requeue", error: details };
  if (kind === "unknown") return { status: "unknown", error: details };
  return { status: "failed", code: code === undefined ? "send_failed" : String(code), title, error: details };
}

/** Records one send's outcome on its recipient and its message. */
async function record(deps: AppDeps, c: ClaimedSend, outcome: Outcome) {
  await deps.db.transaction(async (tx) => {
    const recipient = and(recipientKey(c.campaignId, c.contactId), eq(campaignRecipients.status, "sending"));
    const message = and(eq(messages.id, c.messageId), eq(messages.status, "pending"));
    switch (outcome.status) {
      case "sent":
        await tx
          .update(messages)
          .set({ status: "sent", messageId: outcome.upstreamId, updatedAt: sql`now()` })
          .where(message);
        await tx.update(campaignRecipients).set({ status: "sent", updatedAt: sql`now()` }).where(recipient);
        return;
      case "failed":
      case "deferred":
        await tx
          .update(messages)
          .set({ status: "failed", error: outcome.error, updatedAt: sql`now()` })
          .where(message);
        await tx
          .update(campaignRecipients)
          .set({
            status: outcome.status,
            errorCode: outcome.code,
            errorTitle: outcome.title,
            nextAttemptAt: outcome.status === "deferred" ? new Date(Date.now() + DEFER_MS) : null,
            updatedAt: sql`now()`,
          })
          .where(recipient);
        return;
      case "requeue":
        // Meta provably did not take it: the message row goes, the recipient waits for another claim.
        await tx
          .update(campaignRecipients)
          .set({
            status: "queued",
            messageId: null,
            attempts: sql`${campaignRecipients.attempts} - 1`,
            nextAttemptAt: new Date(Date.now() + REQUEUE_DELAY_MS),
            updatedAt: sql`now()`,
          })
          .where(recipient);
        await tx.delete(messages).where(message);
        return;
      case "unknown":
        await tx
          .update(campaignRecipients)
          .set({
            status: "unknown",
            errorCode: "unknown_outcome",
            errorTitle: String(outcome.error.message ?? ""),
            updatedAt: sql`now()`,
          })
          .where(recipient);
        await tx
          .update(messages)
          .set({ error: { ...outcome.error, kind: "unknown_outcome" }, updatedAt: sql`now()` })
          .where(message);
        return;
    }
  });
}

/**
 * No recipient left to claim: records sends interrupted by a dead process
 * as `unknown`, and completes the campaign when every recipient is final
 * (else looks again when the oldest send in flight turns stale).
 */
async function settle(deps: AppDeps, campaignId: string): Promise<boolean> {
  // Deferred recipients whose day is over are queued again (their second and last try).
  const due = await deps.db
    .update(campaignRecipients)
    .set({ status: "queued", updatedAt: sql`now()` })
    .where(
      and(
        eq(campaignRecipients.campaignId, campaignId),
        eq(campaignRecipients.status, "deferred"),
        sql`${campaignRecipients.nextAttemptAt} <= now()`,
      ),
    )
    .returning({ id: campaignRecipients.contactId });
  if (due.length) return true;
  const stale = await deps.db
    .update(campaignRecipients)
    .set({
      status: "unknown",
      errorCode: "unknown_outcome",
      errorTitle: "The sending process stopped after the request may have gone out; not sent again",
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(campaignRecipients.campaignId, campaignId),
        eq(campaignRecipients.status, "sending"),
        sql`${campaignRecipients.claimedAt} < now() - ${`${SENDING_STALE_MS} milliseconds`}::interval`,
      ),
    )
    .returning({ id: campaignRecipients.contactId });
  const [done] = await deps.db
    .update(campaigns)
    .set({ status: "completed", completedAt: sql`now()`, updatedAt: sql`now()` })
    .where(
      and(
        eq(campaigns.id, campaignId),
        eq(campaigns.status, "running"),
        sql`not exists (select 1 from ${campaignRecipients} r where r.campaign_id = ${campaignId}::uuid
                          and r.status in ('queued', 'sending', 'deferred'))`,
      ),
    )
    .returning({ id: campaigns.id });
  if (done || stale.length) await campaignUpdated(deps.db, campaignId);
  if (done) return false;
  // Look again when the next recipient falls due: a requeued or deferred one, or a send in flight turning stale.
  const { rows } = await deps.db.execute<{ at: string | null }>(sql`
    select min(case when status = 'sending' then claimed_at + ${`${SENDING_STALE_MS + 1000} milliseconds`}::interval
                    else next_attempt_at end) as at
      from ${campaignRecipients}
     where campaign_id = ${campaignId}::uuid and status in ('queued', 'sending', 'deferred')`);
  const at = rows[0]?.at;
  if (at) {
    await deps.db.execute(sql`select graphile_worker.add_job(
      identifier := ${CAMPAIGN_SEND_TASK}::text,
      payload := ${JSON.stringify({ campaignId })}::json,
      run_at := greatest(now(), ${new Date(at).toISOString()}::timestamptz),
      job_key := ${`${CAMPAIGN_SEND_TASK}:${campaignId}:next`}::text,
      priority := ${CAMPAIGN_JOB_PRIORITY}::integer)`);
  }
  return false;
}

/** Pauses a running or scheduled campaign with a reason (Meta stopped its template, the channel went away). */
export async function pauseCampaign(db: DbOrTx, campaignId: string, reason: string | null) {
  const [paused] = await db
    .update(campaigns)
    .set({ status: "paused", pausedReason: reason, updatedAt: sql`now()` })
    .where(and(eq(campaigns.id, campaignId), inArray(campaigns.status, ["running", "scheduled"])))
    .returning({ id: campaigns.id });
  if (paused) await campaignUpdated(db, campaignId);
  return Boolean(paused);
}
