/**
 * Browser tests drive Debian's Chromium (CHROMIUM_PATH, or /usr/bin/chromium) through
 * playwright-core against the real service on a real port, with the sandbox upstream playing
 * Meta and the customer. No browser is ever downloaded. Without Chromium the tests print one
 * SKIPPED line, unless REQUIRE_BROWSER=1 (CI), where a missing browser fails the run.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import {
  type APIRequestContext,
  type Browser,
  type BrowserContext,
  chromium,
  type Page,
} from "playwright-core";
import { CHROMIUM_FLAGS } from "../../scripts/chromium-flags.mjs";
import { buildConsole } from "../../scripts/console-build.mjs";
import { type Customer, createCustomer } from "../../src/upstream/sandbox/customer.js";
import { type AcceptedMessage, type Sandbox, startSandbox } from "../../src/upstream/sandbox/server.js";
import { createTestApp, createTestDatabase, type TestApp } from "../helpers/harness.js";

const root = path.resolve(import.meta.dirname, "../..");

/** Chromium's path, or why there is none. */
export function findChromium(): { path: string } | { missing: string } {
  const candidates = process.env.CHROMIUM_PATH
    ? [process.env.CHROMIUM_PATH]
    : ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
  const found = candidates.find((c) => existsSync(c));
  if (found) return { path: found };
  const message = `SKIPPED: browser tests of the web console (no Chromium at ${candidates.join(" or ")}; apt-get install -y chromium, or set CHROMIUM_PATH)`;
  if (process.env.REQUIRE_BROWSER === "1")
    throw new Error(message.replace("SKIPPED: ", "REQUIRE_BROWSER=1 but "));
  return { missing: message };
}

/** Builds the console once for all test files at a time (a lock directory), unless it is fresh. */
export async function ensureConsoleBuilt() {
  const lock = path.join(root, "console", ".build-lock");
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another test file is building; a lock older than 3 minutes was left by a killed run.
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - since > 180_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    await buildConsole({ quiet: true });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export const NUMBER = {
  phoneNumberId: "100000000000001",
  accessToken: "sandbox-token",
  businessAccountId: "200000000000001",
  displayPhoneNumber: "+1 555-010-0001",
  verifiedName: "Lumen Coffee",
};

export interface Stack {
  t: TestApp;
  url: string;
  sandbox: Sandbox;
  appSecret: string;
  /** Messages the sandbox accepted from the service, oldest first. */
  accepted: AcceptedMessage[];
  /** Stops the service; start() brings it back on the same port, database and secrets. */
  stop(): Promise<void>;
  start(): Promise<void>;
  customer(waId: string, name: string): Customer;
  close(): Promise<void>;
}

/** The service on a real port (PUBLIC_URL = the URL the browser uses) with the sandbox. */
export async function startStack(): Promise<Stack> {
  const appSecret = "console-test-app-secret";
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const webhookUrl = `${url}/api/messaging/webhook`;
  const accepted: AcceptedMessage[] = [];
  const sandbox = await startSandbox({ onMessageAccepted: (message) => accepted.push(message) });
  sandbox.addNumber(NUMBER);
  const database = await createTestDatabase();
  // Media files outlive a restart of the service, as DATA_DIR/media does.
  const mediaDir = mkdtempSync(path.join(os.tmpdir(), "wa-console-media-"));
  const config = {
    mediaStore: { kind: "local" as const, dir: mediaDir },
    // Outbound webhooks may go to a receiver on this machine (WEBHOOK_ALLOW_PRIVATE=true).
    webhookAllowPrivate: true,
    publicUrl: url,
    appSecret,
    graphApiUrl: sandbox.url,
    port,
    // Fixed across restarts, so that sessions and stored tokens survive them.
    authSecret: randomBytes(32).toString("base64url"),
    encryptionKey: randomBytes(32).toString("hex"),
  };
  let t = await createTestApp({ databaseUrl: database.url, config });
  await t.app.listen({ port, host: "127.0.0.1" });
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await t.close();
  };
  return {
    get t() {
      return t;
    },
    url,
    sandbox,
    appSecret,
    accepted,
    customer: (waId, name) =>
      createCustomer({ webhookUrl, appSecret, phoneNumberId: NUMBER.phoneNumberId, waId, name }),
    stop,
    async start() {
      t = await createTestApp({ databaseUrl: database.url, config });
      await t.app.listen({ port, host: "127.0.0.1" });
      running = true;
    },
    async close() {
      await stop();
      await database.drop();
      await sandbox.close();
      rmSync(mediaDir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
  });
}

export async function newPage(
  browser: Browser,
  width = 1280,
  height = 800,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
  // Generous: the machines that run this are shared and sometimes very busy.
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  return { context, page };
}

export const screenshotDir = path.join(root, "docs", "screenshots");
/** Screenshots for the README are written only when asked (CONSOLE_SCREENSHOTS=1). */
export const takeScreenshots = process.env.CONSOLE_SCREENSHOTS === "1";

/** Saves what `page` shows as docs/screenshots/<name>.png, when screenshots were asked for. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!takeScreenshots) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`) });
}

/**
 * One API call as the browser's session makes it (same origin, its cookies):
 * the JSON answer, or an error naming the call and the status.
 */
export async function apiCall(
  request: APIRequestContext,
  base: string,
  method: string,
  url: string,
  data?: object,
) {
  const response = await request.fetch(`${base}${url}`, { method, data, headers: { origin: base } });
  const body = response.headers()["content-type"]?.includes("json") ? await response.json() : null;
  if (!response.ok()) throw new Error(`${method} ${url}: ${response.status()} ${JSON.stringify(body)}`);
  return body;
}
