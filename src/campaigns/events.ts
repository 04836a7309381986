import { sql } from "drizzle-orm";
import type { z } from "zod";
import type { Campaign } from "../contracts/campaigns.js";
import type { DbOrTx } from "../db/client.js";
import { prepared } from "../db/prepared.js";
import {
  campaignRecipients,
  campaigns,
  RECIPIENT_STATUSES,
  type RecipientStatus,
} from "../db/schema/index.js";

export type CampaignRow = typeof campaigns.$inferSelect;
export type CampaignCounts = { total: number } & Record<RecipientStatus, number>;

export const CAMPAIGN_EVENT_TASK = "campaign-event";

/** Each recipient counted once, under its current status. */
export async function countsOf(db: DbOrTx, campaignIds: string[]): Promise<Map<string, CampaignCounts>> {
  const result = new Map<string, CampaignCounts>();
  for (const id of campaignIds) {
    result.set(id, {
      total: 0,
      ...Object.fromEntries(RECIPIENT_STATUSES.map((s) => [s, 0])),
    } as CampaignCounts);
  }
  if (campaignIds.length === 0) return result;
  const { rows } = await db.execute<{ campaign_id: string; status: RecipientStatus; n: number }>(sql`
    select campaign_id, status, count(*)::int as n from ${campaignRecipients}
     where campaign_id = any(${sql.param(campaignIds)}::uuid[]) group by campaign_id, status`);
  for (const row of rows) {
    const counts = result.get(row.campaign_id);
    if (!counts) continue;
    counts[row.status] = row.n;
    counts.total += row.n;
  }
  return result;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Counts of a campaign whose recipients are all queued. */
export function queuedCounts(total: number): CampaignCounts {
  const counts = { total, ...Object.fromEntries(RECIPIENT_STATUSES.map((s) => [s, 0])) } as CampaignCounts;
  counts.queued = total;
  return counts;
}

export function toCampaignJson(c: CampaignRow, counts: CampaignCounts): z.infer<typeof Campaign> {
  return {
    id: c.id,
    name: c.name,
    status: c.status,
    template: { name: c.templateName, language: c.templateLanguage },
    parameters: c.parameters,
    audience: c.audience,
    scheduled_at: iso(c.scheduledAt),
    started_at: iso(c.startedAt),
    completed_at: iso(c.completedAt),
    paused_reason: c.pausedReason,
    created_at: new Date(c.createdAt).toISOString(),
    updated_at: new Date(c.updatedAt).toISOString(),
    counts,
  };
}

/**
 * Writes `campaign.updated` (the campaign as the API shows it) unless one was
 * written less than a second ago; then a job writes it once that second is
 * over, so the last change always shows. The campaign row's lock orders
 * concurrent callers, which keeps it to one event a second.
 */
export async function campaignUpdated(
  db: DbOrTx,
  campaignId: string,
  /** The counts when the caller knows them (a start: every recipient queued), saving a count. */
  known?: CampaignCounts,
): Promise<void> {
  // One transaction: the event's `created_at` (now()) is then the very `last_event_at` it sets, so
  // two events are a second apart however long the counting between the statements takes.
  await db.transaction((tx) => writeCampaignUpdated(tx, campaignId, known));
}

/**
 * campaignUpdated after a change that is committed already (a status
 * webhook's, a claim's). A running campaign's changes come many times a
 * second: while the last event is less than a second old and the held-back
 * event's job is queued and not yet taken, that job will count this change
 * (it reads the counts when it runs, after this commit), so nothing is
 * written: one read, where campaignUpdated would lock the campaign row and
 * rewrite that job. Otherwise, campaignUpdated.
 */
export async function campaignChanged(db: DbOrTx, campaignId: string): Promise<void> {
  const { rows } = await db.execute<{ covered: boolean }>(
    prepared(sql`
    select exists (
      select 1 from ${campaigns} c
       where c.id = ${campaignId}::uuid and c.last_event_at > now() - interval '1 second'
         and exists (select 1 from graphile_worker._private_jobs j
                      where j.key = ${`${CAMPAIGN_EVENT_TASK}:${campaignId}`}::text and j.locked_at is null)
    ) as covered`),
  );
  if (rows[0]?.covered) return;
  await campaignUpdated(db, campaignId);
}

async function writeCampaignUpdated(db: DbOrTx, campaignId: string, known?: CampaignCounts) {
  const [campaign] = await db
    .update(campaigns)
    .set({ lastEventAt: sql`now()` })
    .where(
      sql`${campaigns.id} = ${campaignId}::uuid
          and (${campaigns.lastEventAt} is null or ${campaigns.lastEventAt} <= now() - interval '1 second')`,
    )
    .returning();
  if (!campaign) {
    await db.execute(sql`select graphile_worker.add_job(
      identifier := ${CAMPAIGN_EVENT_TASK}::text,
      payload := ${JSON.stringify({ campaignId })}::json,
      run_at := now() + interval '1100 milliseconds',
      job_key := ${`${CAMPAIGN_EVENT_TASK}:${campaignId}`}::text,
      job_key_mode := 'preserve_run_at',
      max_attempts := 5)`);
    return;
  }
  const counts = known ?? ((await countsOf(db, [campaignId])).get(campaignId) as CampaignCounts);
  await db.execute(
    sql`select record_account_event(${campaign.accountId}::uuid, 'campaign.updated', ${JSON.stringify(
      toCampaignJson(campaign, counts),
    )}::json)`,
  );
}
