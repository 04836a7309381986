import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, startSandbox } from "../../src/upstream/sandbox/server.js";
import { insertChannelConfig, uniqueDigits } from "../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { metaStatuses } from "../helpers/meta-statuses.js";
import { rateWindows } from "../helpers/send-windows.js";
import { type ServiceProcess, serviceEnv, startService } from "../helpers/service.js";
import { type Stall, stallsIn, watchStalls } from "../helpers/stalls.js";
import { addContacts, CAMPAIGN_TEMPLATES, type Json } from "./helpers.js";

/**
 * Exactly once with real processes: the service is killed with SIGKILL in
 * the middle of a 2,000-recipient campaign and started again; two instances
 * share one campaign and one number's rate. The sandbox answers like Meta,
 * with status webhooks echoing `biz_opaque_callback_data` to whichever
 * service is up: a send on the wire at the kill is recorded from its status,
 * one that never reached Meta is sent once more after the window.
 */

const APP_SECRET = "campaign-crash-app-secret";
/** Short, so that unknown outcomes are resolved within the test. */
const UNKNOWN_WINDOW_S = 4;

let sandbox: Sandbox;
let t: TestApp;
const services: ServiceProcess[] = [];
const metaStatus = metaStatuses(
  () => services.find((s) => s.child.exitCode === null && s.child.signalCode === null)?.url,
  APP_SECRET,
);

beforeAll(async () => {
  sandbox = await startSandbox({ logLimit: 50_000, onMessageAccepted: metaStatus.onMessageAccepted });
  // The test's own app only prepares data and reads the API: the child processes send.
  t = await createTestApp({
    config: { graphApiUrl: sandbox.url, appSecret: APP_SECRET },
    workers: false,
  });
  // Sends take a moment, so that the kill lands mid-send.
  sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 15, times: 1_000_000 });
});
afterAll(async () => {
  stopWatching();
  for (const service of services) if (service.child.exitCode === null) await service.kill9();
  await t?.close();
  await sandbox?.close();
});

/** The test's own process is Meta here (its sandbox): its stalls delay what Meta sees, too. */
const ownStalls: Stall[] = [];
const stopWatching = watchStalls((stall) => ownStalls.push(stall));

const service = async () => {
  const started = await startService(
    {
      ...serviceEnv(t, sandbox.url, APP_SECRET),
      SEND_UNKNOWN_WINDOW_S: String(UNKNOWN_WINDOW_S),
      WORKER_CONCURRENCY: "4",
      LOG_LEVEL: "warn",
    },
    { probeStalls: true },
  );
  services.push(started);
  return started;
};

async function campaignOf(
  count: number,
  messagesPerSecond: number,
): Promise<{ user: TestUser; id: string; phoneNumberId: string }> {
  const { user, accountId } = await signUpWithAccount(t.app);
  const businessAccountId = uniqueDigits(15);
  const { row, accessToken } = await insertChannelConfig(t, {
    accountId,
    userId: user.id,
    businessAccountId,
  });
  sandbox.addNumber({ phoneNumberId: row.phoneNumberId, accessToken, businessAccountId });
  await t.database.pool.query("update messaging_configs set messages_per_second = $1 where account_id = $2", [
    messagesPerSecond,
    accountId,
  ]);
  sandbox.setTemplates(businessAccountId, CAMPAIGN_TEMPLATES);
  const sync = await t.app.inject({
    method: "POST",
    url: "/api/messaging/templates/sync",
    headers: user.headers,
  });
  expect(sync.statusCode).toBe(200);
  await addContacts(t, accountId, count);
  const created = await t.app.inject({
    method: "POST",
    url: "/api/campaigns",
    headers: user.headers,
    payload: { name: "Notice", template: { name: "plain_notice", language: "en_US" }, audience: {} },
  });
  expect(created.statusCode).toBe(201);
  return { user, id: created.json().campaign.id, phoneNumberId: row.phoneNumberId };
}

/** The template sends this business's number made: to whom, when. */
function sendsOf(phoneNumberId: string): Array<{ to: string; at: number }> {
  return sandbox
    .requests()
    .filter((r) => r.method === "POST" && r.path.endsWith(`${phoneNumberId}/messages`))
    .map((r) => ({ to: (r.body as Json).to as string, at: r.at.getTime() }));
}

/** How many template sends each customer received from this business. */
function sendsPerNumber(phoneNumberId: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { to } of sendsOf(phoneNumberId)) counts.set(to, (counts.get(to) ?? 0) + 1);
  return counts;
}

const campaignStatus = async (user: TestUser, id: string) =>
  (await t.app.inject({ url: `/api/campaigns/${id}`, headers: user.headers })).json().campaign.status;

async function statuses(id: string): Promise<Record<string, number>> {
  const { rows } = await t.database.db.execute<{ status: string; n: number }>(
    sql`select status, count(*)::int as n from campaign_recipients where campaign_id = ${id} group by status`,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const start = (user: TestUser, id: string) =>
  t.app.inject({ method: "POST", url: `/api/campaigns/${id}/start`, headers: user.headers });

describe("campaigns with real processes", () => {
  it("kill -9 during a 2,000-recipient campaign, restart: nobody twice, everyone once", async () => {
    const { user, id, phoneNumberId } = await campaignOf(2_000, 200);
    const first = await service();
    expect((await start(user, id)).statusCode).toBe(200);
    await until(async () => ((await statuses(id)).sent ?? 0) >= 400, 60_000, "400 sends");
    await first.kill9();
    const atKill = await statuses(id);
    expect(atKill.queued ?? 0).toBeGreaterThan(0);

    await service();
    await until(
      async () => (await campaignStatus(user, id)) === "completed",
      120_000,
      "the campaign to complete",
    );
    const perNumber = sendsPerNumber(phoneNumberId);
    const twice = [...perNumber].filter(([, n]) => n > 1);
    console.log(
      `kill -9 at ${JSON.stringify(atKill)}: ${perNumber.size} customers reached, ${twice.length} twice, ${metaStatus.acknowledged()} statuses acknowledged`,
    );
    expect(twice).toEqual([]);
    // Those on the wire at the kill were recorded from Meta's statuses naming their callback data.
    expect(await statuses(id)).toEqual({ sent: 2_000 });
    expect(perNumber.size).toBe(2_000);
    await services.at(-1)?.stop();
  }, 240_000);

  it("two instances share one campaign and one rate (no second above messages_per_second); a triple resume sends nobody twice", async () => {
    const rate = 20;
    const { user, id, phoneNumberId } = await campaignOf(300, rate);
    await Promise.all([service(), service()]);
    const started = Date.now();
    expect((await start(user, id)).statusCode).toBe(200);
    await until(async () => ((await statuses(id)).sent ?? 0) >= 60, 60_000, "60 sends");
    const pause = await t.app.inject({
      method: "POST",
      url: `/api/campaigns/${id}/pause`,
      headers: user.headers,
    });
    expect(pause.statusCode).toBe(200);
    // A pause takes effect at once: what was claimed (at most two seconds of sending) goes, nothing more.
    await new Promise((r) => setTimeout(r, 3_000));
    const atPause = sendsOf(phoneNumberId).length;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(sendsOf(phoneNumberId).length).toBe(atPause);
    expect(atPause).toBeLessThan(300);
    const resumes = await Promise.all(
      [1, 2, 3].map(() =>
        t.app.inject({ method: "POST", url: `/api/campaigns/${id}/resume`, headers: user.headers }),
      ),
    );
    expect(resumes.map((r) => r.statusCode).sort()).toEqual([200, 409, 409]);
    await until(
      async () => (await campaignStatus(user, id)) === "completed",
      120_000,
      "the campaign to complete",
    );
    expect(await statuses(id)).toEqual({ sent: 300 });
    const sends = sendsOf(phoneNumberId);
    const perNumber = sendsPerNumber(phoneNumberId);
    expect(perNumber.size).toBe(300);
    expect([...perNumber.values()].every((n) => n === 1)).toBe(true);
    const stalls = [...ownStalls, ...services.flatMap((s) => stallsIn(s.output()))];
    const windows = rateWindows(
      sends.map((s) => s.at),
      rate,
      stalls,
    );
    console.log(
      `two instances at ${rate}/s: 300 sends in ${Date.now() - started} ms (4 s paused), busiest second ${windows.busiest}, sends n and n + ${rate} at least ${windows.closest} ms apart, ${stalls.length} stalls`,
    );
    if (windows.close.length > 0) console.log(`closer than a second: ${JSON.stringify(windows.close)}`);
    expect(windows.unexcused).toEqual([]);
    // Well used too: at least half the rate over the time spent sending.
    expect(windows.busiest).toBeGreaterThanOrEqual(rate / 2);
    for (const s of services.slice(-2)) await s.stop();
  }, 240_000);
});
