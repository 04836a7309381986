import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
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
import { enqueueCampaignSends as enqueueCampaignMessages, failOrphanedSends } from "../sending/outbound.js";
import type { CampaignSendOutcome } from "../sending/outcomes.js";
import type { OutboundMessage } from "../upstream/graph.js";
import { campaignUpdated } from "./events.js";
import { type CampaignParameters, fillParameters, renderForContact, templateShape } from "./parameters.js";

export const CAMPAIGN_SEND_TASK = "campaign-send";
/** Jobs that claim one campaign's recipients at once (on any instances). */
export const CAMPAIGN_SEND_JOBS = 2;
/** Below customer-facing jobs (priority 0): replies, agent sends and reactions go first. */
export const CAMPAIGN_JOB_PRIORITY = 10;
/** The fewest recipients one claim takes (more at a high `messages_per_second`, at most CAMPAIGN_BATCH_MAX). */
export const CAMPAIGN_BATCH = 25;
const CAMPAIGN_BATCH_MAX = 250;
/**
 * Seconds of sending, at the number's `messages_per_second`, claimed ahead:
 * the campaign's recipients `sending` at once stay below this many seconds'
 * worth (at least one batch), so memory and the send queue stay bounded and a
 * pause stops the campaign within about this long.
 */
export const CLAIM_AHEAD_S = 2;
/** How long one job run claims before handing its place back to the queue. */
const RUN_SLICE_MS = 5_000;
/** A full window (or sends just handed over) is looked at again this often. */
const WINDOW_POLL_MS = 100;
/** Sends claimed this recently are waited for by the claim job itself (their outcomes come within moments). */
const FRESH_CLAIM_MS = 3_000;
/** Older sends in flight (retries, unknown outcomes in their window): the campaign is looked at this often. */
const IDLE_LOOK_MS = 5_000;
/** A recipient `sending` this long is checked for a send whose jobs all failed before sending. */
const ORPHAN_AFTER_MS = 30_000;
/** Meta's per-user marketing limit: deferred this long, then tried once more. */
export const DEFER_MS = 24 * 60 * 60 * 1000;

/** Meta's codes that say the template itself stopped (paused or disabled by Meta). */
const TEMPLATE_STOPPED = new Set([132015, 132016]);
const MARKETING_LIMIT = 131049;

const recipientKey = (campaignId: string, contactId: string) =>
  and(eq(campaignRecipients.campaignId, campaignId), eq(campaignRecipients.contactId, contactId));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Adds the campaign's claim jobs (one per slot; a slot's job that has not started is replaced, not doubled). */
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

interface Claimed {
  contact_id: string;
  attempts: number;
  name: string | null;
  phone: string | null;
  attributes: Record<string, unknown>;
  opted_out: boolean;
}

/**
 * The `campaign-send` task: while the campaign runs, claims batches of its
 * queued recipients and hands each one's template message to the send
 * pipeline (src/sending), which sends it at the number's
 * `messages_per_second` after every customer-facing send, with its callback
 * data, and resolves an unknown outcome as any send's. Exactly once per
 * recipient: a claim moves the recipient `queued` -> `sending`, writes its
 * message row (`pending`) and adds the message's send job in one
 * transaction; nothing ever claims a recipient that is not `queued` (or
 * `deferred` and due), and the pipeline sends a message at most once more
 * than provably refused. The pipeline's recorded outcome moves the
 * recipient (recordCampaignSendOutcome, in the same transaction). Claims
 * stay CLAIM_AHEAD_S seconds of sending ahead of the number's rate.
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
    const window = Math.max(CAMPAIGN_BATCH, Math.ceil(context.messagesPerSecond * CLAIM_AHEAD_S));
    const room = window - (await sendingCount(deps.db, campaignId));
    const batch = Math.min(
      room,
      Math.min(CAMPAIGN_BATCH_MAX, Math.max(CAMPAIGN_BATCH, Math.ceil(context.messagesPerSecond / 4))),
    );
    if (batch <= 0 && !(await claimedLately(deps.db, campaignId))) {
      // Sends whose jobs all failed before sending would hold the window for ever: failed, room made.
      if ((await failOrphans(deps, campaignId)) > 0) continue;
      // The window is full of older sends (retries in backoff, unknown outcomes in their window):
      // no job waits on them; the campaign is looked at again shortly.
      await deps.db.execute(
        sql`select ${nextLookJob(campaignId, sql`now() + ${`${IDLE_LOOK_MS} milliseconds`}::interval`)}`,
      );
      return;
    }
    const claimed = batch > 0 ? await claimBatch(deps, campaign, context, batch) : -1;
    let inFlight = false;
    if (claimed === 0) {
      const next = await settle(deps, campaignId);
      if (next === "again") continue;
      if (next === "later") return;
      // Sends in flight: their outcomes, recorded by the pipeline, complete the campaign.
      inFlight = true;
    }
    if (claimed > 0) await campaignUpdated(deps.db, campaignId);
    if (Date.now() - started > RUN_SLICE_MS) {
      // Hand the slot back to the queue: other work (and a stopping instance) gets its turn.
      await enqueueCampaignSends(deps.db, campaignId);
      return;
    }
    // The window is full: the pipeline sends what is claimed before more is.
    if (claimed < 0 || inFlight) await sleep(WINDOW_POLL_MS);
  }
}

/**
 * The campaign's recipients `sending` for over ORPHAN_AFTER_MS whose message
 * was never claimed and has no send job left (each failed its last attempt,
 * and failing the message then failed too): failed `send_failed`, as the
 * pipeline records any send that never went out. Answers how many.
 */
async function failOrphans(deps: AppDeps, campaignId: string): Promise<number> {
  const { rows } = await deps.db.execute<{ message_id: string }>(sql`
    select r.message_id from ${campaignRecipients} r join ${messages} m on m.id = r.message_id
     where r.campaign_id = ${campaignId}::uuid and r.status = 'sending'
       and r.claimed_at < now() - ${`${ORPHAN_AFTER_MS} milliseconds`}::interval
       and m.status = 'pending' and m.send_started_at is null and m.message_id is null
     limit 1000`);
  return failOrphanedSends(
    deps,
    rows.map((r) => r.message_id),
  );
}

/** Whether some of the campaign's sends were handed to the pipeline within FRESH_CLAIM_MS. */
async function claimedLately(db: DbOrTx, campaignId: string): Promise<boolean> {
  const { rows } = await db.execute<{ fresh: boolean }>(sql`
    select exists (select 1 from ${campaignRecipients}
                    where campaign_id = ${campaignId}::uuid and status = 'sending'
                      and claimed_at > now() - ${`${FRESH_CLAIM_MS} milliseconds`}::interval) as fresh`);
  return Boolean(rows[0]?.fresh);
}

async function sendingCount(db: DbOrTx, campaignId: string): Promise<number> {
  const { rows } = await db.execute<{ n: number }>(sql`
    select count(*)::int as n from ${campaignRecipients}
     where campaign_id = ${campaignId}::uuid and status = 'sending'`);
  return rows[0]?.n ?? 0;
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
  messagesPerSecond: number;
  shape: ReturnType<typeof templateShape>;
  filled: Extract<ReturnType<typeof fillParameters>, { ok: true }>["filled"];
};

async function sendContext(
  deps: AppDeps,
  campaign: typeof campaigns.$inferSelect,
): Promise<Context | { problem: string }> {
  const [config] = await deps.db
    .select({
      accessToken: messagingConfigs.accessToken,
      messagesPerSecond: messagingConfigs.messagesPerSecond,
    })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, campaign.accountId));
  if (!config) return { problem: "channel_not_configured" };
  try {
    // Checked here so that a campaign whose channel cannot send pauses instead of failing everyone.
    deps.cipher.decrypt(config.accessToken);
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
  return { messagesPerSecond: config.messagesPerSecond, shape, filled: filled.filled };
}

/**
 * Claims up to `limit` due recipients and, in the same transaction, writes
 * each one's template message (pending, `campaign_id`) in its conversation
 * (created when the contact has none) with its send job, or records why it
 * is skipped (opted out since the snapshot, no number, a value left empty).
 * Answers how many recipients it claimed (sent or skipped).
 */
async function claimBatch(
  deps: AppDeps,
  campaign: typeof campaigns.$inferSelect,
  context: Context,
  limit: number,
): Promise<number> {
  return deps.db.transaction(async (tx) => {
    const { rows } = await tx.execute<Claimed & Record<string, unknown>>(
      prepared(sql`
      with due as (
        select contact_id from ${campaignRecipients}
         where campaign_id = ${campaign.id}::uuid and status = 'queued'
           and coalesce(next_attempt_at, '-infinity') <= now()
           -- Read with the recipients: a recipient requeued by a pause (Meta refused its template)
           -- is seen together with the pause, so it waits for the resume.
           and exists (select 1 from ${campaigns} k where k.id = ${campaign.id}::uuid and k.status = 'running')
         order by contact_id
         limit ${limit}
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
    if (sends.length === 0) return rows.length;
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
            campaignId: campaign.id,
            createdAt: at,
            updatedAt: at,
          };
        }),
      )
      .returning({ id: messages.id, conversationId: messages.conversationId });
    const messageIds = inserted.map((m) => m.id);
    await tx.execute(sql`
      update ${campaignRecipients} r set message_id = x.message_id
        from unnest(${sql.param(sends.map((s) => s.contact_id))}::uuid[],
                    ${sql.param(messageIds)}::uuid[]) as x(contact_id, message_id)
       where r.campaign_id = ${campaign.id}::uuid and r.contact_id = x.contact_id`);
    await enqueueCampaignMessages(tx, messageIds);
    return rows.length;
  });
}

/**
 * What the send pipeline recorded for a campaign message moves its recipient
 * (registered with onCampaignSendOutcome; runs in the pipeline's recording
 * transaction). Sent: `sent`. Refused: 131049 `deferred` a day for its one
 * more try; a template Meta paused or disabled: the recipient waits `queued`
 * (its message row goes: Meta never took it) and the campaign pauses with
 * `paused_reason`; anything else, and an unknown outcome its one resend did
 * not resolve (`unknown_outcome`): `failed` with the code and title.
 */
export async function recordCampaignSendOutcome(tx: DbOrTx, outcome: CampaignSendOutcome): Promise<void> {
  const recipient = and(
    eq(campaignRecipients.campaignId, outcome.campaignId),
    eq(campaignRecipients.messageId, outcome.messageId),
    eq(campaignRecipients.status, "sending"),
  );
  if (outcome.status === "withdrawn") {
    // Its campaign stopped before it went out: cancelled, the recipient is skipped; paused (or
    // resumed since), it waits queued for its one send. The unsent message goes.
    const [campaign] = await tx
      .select({ status: campaigns.status })
      .from(campaigns)
      .where(eq(campaigns.id, outcome.campaignId));
    const cancelled = campaign?.status === "cancelled";
    const [moved] = await tx
      .update(campaignRecipients)
      .set(
        cancelled
          ? { status: "skipped", skippedReason: "cancelled", messageId: null, updatedAt: sql`now()` }
          : {
              status: "queued",
              messageId: null,
              attempts: sql`greatest(${campaignRecipients.attempts} - 1, 0)`,
              updatedAt: sql`now()`,
            },
      )
      .where(recipient)
      .returning({ id: campaignRecipients.contactId });
    if (!moved) return;
    await tx.delete(messages).where(eq(messages.id, outcome.messageId));
    if (!cancelled) await tx.execute(sql`select ${nextLookJob(outcome.campaignId, sql`now()`)}`);
    return;
  }
  if (outcome.status === "sent") {
    const moved = await tx
      .update(campaignRecipients)
      .set({ status: "sent", updatedAt: sql`now()` })
      .where(recipient)
      .returning({ id: campaignRecipients.contactId });
    if (moved.length) await wakeWhenLast(tx, outcome.campaignId);
    return;
  }
  const error: Record<string, unknown> & { message: string } = outcome.error ?? {
    message: "The message could not be sent",
  };
  const code = typeof error.code === "number" ? error.code : undefined;
  if (code !== undefined && TEMPLATE_STOPPED.has(code)) {
    const [requeued] = await tx
      .update(campaignRecipients)
      .set({
        status: "queued",
        messageId: null,
        attempts: sql`${campaignRecipients.attempts} - 1`,
        nextAttemptAt: null,
        updatedAt: sql`now()`,
      })
      .where(recipient)
      .returning({ id: campaignRecipients.contactId });
    if (requeued) await tx.delete(messages).where(eq(messages.id, outcome.messageId));
    await pauseCampaign(tx, outcome.campaignId, code === 132015 ? "template_paused" : "template_disabled");
    return;
  }
  const errorCode =
    error.kind === "unknown_outcome" ? "unknown_outcome" : code === undefined ? "send_failed" : String(code);
  const deferrable = code === MARKETING_LIMIT;
  const moved = await tx
    .update(campaignRecipients)
    .set({
      status: deferrable
        ? sql`case when ${campaignRecipients.attempts} < 2 then 'deferred' else 'failed' end`
        : "failed",
      errorCode,
      errorTitle: String(error.message),
      nextAttemptAt: deferrable
        ? sql`case when ${campaignRecipients.attempts} < 2 then ${new Date(Date.now() + DEFER_MS).toISOString()}::timestamptz end`
        : null,
      updatedAt: sql`now()`,
    })
    .where(recipient)
    .returning({ id: campaignRecipients.contactId });
  if (moved.length) await wakeWhenLast(tx, outcome.campaignId);
}

/**
 * The campaign's last send in flight is recorded: its claim job runs now (to
 * complete the campaign, or wait for deferred recipients). Two last outcomes
 * recorded at the same moment may each see the other: the job's own look,
 * IDLE_LOOK_MS later, covers that.
 */
async function wakeWhenLast(tx: DbOrTx, campaignId: string) {
  // A recipient whose outcome another transaction is recording right now (its row locked by that
  // update, not committed yet) counts as done: two last outcomes recorded at once then both wake
  // the job (one job: its key), instead of each seeing the other still `sending`.
  await tx.execute(sql`
    select ${nextLookJob(campaignId, sql`now()`)}
     where not exists (select 1 from ${campaignRecipients}
                        where campaign_id = ${campaignId}::uuid and status = 'sending'
                        limit 1 for share skip locked)`);
}

const nextLookJob = (campaignId: string, runAt: SQL) => sql`graphile_worker.add_job(
      identifier := ${CAMPAIGN_SEND_TASK}::text,
      payload := ${JSON.stringify({ campaignId })}::json,
      run_at := ${runAt},
      job_key := ${`${CAMPAIGN_SEND_TASK}:${campaignId}:next`}::text,
      priority := ${CAMPAIGN_JOB_PRIORITY}::integer)`;

/**
 * No recipient left to claim: queues deferred recipients whose day is over
 * (`again`), and completes the campaign when every recipient is final
 * (`later`: nothing to do). With sends in flight: `in_flight` (the caller
 * looks again shortly; the pipeline records their outcomes). Else the
 * campaign is looked at again when the next recipient falls due (`later`).
 */
async function settle(deps: AppDeps, campaignId: string): Promise<"again" | "in_flight" | "later"> {
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
  if (due.length) return "again";
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
  await campaignUpdated(deps.db, campaignId);
  if (done) return "later";
  const { rows } = await deps.db.execute<{ at: string | null; fresh: boolean; sending: boolean }>(sql`
    select min(coalesce(next_attempt_at, now())) filter (where status <> 'sending') as at,
           bool_or(status = 'sending' and claimed_at > now() - ${`${FRESH_CLAIM_MS} milliseconds`}::interval) as fresh,
           bool_or(status = 'sending') as sending
      from ${campaignRecipients}
     where campaign_id = ${campaignId}::uuid and status in ('queued', 'sending', 'deferred')`);
  const row = rows[0];
  // Sends just handed to the pipeline: their outcomes come within moments.
  if (row?.fresh) return "in_flight";
  // Sends whose jobs all failed before sending: failed now (the campaign may be complete then).
  if (row?.sending && (await failOrphans(deps, campaignId)) > 0) return "again";
  // Older sends wait for a retry or their unknown-outcome window; the last recorded wakes the job.
  let at = row?.at ? new Date(row.at) : null;
  if (row?.sending)
    at = new Date(Math.min(at?.getTime() ?? Number.POSITIVE_INFINITY, Date.now() + IDLE_LOOK_MS));
  // The last send's outcome was recorded since the completion check: check again.
  if (!at) return "again";
  await deps.db.execute(
    sql`select ${nextLookJob(campaignId, sql`greatest(now(), ${at.toISOString()}::timestamptz)`)}`,
  );
  return "later";
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
