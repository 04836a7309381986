import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import {
  campaignRecipients,
  campaigns,
  messages,
  messageTemplates,
  messagingConfigs,
  type RecipientStatus,
} from "../db/schema/index.js";
import type { InboundMessageStored } from "../flows/runner/look.js";
import type { StatusUpdate, TemplateStatusChange } from "../messaging/webhook-payload.js";
import { campaignChanged } from "./events.js";
import { pauseCampaign } from "./send.js";

/** The recipient statuses an upstream status may move a recipient from (forward only). */
const RECIPIENT_PREDECESSORS: Record<StatusUpdate["status"], RecipientStatus[]> = {
  sent: ["sending", "unknown"],
  delivered: ["sending", "unknown", "sent"],
  read: ["sending", "unknown", "sent", "delivered"],
  failed: ["sending", "unknown", "sent", "delivered"],
};

/**
 * What Meta's webhooks mean for campaigns: statuses of campaign messages move
 * their recipients (sent, delivered, read, failed with Meta's code and title);
 * a customer message after a campaign message (the latest of their conversation) marks that recipient
 * `replied`, and a text or quick-reply tap equal to an opt-out keyword opts
 * the contact out. Idempotent: a redelivered webhook changes nothing more.
 */
export async function applyCampaignWebhook(
  db: DbOrTx,
  input: { phoneNumberId: string; statuses: StatusUpdate[]; inbound: InboundMessageStored[] },
): Promise<void> {
  const touched = new Set<string>();
  for (const update of input.statuses) {
    const code = update.error?.code;
    const { rows } = await db.execute<{ campaign_id: string }>(sql`
      update ${campaignRecipients} r
         set status = ${update.status},
             error_code = ${update.status === "failed" ? String(code ?? "delivery_failed") : null},
             error_title = ${update.status === "failed" ? String(update.error?.title ?? update.error?.message ?? "Delivery failed") : null},
             updated_at = now()
        from messages m
       where m.account_id = (select account_id from ${messagingConfigs} where phone_number_id = ${input.phoneNumberId})
         and m.message_id = ${update.upstreamId} and m.campaign_id is not null
         and r.message_id = m.id and r.status = any(${sql.param(RECIPIENT_PREDECESSORS[update.status])}::text[])
      returning r.campaign_id`);
    for (const row of rows) touched.add(row.campaign_id);
  }
  for (const message of input.inbound) {
    // Storing the message found no campaign message in its conversation: nothing to mark.
    if (message.campaignThread === false) continue;
    const { rows } = await db.execute<{ campaign_id: string }>(sql`
      update ${campaignRecipients} r set status = 'replied', updated_at = now()
       where r.message_id = (select m.id from ${messages} m
                              where m.conversation_id = ${message.conversationId}::uuid
                                and m.campaign_id is not null
                              order by m.created_at desc limit 1)
         and r.status in ('sent', 'delivered', 'read', 'unknown')
      returning r.campaign_id`);
    for (const row of rows) touched.add(row.campaign_id);
    // (Opt-out keywords, a campaign's quick-reply "Stop" included, are applied by
    // inbound/consent.ts right after this, with their times and the reply.)
  }
  for (const campaignId of touched) await campaignChanged(db, campaignId);
}

/**
 * Meta paused, disabled or rejected a template: every running or scheduled
 * campaign of an account with that business account and template pauses,
 * with `paused_reason` naming the template's new status.
 */
export async function pauseCampaignsForTemplates(db: DbOrTx, updates: TemplateStatusChange[]) {
  for (const update of updates) {
    const event = update.event.toUpperCase();
    if (!["PAUSED", "DISABLED", "REJECTED", "FLAGGED", "PENDING_DELETION", "DELETED"].includes(event))
      continue;
    const { rows: hit } = await db.execute<{ id: string }>(sql`
      select c.id from ${campaigns} c
        join ${messagingConfigs} mc on mc.account_id = c.account_id
        join ${messageTemplates} t on t.account_id = c.account_id
             and t.name = c.template_name and t.language = c.template_language
       where mc.business_account_id = ${update.businessAccountId}
         and c.status in ('running', 'scheduled')
         and (t.upstream_id = ${update.templateId ?? ""}
              or (t.name = ${update.name ?? ""} and t.language = ${update.language ?? ""}))`);
    for (const { id } of hit) await pauseCampaign(db, id, `template_${event.toLowerCase()}`);
  }
}
