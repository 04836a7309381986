import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireOwner } from "../auth/session.js";
import {
  deliveriesPage,
  deliveryAnswer,
  endpointAnswer,
  endpointCreated,
  endpointsAnswer,
} from "../contracts/account.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { notFound } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { sendTestEvent } from "./delivery.js";
import {
  createEndpoint,
  deleteEndpoint,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  MAX_ENDPOINTS_PER_ACCOUNT,
  toDeliveryJson,
  toEndpointJson,
  updateEndpoint,
} from "./endpoints.js";
import { EVENT_TYPES } from "./types.js";

const TAGS = ["webhook endpoints"];
const SUBSCRIBABLE = [...EVENT_TYPES, "*"] as const;

const events = z
  .array(z.enum(SUBSCRIBABLE, { error: `must be one of ${SUBSCRIBABLE.map((t) => `"${t}"`).join(", ")}` }), {
    error: 'must be a list of event types, or ["*"]',
  })
  .min(1, 'must name at least one event type, or ["*"] for all')
  .refine((list) => !list.includes("*") || list.length === 1, '"*" stands alone: it means every event type')
  .transform((list) => [...new Set(list)])
  .describe(`Event types to receive (${EVENT_TYPES.join(", ")}), or ["*"] for all`);
const url = z
  .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
  .min(1, "is required")
  .meta({
    format: "uri",
    description: "An absolute https URL on a public address (http too when WEBHOOK_ALLOW_PRIVATE is set)",
  });
const description = z
  .string({ error: "must be a string" })
  .max(500, "must be at most 500 characters")
  .nullable();

const createBody = z.object({
  url,
  events,
  description: description.optional(),
});
const patchBody = z.object({
  url: url.optional(),
  events: events.optional(),
  enabled: z.boolean({ error: "must be true or false" }).optional(),
  description: description.optional(),
});
const idParams = z.object({ id: z.string().describe("Webhook endpoint id (UUID)") });
const pageQuery = z.object({
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 200" })
    .int("must be a whole number from 1 to 200")
    .min(1, "must be a whole number from 1 to 200")
    .max(200, "must be a whole number from 1 to 200")
    .default(50),
  cursor: z.string().min(1).optional(),
});

const COMMON = {
  403: "The caller's profile has no account, or the caller is not the account's owner",
};

/** Outbound webhook endpoints: where the account's events are POSTed, signed per Standard Webhooks. */
export function registerWebhookEndpointRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  const endpointOf = async (accountId: string, id: string) => {
    const endpoint = await findEndpoint(db, accountId, id);
    if (!endpoint) throw notFound();
    return endpoint;
  };

  app.post(
    "/api/webhook-endpoints",
    docs({
      tags: TAGS,
      summary: "Add a webhook endpoint",
      description:
        "Each subscribed event is POSTed as JSON `{ id, type, created_at, data }` with the Standard Webhooks headers " +
        "`webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>` " +
        "keyed with the secret). A 2xx within 10 s is a delivery; anything else is retried with exponential backoff " +
        "(first retry after about 5 s) for 24 hours; an endpoint failing for 3 days is disabled. The URL must be https " +
        "and resolve to public addresses only (unless WEBHOOK_ALLOW_PRIVATE=true). The secret is shown only here.",
      body: createBody,
      responses: {
        201: { description: "`{ endpoint, secret }`", body: endpointCreated },
        ...COMMON,
        400: "Invalid JSON, a bad url (not https, private address, unresolvable) or bad events",
        409: `The account already has ${MAX_ENDPOINTS_PER_ACCOUNT} endpoints`,
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      const body = parse(createBody, readJsonObject(request));
      const created = await createEndpoint(deps, {
        accountId,
        userId: caller.userId,
        url: body.url,
        events: body.events,
        description: body.description ?? null,
      });
      return reply.code(201).send({ endpoint: toEndpointJson(created.endpoint), secret: created.secret });
    },
  );

  app.get(
    "/api/webhook-endpoints",
    docs({
      tags: TAGS,
      summary: "The account's webhook endpoints, newest first",
      responses: {
        200: { description: "`{ endpoints: [WebhookEndpoint] }` (never the secrets)", body: endpointsAnswer },
        ...COMMON,
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      return { endpoints: (await listEndpoints(db, accountId)).map(toEndpointJson) };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/webhook-endpoints/:id",
    docs({
      tags: TAGS,
      summary: "One webhook endpoint",
      params: idParams,
      responses: {
        200: { description: "`{ endpoint }`", body: endpointAnswer },
        ...COMMON,
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      return { endpoint: toEndpointJson(await endpointOf(accountId, request.params.id)) };
    },
  );

  app.patch<{ Params: { id: string } }>(
    "/api/webhook-endpoints/:id",
    docs({
      tags: TAGS,
      summary: "Change a webhook endpoint's url, events, description, or turn it on or off",
      description: "Turning an endpoint back on (`enabled: true`) clears its failure record.",
      params: idParams,
      body: patchBody,
      responses: {
        200: { description: "`{ endpoint }`", body: endpointAnswer },
        ...COMMON,
        400: "Invalid JSON, a bad url or bad events",
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const endpoint = await endpointOf(accountId, request.params.id);
      const patch = parse(patchBody, readJsonObject(request));
      return { endpoint: toEndpointJson(await updateEndpoint(deps, endpoint, patch)) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/webhook-endpoints/:id",
    docs({
      tags: TAGS,
      summary: "Remove a webhook endpoint (pending deliveries to it are dropped)",
      params: idParams,
      responses: { 204: "Removed", ...COMMON, 404: "Not found" },
    }),
    async (request, reply) => {
      const accountId = requireOwner(await sessions.require(request));
      await deleteEndpoint(db, await endpointOf(accountId, request.params.id));
      return reply.code(204).send();
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/webhook-endpoints/:id/deliveries",
    docs({
      tags: TAGS,
      summary: "The endpoint's delivery attempts, newest first",
      description:
        "One entry per attempt: status (`delivered` or `failed`), the answer's status code and the start of its " +
        "body, duration, error, and when the next attempt runs. Pages with `limit` and `cursor` (`next_cursor`).",
      params: idParams,
      querystring: pageQuery,
      responses: {
        200: { description: "`{ deliveries: [Delivery], next_cursor }`", body: deliveriesPage },
        ...COMMON,
        400: "Bad limit or cursor",
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const endpoint = await endpointOf(accountId, request.params.id);
      const page = parse(pageQuery, request.query);
      return listDeliveries(db, { endpointId: endpoint.id, ...page });
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/webhook-endpoints/:id/test",
    docs({
      tags: TAGS,
      summary: "Send a signed `webhook.test` event to the endpoint now and show the outcome",
      description:
        "Works on disabled endpoints too. The attempt is logged with the deliveries; it is not retried and does " +
        "not count toward disabling the endpoint.",
      params: idParams,
      responses: {
        200: { description: "`{ delivery }`", body: deliveryAnswer },
        ...COMMON,
        404: "Not found",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const endpoint = await endpointOf(accountId, request.params.id);
      return { delivery: toDeliveryJson(await sendTestEvent(deps, endpoint)) };
    },
  );
}
