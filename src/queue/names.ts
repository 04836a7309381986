/**
 * The names of the job queues. Jobs sharing a queue name run one at a time,
 * in the order they were added (graphile-worker's named queues).
 */

/**
 * How many job queues customers are spread over. graphile-worker locks every
 * free named queue each time it looks for a job, so its cost grows with the
 * number of queues: one queue per customer made each look-up take 8 ms with a
 * few thousand customers (and would grow with every customer ever seen). A
 * fixed set keeps it small and still runs 64 customers' work at once.
 * Changing it reorders work queued at the moment of the change, nothing more.
 */
export const CUSTOMER_QUEUE_BUCKETS = 64;

/**
 * The queue of a customer's deliveries and of the bot's sends to them,
 * `wa:<bucket>`: the same for every job of one customer (so they run one at a
 * time, in the order they were added), shared with the other customers of the
 * bucket.
 */
export function customerQueue(phoneNumberId: string, waId: string): string {
  return `wa:${fnv1a(`${phoneNumberId}:${waId}`) % CUSTOMER_QUEUE_BUCKETS}`;
}

/** 32-bit FNV-1a: a fast, stable, well-spread hash of a short string. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** One queue per webhook endpoint: a slow or dead receiver holds at most one worker at a time. */
export const webhookEndpointQueue = (endpointId: string) => `webhooks:${endpointId}`;
