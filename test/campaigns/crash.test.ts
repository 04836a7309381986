import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, startSandbox } from "../../src/upstream/sandbox/server.js";
import { insertChannelConfig, uniqueDigits } from "../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { type ServiceProcess, startService } from "../helpers/service.js";
import { addContacts, CAMPAIGN_TEMPLATES, type Json } from "./helpers.js";

/**
 * Exactly once with real processes: the service is killed with SIGKILL in
 * the middle of a 2,000-recipient campaign and started again; two instances
 * share one campaign. The sandbox's log says what Meta would have received.
 */

let sandbox: Sandbox;
let t: TestApp;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ logLimit: 50_000 });
  // The test's own app only prepares data and reads the API: the child processes send.
  t = await createTestApp({ config: { graphApiUrl: sandbox.url }, workers: false });
  // Sends take a moment, so that the kill lands mid-send.
  sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 15, times: 1_000_000 });
});
afterAll(async () => {
  for (const service of services) if (service.child.exitCode === null) await service.kill9();
  await t?.close();
  await sandbox?.close();
});

const service = async () => {
  const started = await startService({
    DATABASE_URL: t.database.url,
    META_GRAPH_API_URL: sandbox.url,
    META_GRAPH_API_VERSION: t.config.graphApiVersion,
    ENCRYPTION_KEY: t.config.encryptionKey,
    AUTH_SECRET: t.config.authSecret,
    WORKER_CONCURRENCY: "4",
    LOG_LEVEL: "warn",
  });
  services.push(started);
  return started;
};

async function campaignOf(count: number): Promise<{ user: TestUser; id: string; phoneNumberId: string }> {
  const { user, accountId } = await signUpWithAccount(t.app);
  const businessAccountId = uniqueDigits(15);
  const { row, accessToken } = await insertChannelConfig(t, {
    accountId,
    userId: user.id,
    businessAccountId,
  });
  sandbox.addNumber({ phoneNumberId: row.phoneNumberId, accessToken, businessAccountId });
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

/** How many template sends each number received from this business. */
function sendsPerNumber(phoneNumberId: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of sandbox.requests()) {
    if (r.method !== "POST" || !r.path.endsWith(`${phoneNumberId}/messages`)) continue;
    const to = (r.body as Json).to as string;
    counts.set(to, (counts.get(to) ?? 0) + 1);
  }
  return counts;
}

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
  it("kill -9 during a 2,000-recipient campaign, restart: nobody twice, everyone else once", async () => {
    const { user, id, phoneNumberId } = await campaignOf(2_000);
    const first = await service();
    expect((await start(user, id)).statusCode).toBe(200);
    await until(async () => ((await statuses(id)).sent ?? 0) >= 400, 60_000, "400 sends");
    await first.kill9();
    const atKill = await statuses(id);
    expect(atKill.queued ?? 0).toBeGreaterThan(0);

    await service();
    await until(async () => ((await statuses(id)).queued ?? 0) === 0, 120_000, "the queue to empty");
    await until(
      async () => ((await statuses(id)).sending ?? 0) <= (atKill.sending ?? 0),
      30_000,
      "sends to end",
    );
    const final = await statuses(id);
    const perNumber = sendsPerNumber(phoneNumberId);
    const twice = [...perNumber].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    // Everyone recorded sent got exactly one; the only others are those on the wire at the kill,
    // left `sending` (unresolved, never sent again) until they turn `unknown`.
    expect(final.sent ?? 0).toBeGreaterThanOrEqual(2_000 - (atKill.sending ?? 0));
    expect((final.sent ?? 0) + (final.sending ?? 0) + (final.unknown ?? 0)).toBe(2_000);
    expect(perNumber.size).toBeGreaterThanOrEqual(final.sent ?? 0);
    expect(perNumber.size).toBeLessThanOrEqual(2_000);
    await services.at(-1)?.stop();
  }, 240_000);

  it("two instances share one campaign; a triple resume sends nobody twice", async () => {
    const { user, id, phoneNumberId } = await campaignOf(600);
    await Promise.all([service(), service()]);
    expect((await start(user, id)).statusCode).toBe(200);
    await until(async () => ((await statuses(id)).sent ?? 0) >= 100, 60_000, "100 sends");
    const pause = await t.app.inject({
      method: "POST",
      url: `/api/campaigns/${id}/pause`,
      headers: user.headers,
    });
    expect(pause.statusCode).toBe(200);
    const resumes = await Promise.all(
      [1, 2, 3].map(() =>
        t.app.inject({ method: "POST", url: `/api/campaigns/${id}/resume`, headers: user.headers }),
      ),
    );
    expect(resumes.map((r) => r.statusCode).sort()).toEqual([200, 409, 409]);
    await until(
      async () => {
        const c = (await t.app.inject({ url: `/api/campaigns/${id}`, headers: user.headers })).json()
          .campaign;
        return c.status === "completed";
      },
      120_000,
      "the campaign to complete",
    );
    expect(await statuses(id)).toEqual({ sent: 600 });
    const perNumber = sendsPerNumber(phoneNumberId);
    expect(perNumber.size).toBe(600);
    expect([...perNumber.values()].every((n) => n === 1)).toBe(true);
    for (const s of services.slice(-2)) await s.stop();
  }, 240_000);
});
