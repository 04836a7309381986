import { randomUUID } from "node:crypto";
import { webhookDeliveries } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import type { EndpointRow } from "./endpoints.js";
import { type PostResult, postWebhook } from "./post.js";
import type { EventJson } from "./types.js";

/** How outbound webhooks are attempted, retried and given up on (AppOptions.webhookDelivery overrides it in tests). */
export interface DeliveryPolicy {
  /** An attempt counts as delivered on a 2xx within this time. */
  timeoutMs: number;
  /** Delay before the first retry; each later one is `retryFactor` times longer, up to `maxRetryDelayMs`. */
  firstRetryMs: number;
  retryFactor: number;
  maxRetryDelayMs: number;
  /** No attempt is made later than this after the event. */
  retryWindowMs: number;
  /** An endpoint whose deliveries have failed for this long without a success is disabled. */
  disableAfterMs: number;
}

const HOUR = 60 * 60 * 1000;

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = {
  timeoutMs: 10_000,
  firstRetryMs: 5_000,
  retryFactor: 4,
  maxRetryDelayMs: 6 * HOUR,
  retryWindowMs: 24 * HOUR,
  disableAfterMs: 72 * HOUR,
};

/**
 * The wait after failed attempt number `attempt` (1-based): 5 s, 20 s, 80 s,
 * 5 min, 21 min, 85 min, 5.7 h, then every 6 h, each shortened by up to 10 %
 * at random so that endpoints recovering together are not hit in lockstep.
 */
export function retryDelayMs(policy: DeliveryPolicy, attempt: number, random = Math.random): number {
  const base = Math.min(policy.firstRetryMs * policy.retryFactor ** (attempt - 1), policy.maxRetryDelayMs);
  return Math.round(base * (1 - 0.1 * random()));
}

export const eventBody = (event: EventJson) => JSON.stringify(event);

export function postEvent(
  deps: Pick<AppDeps, "cipher" | "config" | "now" | "webhookDelivery">,
  endpoint: EndpointRow,
  event: EventJson,
): Promise<PostResult> {
  return postWebhook({
    url: endpoint.url,
    secret: deps.cipher.decrypt(endpoint.secret),
    messageId: event.id,
    body: eventBody(event),
    now: deps.now(),
    timeoutMs: deps.webhookDelivery.timeoutMs,
    allowPrivate: deps.config.webhookAllowPrivate,
  });
}

/**
 * Sends a `webhook.test` event to the endpoint now (enabled or not) and logs
 * the attempt. It is not an account event: no other endpoint or stream sees
 * it, it is not retried and it does not count toward disabling the endpoint.
 */
export async function sendTestEvent(
  deps: Pick<AppDeps, "db" | "cipher" | "config" | "now" | "webhookDelivery">,
  endpoint: EndpointRow,
) {
  const event: EventJson = {
    id: randomUUID(),
    type: "webhook.test",
    created_at: deps.now().toISOString(),
    data: { endpoint_id: endpoint.id, message: "A test event: this endpoint receives the account's events." },
  };
  const result = await postEvent(deps, endpoint, event);
  const [row] = await deps.db
    .insert(webhookDeliveries)
    .values({
      accountId: endpoint.accountId,
      endpointId: endpoint.id,
      eventId: event.id,
      eventType: event.type,
      attempt: 1,
      status: result.ok ? "delivered" : "failed",
      responseStatus: result.status,
      responseBody: result.body,
      durationMs: result.durationMs,
      error: result.error,
      createdAt: deps.now(),
    })
    .returning();
  return row!;
}
