import { eq } from "drizzle-orm";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { tryParseJson } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { createJobBatcher } from "../queue/add.js";
import { cleanStrings, deliveryQueue } from "./webhook-payload.js";
import { verifyWebhookSignature } from "./webhook-signature.js";

export const WEBHOOK_PATH = "/api/messaging/webhook";
export const PROCESS_WEBHOOK_TASK = "process-webhook";
/** About three days of graphile-worker's exponential backoff, like Meta's own redelivery. */
const PROCESS_WEBHOOK_ATTEMPTS = 20;

const handshakeQuery = z.object({
  "hub.mode": z.string(),
  "hub.verify_token": z.string(),
  "hub.challenge": z.string(),
});

/** What Meta POSTs, for the OpenAPI document (readWebhookBatch reads it leniently). */
const deliveryDoc = z.object({
  object: z.string().describe('"whatsapp_business_account"'),
  entry: z.array(
    z.object({
      id: z.string().describe("The WhatsApp Business Account id"),
      changes: z.array(
        z.object({
          field: z.string().describe('"messages"'),
          value: z
            .object({
              messaging_product: z.string(),
              metadata: z.object({ display_phone_number: z.string(), phone_number_id: z.string() }),
              contacts: z.array(z.unknown()).optional(),
              messages: z.array(z.unknown()).optional(),
              statuses: z.array(z.unknown()).optional(),
            })
            .catchall(z.unknown()),
        }),
      ),
    }),
  ),
});

export function registerWebhookRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, cipher, config } = deps;
  // Deliveries acknowledged at the same moment share one commit (see createJobBatcher).
  // With this instance's workers free, a delivery's job starts here as soon as it is committed.
  const jobs = createJobBatcher(db, () => deps.jobs.local);

  app.get<{ Querystring: Record<string, unknown> }>(
    WEBHOOK_PATH,
    docs({
      tags: ["webhook"],
      summary: "Meta's webhook verification handshake",
      description:
        "Answers `hub.challenge` as plain text when `hub.mode` is `subscribe` and `hub.verify_token` is the verify token saved with some account's channel configuration.",
      querystring: handshakeQuery,
      responses: {
        200: { description: "The challenge, as text/plain", contentType: "text/plain" },
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
        "Signed by Meta with `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with META_APP_SECRET). A signed JSON delivery is stored as a background job and answered 200; the job stores each change (messages, reactions, statuses) and offers customer messages to the flow runner, one customer's deliveries at a time in arrival order. Changes for unknown phone numbers and malformed parts are skipped.",
      body: deliveryDoc,
      responses: {
        200: {
          description: "Delivery accepted: stored, and processed in the background",
          body: z.object({ received: z.literal(true) }),
        },
        400: "Signed body that is not JSON",
        401: "Signature missing or wrong, or META_APP_SECRET not configured",
        500: "The delivery could not be stored; Meta delivers it again",
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
      // What neither the job table nor a queue name can hold (NUL, hostile nesting) is repaired
      // or dropped here, so that Meta gets its 200 and never redelivers the batch for it.
      const problems: string[] = [];
      const delivery = cleanStrings(parsed.value, problems);
      for (const problem of problems) request.log.warn({ problem }, "webhook part skipped");
      // Acknowledged once the job exists: from here on nothing Meta sent is lost, whatever happens
      // to this process.
      await jobs.add(
        PROCESS_WEBHOOK_TASK,
        { delivery },
        {
          queueName: deliveryQueue(delivery),
          maxAttempts: PROCESS_WEBHOOK_ATTEMPTS,
        },
      );
      return reply.code(200).send({ received: true });
    },
  );
}
