/**
 * Every kind of background job: its name and the payload it carries, declared
 * once here into graphile-worker's own `GraphileWorker.Tasks` registry. So
 * `addJob` (src/queue/add.ts), graphile-worker's `addJob`/`quickAddJob` and
 * the task adapters of src/jobs/tasks all take and get the payload's type,
 * with no cast. A payload is JSON: strings, numbers, booleans, arrays, plain
 * objects. The worker runs each by the adapter of the same name
 * (src/jobs/tasks/index.ts); a name without an adapter is a type error there.
 */

/** Per number, customer-facing sends take every slot before campaign sends. */
export type SendPriority = "customer" | "campaign";

/** A message's send or settle job (src/sending/outbound.ts). */
export interface SendPayload {
  messageId: string;
  /** The run waiting for this message (bot sends). */
  runId?: string;
  /** The steps its run's advance had taken. */
  steps?: number;
  /** Attempts made so far (retries after a provable non-delivery). */
  attempt?: number;
  /** Meta's id of the customer message to mark read (with a typing indicator) before sending. */
  readMessageId?: string | null;
  priority?: SendPriority;
}

/** One attempt of one account event to one webhook endpoint (src/events/delivery.ts). */
export interface DeliveryJob {
  endpointId: string;
  eventId: string;
  attempt: number;
}

/** What graphile-worker puts in the payload of a cron job. */
export interface CronPayload {
  _cron?: { ts: string; backfilled?: boolean };
}

declare global {
  namespace GraphileWorker {
    interface Tasks {
      /** The `campaign.updated` event held back by the one-a-second limit (added in SQL: src/campaigns/events.ts). */
      "campaign-event": { campaignId: string };
      /** A campaign's queued recipients, sent in batches (added in SQL: src/campaigns/send.ts). */
      "campaign-send": { campaignId: string };
      /** Also added by the event triggers in SQL (migration 0007). */
      "deliver-webhook": DeliveryJob;
      /** The file of one inbound media message. */
      "download-media": { message_id: string };
      /** An erased contact's media files. */
      "erase-media": { keys: string[] };
      "import-contacts": { import_id: string };
      /** One signed delivery from Meta, as received (strings cleaned). */
      "process-webhook": { delivery: unknown };
      "purge-events": CronPayload;
      /** The end of a `wait` node. */
      "resume-wait": { runId: string; nodeKey: string };
      "send-bot-message": SendPayload;
      "send-message": SendPayload;
      "settle-send": SendPayload;
      /** A mail sealed with the encryption key (src/mail/queue.ts). */
      "send-mail": { sealed: string };
      "sweep-timeouts": CronPayload;
    }
  }
}

export type TaskName = keyof GraphileWorker.Tasks;
export type TaskPayload<N extends TaskName> = GraphileWorker.Tasks[N];

/** Job names that more than one feature adds (the runner and the send pipeline, the webhook and media). */
export const SEND_BOT_MESSAGE_TASK = "send-bot-message" satisfies TaskName;
/** Sends a stored outbound message that belongs to no run (campaigns: see enqueueCampaignSend). */
export const SEND_MESSAGE_TASK = "send-message" satisfies TaskName;
export const SETTLE_SEND_TASK = "settle-send" satisfies TaskName;
export const DOWNLOAD_MEDIA_TASK = "download-media" satisfies TaskName;
/**
 * Tries of a media download (graphile-worker waits e^n seconds after the n-th):
 * about 20 minutes in all, each try asking Meta for a fresh URL (src/media/download.ts).
 */
export const MEDIA_DOWNLOAD_ATTEMPTS = 8;
