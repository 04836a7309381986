import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCampaignGate } from "../../src/campaigns/gate.js";
import type { DbOrTx } from "../../src/db/client.js";
import { createSendPipeline, type SendPipeline, type SendPriority } from "../../src/sending/pipeline.js";
import { postgresSendRate, redisSendRate, type SendRate } from "../../src/sending/rate.js";
import { GraphApiError, type GraphClient } from "../../src/upstream/graph.js";
import { createTestDatabase } from "../helpers/harness.js";
import { busiestSecond } from "../helpers/send-windows.js";

/**
 * The send pipeline in process against the test database: two pipelines with
 * their own pools stand for two instances sharing one number's schedule.
 */

let database: { url: string; drop(): Promise<void> };
const pools: pg.Pool[] = [];
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await database.drop();
});

const pool = () => {
  const p = new pg.Pool({ connectionString: database.url, max: 4 });
  // A connection still closing when the database is dropped at the end reports it: nothing to do.
  p.on("error", () => undefined);
  pools.push(p);
  return p;
};

interface Call {
  to: string;
  at: number;
  callbackData: string | undefined;
}

/**
 * A Graph API stand-in that behaves as the real client with a write gate: each send is
 * written only when the pipeline's gate says so (recorded then, `late` and unrecorded
 * otherwise), and answered after `answerMs`. The first send meets `first` before its gate
 * (a slow new connection, or one that could not be written).
 */
function fakeGraph(
  calls: Call[],
  options: { answerMs?: number; fail?: (n: number) => unknown; first?: () => Promise<void> } = {},
) {
  let n = 0;
  const graph = {
    async sendMessage(
      _token: string,
      _phone: string,
      to: string,
      _message: unknown,
      o?: { callbackData?: string; writeWhenReady?: () => boolean | Promise<boolean> },
    ) {
      const index = n++;
      if (index === 0) await options.first?.();
      if (!(await (o?.writeWhenReady?.() ?? true))) throw new GraphApiError("not written", { kind: "late" });
      calls.push({ to, at: Date.now(), callbackData: o?.callbackData });
      await new Promise((r) => setTimeout(r, options.answerMs ?? 20));
      const failure = options.fail?.(index);
      if (failure) throw failure;
      return { messageId: `wamid.${to}`, waId: to };
    },
  };
  return graph as unknown as GraphClient;
}

const phone = () => `1${randomBytes(6).readUIntBE(0, 6)}`;

function send(
  pipeline: SendPipeline,
  phoneNumberId: string,
  to: string,
  limit: number,
  priority: SendPriority,
) {
  return pipeline.send({
    messageId: null,
    phoneNumberId,
    token: "token",
    to,
    message: { type: "text", text: { body: to } },
    limit,
    priority,
  });
}

async function twoInstancesShareTheRate(rates: [SendRate, SendRate]) {
  const calls: Call[] = [];
  const number = phone();
  const pipelines = rates.map((rate) =>
    createSendPipeline({ graph: fakeGraph(calls), rate, maxInFlight: 64 }),
  );
  const started = Date.now();
  const results = await Promise.all(
    pipelines.flatMap((p, k) =>
      Array.from({ length: 25 }, (_, i) => send(p, number, `${k}-${i}`, 10, "customer")),
    ),
  );
  const elapsed = Date.now() - started;
  await Promise.all(pipelines.map((p) => p.close()));
  expect(results.every((r) => r.kind === "sent")).toBe(true);
  expect(calls).toHaveLength(50);
  // Both instances sent (not one waiting for the other to finish).
  expect(new Set(calls.map((c) => c.to[0]))).toEqual(new Set(["0", "1"]));
  expect(busiestSecond(calls.map((c) => c.at))).toBeLessThanOrEqual(10);
  // 50 sends at 10 a second: the 50th cannot leave before 4.9 s.
  expect(elapsed).toBeGreaterThanOrEqual(4_900);
  expect(elapsed).toBeLessThan(9_000);
}

describe("the send rate across instances", () => {
  it("two instances on PostgreSQL never exceed the number's messages_per_second in any one-second window", async () => {
    await twoInstancesShareTheRate([postgresSendRate(pool()), postgresSendRate(pool())]);
  }, 20_000);

  it("the same with Redis (REDIS_URL) as the shared store", async () => {
    const url = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
    const probe = new Redis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0 });
    probe.on("error", () => undefined);
    const reachable = await probe
      .connect()
      .then(() => probe.ping())
      .then(
        () => true,
        () => false,
      );
    probe.disconnect();
    if (!reachable) {
      console.log(
        `SKIPPED: no Redis at ${url} (set TEST_REDIS_URL): the Redis send-rate store is not tested`,
      );
      return;
    }
    const rates: [SendRate, SendRate] = [redisSendRate(url), redisSendRate(url)];
    try {
      await twoInstancesShareTheRate(rates);
    } finally {
      await Promise.all(rates.map((r) => r.close()));
    }
  }, 20_000);
});

describe("AIMD on Meta's throughput errors", () => {
  it("a 130429 halves the number's rate (once for a burst of them), which then climbs back", async () => {
    const rate = postgresSendRate(pool());
    const number = phone();
    const calls: Call[] = [];
    const throttled: number[] = [];
    const tooFast = new GraphApiError("(#130429) Rate limit hit", { kind: "api", status: 400, code: 130429 });
    const pipeline = createSendPipeline({
      graph: fakeGraph(calls, { fail: (n) => (n < 3 ? tooFast : undefined) }),
      rate,
      maxInFlight: 64,
      onThrottled: (_phone, r) => throttled.push(r),
    });
    const first = await Promise.all([1, 2, 3].map((i) => send(pipeline, number, `t${i}`, 80, "customer")));
    expect(first.map((r) => r.kind)).toEqual(["error", "error", "error"]);
    await pipeline.close();
    // Three refusals within a second are one signal: 80 -> 40, not 10.
    expect(throttled.at(-1)).toBeCloseTo(40, 0);
    const now = await rate.reserve(number, 80, 1);
    expect(now.rate).toBeGreaterThanOrEqual(40);
    expect(now.rate).toBeLessThan(45);
    // Slots are spaced for the lowered rate: (1000 + margin) / rate ms.
    expect(now.intervalMs).toBeGreaterThan(1000 / 45);
    await new Promise((r) => setTimeout(r, 1500));
    const later = await rate.reserve(number, 80, 1);
    // Additive increase: 5 % of 80 (4 messages a second) each second.
    expect(later.rate).toBeGreaterThan(now.rate + 4);
    expect(later.rate).toBeLessThan(80);
    // A refusal a second later halves it again.
    expect(await rate.slowDown(number, 80)).toBeLessThan(later.rate / 2 + 1);
  }, 20_000);
});

describe("priority", () => {
  it("a bot reply goes out at the number's next slot, ahead of every queued campaign send", async () => {
    const calls: Call[] = [];
    const number = phone();
    const pipeline = createSendPipeline({
      graph: fakeGraph(calls),
      rate: postgresSendRate(pool()),
      maxInFlight: 64,
    });
    const campaign = Array.from({ length: 15 }, (_, i) =>
      send(pipeline, number, `campaign-${i}`, 5, "campaign"),
    );
    await new Promise((r) => setTimeout(r, 700));
    const before = calls.length;
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(15);
    const reply = send(pipeline, number, "bot-reply", 5, "customer");
    const answered = await reply;
    expect(answered.kind).toBe("sent");
    const at = calls.findIndex((c) => c.to === "bot-reply");
    // One slot at most: the send already waiting for the current slot may go first.
    expect(at).toBeLessThanOrEqual(before + 1);
    expect(calls.length).toBeLessThan(15);
    await pipeline.close(0);
    const results = await Promise.all(campaign);
    // Closing hands the campaign sends that never left back (released), none is lost or sent twice.
    const sent = results.filter((r) => r.kind === "sent").length;
    const released = results.filter((r) => r.kind === "released").length;
    expect(sent + released).toBe(15);
    expect(released).toBeGreaterThan(0);
    expect(calls.filter((c) => c.to.startsWith("campaign"))).toHaveLength(sent);
  }, 20_000);
});

describe("the last check before the wire", () => {
  it("withdraws a campaign's sends once it stops, without calling Meta; other sends are not asked about", async () => {
    const calls: Call[] = [];
    const number = phone();
    let going = true;
    const asked: string[] = [];
    const pipeline = createSendPipeline({
      graph: fakeGraph(calls),
      rate: postgresSendRate(pool()),
      maxInFlight: 64,
      campaignGoing: async (campaignId) => {
        asked.push(campaignId);
        return going;
      },
    });
    const campaignSend = (to: string) =>
      pipeline.send({
        messageId: null,
        phoneNumberId: number,
        token: "token",
        to,
        message: { type: "text", text: { body: to } },
        limit: 10,
        priority: "campaign",
        campaignId: "c1",
      });
    const first = await campaignSend("c-before");
    going = false;
    const results = await Promise.all([campaignSend("c-after-1"), campaignSend("c-after-2")]);
    const reply = await send(pipeline, number, "reply", 10, "customer");
    await pipeline.close();
    expect(first.kind).toBe("sent");
    expect(results.map((r) => r.kind)).toEqual(["withdrawn", "withdrawn"]);
    expect(reply.kind).toBe("sent");
    expect(calls.map((c) => c.to)).toEqual(["c-before", "reply"]);
    // Only the campaign's sends are asked about, never the reply.
    expect(asked.length).toBeGreaterThanOrEqual(3);
    expect(new Set(asked)).toEqual(new Set(["c1"]));
  }, 20_000);

  it("a slow look at the campaign delays no send past its slot: no one-second window holds more than the rate", async () => {
    const calls: Call[] = [];
    const number = phone();
    // The service's gate over a database that answers in 5 ms, but once (the fourth look) in 600 ms:
    // a send waiting for that look would leave together with the sends of later slots.
    let looks = 0;
    const slowDb = {
      async execute() {
        await new Promise((r) => setTimeout(r, looks++ === 3 ? 600 : 5));
        return { rows: [{ status: "running" }] };
      },
    };
    const pipeline = createSendPipeline({
      graph: fakeGraph(calls),
      rate: postgresSendRate(pool()),
      maxInFlight: 64,
      campaignGoing: createCampaignGate(slowDb as unknown as DbOrTx),
    });
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        pipeline.send({
          messageId: null,
          phoneNumberId: number,
          token: "token",
          to: `c-${i}`,
          message: { type: "text", text: { body: "hi" } },
          limit: 20,
          priority: "campaign",
          campaignId: "c1",
        }),
      ),
    );
    await pipeline.close();
    expect(results.every((r) => r.kind === "sent")).toBe(true);
    expect(calls).toHaveLength(60);
    expect(busiestSecond(calls.map((c) => c.at))).toBeLessThanOrEqual(20);
  }, 30_000);

  it("a send whose new connection was ready after its slot is written at a later slot, never late", async () => {
    const calls: Call[] = [];
    // The first send's connection takes 250 ms to open; the others find a kept-alive one.
    const slow = { readyAt: 0 };
    const graph = fakeGraph(calls, {
      answerMs: 0,
      first: async () => {
        await new Promise((r) => setTimeout(r, 250));
        slow.readyAt = Date.now();
      },
    });
    const pipeline = createSendPipeline({ graph, rate: postgresSendRate(pool()), maxInFlight: 64 });
    const number = phone();
    const tos = Array.from({ length: 25 }, (_, i) => `${i === 0 ? "a" : `c${i}`}`);
    const results = await Promise.all(tos.map((to) => send(pipeline, number, to, 10, "customer")));
    await pipeline.close();
    // Every send answered sent and written once.
    expect(results.every((r) => r.kind === "sent")).toBe(true);
    expect(calls.map((c) => c.to).sort()).toEqual([...tos].sort());
    // The slow one waited for a slot of its own after its connection opened, rather than going at once
    // with the next slots' sends: ten a second, no one-second window holds more than ten.
    expect(calls.find((c) => c.to === "a")?.at).toBeGreaterThan(slow.readyAt);
    expect(busiestSecond(calls.map((c) => c.at))).toBeLessThanOrEqual(10);
  }, 20_000);

  it("a send its connection could not write goes back to its lane and is sent at a later slot, once", async () => {
    const calls: Call[] = [];
    const graph = fakeGraph(calls, {
      answerMs: 0,
      first: async () => {
        throw new GraphApiError("not written", { kind: "late" });
      },
    });
    const pipeline = createSendPipeline({ graph, rate: postgresSendRate(pool()), maxInFlight: 64 });
    const number = phone();
    const results = await Promise.all(
      ["a", "b", "c"].map((to) => send(pipeline, number, to, 10, "customer")),
    );
    await pipeline.close();
    // Neither failed nor sent twice; it kept its place at the head of its lane.
    expect(results.map((r) => (r.kind === "sent" ? r.sent.messageId : r.kind))).toEqual([
      "wamid.a",
      "wamid.b",
      "wamid.c",
    ]);
    expect(calls.map((c) => c.to)).toEqual(["a", "b", "c"]);
  }, 20_000);
});

describe("a slot reserved ahead (a reply being stored)", () => {
  /** The rate store, counting its reservations. */
  const counted = (rate: SendRate) => {
    const reservations: number[] = [];
    const wrapped: SendRate = {
      ...rate,
      store: rate.store,
      reserve: (phoneNumberId, limit, count) => {
        reservations.push(count);
        return rate.reserve(phoneNumberId, limit, count);
      },
    };
    return { rate: wrapped, reservations };
  };

  /** A pipeline on the test database whose reservations are counted, and a number of its own. */
  const countedPipeline = () => {
    const calls: Call[] = [];
    const { rate, reservations } = counted(postgresSendRate(pool()));
    const pipeline = createSendPipeline({ graph: fakeGraph(calls, { answerMs: 0 }), rate, maxInFlight: 8 });
    return { calls, reservations, pipeline, number: phone() };
  };

  it("the expected send takes the slot reserved for it: no second look at the store", async () => {
    const { calls, reservations, pipeline, number } = countedPipeline();
    pipeline.expect(number, 10);
    pipeline.expect(number, 10); // a second hint while the first holds is nothing more
    const result = await send(pipeline, number, "reply", 10, "customer");
    await pipeline.close();
    expect(result.kind).toBe("sent");
    expect(calls.map((c) => c.to)).toEqual(["reply"]);
    expect(reservations).toEqual([1]);
  }, 20_000);

  it("a slot gone by before its send came is left unused; the send takes a slot of its own", async () => {
    const { calls, reservations, pipeline, number } = countedPipeline();
    pipeline.expect(number, 10);
    // Longer than a slot may be late (SLOT_LATENESS_MS): that slot is past.
    await new Promise((r) => setTimeout(r, 150));
    const result = await send(pipeline, number, "reply", 10, "customer");
    await pipeline.close();
    expect(result.kind).toBe("sent");
    expect(reservations).toEqual([1, 1]);
    // At 10 a second the slot reserved ahead spaced the send's own one.
    expect(calls).toHaveLength(1);
  }, 20_000);

  it("hints with and without their sends, on two instances, never exceed the rate in any one-second window", async () => {
    const calls: Call[] = [];
    const number = phone();
    const pipelines = [0, 1].map(() =>
      createSendPipeline({
        graph: fakeGraph(calls, { answerMs: 0 }),
        rate: postgresSendRate(pool()),
        maxInFlight: 8,
      }),
    );
    // Each instance answers one customer at a time (its lane idle between sends, so every hint
    // reserves); every third hint's send never comes (its advance rolled back).
    const replies = async (pipeline: SendPipeline, k: number) => {
      for (let i = 0; i < 12; i++) {
        pipeline.expect(number, 5);
        await new Promise((r) => setTimeout(r, 5));
        if (i % 3 === 2) continue;
        const result = await send(pipeline, number, `${k}-${i}`, 5, "customer");
        expect(result.kind).toBe("sent");
      }
    };
    await Promise.all(pipelines.map((p, k) => replies(p, k)));
    await Promise.all(pipelines.map((p) => p.close()));
    expect(calls).toHaveLength(16);
    expect(busiestSecond(calls.map((c) => c.at))).toBeLessThanOrEqual(5);
  }, 30_000);

  it("a busy lane reserves in batches: hints meanwhile reserve nothing", async () => {
    const { calls, reservations, pipeline, number } = countedPipeline();
    const sends = Array.from({ length: 6 }, (_, i) => send(pipeline, number, `s${i}`, 20, "customer"));
    for (let i = 0; i < 5; i++) pipeline.expect(number, 20);
    await Promise.all(sends);
    await pipeline.close();
    expect(calls).toHaveLength(6);
    // The lane's own reservations only: its first send's slot, then the five waiting (a quarter of
    // the rate at most at once).
    expect(reservations).toEqual([1, 5]);
  }, 20_000);
});
