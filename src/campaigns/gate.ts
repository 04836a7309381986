import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { campaigns } from "../db/schema/index.js";

/** How long one look at a campaign's status answers for its sends (at 1000 a second: one look per 100). */
export const GATE_FRESH_MS = 100;
/**
 * How long an older answer still serves while the next look is under way: a
 * slow query never holds a send past its slot. Older than this, sends wait
 * for the look.
 */
export const GATE_STALE_MS = 1_000;

interface Look {
  /** The last answer, dated when its query was sent. */
  answer?: { going: boolean; at: number };
  pending?: Promise<boolean>;
}

/**
 * The send pipeline's last check before a campaign message leaves
 * (`campaignGoing`): false once the campaign is cancelled or paused. One look
 * per campaign serves its sends for GATE_FRESH_MS; the next look is then taken
 * while the last answer keeps serving (up to GATE_STALE_MS). So a cancel
 * stops the sends claimed but not yet on the wire within about GATE_FRESH_MS
 * plus one query, and a campaign at 1000 a second costs ten small queries a
 * second.
 */
export function createCampaignGate(db: DbOrTx, freshMs = GATE_FRESH_MS, staleMs = GATE_STALE_MS) {
  const looks = new Map<string, Look>();

  const lookAgain = (campaignId: string, look: Look, now: number) => {
    const pending = db
      .execute<{ status: string }>(sql`select status from ${campaigns} where id = ${campaignId}::uuid`)
      .then(({ rows }) => {
        const status = rows[0]?.status;
        const going = status !== "cancelled" && status !== "paused";
        look.answer = { going, at: now };
        return going;
      })
      .finally(() => {
        look.pending = undefined;
      });
    // A failed look changes nothing: the last answer serves while it may, then a send asks again
    // (a send whose look failed goes, see PipelineOptions).
    pending.catch(() => undefined);
    look.pending = pending;
    return pending;
  };

  return (campaignId: string): Promise<boolean> => {
    const now = Date.now();
    let look = looks.get(campaignId);
    if (!look) {
      if (looks.size > 1000) {
        for (const [id, old] of looks)
          if (!old.pending && now - (old.answer?.at ?? 0) >= staleMs) looks.delete(id);
      }
      look = {};
      looks.set(campaignId, look);
    }
    const answer = look.answer;
    if (answer && now - answer.at < freshMs) return Promise.resolve(answer.going);
    const pending = look.pending ?? lookAgain(campaignId, look, now);
    return answer && now - answer.at < staleMs ? Promise.resolve(answer.going) : pending;
  };
}
