import { randomUUID } from "node:crypto";
import multipart from "@fastify/multipart";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from "fastify";
import { z } from "zod";
import { registerApiKeyRoutes } from "./auth/api-key-routes.js";
import { createAuth } from "./auth/auth.js";
import { registerIdentityRoutes } from "./auth/identity-routes.js";
import { registerCrossOriginGuard } from "./auth/origins.js";
import { createRevocations } from "./auth/revocations.js";
import { registerTenancyRoutes } from "./auth/routes.js";
import { createSessions } from "./auth/session.js";
import { registerBotsRoutes } from "./bots/routes.js";
import { createCampaignGate } from "./campaigns/gate.js";
import { registerCampaignRoutes } from "./campaigns/routes.js";
import { recordCampaignSendOutcome } from "./campaigns/send.js";
import { registerCannedResponseRoutes } from "./canned/routes.js";
import type { Config } from "./config.js";
import { registerContactRoutes } from "./contacts/routes.js";
import type { Database } from "./db/client.js";
import type { AppDeps } from "./deps.js";
import { DEFAULT_DELIVERY_POLICY, type DeliveryPolicy } from "./events/delivery.js";
import { registerWebhookEndpointRoutes } from "./events/endpoint-routes.js";
import { createEventHub } from "./events/hub.js";
import { registerEventRoutes } from "./events/routes.js";
import { registerFlowRoutes } from "./flows/routes.js";
import { registerRunner } from "./flows/runner/index.js";
import { createContactTransactions } from "./flows/runner/store.js";
import { DEFAULT_CONSOLE_DIR, registerConsole } from "./http/console.js";
import { ApiError } from "./http/errors.js";
import { componentSchemas, docs, healthAnswer, withOperationId } from "./http/openapi.js";
import { registerMediaRoutes } from "./inbox/media-routes.js";
import { registerInboxRoutes } from "./inbox/routes.js";
import { createJobs } from "./jobs/drain.js";
import { startWorkers } from "./jobs/worker.js";
import { loggerOptions, OneLinePerRequest } from "./logging.js";
import { createMailer } from "./mail/mailer.js";
import { queueMail } from "./mail/queue.js";
import { createMediaStore } from "./media/store.js";
import { registerMessagingConfigRoutes } from "./messaging/config-routes.js";
import { createTokenCipher } from "./messaging/crypto.js";
import { registerReactionRoutes } from "./messaging/react.js";
import { registerWebhookRoutes } from "./messaging/webhook.js";
import { postponeUnknownSettles, sendClaimed, settleDueAt } from "./sending/outbound.js";
import { onCampaignSendOutcome } from "./sending/outcomes.js";
import { createSendPipeline } from "./sending/pipeline.js";
import { postgresSendRate, redisSendRate } from "./sending/rate.js";
import { registerSettingsRoutes } from "./settings/routes.js";
import { registerTemplateRoutes } from "./templates/routes.js";
import { createGraphClient, setUpstreamSockets } from "./upstream/graph.js";

declare module "fastify" {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

export const BODY_LIMIT = 1024 * 1024;
/** One file of at most 100 MB (WhatsApp's largest, documents) and a few small text fields. */
export const MULTIPART_LIMITS = {
  fileSize: 100 * 1024 * 1024,
  files: 1,
  fields: 5,
  fieldSize: 8 * 1024,
  parts: 6,
};

/**
 * HTTP timeouts. A client gets HEADERS_TIMEOUT_MS to send a request's headers
 * and REQUEST_TIMEOUT_MS to send the whole request (a body shorter than its
 * Content-Length, a stalled upload): then it is answered 408 and disconnected.
 * The time a handler takes is not limited by these. An idle keep-alive
 * connection is closed after KEEP_ALIVE_TIMEOUT_MS, longer than the usual
 * load balancer idle timeout (60 s) so that the balancer closes it first.
 */
export const REQUEST_TIMEOUT_MS = 30_000;
export const HEADERS_TIMEOUT_MS = 15_000;
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

export interface AppOptions {
  config: Config;
  database: Database;
  /** A pino logger instance; defaults to JSON logs at config.logLevel. */
  logger?: FastifyServerOptions["loggerInstance"];
  /** Upstream call timeout (tests shorten it). */
  upstreamTimeoutMs?: number;
  /** The clock (tests control it). */
  now?: () => Date;
  /** How long a resolved session is reused (default 5 s; 0 disables the cache). */
  sessionCacheTtlMs?: number;
  /** HTTP timeouts (defaults REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS; tests shorten them). */
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /** Heartbeat of the event streams (default 15 s). */
  eventStreamHeartbeatMs?: number;
  /** Outbound webhook timeout and retry schedule (tests shorten the delays). */
  webhookDelivery?: Partial<DeliveryPolicy>;
  /** The built web console (default console/dist). */
  consoleDir?: string;
  /** Run background jobs in this process (default: config.workers). */
  workers?: boolean;
  /** Run the minute-by-minute timeout sweep with the workers (default true). */
  cron?: boolean;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, database } = options;
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const headersTimeout = Math.min(options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS, requestTimeout);
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: loggerOptions(config.logLevel) }),
    bodyLimit: BODY_LIMIT,
    // One line per request at info (its method, URL, status and time), not Fastify's two.
    logController: new OneLinePerRequest(),
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    trustProxy: trustProxy(config.trustProxy),
    return503OnClosing: true,
    requestTimeout,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS,
    http: {
      requestTimeout,
      headersTimeout,
      // Node checks for expired requests at this interval (its default, 30 s, would double the timeout).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4))),
    },
    // On close, idle keep-alive connections are closed at once, busy ones once answered (see onSend below).
    forceCloseConnections: "idle",
    // HTTP framing errors and timeouts never reach a route: answer them in the API's shape too.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket) => {
      const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (!socket.writable || response?.headersSent) {
        socket.destroy();
        return;
      }
      const [status, message] =
        error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? ["408 Request Timeout", "Request timeout"]
          : error.code === "HPE_HEADER_OVERFLOW"
            ? ["431 Request Header Fields Too Large", "Request headers are too large"]
            : ["400 Bad Request", "Bad request"];
      const body = JSON.stringify({ error: message });
      socket.end(
        `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    frameworkErrors: (error, _request, reply) => {
      (reply as FastifyReply)
        .code(400)
        .send({ error: error.message.includes("URL") ? "Malformed URL" : "Bad request" });
    },
  });

  // Handlers parse their own input after authentication (spec check order:
  // 401, then 403, then 400 Invalid JSON), so every body is kept as raw text
  // whatever its Content-Type, including none.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => done(null, body));
  // Route schemas document the API only (see http/openapi.ts).
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Once the app is closing (SIGTERM), an answer to a request still in flight
  // also closes its connection, so a keep-alive client cannot hold shutdown up.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", request.id);
    if (closing) reply.header("connection", "close");
  });

  const webConsole = await registerConsole(app, options.consoleDir ?? DEFAULT_CONSOLE_DIR);
  app.setNotFoundHandler((request, reply) => {
    if (webConsole.serveFallback(request, reply)) return;
    reply.code(404).send({ error: "Not found" });
  });

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) {
      if (error.headers) reply.headers(error.headers);
      return reply.code(error.status).send({ error: error.message, ...error.extra });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ error: clientErrorMessage(error, status) });
    }
    request.log.error({ err: error }, "request failed");
    return reply.code(500).send({ error: "Internal server error" });
  });

  await app.register(swagger, {
    transform: withOperationId,
    // The named response contracts, as the routes referred to them.
    transformObject: (document) => {
      const openapi = (document as { openapiObject: { components?: object } }).openapiObject;
      return { ...openapi, components: { ...openapi.components, schemas: componentSchemas() } } as never;
    },
    openapi: {
      openapi: "3.1.0",
      servers: [{ url: config.publicUrl, description: "This service (PUBLIC_URL)" }],
      info: {
        title: "wa-inbox API",
        version: "0.1.0",
        description:
          "Customer-messaging backend for WhatsApp: accounts, flows, channel configuration, inbox and reactions. Every answer carries `X-Request-Id` (the id its log lines carry).",
      },
      components: {
        securitySchemes: {
          bearer: {
            type: "http",
            scheme: "bearer",
            description:
              "A session's signed token (sign-in's `token`, also its `set-auth-token` header) or an API key. The token without its signature is no credential.",
          },
          cookie: { type: "apiKey", in: "cookie", name: "better-auth.session_token" },
          apiKey: {
            type: "apiKey",
            in: "header",
            name: "X-API-Key",
            description:
              "An API key. When a request carries one (here, or as a bearer token starting `wak_`), the key is its only credential: an unknown, deleted or expired key is 401 even beside a valid session, never a fallback to the session.",
          },
        },
      },
      security: [{ bearer: [] }, { cookie: [] }, { apiKey: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  // Multipart bodies (media uploads) have their own limits; every other body stays under BODY_LIMIT.
  // preservePath: a filename with path separators is refused (400), not quietly cut to its last part.
  await app.register(multipart, { limits: MULTIPART_LIMITS, preservePath: true });

  const cipher = createTokenCipher(config.encryptionKey);
  const mailer = createMailer(config, app.log.child({ component: "mail" }));
  const auth = createAuth(database.db, config, app.log, {
    queue: (mail) => queueMail(database.db, cipher, mail),
    verifyOnSignUp: mailer.mode === "smtp",
  });
  const graph = createGraphClient({
    baseUrl: config.graphApiUrl,
    version: config.graphApiVersion,
    timeoutMs: options.upstreamTimeoutMs,
  });
  setUpstreamSockets(config.sendMaxInFlight);
  // Each number's send schedule, shared by every instance: in Redis when there is one, else PostgreSQL.
  const sendRate = config.redisUrl ? redisSendRate(config.redisUrl) : postgresSendRate(database.pool);
  const sends = createSendPipeline({
    graph,
    rate: sendRate,
    maxInFlight: config.sendMaxInFlight,
    callTimeoutMs: options.upstreamTimeoutMs ?? 10_000,
    // A send never waits for a slot longer than half the unknown-outcome window (30 s at most).
    maxWaitMs: Math.min(30_000, (config.sendUnknownWindowS * 1000) / 2),
    log: app.log,
    // A campaign cancelled or paused since its sends were claimed sends no more of them.
    campaignGoing: createCampaignGate(database.db),
    onThrottled: (phoneNumberId, rate) =>
      app.log.warn(
        { phoneNumberId, rate },
        "Meta refused a send for throughput: the number's send rate is lowered",
      ),
  });
  // A campaign message's recorded outcome moves its recipient (src/campaigns/send.ts).
  onCampaignSendOutcome(recordCampaignSendOutcome);
  const jobs = createJobs(database.pool, sends);
  const deps: AppDeps = {
    config,
    db: database.db,
    pool: database.pool,
    sessions: createSessions(auth, database.db, { ttlMs: options.sessionCacheTtlMs }),
    revocations: createRevocations({ connectionString: database.url }, app.log),
    cipher,
    graph,
    sends,
    claimedSends: {
      settleDueAt: () => settleDueAt(deps),
      send: (payload, claimed) => sendClaimed(deps, payload, claimed),
    },
    contactTransactions: createContactTransactions(database.pool),
    media: createMediaStore(config.mediaStore),
    jobs,
    mailer,
    log: app.log,
    now: options.now ?? (() => new Date()),
    eventHub: createEventHub({ connectionString: database.url }, app.log),
    eventStreamHeartbeatMs: options.eventStreamHeartbeatMs ?? 15_000,
    webhookDelivery: { ...DEFAULT_DELIVERY_POLICY, ...options.webhookDelivery },
  };
  app.decorate("deps", deps);
  app.addHook("onClose", () => deps.eventHub.close());
  app.addHook("onClose", async () => mailer.close());
  // A revocation on any instance empties this one's session cache for that user at once.
  deps.revocations.subscribe((userId) =>
    userId ? deps.sessions.forgetUser(userId) : deps.sessions.forgetAll(),
  );
  app.addHook("onReady", async () => deps.revocations.start());
  app.addHook("onClose", () => deps.revocations.close());

  app.get(
    "/healthz",
    docs({
      tags: ["health"],
      summary: "The process is alive",
      public: true,
      responses: { 200: { description: "Alive", body: healthAnswer } },
    }),
    async () => ({
      ok: true,
    }),
  );
  app.get(
    "/readyz",
    docs({
      tags: ["health"],
      summary: "The database answers",
      public: true,
      responses: { 200: { description: "Ready", body: healthAnswer }, 503: "The database does not answer" },
    }),
    async (_request, reply) => {
      try {
        await database.pool.query("select 1");
        return { ok: true };
      } catch {
        return reply.code(503).send({ error: "Database unavailable" });
      }
    },
  );
  app.get(
    "/api/openapi.json",
    docs({
      tags: ["health"],
      summary: "This OpenAPI document",
      public: true,
      responses: {
        200: {
          description: "The OpenAPI 3.1 document",
          body: z
            .looseObject({
              openapi: z.string(),
              info: z.looseObject({}),
              paths: z.record(z.string(), z.unknown()),
            })
            .meta({ id: "OpenApiDocument" }),
        },
      },
    }),
    async () => app.swagger(),
  );

  registerCrossOriginGuard(app, config);
  registerIdentityRoutes(app, auth, deps);
  registerTenancyRoutes(app, deps);
  registerApiKeyRoutes(app, deps);
  registerMessagingConfigRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerInboxRoutes(app, deps);
  registerContactRoutes(app, deps);
  registerCannedResponseRoutes(app, deps);
  registerFlowRoutes(app, deps);
  registerRunner(app, deps);
  registerReactionRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerWebhookEndpointRoutes(app, deps);
  registerTemplateRoutes(app, deps);
  registerMediaRoutes(app, deps);
  registerSettingsRoutes(app, deps);
  registerCampaignRoutes(app, deps);
  registerBotsRoutes(app, deps);

  const runWorkers = options.workers ?? config.workers;
  if (runWorkers) {
    const postponed = await postponeUnknownSettles(database.pool, config.sendUnknownWindowS);
    if (postponed > 0) {
      app.log.warn(
        { sends: postponed, windowS: config.sendUnknownWindowS },
        "sends of unknown outcome found at start: Meta's statuses get one window to name them before they are sent once more",
      );
    }
  }
  const workers = runWorkers
    ? await startWorkers(deps, {
        connectionString: database.url,
        concurrency: config.workerConcurrency,
        log: app.log.child({ component: "jobs" }),
        cron: options.cron,
      })
    : undefined;
  // The webhook's deliveries start on this instance's workers as soon as they are acknowledged.
  if (workers) jobs.local = workers.local;
  // After the HTTP server stopped taking requests, together (10 s at most): running jobs finish,
  // sends waiting for a slot are handed back to the queue, sends in flight finish and are recorded.
  app.addHook("onClose", async () => {
    await Promise.all([workers?.stop(), sends.close(10_000)]);
    await sendRate.close();
  });

  return app;
}

/** TRUST_PROXY as Fastify takes it: a hop count becomes "trust the nearest n proxies". */
function trustProxy(setting: Config["trustProxy"]) {
  return typeof setting === "number" ? (_address: string, hop: number) => hop < setting : setting;
}

function clientErrorMessage(error: FastifyError, status: number): string {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return "Request body is larger than 1 MiB";
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return "Content-Length does not match the body";
    default:
      return status === 404 ? "Not found" : "Bad request";
  }
}
