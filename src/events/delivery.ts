import { randomUUID } from "node:crypto";
import { and, eq, isNotNull, sql } from "drizzle-orm";
import { webhookDeliveries, webhookEndpoints } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { isUuid } from "../http/ids.js";
import type { DeliveryPolicy } from "../ports.js";
import { addJob } from "../queue/add.js";
import { webhookEndpointQueue } from "../queue/names.js";
import type { DeliveryJob } from "../queue/tasks.js";
import type { EndpointRow } from "./endpoints.js";
import { findEvent } from "./log.js";
import { type PostResult, postWebhook } from "./post.js";
import type { EventJson } from "./types.js";

/** How outbound webhooks are attempted, retried and given up on (AppOptions.webhookDelivery overrides it in tests). */

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

export type { DeliveryJob };

export const DELIVERY_TASK = "deliver-webhook";

/**
 * Makes attempt `job.attempt` of delivering an event to an endpoint, logs it,
 * and on failure schedules the next attempt (within the retry window) in the
 * same transaction as the log row. Idempotent: an attempt already logged is
 * not made again; an endpoint removed or disabled, or an event purged, ends
 * the chain quietly. An endpoint whose deliveries have failed for
 * `disableAfterMs` without a single success is disabled.
 */
export async function deliverEvent(
  deps: Pick<AppDeps, "db" | "cipher" | "config" | "now" | "webhookDelivery">,
  job: DeliveryJob,
): Promise<"delivered" | "failed" | "skipped"> {
  const { db, webhookDelivery: policy } = deps;
  if (!isUuid(job.endpointId) || !isUuid(job.eventId)) return "skipped";
  const [endpoint] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, job.endpointId));
  if (!endpoint?.enabled) return "skipped";
  const [logged] = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, endpoint.id),
        eq(webhookDeliveries.eventId, job.eventId),
        eq(webhookDeliveries.attempt, job.attempt),
      ),
    );
  if (logged) return "skipped";
  const event = await findEvent(db, endpoint.accountId, job.eventId);
  if (!event) return "skipped";

  const result = await postEvent(deps, endpoint, event);
  const now = deps.now();
  const retryAt = now.getTime() + retryDelayMs(policy, job.attempt);
  const next =
    !result.ok && retryAt <= Date.parse(event.created_at) + policy.retryWindowMs ? new Date(retryAt) : null;

  await db.transaction(async (tx) => {
    const inserted = await tx
      .insert(webhookDeliveries)
      .values({
        accountId: endpoint.accountId,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        attempt: job.attempt,
        status: result.ok ? "delivered" : "failed",
        responseStatus: result.status,
        responseBody: result.body,
        durationMs: result.durationMs,
        error: result.error,
        nextAttemptAt: next,
        createdAt: now,
      })
      .onConflictDoNothing()
      .returning({ id: webhookDeliveries.id });
    // Another run of this very attempt got here first and did the rest.
    if (inserted.length === 0) return;
    if (next) {
      const payload: DeliveryJob = { ...job, attempt: job.attempt + 1 };
      await addJob(
        tx,
        DELIVERY_TASK,
        { ...payload },
        {
          queueName: webhookEndpointQueue(endpoint.id),
          runAt: next,
          maxAttempts: 5,
        },
      );
    }
    if (result.ok) {
      await tx
        .update(webhookEndpoints)
        .set({ failingSince: null })
        .where(and(eq(webhookEndpoints.id, endpoint.id), isNotNull(webhookEndpoints.failingSince)));
      return;
    }
    const since = sql`coalesce(${webhookEndpoints.failingSince}, ${now.toISOString()}::timestamptz)`;
    const expired = sql`${since} <= ${new Date(now.getTime() - policy.disableAfterMs).toISOString()}::timestamptz`;
    await tx
      .update(webhookEndpoints)
      .set({
        failingSince: since,
        enabled: sql`case when ${expired} then false else ${webhookEndpoints.enabled} end`,
        disabledReason: sql`case when ${expired} then 'Disabled automatically: every delivery since ' || api_timestamp(${since}) || ' failed' else ${webhookEndpoints.disabledReason} end`,
        updatedAt: sql`case when ${expired} then ${now.toISOString()}::timestamptz else ${webhookEndpoints.updatedAt} end`,
      })
      .where(eq(webhookEndpoints.id, endpoint.id));
  });
  return result.ok ? "delivered" : "failed";
}

export type { DeliveryPolicy } from "../ports.js";
