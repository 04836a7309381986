import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inboundTextPayload, signPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import { APP_SECRET, activeFlow, createWorld, serviceEnv, type World } from "../flows/runner/helpers.js";
import { uniqueDigits } from "../helpers/fixtures.js";
import { metaStatuses } from "../helpers/meta-statuses.js";
import { type ServiceProcess, startService } from "../helpers/service.js";

/**
 * Crash safety with real processes: the service is killed with SIGKILL at
 * random moments during a stream of trigger messages, and restarted (or left
 * to a second instance). Whatever Meta got a 200 for is answered exactly once:
 * a send that was on the wire at the kill is recorded from Meta's status
 * webhook naming it (the sandbox here posts them, as Meta does), or sent once
 * more after SEND_UNKNOWN_WINDOW_S when none came.
 */

const CONCURRENCY = 4;
let w: World;
const services: ServiceProcess[] = [];

/** Meta posts its statuses to the newest service still running. */
const statuses = metaStatuses(
  () => services.filter((s) => s.child.exitCode === null && s.child.signalCode === null).at(-1)?.url,
  APP_SECRET,
);

beforeAll(async () => {
  // The test's own app only prepares data: the child processes do the work.
  w = await createWorld({ workers: false, sandbox: { onMessageAccepted: statuses.onMessageAccepted } });
  // Sends take a moment, so that kills land mid-send too.
  w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 30, times: 100_000 });
});
afterAll(async () => {
  for (const service of services) if (service.child.exitCode === null) await service.kill9();
  await w.close();
});

const service = async (extra: Record<string, string> = {}) => {
  const started = await startService({
    ...extra,
    ...serviceEnv(w),
    WORKER_CONCURRENCY: String(CONCURRENCY),
    SEND_UNKNOWN_WINDOW_S: "3",
    LOG_LEVEL: "warn",
  });
  services.push(started);
  return started;
};

const menuFlow = (keyword: string) =>
  activeFlow(w, {
    trigger_config: { keywords: [keyword] },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "menu" } },
      {
        node_key: "menu",
        node_type: "send_buttons",
        config: {
          text: "How can we help, {{contact.name}}?",
          buttons: [{ reply_id: "agent", title: "An agent", next_node_key: "bye" }],
        },
      },
      { node_key: "bye", node_type: "handoff", config: {} },
    ],
  });

/**
 * Each customer's delivery, made once: Meta redelivers the same delivery (the
 * same message id and timestamp) until it gets a 200. A new message in its
 * place would be a second message from the customer, which the bot may rightly
 * answer (a reprompt when its menu is out already).
 */
const deliveries = new Map<string, string>();

/** Posts a customer's trigger (again, when it got no 200); true when the service acknowledged it. */
async function trigger(target: ServiceProcess, keyword: string, from: string): Promise<boolean> {
  let raw = deliveries.get(`${keyword}:${from}`);
  if (raw === undefined) {
    const { payload } = inboundTextPayload({
      phoneNumberId: w.phoneNumberId,
      from,
      name: `C${from}`,
      text: keyword,
    });
    raw = JSON.stringify(payload);
    deliveries.set(`${keyword}:${from}`, raw);
  }
  try {
    const response = await fetch(`${target.url}/api/messaging/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, APP_SECRET) },
      body: raw,
      signal: AbortSignal.timeout(5_000),
    });
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Waits until no job is due or running (future retries aside) and no send is unresolved. */
async function settled(timeoutMs = 60_000) {
  const started = Date.now();
  let quiet = 0;
  while (quiet < 3) {
    const { rows } = await w.t.database.pool.query<{ busy: boolean }>(
      `select exists (select 1 from graphile_worker._private_jobs
                      where locked_at is not null or (run_at <= now() and attempts < max_attempts))
           or exists (select 1 from messages where status = 'pending') as busy`,
    );
    quiet = rows[0]?.busy ? 0 : quiet + 1;
    if (Date.now() - started > timeoutMs) throw new Error("jobs did not settle");
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Outcome {
  wa_id: string;
  runs: number;
  statuses: string[];
  reasons: Array<string | null>;
}

async function outcomes(flowId: string): Promise<Map<string, Outcome>> {
  const { rows } = await w.t.database.pool.query<Outcome>(
    `select c.wa_id, count(r.id)::int as runs, array_agg(r.status) as statuses, array_agg(r.end_reason) as reasons
       from contacts c join flow_runs r on r.contact_id = c.id
      where r.flow_id = $1 group by c.wa_id`,
    [flowId],
  );
  return new Map(rows.map((r) => [r.wa_id, r]));
}

const menusTo = () => {
  const counts = new Map<string, number>();
  for (const r of w.sandbox.requests()) {
    if (r.method !== "POST" || !r.path.endsWith("/messages")) continue;
    if ((r.body as { status?: string }).status === "read") continue;
    const to = (r.body as { to?: string }).to ?? "";
    counts.set(to, (counts.get(to) ?? 0) + 1);
  }
  return counts;
};

async function pendingMessages() {
  const { rows } = await w.t.database.pool.query<{ n: number }>(
    "select count(*)::int as n from messages where status = 'pending'",
  );
  return rows[0]?.n ?? -1;
}

/**
 * Sends `count` triggers from new customers, `inFlight` at a time, to whichever
 * service `target()` names at that moment; `onAck` may kill it. Unacknowledged
 * deliveries are posted again later, as Meta does.
 */
async function stream(
  keyword: string,
  count: number,
  target: () => ServiceProcess,
  onAck: (acked: number) => Promise<void>,
) {
  const customers = Array.from({ length: count }, () => uniqueDigits(12));
  const todo = [...customers];
  const acked = new Set<string>();
  const worker = async () => {
    for (let from = todo.shift(); from !== undefined; from = todo.shift()) {
      if (await trigger(target(), keyword, from)) {
        acked.add(from);
        await onAck(acked.size);
      } else {
        // Meta delivers again what got no 200.
        todo.push(from);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: 5 }, worker));
  return { customers, acked };
}

function expectExactlyOnce(
  flowId: string,
  acked: Set<string>,
  found: Map<string, Outcome>,
  menus: Map<string, number>,
  maxUnknown: number,
) {
  let unknown = 0;
  for (const from of acked) {
    const outcome = found.get(from);
    expect(outcome?.runs, `runs of ${from} (flow ${flowId})`).toBe(1);
    expect(menus.get(from) ?? 0, `menus to ${from}`).toBeLessThanOrEqual(1);
    if (outcome?.statuses[0] === "failed") {
      expect(outcome.reasons[0]).toBe("send_outcome_unknown");
      unknown += 1;
    } else {
      expect(outcome?.statuses[0]).toBe("active");
      expect(menus.get(from), `menu to ${from}`).toBe(1);
    }
  }
  // Nobody who got no 200 was answered twice either.
  for (const count of menus.values()) expect(count).toBeLessThanOrEqual(1);
  expect(unknown).toBeLessThanOrEqual(maxUnknown);
  return unknown;
}

describe("kill -9 of the service", () => {
  // The trust probe's rounds: 200 triggers each, the service killed at a random moment after a
  // 200, restarted, and every acknowledged customer answered exactly once, none lost.
  it.each([1, 2, 3])(
    "round %i: 200 triggers, kill -9 at a random moment, restart: every acknowledged trigger answered exactly once",
    async (round) => {
      const flowId = await menuFlow(`crash${round}`);
      let current = await service();
      const kills = [randomInt(20, 180)];
      let restarting: Promise<void> | null = null;
      const { acked } = await stream(
        `crash${round}`,
        200,
        () => current,
        async (n) => {
          if (kills[0] !== undefined && n >= kills[0] && !restarting) {
            kills.shift();
            restarting = (async () => {
              await current.kill9();
              current = await service();
              restarting = null;
            })();
          }
          if (restarting) await restarting;
        },
      );
      try {
        expect(acked.size).toBeGreaterThanOrEqual(180);
        await settled();

        const unknown = expectExactlyOnce(flowId, acked, await outcomes(flowId), menusTo(), 0);
        expect(await pendingMessages()).toBe(0);
        console.log(
          `kill -9, round ${round}: ${acked.size} acknowledged, ${unknown} lost to an unknown outcome`,
        );
      } finally {
        // Not left working on the database for the next test, even when an expectation failed.
        await current.stop();
      }
    },
    240_000,
  );
});

describe("two instances on one database", () => {
  it("share the work; one killed mid-stream, the other finishes everything exactly once", async () => {
    w.sandbox.clearRequests();
    const flowId = await menuFlow("pair");
    const a = await service();
    const b = await service();
    let turn = 0;
    let aAlive = true;
    const t0 = Date.now();
    const { acked } = await stream(
      "pair",
      100,
      () => (aAlive && turn++ % 2 === 0 ? a : b),
      async (n) => {
        if (aAlive && n >= 40) {
          aAlive = false;
          await a.kill9();
        }
      },
    );
    console.log(`streamed in ${Date.now() - t0} ms`);
    try {
      await settled();
      console.log(`settled in ${Date.now() - t0} ms`);
      const unknown = expectExactlyOnce(flowId, acked, await outcomes(flowId), menusTo(), 0);
      expect(await pendingMessages()).toBe(0);
      console.log(
        `two instances, one killed: ${acked.size} acknowledged, ${unknown} run(s) failed for an unknown outcome`,
      );
    } finally {
      await b.stop();
    }
  }, 180_000);
});

describe("instances without workers, and shutdown", () => {
  it("an API-only instance (WORKERS=false) acknowledges deliveries and leaves them to a worker instance", async () => {
    w.sandbox.clearRequests();
    const flowId = await menuFlow("apionly");
    const api = await service({ WORKERS: "false" });
    const from = uniqueDigits(12);
    expect(await trigger(api, "apionly", from)).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await outcomes(flowId)).size).toBe(0);
    const { rows } = await w.t.database.pool.query<{ n: number }>(
      "select count(*)::int as n from graphile_worker.jobs where task_identifier = 'process-webhook'",
    );
    expect(rows[0]?.n).toBeGreaterThanOrEqual(1);

    const worker = await service();
    await settled();
    expect((await outcomes(flowId)).get(from)?.runs).toBe(1);
    expect(menusTo().get(from)).toBe(1);
    await api.stop();
    await worker.stop();
  }, 120_000);

  it("SIGTERM lets a running send finish before the process exits", async () => {
    w.sandbox.clearRequests();
    const flowId = await menuFlow("sigterm");
    w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 2_000, times: 1 });
    const one = await service();
    const from = uniqueDigits(12);
    expect(await trigger(one, "sigterm", from)).toBe(true);
    // Wait until the send is on the wire (however loaded the machine), then ask the process to stop.
    for (let i = 0; i < 1200 && !menusTo().has(from); i++) await new Promise((r) => setTimeout(r, 50));
    expect(menusTo().has(from), "the menu reached Meta before the stop").toBe(true);
    expect(await one.stop()).toBe(0);
    const { rows } = await w.t.database.pool.query<{ status: string }>(
      `select m.status from messages m join conversations c on c.id = m.conversation_id
         join contacts k on k.id = c.contact_id where k.wa_id = $1 and m.sender_type = 'bot'`,
      [from],
    );
    expect(rows.map((r) => r.status)).toEqual(["sent"]);
    expect((await outcomes(flowId)).get(from)?.statuses).toEqual(["active"]);
  }, 120_000);
});
