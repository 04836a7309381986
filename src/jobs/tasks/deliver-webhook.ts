import { type DeliveryJob, deliverEvent } from "../../events/delivery.js";
import type { Task } from "../types.js";

/** One attempt of one account event to one webhook endpoint (queued by the event triggers, then by itself). */
export const deliverWebhook: Task<"deliver-webhook"> = async (payload, deps) => {
  const job: DeliveryJob = {
    endpointId: String(payload.endpointId),
    eventId: String(payload.eventId),
    attempt: Number(payload.attempt) || 1,
  };
  const outcome = await deliverEvent(deps, job);
  deps.log.debug({ ...job, outcome }, "webhook delivery attempt");
};
