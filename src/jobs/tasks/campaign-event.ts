import { eq } from "drizzle-orm";
import { campaignUpdated } from "../../campaigns/events.js";
import { campaigns } from "../../db/schema/index.js";
import type { Task } from "../types.js";

/** The `campaign.updated` event held back by the one-a-second limit. */
export const campaignEvent: Task<"campaign-event"> = async (payload, deps) => {
  const campaignId = String(payload.campaignId);
  const [exists] = await deps.db
    .select({ id: campaigns.id })
    .from(campaigns)
    .where(eq(campaigns.id, campaignId));
  if (exists) await campaignUpdated(deps.db, campaignId);
};
