import { runCampaignSends } from "../../campaigns/send.js";
import type { Task } from "../types.js";

/** Sends a campaign's queued recipients in batches (src/campaigns/send.ts); safe to run twice. */
export const campaignSend: Task<"campaign-send"> = async (payload, deps) => {
  await runCampaignSends(deps, String(payload.campaignId));
};
