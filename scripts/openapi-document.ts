/**
 * The service's OpenAPI document, built from the routes without a database or
 * a listening port (every route's schema is known once the app is built).
 * Printed as JSON on stdout: `node --import tsx scripts/openapi-document.ts`.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import { buildApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { connectDatabase } from "../src/db/client.js";

export async function openApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({
    NODE_ENV: "test",
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    AUTH_SECRET: randomBytes(32).toString("base64url"),
    PUBLIC_URL: "http://localhost:3000",
    DATABASE_URL: "postgres://127.0.0.1:1/none",
    LOG_LEVEL: "silent",
  });
  // The pool connects on first use, which never comes.
  const database = connectDatabase(config.databaseUrl ?? "postgres://127.0.0.1:1/none");
  const app = await buildApp({
    config,
    database,
    logger: pino({ level: "silent" }),
    workers: false,
    cron: false,
  });
  await app.ready();
  const document = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  await database.close();
  return document;
}
