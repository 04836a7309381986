// First, before the modules below are evaluated: see heap-bound.ts.
import "./heap-bound.js";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { connectDatabase, type Database } from "./db/client.js";
import { StartupError } from "./db/data-dir-lock.js";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./db/embedded.js";
import { runMigrations } from "./db/migrate.js";
import { logLine, redactConsole, serializeError, startFailureText } from "./logging.js";

/** How long in-flight requests may finish after SIGTERM before their connections are cut. */
const DRAIN_MS = 10_000;
/** The last resort: the process exits (code 1) this long after SIGTERM whatever still hangs. */
const FORCE_EXIT_MS = 25_000;

/** Database connections kept for API requests, besides one per background job. */
const HTTP_CONNECTIONS = 10;

async function main() {
  const startedAt = performance.now();
  // Libraries that print to the console get the logs' redaction list too.
  redactConsole();
  const config = loadConfig(process.env, (m) => logLine("warn", m));

  // What has been started so far, stopped in reverse order on a signal or a failed start.
  let embedded: EmbeddedPostgres | undefined;
  let database: Database | undefined;
  let app: FastifyInstance | undefined;
  let stopped: Promise<void> | undefined;
  const stopAll = () =>
    (stopped ??= (async () => {
      if (app) {
        // Stop taking requests (idle keep-alive connections are closed at once)
        // and let the ones in flight finish, within a bound.
        const server = app.server;
        const drain = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
        await app.close().finally(() => clearTimeout(drain));
      }
      await database?.close();
      await embedded?.stop();
    })());

  let stopping: string | undefined;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = signal;
    setTimeout(() => process.exit(1), FORCE_EXIT_MS).unref();
    if (!app?.server.listening) return; // still starting: the start-up sees `stopping` and unwinds
    app.log.info({ signal }, "shutting down");
    try {
      await stopAll();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));

  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres({
        dataDir: config.dataDir,
        log: { info: (m) => logLine("info", m), warn: (m) => logLine("warn", m) },
      });
      databaseUrl = embedded.url;
    }
    if (!stopping) await runMigrations(databaseUrl);
    if (!stopping)
      database = connectDatabase(databaseUrl, {
        // Room for every background job to hold a connection while requests keep theirs.
        max: HTTP_CONNECTIONS + (config.workers ? config.workerConcurrency : 0),
      });
    if (database && !stopping) app = await buildApp({ config, database });
    if (app && !stopping) await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }
  if (stopping || !app) {
    // A signal came during start-up: stop what was started.
    await stopAll();
    process.exit(0);
  }
  app.log.info(
    { startupMs: Math.round(performance.now() - startedAt), embedded: Boolean(embedded) },
    "service ready",
  );
}

main().catch((error: unknown) => {
  const known =
    error instanceof ConfigError || error instanceof StartupError ? error.message : startFailureText(error);
  if (known) logLine("fatal", known);
  else logLine("fatal", "the service could not start", { err: serializeError(error) });
  process.exit(1);
});
