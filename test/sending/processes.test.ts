import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inboundTextPayload, signPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import { APP_SECRET, activeFlow, createWorld, serviceEnv, type World } from "../flows/runner/helpers.js";
import { uniqueDigits } from "../helpers/fixtures.js";
import { metaStatuses } from "../helpers/meta-statuses.js";
import { sandboxOutput, startSandboxProcess, stopSandboxProcesses } from "../helpers/sandbox-process.js";
import { rateWindows } from "../helpers/send-windows.js";
import { type ServiceProcess, startService } from "../helpers/service.js";
import { stallsIn } from "../helpers/stalls.js";

/**
 * The send pipeline with real processes: kill -9 with hundreds of sends in
 * flight, SIGTERM with sends in flight, two instances sharing one number's
 * rate. The sandbox answers like Meta: after a round trip, and with status
 * webhooks echoing `biz_opaque_callback_data`, posted (and posted again until
 * acknowledged) to whichever service is up.
 */

/** Short, so that the test sees unknown outcomes resolved by a resend. */
const UNKNOWN_WINDOW_S = 4;

let w: World;
const services: ServiceProcess[] = [];
let current: ServiceProcess | undefined;
const statuses = metaStatuses(() => current?.url, APP_SECRET);

beforeAll(async () => {
  // The test's own app only prepares data: the child processes do the work.
  w = await createWorld({ workers: false, sandbox: { onMessageAccepted: statuses.onMessageAccepted } });
});
afterAll(async () => {
  for (const service of services) if (service.child.exitCode === null) await service.kill9();
  stopSandboxProcesses();
  await w.close();
});

const service = async (extra: Record<string, string> = {}, options: { probeStalls?: boolean } = {}) => {
  const started = await startService(
    {
      ...serviceEnv(w),
      SEND_UNKNOWN_WINDOW_S: String(UNKNOWN_WINDOW_S),
      // Few database connections: the machine's PostgreSQL is shared by every test running.
      WORKER_CONCURRENCY: "4",
      LOG_LEVEL: "warn",
      ...extra,
    },
    options,
  );
  services.push(started);
  return started;
};

const setRate = (perSecond: number) =>
  w.t.database.pool.query("update messaging_configs set messages_per_second = $1 where account_id = $2", [
    perSecond,
    w.accountId,
  ]);

const replyFlow = (keyword: string) =>
  activeFlow(w, {
    trigger_config: { keywords: [keyword] },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "hello" } },
      { node_key: "hello", node_type: "send_message", config: { text: `Hello from ${keyword}` } },
    ],
  });

/** Posts each customer's trigger until some service acknowledges it (as Meta redelivers). */
async function triggers(
  keyword: string,
  count: number,
  target: () => ServiceProcess | undefined,
  concurrency = 20,
) {
  const customers = Array.from({ length: count }, () => uniqueDigits(12));
  const todo = [...customers];
  const acked = new Set<string>();
  const raws = new Map<string, string>();
  const worker = async () => {
    for (let from = todo.shift(); from !== undefined; from = todo.shift()) {
      let raw = raws.get(from);
      if (!raw) {
        raw = JSON.stringify(
          inboundTextPayload({ phoneNumberId: w.phoneNumberId, from, name: `C${from}`, text: keyword })
            .payload,
        );
        raws.set(from, raw);
      }
      const ok = await fetch(`${target()?.url}/api/messaging/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, APP_SECRET) },
        body: raw,
        signal: AbortSignal.timeout(5_000),
      }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) acked.add(from);
      else {
        todo.push(from);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { customers, acked };
}

async function replies(text: string) {
  const { rows } = await w.t.database.pool.query<{
    wa_id: string;
    status: string;
    message_id: string | null;
    resent: boolean;
  }>(
    `select k.wa_id, m.status, m.message_id, m.send_resent_at is not null as resent
       from messages m join conversations v on v.id = m.conversation_id join contacts k on k.id = v.contact_id
      where m.direction = 'outbound' and m.text = $1`,
    [text],
  );
  return rows;
}

const claimedUnrecorded = async (text: string) =>
  (
    await w.t.database.pool.query<{ n: number }>(
      "select count(*)::int as n from messages where text = $1 and status = 'pending' and send_started_at is not null",
      [text],
    )
  ).rows[0]?.n ?? 0;

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 120_000,
  explain?: () => Promise<string>,
) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) {
      throw new Error(`${what}: not within ${timeoutMs} ms${explain ? ` (${await explain()})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("kill -9 with hundreds of sends in flight", () => {
  it("after a restart every reply is sent exactly once: unknown outcomes are recorded from Meta's statuses or sent once more", async () => {
    await setRate(1000);
    // Meta slow today: each send takes 6 s (the client's timeout is 10 s), so the sends pile up in flight.
    w.sandbox.setLatency(6_000);
    // And 20 connections drop before Meta takes the send: no status will ever name those.
    w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { drop: true, times: 20 });
    const text = "Hello from crash";
    await replyFlow("crash");
    current = await service();
    let killedWith = 0;
    const stream = triggers("crash", 400, () => current, 40);
    await until(
      "300 sends in flight",
      async () => (await claimedUnrecorded(text)) >= 300,
      90_000,
      async () =>
        `${await claimedUnrecorded(text)} claimed, ${(await replies(text)).length} replies stored; service: ${current?.output().slice(-2000)}`,
    );
    killedWith = await claimedUnrecorded(text);
    const killedAt = Date.now();
    await current.kill9();
    current = undefined;
    await new Promise((r) => setTimeout(r, 500));
    w.sandbox.setLatency(150);
    current = await service();
    const { acked } = await stream;
    try {
      await until(
        "every reply recorded",
        async () => {
          const rows = await replies(text);
          return rows.length === acked.size && rows.every((r) => r.status !== "pending");
        },
        120_000,
      );
      // No settle job is left to send anything more.
      await new Promise((r) => setTimeout(r, (UNKNOWN_WINDOW_S + 2) * 1000));
      const rows = await replies(text);
      // What the customers received: the sends Meta took (not the 20 requests dropped before it did).
      const sends = statuses.accepted();
      const missing = [...acked].filter((from) => (sends.get(from) ?? 0) === 0);
      const duplicated = [...acked].filter((from) => (sends.get(from) ?? 0) > 1).length;
      const byStatus = rows.reduce<Record<string, number>>((o, r) => {
        o[r.status] = (o[r.status] ?? 0) + 1;
        return o;
      }, {});
      const resent = rows.filter((r) => r.resent).length;
      console.log(
        `kill -9 with ${killedWith} sends claimed and unrecorded: ${acked.size} replies, ${missing.length} missing, ${duplicated} duplicated, ${resent} sent once more after the window, ${statuses.acknowledged()} Meta statuses acknowledged, statuses ${JSON.stringify(byStatus)}`,
      );
      if (missing.length > 0) {
        const { rows: failed } = await w.t.database.pool.query(
          `select k.wa_id, m.status, m.error, m.send_started_at, m.send_resent_at
             from messages m join conversations v on v.id = m.conversation_id join contacts k on k.id = v.contact_id
            where m.text = $1 and k.wa_id = any($2)`,
          [text, missing.slice(0, 4)],
        );
        console.log(JSON.stringify({ killedAt, failed }));
      }
      if (duplicated > 0) {
        const sample = [...acked].filter((from) => (sends.get(from) ?? 0) > 1).slice(0, 4);
        const { rows: detail } = await w.t.database.pool.query(
          `select k.wa_id, m.created_at, m.send_started_at, m.send_resent_at, m.updated_at
             from messages m join conversations v on v.id = m.conversation_id join contacts k on k.id = v.contact_id
            where m.text = $1 and k.wa_id = any($2)`,
          [text, sample],
        );
        console.log(
          JSON.stringify({
            killedAt,
            detail,
            accepts: statuses.history().filter((h) => sample.includes(h.to)),
          }),
        );
      }
      expect(killedWith).toBeGreaterThanOrEqual(300);
      expect(acked.size).toBe(400);
      expect(missing).toEqual([]);
      expect(duplicated).toBe(0);
      expect(rows).toHaveLength(400);
      expect(rows.every((r) => r.status === "sent" && r.message_id?.startsWith("wamid."))).toBe(true);
      // The dropped ones were sent once more; those Meta took before the kill were recorded from its statuses.
      expect(resent).toBeGreaterThanOrEqual(20);
      expect(resent).toBeLessThan(killedWith);
    } finally {
      await current?.stop();
      current = undefined;
      w.sandbox.setLatency(0);
    }
  }, 300_000);
});

describe("SIGTERM with sends in flight", () => {
  it("finishes and records the sends in flight within 10 s, exits 0, and hands back what never left", async () => {
    await setRate(1000);
    w.sandbox.setLatency(2_000);
    const text = "Hello from drain";
    await replyFlow("drain");
    current = await service();
    const stream = triggers("drain", 60, () => current, 20);
    await until("sends in flight", async () => (await claimedUnrecorded(text)) >= 40, 60_000);
    const inFlight = await claimedUnrecorded(text);
    const stopping = current;
    const signalled = Date.now();
    const code = await stopping.stop();
    const took = Date.now() - signalled;
    current = undefined;
    expect(code).toBe(0);
    expect(took).toBeLessThan(12_000);
    // Whatever was in flight was answered and recorded before the exit: nothing claimed is left unrecorded.
    expect(await claimedUnrecorded(text)).toBe(0);
    // Every send that reached Meta before the exit was answered and recorded as sent; a claim still
    // waiting for its slot at the signal never left and was handed back (it is sent after the restart).
    const reached = w.sandbox.requests().filter((r) => {
      const body = r.body as { status?: string; text?: { body?: string } };
      return r.path.endsWith("/messages") && body.status !== "read" && body.text?.body === text;
    }).length;
    const sentBefore = (await replies(text)).filter((r) => r.status === "sent").length;
    expect(reached).toBeGreaterThanOrEqual(20);
    expect(sentBefore).toBe(reached);
    w.sandbox.setLatency(0);
    current = await service();
    const { acked } = await stream;
    try {
      await until("every reply sent", async () => {
        const rows = await replies(text);
        return rows.length === acked.size && rows.every((r) => r.status === "sent");
      });
      const sends = statuses.accepted();
      expect([...acked].every((from) => sends.get(from) === 1)).toBe(true);
      expect((await replies(text)).some((r) => r.resent)).toBe(false);
      console.log(
        `SIGTERM with ${inFlight} sends in flight: exit ${code} after ${took} ms, ${sentBefore} recorded`,
      );
    } finally {
      await current?.stop();
      current = undefined;
    }
  }, 180_000);
});

describe("two instances sharing one number's rate", () => {
  it("never send more than messages_per_second in any one-second window together", async () => {
    await setRate(10);
    const text = "Hello from pair";
    await replyFlow("pair");
    // Meta here is the sandbox in a process of its own: the test's process is busy posting the
    // customers' triggers while the first replies leave, and Meta's servers are not.
    // Every process on a send's way reports when it lost its core (stalls.ts).
    const probed = { probeStalls: true };
    const meta = await startSandboxProcess(
      { SANDBOX_PHONE_NUMBER_ID: w.phoneNumberId, SANDBOX_ACCESS_TOKEN: w.accessToken },
      probed,
    );
    // Meta's servers are warm: a process answering its first requests is not (tens of milliseconds
    // before the first ones are even read, on a busy machine), so it answers a few sends first.
    for (let n = 0; n < 30; n++) {
      const answer = await fetch(`${meta}/${w.t.config.graphApiVersion}/${w.phoneNumberId}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${w.accessToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          messaging_product: "whatsapp",
          to: "15550000000",
          type: "text",
          text: { body: "warm" },
        }),
      });
      expect(answer.status).toBe(200);
    }
    await fetch(`${meta}/_sandbox/requests`, { method: "DELETE" });
    // A long window: the replies wait for their slots longer than the crash tests' short one.
    const pair = { SEND_UNKNOWN_WINDOW_S: "120", META_GRAPH_API_URL: meta };
    const a = await service(pair, probed);
    const b = await service(pair, probed);
    current = a;
    let turn = 0;
    try {
      const started = Date.now();
      // Two at a time: still many times the rate, so both instances hold replies waiting for slots,
      // without a burst that leaves the machine no time to read what arrives.
      const { acked } = await triggers("pair", 50, () => (turn++ % 2 === 0 ? a : b), 2);
      await until("every reply sent", async () => {
        const rows = await replies(text);
        return rows.length === acked.size && rows.every((r) => r.status === "sent");
      });
      const elapsed = Date.now() - started;
      const log = (await (await fetch(`${meta}/_sandbox/requests`)).json()) as {
        requests: Array<{ path: string; body: { status?: string; text?: { body?: string } }; at: string }>;
      };
      const times = log.requests
        .filter((r) => r.path.endsWith("/messages") && r.body.status !== "read" && r.body.text?.body === text)
        .map((r) => Date.parse(r.at))
        .sort((x, y) => x - y);
      const stalls = [sandboxOutput(meta), a.output(), b.output()].flatMap(stallsIn);
      const windows = rateWindows(times, 10, stalls);
      // The schedule writes sends n and n + 10 at least 1,050 ms apart.
      console.log(
        `two instances at 10/s: ${times.length} sends in ${elapsed} ms, busiest second ${windows.busiest}, sends n and n + 10 at least ${windows.closest} ms apart, ${stalls.length} stalls`,
      );
      if (windows.close.length > 0)
        console.log(
          `closer than a second: ${JSON.stringify(windows.close)}; arrivals (ms after the first): ${times.map((at) => at - (times[0] as number)).join(", ")}; stalls: ${JSON.stringify(stalls)}`,
        );
      expect(times).toHaveLength(50);
      expect(windows.unexcused).toEqual([]);
      expect(elapsed).toBeGreaterThanOrEqual(4_500);
    } finally {
      current = undefined;
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 180_000);
});
