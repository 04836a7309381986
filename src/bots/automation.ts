import { and, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Automation as AutomationJson } from "../contracts/inbox.js";
import type { DbOrTx } from "../db/client.js";
import { type AutomationReason, conversations } from "../db/schema/index.js";
import { getSettings } from "../settings/settings.js";

/**
 * A conversation's automation (product.md section 20): while it is paused no
 * flow starts there and the customer's messages go to the inbox. An agent's
 * message pauses it for the account's `agent_reply_pause_minutes` and ends
 * the contact's active run; an assignment to a person pauses it until the
 * conversation is unassigned or closed; a conversation an agent starts begins
 * paused; closing re-arms it; agents pause and resume it by hand.
 */

export interface Automation {
  state: "active" | "paused";
  until: Date | null;
  reason: AutomationReason | null;
}

type AutomationColumns = {
  automationState: "active" | "paused";
  automationUntil: Date | null;
  automationReason: AutomationReason | null;
};

/** The automation in force at `now`: a pause whose time ran out is over. */
export function automationAt(row: AutomationColumns, now: Date): Automation {
  const paused =
    row.automationState === "paused" && (row.automationUntil === null || row.automationUntil > now);
  return paused
    ? { state: "paused", until: row.automationUntil, reason: row.automationReason }
    : { state: "active", until: null, reason: null };
}

export const ACTIVE = { automationState: "active", automationUntil: null, automationReason: null } as const;

export const pausedColumns = (reason: AutomationReason, until: Date | null) =>
  ({ automationState: "paused", automationUntil: until, automationReason: reason }) as const;

/**
 * After an agent's message: pauses the conversation's automation for the
 * account's pause minutes (0: not at all), never shortening a longer pause
 * (an assignment's or an open-ended one), and ends the contact's active run
 * `ended_by_agent`. The run's row is updated under its lock, so a runner
 * advance in progress finishes first and the end follows it.
 */
export async function stepBackForAgent(
  db: DbOrTx,
  input: { accountId: string; conversationId: string; now: Date },
): Promise<void> {
  const { agentReplyPauseMinutes: minutes } = await getSettings(db, input.accountId);
  if (minutes > 0) {
    const until = new Date(input.now.getTime() + minutes * 60_000);
    await db
      .update(conversations)
      .set({ ...pausedColumns("agent_reply", until), updatedAt: input.now })
      .where(
        and(
          eq(conversations.id, input.conversationId),
          eq(conversations.accountId, input.accountId),
          sql`not (${conversations.automationState} = 'paused' and (${conversations.automationUntil} is null or ${conversations.automationUntil} >= ${until.toISOString()}::timestamptz))`,
        ),
      );
  }
  await endRunsByAgent(db, input);
}

/** Ends the conversation's contact's active run, `completed` with the reason `ended_by_agent`. */
async function endRunsByAgent(db: DbOrTx, input: { accountId: string; conversationId: string; now: Date }) {
  const at = input.now.toISOString();
  await db.execute(sql`
    with ended as (
      update flow_runs r set status = 'completed', end_reason = 'ended_by_agent', ended_at = ${at}::timestamptz,
             last_activity_at = ${at}::timestamptz, awaiting_message_id = null, resume_at = null
        from ${conversations} c
       where c.id = ${input.conversationId} and c.account_id = ${input.accountId}
         and r.account_id = c.account_id and r.contact_id = c.contact_id and r.status = 'active'
      returning r.id, r.flow_id, r.current_node_key)
    insert into flow_run_events (run_id, flow_id, event_type, node_key, payload, created_at)
    select id, flow_id, 'completed', current_node_key, '{"reason":"ended_by_agent"}'::jsonb, ${at}::timestamptz
      from ended`);
}

/**
 * The automation columns a change of assignee or status sets, given the
 * conversation as it was: assigning a person pauses it (open-ended);
 * unassigning ends an assignment's pause; closing re-arms it.
 */
export function automationForChange(
  before: AutomationColumns,
  change: { assignedTo?: string | null; status?: string },
): Partial<AutomationColumns> {
  if (change.status === "closed") return { ...ACTIVE };
  if (change.assignedTo) return pausedColumns("assigned", null);
  if (change.assignedTo === null && before.automationReason === "assigned") return { ...ACTIVE };
  return {};
}

/** Whether the conversation's automation is paused now (no flow starts there). */
export async function isAutomationPaused(db: DbOrTx, conversationId: string, now: Date): Promise<boolean> {
  const [row] = await db
    .select({
      automationState: conversations.automationState,
      automationUntil: conversations.automationUntil,
      automationReason: conversations.automationReason,
    })
    .from(conversations)
    .where(eq(conversations.id, conversationId));
  return row ? automationAt(row, now).state === "paused" : false;
}

/** The automation as the API shows it. */
export const toAutomationJson = (a: Automation): z.infer<typeof AutomationJson> => ({
  state: a.state,
  until: a.until,
  reason: a.reason,
});
