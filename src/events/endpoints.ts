import { and, count, desc, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { WebhookDelivery, WebhookEndpoint } from "../contracts/account.js";
import type { Db } from "../db/client.js";
import { webhookDeliveries, webhookEndpoints } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { decodeCursor, encodeCursor } from "../http/pagination.js";
import { checkWebhookUrl, UnsafeUrlError } from "./address-guard.js";
import { newWebhookSecret } from "./signing.js";

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

/** Every event of an endpoint is one job per event: the cap bounds that fan-out per account. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

export const toEndpointJson = (e: EndpointRow): z.infer<typeof WebhookEndpoint> => ({
  id: e.id,
  url: e.url,
  description: e.description,
  events: e.events,
  enabled: e.enabled,
  disabled_reason: e.disabledReason,
  failing_since: e.failingSince,
  created_at: e.createdAt,
  updated_at: e.updatedAt,
});

export const toDeliveryJson = (d: DeliveryRow): z.infer<typeof WebhookDelivery> => ({
  id: d.id,
  endpoint_id: d.endpointId,
  event_id: d.eventId,
  event_type: d.eventType,
  attempt: d.attempt,
  status: d.status,
  response_status: d.responseStatus,
  response_body: d.responseBody,
  duration_ms: d.durationMs,
  error: d.error,
  next_attempt_at: d.nextAttemptAt,
  created_at: d.createdAt,
});

/** The URL, normalised, or 400 `url: ...` when it is not a public https URL (see address-guard.ts). */
export async function checkEndpointUrl(deps: Pick<AppDeps, "config">, url: string): Promise<string> {
  try {
    return await checkWebhookUrl(url, { allowPrivate: deps.config.webhookAllowPrivate });
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw new ApiError(400, `url: ${error.message}`);
    throw error;
  }
}

export async function createEndpoint(
  deps: Pick<AppDeps, "db" | "cipher" | "config" | "now">,
  input: { accountId: string; userId: string; url: string; events: string[]; description: string | null },
) {
  const url = await checkEndpointUrl(deps, input.url);
  const secret = newWebhookSecret();
  const sealed = deps.cipher.encrypt(secret);
  const endpoint = await deps.db.transaction(async (tx) => {
    // Serialises creations of one account so that the cap holds under concurrency.
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`webhook-endpoints:${input.accountId}`}, 0))`,
    );
    const [existing] = await tx
      .select({ n: count() })
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.accountId, input.accountId));
    if ((existing?.n ?? 0) >= MAX_ENDPOINTS_PER_ACCOUNT) {
      throw new ApiError(409, `An account can have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
    }
    const now = deps.now();
    const [row] = await tx
      .insert(webhookEndpoints)
      .values({
        accountId: input.accountId,
        url,
        description: input.description,
        events: input.events,
        secret: sealed,
        createdBy: input.userId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return row!;
  });
  return { endpoint, secret };
}

export async function listEndpoints(db: Db, accountId: string) {
  return db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.accountId, accountId))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id));
}

/** The account's endpoint; null for another account's, an unknown or a malformed id. */
export async function findEndpoint(db: Db, accountId: string, id: string) {
  if (!isUuid(id)) return null;
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.accountId, accountId)));
  return row ?? null;
}

export interface EndpointPatch {
  url?: string;
  events?: string[];
  enabled?: boolean;
  description?: string | null;
}

/** Applies a change; enabling an endpoint clears its failure record (it gets a fresh three days). */
export async function updateEndpoint(
  deps: Pick<AppDeps, "db" | "config" | "now">,
  endpoint: EndpointRow,
  patch: EndpointPatch,
) {
  const url = patch.url === undefined ? undefined : await checkEndpointUrl(deps, patch.url);
  const [row] = await deps.db
    .update(webhookEndpoints)
    .set({
      ...(url !== undefined ? { url } : {}),
      ...(patch.events !== undefined ? { events: patch.events } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.enabled === true ? { enabled: true, disabledReason: null, failingSince: null } : {}),
      ...(patch.enabled === false ? { enabled: false, disabledReason: "Disabled by the owner" } : {}),
      updatedAt: deps.now(),
    })
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.accountId, endpoint.accountId)))
    .returning();
  if (!row) throw new ApiError(404, "Not found");
  return row;
}

export async function deleteEndpoint(db: Db, endpoint: EndpointRow) {
  await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.accountId, endpoint.accountId)));
}

/** The endpoint's delivery attempts, newest first. */
export async function listDeliveries(db: Db, input: { endpointId: string; limit: number; cursor?: string }) {
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, input.endpointId),
        after
          ? sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.id}) < (${after.at.toISOString()}::timestamptz, ${after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  return {
    deliveries: page.map(toDeliveryJson),
    next_cursor: rows.length > input.limit && last ? encodeCursor({ at: last.createdAt, id: last.id }) : null,
  };
}
