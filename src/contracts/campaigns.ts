import { z } from "zod";
import { CAMPAIGN_STATUSES, RECIPIENT_STATUSES } from "../db/schema/campaigns.js";
import { jsonObject, nextCursor, timestamp } from "./common.js";

export const CampaignCounts = z
  .object({ total: z.number().int() })
  .extend(
    Object.fromEntries(RECIPIENT_STATUSES.map((s) => [s, z.number().int()])) as Record<
      (typeof RECIPIENT_STATUSES)[number],
      z.ZodNumber
    >,
  )
  .meta({ id: "CampaignCounts" });

export const Campaign = z
  .object({
    id: z.uuid(),
    name: z.string(),
    status: z.enum(CAMPAIGN_STATUSES),
    template: z.object({ name: z.string(), language: z.string() }),
    parameters: jsonObject,
    audience: jsonObject,
    scheduled_at: timestamp.nullable(),
    started_at: timestamp.nullable(),
    completed_at: timestamp.nullable(),
    paused_reason: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    counts: CampaignCounts,
  })
  .meta({ id: "Campaign" });

export const CampaignRecipient = z
  .object({
    contact_id: z.uuid(),
    name: z.string().nullable(),
    phone: z.string().nullable(),
    status: z.enum(RECIPIENT_STATUSES),
    message_id: z.string().nullable(),
    error_code: z.string().nullable(),
    error_title: z.string().nullable(),
    skipped_reason: z.string().nullable(),
    updated_at: timestamp,
  })
  .meta({ id: "CampaignRecipient" });

const audienceCounts = {
  recipients: z.number().int().describe("Distinct reachable numbers"),
  excluded: z.object({
    opted_out: z.number().int(),
    no_address: z.number().int(),
    duplicate: z.number().int(),
  }),
  samples: z.array(
    z.object({
      contact_id: z.uuid(),
      name: z.string().nullable(),
      phone: z.string().nullable(),
      text: z.string(),
      missing: z.string().nullable().describe("The first placeholder left empty for this contact"),
    }),
  ),
};

export const campaignAnswer = z.object({ campaign: Campaign });
export const retryAnswer = z.object({
  campaign: Campaign,
  requeued: z.number().int().describe("Failed recipients queued again"),
});
export const campaignsPage = z.object({ campaigns: z.array(Campaign), next_cursor: nextCursor });
export const campaignPreview = z.object(audienceCounts).meta({ id: "CampaignPreview" });
export const draftPreview = z
  .object({ ...audienceCounts, template_problem: z.string().nullable() })
  .meta({ id: "CampaignDraftPreview" });
export const recipientsPage = z.object({ recipients: z.array(CampaignRecipient), next_cursor: nextCursor });
