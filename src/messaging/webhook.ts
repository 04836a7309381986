import { eq, inArray } from "drizzle-orm";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { pgErrorCode } from "../db/errors.js";
import { messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import type { InboundMessageStored } from "../events.js";
import { tryParseJson } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { readWebhookBatch } from "./webhook-payload.js";
import { verifyWebhookSignature } from "./webhook-signature.js";
import { applyTemplateUpdates, storeChange } from "./webhook-store.js";

export const WEBHOOK_PATH = "/api/messaging/webhook";

const handshakeQuery = z.object({
  "hub.mode": z.string(),
  "hub.verify_token": z.string(),
  "hub.challenge": z.string(),
});

export function registerWebhookRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, cipher, config, events } = deps;

  app.get<{ Querystring: Record<string, unknown> }>(
    WEBHOOK_PATH,
    docs({
      tags: ["webhook"],
      summary: "Meta's webhook verification handshake",
      description:
        "Answers `hub.challenge` as plain text when `hub.mode` is `subscribe` and `hub.verify_token` is the verify token saved with some account's channel configuration.",
      querystring: handshakeQuery,
      responses: {
        200: "The challenge, as text/plain",
        400: "A parameter is missing",
        403: "Wrong mode or token",
      },
      public: true,
    }),
    async (request, reply) => {
      const query = handshakeQuery.safeParse(request.query);
      if (!query.success) {
        throw new ApiError(400, "hub.mode, hub.verify_token and hub.challenge are required");
      }
      const { "hub.mode": mode, "hub.verify_token": token, "hub.challenge": challenge } = query.data;
      if (mode !== "subscribe" || token === "") throw new ApiError(403, "Verification failed");
      const [found] = await db
        .select({ accountId: messagingConfigs.accountId })
        .from(messagingConfigs)
        .where(eq(messagingConfigs.verifyTokenHash, cipher.keyedHash(token)))
        .limit(1);
      if (!found) throw new ApiError(403, "Verification failed");
      return reply
        .header("content-type", "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .send(challenge);
    },
  );

  app.post(
    WEBHOOK_PATH,
    docs({
      tags: ["webhook"],
      summary: "Inbound messages, reactions and delivery statuses from Meta",
      description:
        "Signed by Meta with `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with META_APP_SECRET). Each change is stored in its own transaction; changes for unknown phone numbers and malformed parts are skipped.",
      responses: {
        200: "Batch stored",
        400: "Signed body that is not JSON",
        401: "Signature missing or wrong, or META_APP_SECRET not configured",
        500: "A change could not be stored; Meta delivers the batch again",
      },
      public: true,
    }),
    async (request, reply) => {
      if (!config.appSecret) {
        request.log.warn("webhook POST rejected: META_APP_SECRET is not configured");
        throw new ApiError(401, "Webhook signature cannot be checked: META_APP_SECRET is not configured");
      }
      const raw = typeof request.body === "string" ? request.body : "";
      if (!verifyWebhookSignature(raw, request.headers["x-hub-signature-256"], config.appSecret)) {
        throw new ApiError(401, "Invalid signature");
      }
      const parsed = tryParseJson(request);
      if (!parsed.ok) throw new ApiError(400, "Invalid JSON");

      const batch = readWebhookBatch(parsed.value);
      for (const problem of batch.problems) request.log.warn({ problem }, "webhook part skipped");
      await applyTemplateUpdates(db, batch.templateUpdates, deps.now());

      const phoneNumberIds = [...new Set(batch.changes.map((c) => c.phoneNumberId))];
      const owners = phoneNumberIds.length
        ? await db
            .select({ accountId: messagingConfigs.accountId, phoneNumberId: messagingConfigs.phoneNumberId })
            .from(messagingConfigs)
            .where(inArray(messagingConfigs.phoneNumberId, phoneNumberIds))
        : [];
      const accountOf = new Map(owners.map((o) => [o.phoneNumberId, o.accountId]));

      const stored: InboundMessageStored[] = [];
      let failed = 0;
      for (const change of batch.changes) {
        const accountId = accountOf.get(change.phoneNumberId);
        if (!accountId) {
          request.log.info({ at: change.at }, "webhook change for an unknown phone number ignored");
          continue;
        }
        try {
          const result = await storeChange(db, { accountId, change, now: deps.now });
          for (const note of result.notes) request.log.info({ at: change.at, note }, "webhook part skipped");
          stored.push(...result.inbound);
        } catch (error) {
          failed += 1;
          // Only the code and text: the query parameters hold customer messages.
          const cause = (error as { cause?: unknown }).cause ?? error;
          request.log.error(
            { at: change.at, code: pgErrorCode(error), reason: (cause as Error).message },
            "webhook change could not be stored",
          );
        }
      }
      // Meta must not wait for flows: handlers run after this answer, failures are theirs to
      // report. Also when a change failed: a redelivery finds the stored ones already there and
      // would not announce them again.
      for (const event of stored) void events.emitInboundMessage(event);
      // Stored changes are not stored twice when Meta retries the whole batch.
      if (failed > 0) throw new ApiError(500, "Some changes could not be stored; deliver the batch again");
      return reply.code(200).send({ received: true });
    },
  );
}
