import { buildApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { connectDatabase } from "./db/client.js";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./db/embedded.js";
import { runMigrations } from "./db/migrate.js";

async function main() {
  const startedAt = performance.now();
  const config = loadConfig();

  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      log: { info: (m) => console.log(m), warn: (m) => console.warn(m) },
    });
    databaseUrl = embedded.url;
  }

  try {
    await runMigrations(databaseUrl);
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  const database = connectDatabase(databaseUrl);
  const app = await buildApp({ config, database });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    try {
      // Stop taking requests and let the ones in flight finish, then the database.
      await app.close();
      await database.close();
      await embedded?.stop();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));

  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { startupMs: Math.round(performance.now() - startedAt), embedded: Boolean(embedded) },
    "service ready",
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
