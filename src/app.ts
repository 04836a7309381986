import { randomUUID } from "node:crypto";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from "fastify";
import { createAuth } from "./auth/auth.js";
import { registerTenancyRoutes } from "./auth/routes.js";
import { createSessions } from "./auth/session.js";
import type { Config } from "./config.js";
import type { Database } from "./db/client.js";
import type { AppDeps } from "./deps.js";
import { registerFlowRoutes } from "./flows/routes.js";
import { registerRunner } from "./flows/runner/index.js";
import { registerAuthProxy } from "./http/auth-proxy.js";
import { DEFAULT_CONSOLE_DIR, registerConsole } from "./http/console.js";
import { ApiError } from "./http/errors.js";
import { docs } from "./http/openapi.js";
import { registerInboxRoutes } from "./inbox/routes.js";
import { createJobs } from "./jobs/drain.js";
import { startWorkers } from "./jobs/worker.js";
import { loggerOptions } from "./logging.js";
import { registerMessagingConfigRoutes } from "./messaging/config-routes.js";
import { createTokenCipher } from "./messaging/crypto.js";
import { registerReactionRoutes } from "./messaging/react.js";
import { registerWebhookRoutes } from "./messaging/webhook.js";
import { createGraphClient } from "./upstream/graph.js";

declare module "fastify" {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

export const BODY_LIMIT = 1024 * 1024;

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
  /** The built web console (default console/dist). */
  consoleDir?: string;
  /** Run background jobs in this process (default: config.workers). */
  workers?: boolean;
  /** Run the minute-by-minute timeout sweep with the workers (default true). */
  cron?: boolean;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, database } = options;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: loggerOptions(config.logLevel) }),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    trustProxy: false,
    return503OnClosing: true,
    // HTTP framing errors never reach a route: answer them in the API's shape too.
    clientErrorHandler: (_error, socket) => {
      if (!socket.writable) return;
      const body = JSON.stringify({ error: "Bad request" });
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
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

  app.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", request.id);
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
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "wa-inbox API",
        version: "0.1.0",
        description:
          "Customer-messaging backend for WhatsApp: accounts, flows, channel configuration, inbox and reactions.",
      },
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer" },
          cookie: { type: "apiKey", in: "cookie", name: "better-auth.session_token" },
        },
      },
      security: [{ bearer: [] }, { cookie: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });

  const auth = createAuth(database.db, config);
  const deps: AppDeps = {
    config,
    db: database.db,
    pool: database.pool,
    sessions: createSessions(auth, database.db, { ttlMs: options.sessionCacheTtlMs }),
    cipher: createTokenCipher(config.encryptionKey),
    graph: createGraphClient({
      baseUrl: config.graphApiUrl,
      version: config.graphApiVersion,
      timeoutMs: options.upstreamTimeoutMs,
    }),
    jobs: createJobs(database.pool),
    log: app.log,
    now: options.now ?? (() => new Date()),
  };
  app.decorate("deps", deps);

  app.get(
    "/healthz",
    docs({ tags: ["health"], summary: "The process is alive", public: true }),
    async () => ({
      ok: true,
    }),
  );
  app.get(
    "/readyz",
    docs({ tags: ["health"], summary: "The database answers", public: true }),
    async (_request, reply) => {
      try {
        await database.pool.query("select 1");
        return { ok: true };
      } catch {
        return reply.code(503).send({ error: "Database unavailable" });
      }
    },
  );
  app.get("/api/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  registerAuthProxy(app, auth, deps.sessions, config.publicUrl);
  registerTenancyRoutes(app, deps);
  registerMessagingConfigRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerInboxRoutes(app, deps);
  registerFlowRoutes(app, deps);
  registerRunner(app, deps);
  registerReactionRoutes(app, deps);

  if (options.workers ?? config.workers) {
    const workers = await startWorkers(deps, {
      connectionString: database.url,
      concurrency: config.workerConcurrency,
      log: app.log.child({ component: "jobs" }),
      cron: options.cron,
    });
    // After the HTTP server stopped taking requests: running jobs finish (10 s at most).
    app.addHook("onClose", () => workers.stop());
  }

  return app;
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
