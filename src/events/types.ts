/** The account event types an integrator can subscribe to (product section 15). */
export const EVENT_TYPES = [
  "message.received",
  "message.sent",
  "message.status",
  "reaction.updated",
  "conversation.updated",
  "flow_run.updated",
  "campaign.updated",
  "contact_import.updated",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as the API, the stream and webhooks show it. */
export interface EventJson {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** The LISTEN/NOTIFY channel the event triggers notify (payload: the account id). */
export const EVENTS_CHANNEL = "account_events";
