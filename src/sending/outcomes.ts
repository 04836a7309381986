import type { DbOrTx } from "../db/client.js";

/**
 * Where the send pipeline tells a feature what became of one of its
 * messages, without importing it: a campaign's template message is sent like
 * any other, and when the pipeline records it sent or failed for good (Meta's
 * refusal, or an unknown outcome that its one resend did not resolve), each
 * registered handler runs in the same transaction as that record. So a
 * campaign recipient never lags its message, even across kill -9.
 */
export interface CampaignSendOutcome {
  /** Our id of the message (its `biz_opaque_callback_data`). */
  messageId: string;
  campaignId: string;
  /**
   * `withdrawn`: never sent, its campaign was cancelled or paused after the
   * claim (the handler moves the recipient and removes the unsent message).
   */
  status: "sent" | "failed" | "withdrawn";
  /** On `failed`: what the pipeline stored as the message's error (GraphApiError.toJSON(), or ours). */
  error?: Record<string, unknown> & { message: string };
}

export type CampaignSendOutcomeHandler = (tx: DbOrTx, outcome: CampaignSendOutcome) => Promise<void>;

const handlers = new Set<CampaignSendOutcomeHandler>();

/** Registers a handler (once per function, however often it is called); answers how to remove it. */
export function onCampaignSendOutcome(handler: CampaignSendOutcomeHandler): () => void {
  handlers.add(handler);
  return () => handlers.delete(handler);
}

/** Runs the handlers for a campaign message's recorded outcome, inside the recording transaction. */
export async function campaignSendOutcome(tx: DbOrTx, outcome: CampaignSendOutcome): Promise<void> {
  for (const handler of handlers) await handler(tx, outcome);
}
