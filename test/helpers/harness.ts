import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { inject } from "vitest";
import { type AppOptions, buildApp } from "../../src/app.js";
import { type Config, loadConfig } from "../../src/config.js";
import { connectDatabase, type Database } from "../../src/db/client.js";
import { loggerOptions } from "../../src/logging.js";
import { withClient, withDatabase } from "./global-setup.js";
import { validateInjectedResponses } from "./openapi-validator.js";

/** A fresh database cloned from the migrated template: one per test file (or per call). */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject("adminUrl");
  const name = `${inject("databasePrefix")}_${randomBytes(5).toString("hex")}`;
  const template = inject("templateDatabase");
  for (let attempt = 0; ; attempt++) {
    try {
      await withClient(adminUrl, (c) => c.query(`create database ${name} template ${template}`));
      break;
    } catch (error) {
      // Another file is cloning the template at this very moment: try again.
      if ((error as { code?: string }).code !== "55006" || attempt > 50) throw error;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  }
  return {
    url: withDatabase(adminUrl, name),
    drop: () =>
      withClient(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`)).then(
        () => undefined,
      ),
  };
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  const base = loadConfig({
    NODE_ENV: "test",
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    AUTH_SECRET: randomBytes(32).toString("base64url"),
    PUBLIC_URL: "http://127.0.0.1:3000",
    LOG_LEVEL: "silent",
    // Never Meta itself: a test that needs the upstream points this at a sandbox. Anything else
    // (a media download job started by a webhook test, say) meets a refused loopback connection.
    META_GRAPH_API_URL: "http://127.0.0.1:9",
  });
  return { ...base, ...overrides };
}

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  config: Config;
  /** Every log line written so far (when built with captureLogs). */
  logs(): string;
  close(): Promise<void>;
}

/**
 * The real app on its own database. `databaseUrl` reuses an existing test
 * database (to restart the app with another configuration, for example).
 */
export async function createTestApp(
  options: {
    config?: Partial<Config>;
    captureLogs?: boolean;
    databaseUrl?: string;
    /** Upstream call timeout; tests that inject slow upstream answers shorten it. */
    upstreamTimeoutMs?: number;
    /** The app's clock (deps.now), for tests that move time. */
    now?: () => Date;
    /** Session cache lifetime (the app's default is 5 s). */
    sessionCacheTtlMs?: number;
    /** Event stream heartbeat (the app's default is 15 s). */
    eventStreamHeartbeatMs?: number;
    /** Outbound webhook retry schedule (tests shorten the delays). */
    webhookDelivery?: AppOptions["webhookDelivery"];
    /** The built web console to serve (default console/dist). */
    consoleDir?: string;
    /** Run background jobs (default true; the minute-by-minute cron stays off in tests). */
    workers?: boolean;
    /** Check every injected answer against the OpenAPI document (default true). */
    openApiCheck?: boolean;
  } = {},
): Promise<TestApp> {
  const owned = options.databaseUrl ? undefined : await createTestDatabase();
  const url = options.databaseUrl ?? owned?.url ?? "";
  // Media files of a test app live in a folder of their own, removed on close.
  const mediaDir = mkdtempSync(path.join(tmpdir(), "wa-inbox-media-"));
  const config = testConfig({
    databaseUrl: url,
    mediaStore: { kind: "local", dir: mediaDir },
    ...options.config,
  });
  const database = connectDatabase(url);
  let captured = "";
  const logger = options.captureLogs
    ? pino(
        loggerOptions("trace") as pino.LoggerOptions,
        new Writable({
          write(chunk, _encoding, done) {
            captured += chunk.toString();
            done();
          },
        }),
      )
    : pino({ level: "silent" });
  const app = await buildApp({
    config,
    database,
    logger,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    now: options.now,
    sessionCacheTtlMs: options.sessionCacheTtlMs,
    eventStreamHeartbeatMs: options.eventStreamHeartbeatMs,
    webhookDelivery: options.webhookDelivery,
    consoleDir: options.consoleDir,
    workers: options.workers ?? true,
    cron: false,
  });
  await app.ready();
  // Every answer a test sees through app.inject is checked against the OpenAPI document.
  if (options.openApiCheck !== false) validateInjectedResponses(app);
  return {
    app,
    database,
    config,
    logs: () => captured,
    async close() {
      await app.close();
      await database.close();
      await owned?.drop();
      rmSync(mediaDir, { recursive: true, force: true });
    },
  };
}

export interface TestUser {
  id: string;
  email: string;
  token: string;
  /** Headers that authenticate as this user (bearer token). */
  headers: Record<string, string>;
}

let counter = 0;

export async function signUp(app: FastifyInstance, name = "Agent"): Promise<TestUser> {
  counter += 1;
  const email = `user${counter}-${randomBytes(4).toString("hex")}@example.com`;
  const password = "correct horse battery";
  const response = await app.inject({
    method: "POST",
    url: "/api/auth/sign-up/email",
    payload: { email, password, name },
  });
  if (response.statusCode !== 200) throw new Error(`sign-up failed: ${response.body}`);
  // Sign-up opens no session (it answers alike for taken emails): sign in.
  const signIn = await app.inject({
    method: "POST",
    url: "/api/auth/sign-in/email",
    payload: { email, password },
  });
  if (signIn.statusCode !== 200) throw new Error(`sign-in failed: ${signIn.body}`);
  const token = String(signIn.headers["set-auth-token"]);
  const body = signIn.json() as { user: { id: string } };
  return { id: body.user.id, email, token, headers: { authorization: `Bearer ${token}` } };
}

/** A user who owns a new account; returns the user and the account id. */
export async function signUpWithAccount(app: FastifyInstance, name = "Owner") {
  const user = await signUp(app, name);
  const response = await app.inject({
    method: "POST",
    url: "/api/accounts",
    headers: user.headers,
    payload: { name: `${name}'s business` },
  });
  if (response.statusCode !== 201) throw new Error(`account create failed: ${response.body}`);
  const accountId = (response.json() as { account: { id: string } }).account.id;
  return { user, accountId };
}

/**
 * Marks a user's email verified, as following the link of a verification mail
 * does (test/mail covers the mail itself).
 */
export async function markEmailVerified(app: FastifyInstance, user: TestUser) {
  await app.deps.pool.query("update users set email_verified = true where id = $1", [user.id]);
}

/**
 * A second member of an existing account, joined through an invitation to
 * their email, accepted with the owner's token (so their email is verified first).
 */
export async function addMember(app: FastifyInstance, owner: TestUser, name = "Teammate") {
  const member = await signUp(app, name);
  await markEmailVerified(app, member);
  const invite = await app.inject({
    method: "POST",
    url: "/api/accounts/invitations",
    headers: owner.headers,
    payload: { email: member.email },
  });
  if (invite.statusCode !== 201) throw new Error(`invitation failed: ${invite.body}`);
  const token = (invite.json() as { invitation: { token: string } }).invitation.token;
  const accepted = await app.inject({
    method: "POST",
    url: `/api/invitations/${token}/accept`,
    headers: member.headers,
  });
  if (accepted.statusCode !== 200) throw new Error(`accept failed: ${accepted.body}`);
  return member;
}
