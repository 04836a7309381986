import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { campaigns } from "../db/schema/index.js";

/** How long one look at a campaign's status answers for its sends (at 1000 a second: one look per 100). */
export const GATE_FRESH_MS = 100;

/**
 * The send pipeline's last check before a campaign message's HTTP call
 * (`campaignGoing`): false once the campaign is cancelled or paused. One
 * look per campaign serves the sends of the next GATE_FRESH_MS, so a cancel
 * stops the sends claimed but not yet on the wire within that long, and a
 * campaign at 1000 a second costs ten small queries a second.
 */
export function createCampaignGate(db: DbOrTx, freshMs = GATE_FRESH_MS) {
  const looks = new Map<string, { at: number; going: Promise<boolean> }>();
  return (campaignId: string): Promise<boolean> => {
    const now = Date.now();
    const last = looks.get(campaignId);
    if (last && now - last.at < freshMs) return last.going;
    if (looks.size > 1000) {
      for (const [id, look] of looks) if (now - look.at >= freshMs) looks.delete(id);
    }
    const going = db
      .execute<{ status: string }>(sql`select status from ${campaigns} where id = ${campaignId}::uuid`)
      .then(({ rows }) => {
        const status = rows[0]?.status;
        return status !== "cancelled" && status !== "paused";
      });
    // A failed look is not kept: the next send asks again (and this one goes, see PipelineOptions).
    going.catch(() => looks.delete(campaignId));
    looks.set(campaignId, { at: now, going });
    return going;
  };
}
