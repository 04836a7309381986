/**
 * The console's budgets (issue 15), measured on this machine:
 * - the inbox route's JavaScript, gzip (at most 250 KB; the flow canvas loads lazily);
 * - how long after the webhook's 200 a new customer message appears in an open inbox in a real
 *   browser (at most 1 s);
 * - long lists (issue 29), reported: an inbox of 10,000 conversations scrolled to its end, and a
 *   thread of 10,000 messages opened and scrolled, each with its frame times (the gaps between
 *   animation frames while scrolling), the rows in the page and the JavaScript heap.
 *
 * `npm run bench -- --only=console` runs it from bench/run.ts; `node --import tsx bench/console.ts`
 * alone starts its own embedded PostgreSQL (or uses `--database-url=<superuser URL>`).
 * Needs Chromium (CHROMIUM_PATH or /usr/bin/chromium) for the second figure.
 */

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import pino from "pino";
import { chromium, type Page } from "playwright-core";
import { CHROMIUM_FLAGS } from "../scripts/chromium-flags.mjs";
import { buildConsole } from "../scripts/console-build.mjs";
import { INBOX_JS_BUDGET_BYTES, measureConsoleBundle } from "../scripts/console-size.mjs";
import { buildApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { connectDatabase, type Database } from "../src/db/client.js";
import { createCustomer } from "../src/upstream/sandbox/customer.js";
import { startSandbox } from "../src/upstream/sandbox/server.js";
import { benchDatabase } from "./database.js";

const LATENCY_BUDGET_MS = 1000;
const SAMPLES = process.argv.includes("--quick") ? 8 : 20;
const log = (m: string) => console.log(`console bench: ${m}`);
const cleanups: Array<() => Promise<unknown>> = [];
let failed = false;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function bundle() {
  await buildConsole({ quiet: true });
  const m = measureConsoleBundle();
  const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;
  const ok = m.inboxJsGzipBytes <= INBOX_JS_BUDGET_BYTES;
  if (!ok) failed = true;
  log(
    `inbox route JavaScript ${kb(m.inboxJsGzipBytes)} gzip (budget ${kb(INBOX_JS_BUDGET_BYTES)}) ${ok ? "PASS" : "FAIL"}; flow canvas loaded lazily: ${kb(m.lazyJsGzipBytes)} gzip`,
  );
}

const database = () => benchDatabase("console", log, cleanups);

async function latency(executablePath: string) {
  const appSecret = randomBytes(16).toString("hex");
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const sandbox = await startSandbox();
  cleanups.unshift(() => sandbox.close());
  const number = {
    phoneNumberId: "100000000000001",
    accessToken: "sandbox-token",
    businessAccountId: "200000000000001",
  };
  sandbox.addNumber(number);
  const databaseUrl = await database();
  const config = loadConfig({
    NODE_ENV: "test",
    PORT: String(port),
    PUBLIC_URL: base,
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    AUTH_SECRET: randomBytes(32).toString("base64url"),
    META_GRAPH_API_URL: sandbox.url,
    META_APP_SECRET: appSecret,
    LOG_LEVEL: "silent",
  });
  const db = connectDatabase(databaseUrl);
  const app = await buildApp({ config, database: db, logger: pino({ level: "silent" }) });
  await app.listen({ port, host: "127.0.0.1" });
  cleanups.unshift(async () => {
    await app.close();
    await db.close();
  });

  // An owner with the sandbox number, signed in through the browser's cookie. Sign-up opens no
  // session: the owner signs in after it.
  const credentials = { email: `bench-${Date.now()}@example.com`, password: "bench password 123" };
  const signUpAnswer = await fetch(`${base}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ ...credentials, name: "Bench" }),
  });
  if (!signUpAnswer.ok) throw new Error(`sign-up failed: ${await signUpAnswer.text()}`);
  const signUp = await fetch(`${base}/api/auth/sign-in/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify(credentials),
  });
  const token = signUp.headers.get("set-auth-token");
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  await fetch(`${base}/api/accounts`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ name: "Bench shop" }),
  });
  const saved = await fetch(`${base}/api/messaging/config`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      phone_number_id: number.phoneNumberId,
      business_account_id: number.businessAccountId,
      access_token: number.accessToken,
    }),
  });
  if (!saved.ok) throw new Error(`connecting the sandbox number failed: ${await saved.text()}`);
  const cookie = signUp.headers.getSetCookie().map((c) => c.split(";")[0] ?? "");

  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
  });
  cleanups.unshift(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies(
    cookie.map((c) => {
      const [name, ...value] = c.split("=");
      return { name: name ?? "", value: value.join("="), url: base };
    }),
  );
  const page = await context.newPage();

  const customer = createCustomer({
    webhookUrl: `${base}/api/messaging/webhook`,
    appSecret,
    phoneNumberId: number.phoneNumberId,
    waId: "15550001111",
    name: "Bench Customer",
  });
  await customer.text("first message");
  await page.goto(`${base}/inbox`);
  await page.getByRole("link", { name: /Bench Customer/ }).click();
  await page.getByRole("list", { name: "Messages" }).getByText("first message").waitFor();
  // The page notes (in wall-clock time) when each awaited text first appears in the thread.
  await page.evaluate(() => {
    const seen: Record<string, number> = {};
    (window as unknown as { __seen: Record<string, number> }).__seen = seen;
    new MutationObserver(() => {
      for (const el of document.querySelectorAll(".bubble-text")) {
        const text = el.textContent ?? "";
        if (text.startsWith("probe-") && !(text in seen))
          seen[text] = performance.timeOrigin + performance.now();
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });

  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const text = `probe-${i}-${randomBytes(3).toString("hex")}`;
    const delivery = await customer.text(text);
    const acknowledged = performance.timeOrigin + performance.now();
    if (delivery.status !== 200) throw new Error(`webhook answered ${delivery.status}`);
    await page.getByRole("list", { name: "Messages" }).getByText(text).waitFor({ timeout: 10_000 });
    const shownAt = await page.evaluate(
      (t) => (window as unknown as { __seen: Record<string, number> }).__seen[t],
      text,
    );
    samples.push(Math.max(0, Math.round((shownAt ?? acknowledged) - acknowledged)));
  }
  samples.sort((a, b) => a - b);
  const p50 = samples[Math.floor(samples.length / 2)] ?? 0;
  const max = samples.at(-1) ?? 0;
  const mode = await page.locator(".live-dot").textContent();
  const ok = max <= LATENCY_BUDGET_MS;
  if (!ok) failed = true;
  log(
    `new message on screen after the webhook's 200: p50 ${p50} ms, max ${max} ms over ${samples.length} messages (budget ${LATENCY_BUDGET_MS} ms; updates: ${mode?.trim()}) ${ok ? "PASS" : "FAIL"}`,
  );
  await longLists(page, base, db);
}

const LONG = 10_000;

/** Frame gaps (ms) while `step` runs in the page a number of times, one step a frame. */
async function scrollFrames(page: Page, selector: string, toEnd: boolean) {
  return page.evaluate(
    async ({ selector, toEnd }) => {
      const el = document.querySelector(selector) as HTMLElement;
      const gaps: number[] = [];
      let last = performance.now();
      const started = last;
      // Scroll by a screen a frame, for at most 3 minutes, to the end (or the top).
      while (performance.now() - started < 180_000) {
        await new Promise((r) => requestAnimationFrame(r));
        const now = performance.now();
        gaps.push(now - last);
        last = now;
        const before = el.scrollTop;
        el.scrollTop = toEnd ? before + el.clientHeight : before - el.clientHeight;
        const atEdge = toEnd ? el.scrollTop + el.clientHeight >= el.scrollHeight - 2 : el.scrollTop <= 0;
        if (atEdge && el.scrollTop === before) {
          // At the edge: wait up to 10 s for a page still loading (the list grows), else stop.
          const height = el.scrollHeight;
          const waitStarted = performance.now();
          while (el.scrollHeight === height && performance.now() - waitStarted < 10_000)
            await new Promise((r) => setTimeout(r, 100));
          last = performance.now();
          if (el.scrollHeight === height) break;
        }
      }
      return gaps;
    },
    { selector, toEnd },
  );
}

async function heapMb(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  const { usedSize } = await cdp.send("Runtime.getHeapUsage");
  await cdp.detach();
  return usedSize / 2 ** 20;
}

const frameLine = (gaps: number[]) => {
  const sorted = [...gaps].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return `frame gaps p50 ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${(sorted.at(-1) ?? 0).toFixed(1)} ms over ${gaps.length} frames`;
};

async function longLists(page: Page, base: string, db: Database) {
  const { rows } = await db.pool.query<{ account_id: string }>(
    "select account_id from conversations order by created_at limit 1",
  );
  const account = rows[0]!.account_id;
  const client = await db.pool.connect();
  try {
    // Seeded history, not changes: no account events (the open page would refetch on each).
    await client.query("set session_replication_role = replica");
    await client.query(
      `with made as (
         insert into contacts (account_id, wa_id, name, phone)
         select $1::uuid, '1777' || lpad(n::text, 7, '0'), 'List customer ' || n, '1777' || lpad(n::text, 7, '0')
         from generate_series(1, $2::int) n returning id, account_id, name),
       conv as (
         insert into conversations (account_id, contact_id, last_message_at)
         select account_id, id, now() - interval '1 day' - (substring(name from 15)::int * interval '1 minute') from made
         returning id, account_id, last_message_at)
       insert into messages (account_id, conversation_id, direction, sender_type, type, text, status, created_at)
       select account_id, id, 'inbound', 'customer', 'text', 'Hello from the list', 'received', last_message_at from conv`,
      [account, LONG],
    );
    const { rows: thread } = await client.query<{ id: string }>(
      `with made as (
         insert into contacts (account_id, wa_id, name, phone)
         values ($1::uuid, '17880000000', 'Long Thread', '17880000000') returning id, account_id)
       insert into conversations (account_id, contact_id, last_message_at)
       select account_id, id, now() + interval '1 minute' from made returning id`,
      [account],
    );
    const threadId = thread[0]!.id;
    await client.query(
      `insert into messages (account_id, conversation_id, direction, sender_type, type, text, status, created_at)
       select $1::uuid, $2::uuid, case when k % 2 = 0 then 'outbound' else 'inbound' end,
              case when k % 2 = 0 then 'agent' else 'customer' end, 'text',
              'Thread message ' || k, case when k % 2 = 0 then 'delivered' else 'received' end,
              now() - ($3::int - k) * interval '1 minute'
       from generate_series(1, $3::int) k`,
      [account, threadId, LONG],
    );
    await client.query("reset session_replication_role");
    await client.query("vacuum analyze contacts, conversations, messages");

    // The inbox, scrolled to its 10,000th conversation.
    await page.goto(`${base}/inbox`);
    await page
      .getByRole("link", { name: /List customer 1\b/ })
      .waitFor({ state: "attached", timeout: 30_000 });
    const listStarted = performance.now();
    const listGaps = await scrollFrames(page, ".conv-list", true);
    const listSeconds = (performance.now() - listStarted) / 1000;
    const lastShown = await page.getByRole("link", { name: new RegExp(`List customer ${LONG}\\b`) }).count();
    const listRows = await page.locator(".conv-list li").count();
    log(
      `inbox of ${LONG.toLocaleString("en")} conversations scrolled to ${lastShown ? "its end" : "NOT its end"} in ${listSeconds.toFixed(1)} s: ${frameLine(listGaps)}; ${listRows} rows in the page; JS heap ${(await heapMb(page)).toFixed(1)} MB`,
    );

    // The thread of 10,000 messages: opened, then scrolled from its newest message to its top.
    const opened = performance.now();
    await page.goto(`${base}/inbox/${threadId}`);
    const newest = page
      .getByRole("list", { name: "Messages" })
      .getByText(`Thread message ${LONG}`, { exact: true });
    const newestShown = await newest
      .waitFor({ timeout: 60_000 })
      .then(() => true)
      .catch(() => false);
    const openSeconds = (performance.now() - opened) / 1000;
    const threadGaps = await scrollFrames(page, ".messages", false);
    const bubbles = await page.locator(".message-rows li.bubble-row").count();
    const firstShown = await page.getByText("Thread message 1", { exact: true }).count();
    log(
      `thread of ${LONG.toLocaleString("en")} messages: newest ${newestShown ? `shown ${openSeconds.toFixed(1)} s after opening` : "NOT shown within 60 s"}, scrolled up to ${firstShown ? "its first message" : "NOT its first message"}: ${frameLine(threadGaps)}; ${bubbles} bubbles in the page; JS heap ${(await heapMb(page)).toFixed(1)} MB`,
    );
  } finally {
    client.release();
  }
}

async function main() {
  await bundle();
  const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
  if (!existsSync(executablePath)) {
    log(`SKIPPED: live-update latency (no Chromium at ${executablePath})`);
    return;
  }
  await latency(executablePath);
}

main()
  .catch((error: unknown) => {
    console.error(error);
    failed = true;
  })
  .finally(async () => {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    process.exit(failed ? 1 : 0);
  });
