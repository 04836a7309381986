import { type SQL, sql } from "drizzle-orm";
import type { flows } from "../../db/schema/index.js";

/**
 * What the runner looks at before taking a contact's lock: the contact's
 * active run, and the account's active flows' triggers. Most customer
 * messages neither advance a run nor start one, and are settled with this
 * look alone. It is a fragment of a SELECT list, so that storing a message
 * can take the look in the same statement (see storeMessage).
 */
export interface RunnerLook {
  runId: string | null;
  flows: Array<{ triggerType: (typeof flows.$inferSelect)["triggerType"]; triggerConfig: unknown }>;
}

/** The look's two columns, `look_run_id` and `look_flows`, for an account and a contact (SQL expressions). */
export const runnerLookColumns = (accountId: string | SQL, contactId: SQL) => sql`
  (select id from flow_runs where account_id = ${accountId} and contact_id = ${contactId}
     and status = 'active') as look_run_id,
  coalesce((select json_agg(json_build_object('triggerType', trigger_type, 'triggerConfig', trigger_config))
              from flows where account_id = ${accountId} and status = 'active'), '[]'::json) as look_flows`;

export type RunnerLookRow = {
  look_run_id: string | null;
  look_flows: RunnerLook["flows"];
};

export const toRunnerLook = (row: RunnerLookRow): RunnerLook => ({
  runId: row.look_run_id,
  flows: row.look_flows,
});

/** A customer message as stored, for the flow runner. */
export interface InboundMessageStored {
  accountId: string;
  contactId: string;
  conversationId: string;
  /** Internal message id (messages.id). */
  messageId: string;
  /** True when no other message of the customer came before it in the conversation. */
  firstInbound: boolean;
  /** The message's type and text, so the runner can tell cheaply whether a flow wants it. */
  messageType: string;
  text: string | null;
  /** The number it was sent to, and the conversation's window start as storing it left it (when known). */
  phoneNumberId?: string;
  /** The number's send rate (messages_per_second), when storing read it. */
  sendLimit?: number | null;
  customerMessageAt?: Date | null;
  /** The runner's look before the contact's lock, taken while storing (see RunnerLook). */
  look?: RunnerLook;
  /**
   * The account's consent keywords, read while storing (null: the account kept the defaults), so
   * that applyConsentKeyword needs no statement of its own.
   */
  consent?: ConsentSettings | null;
  /** False when storing found no campaign message in the conversation: no recipient to mark replied. */
  campaignThread?: boolean;
}

/** What applyConsentKeyword reads of the account's settings. */
export interface ConsentSettings {
  optOutKeywords: string[];
  optInKeywords: string[];
  optOutReply: string | null;
}
