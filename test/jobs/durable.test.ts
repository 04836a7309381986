import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { flowRuns } from "../../src/db/schema/index.js";
import { classifySendError, MAX_SEND_ATTEMPTS, retryDelayMs } from "../../src/jobs/tasks/send-bot-message.js";
import { createGraphClient, GraphApiError } from "../../src/upstream/graph.js";
import { inboundTextPayload, signPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import {
  APP_SECRET,
  activeFlow,
  conversationOf,
  createWorld,
  customer,
  postWebhook,
  runFor,
  runsOf,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";
import { uniqueDigits } from "../helpers/fixtures.js";
import { createTestApp } from "../helpers/harness.js";

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());

function resetSandbox() {
  w.sandbox.reset();
  w.sandbox.addNumber({ phoneNumberId: w.phoneNumberId, accessToken: w.accessToken });
}

const menuFlow = (keyword: string) =>
  activeFlow(w, {
    trigger_config: { keywords: [keyword], match_type: "exact" },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "menu" } },
      {
        node_key: "menu",
        node_type: "send_buttons",
        config: { text: "Pick one", buttons: [{ reply_id: "a", title: "A", next_node_key: "bye" }] },
      },
      { node_key: "bye", node_type: "send_message", config: { text: "Bye" } },
    ],
  });

/** Posts the deliveries at once, without waiting for their jobs; then waits for all of them. */
async function together(payloads: object[]) {
  await Promise.all(
    payloads.map(async (payload) => {
      const raw = JSON.stringify(payload);
      const response = await w.t.app.inject({
        method: "POST",
        url: "/api/messaging/webhook",
        headers: {
          "content-type": "application/json",
          "x-hub-signature-256": signPayload(raw, APP_SECRET),
        },
        payload: raw,
      });
      expect(response.statusCode).toBe(200);
    }),
  );
  await w.t.app.deps.jobs.drain({ timeoutMs: 120_000 });
}

const hiFrom = (from: string, keyword: string, timestamp = Math.floor(Date.now() / 1000)) =>
  inboundTextPayload({ phoneNumberId: w.phoneNumberId, from, name: "Burst", text: keyword, timestamp })
    .payload;

/** Brings every scheduled job forward to now (instead of waiting for a backoff or a wait node). */
const bringJobsForward = () =>
  w.t.database.pool.query("update graphile_worker._private_jobs set run_at = now() where locked_at is null");

describe("bursts from one contact", () => {
  beforeEach(resetSandbox);

  it("two and five 'hi' sent at once give exactly one run and one menu", async () => {
    const flowId = await menuFlow("burst");
    for (const size of [2, 5]) {
      const from = uniqueDigits(12);
      await together(Array.from({ length: size }, () => hiFrom(from, "burst")));
      const mine = (await runsOf(w, flowId)).filter((r) => r.status === "active");
      expect(sentMessages(w, from)).toHaveLength(1);
      expect(mine.filter((r) => r.current_node_key === "menu").length).toBeGreaterThanOrEqual(1);
    }
    expect(await runsOf(w, flowId)).toHaveLength(2);
  });

  it("under a 300-contact load, 20 contacts sending 'hi' twice at once each get one menu", async () => {
    const flowId = await menuFlow("load");
    const crowd = Array.from({ length: 300 }, () => hiFrom(uniqueDigits(12), "load"));
    const pairs = Array.from({ length: 20 }, () => uniqueDigits(12));
    const doubled = pairs.flatMap((from) => [hiFrom(from, "load"), hiFrom(from, "load")]);
    // Interleaved, so the pairs land among the crowd.
    const all = crowd.flatMap((p, i) => (i < doubled.length ? [p, doubled[i]!] : [p]));
    await together(all);
    for (const from of pairs) expect(sentMessages(w, from), from).toHaveLength(1);
    expect(await runsOf(w, flowId).then((runs) => runs.length)).toBeGreaterThanOrEqual(200);
  }, 180_000);

  it("a reply stamped in the same second as the question is no answer; a later one is", async () => {
    const flowId = await menuFlow("second");
    const kit = customer(w, "Kit");
    await kit.text("second");
    const { contactId } = await conversationOf(w, kit);
    const [run] = await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.contactId, contactId));
    const asked = Math.floor(run!.questionSentAt!.getTime() / 1000);
    const reply = async (timestamp: number) => {
      const { payload } = inboundTextPayload({
        phoneNumberId: w.phoneNumberId,
        from: kit.waId,
        text: "?",
        timestamp,
      });
      await postWebhook(w, payload);
      await w.t.app.deps.jobs.drain();
    };
    await reply(asked);
    expect((await runFor(w, flowId, kit)).events.map((e) => e.event_type)).not.toContain("fallback_fired");
    await reply(asked + 1);
    expect((await runFor(w, flowId, kit)).events.map((e) => e.event_type)).toContain("fallback_fired");
  });
});

describe("templates, the window and read receipts in flows", () => {
  beforeEach(resetSandbox);

  it("marks the customer's message read, with a typing indicator, just before the bot's reply", async () => {
    await menuFlow("ticks");
    const tia = customer(w, "Tia");
    const trigger = await tia.text("ticks");
    const calls = w.sandbox
      .requests()
      .filter((r) => r.method === "POST" && r.path.endsWith("/messages"))
      .map((r) => r.body as Record<string, unknown>);
    const read = calls.findIndex((b) => b.status === "read" && b.message_id === trigger.messageId);
    const menu = calls.findIndex((b) => b.to === tia.waId && b.type === "interactive");
    expect(read).toBeGreaterThanOrEqual(0);
    expect(calls[read]).toMatchObject({ messaging_product: "whatsapp", typing_indicator: { type: "text" } });
    expect(read).toBeLessThan(menu);
  });

  it("fails a free-form bot send outside the 24-hour window with window_closed, sending nothing", async () => {
    const flowId = await activeFlow(w, {
      trigger_type: "manual",
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "hello" } },
        { node_key: "hello", node_type: "send_message", config: { text: "Hello again" } },
      ],
    });
    const old = customer(w, "Old");
    await old.text("hi, a while ago");
    const { contactId, id: conversationId } = await conversationOf(w, old);
    await w.t.database.pool.query(
      "update conversations set customer_message_at = now() - interval '25 hours' where id = $1",
      [conversationId],
    );
    w.sandbox.clearRequests();
    const started = await w.t.app.inject({
      method: "POST",
      url: `/api/flows/${flowId}/runs`,
      headers: w.owner.headers,
      payload: { contact_id: contactId },
    });
    expect(started.statusCode).toBe(201);
    await w.t.app.deps.jobs.drain();
    const { run, events } = await runFor(w, flowId, old);
    expect(run).toMatchObject({ status: "failed", end_reason: "window_closed" });
    expect(events.at(-1)?.payload.message).toMatch(/window is closed/);
    expect(sentMessages(w, old.waId)).toHaveLength(0);
  });
});

describe("bot sends: what is retried", () => {
  beforeEach(resetSandbox);

  const botMessages = async (who: ReturnType<typeof customer>) =>
    (await conversationOf(w, who)).messages.filter((m) => m.sender_type === "bot");

  it("retries throughput and rate-limit refusals with backoff until Meta takes the message", async () => {
    for (const [status, code] of [
      [400, 130429],
      [400, 131056],
      [400, 80007],
      [400, 4],
      [500, 1],
    ] as const) {
      resetSandbox();
      const flowId = await menuFlow(`rate${code}`);
      const ray = customer(w, "Ray");
      w.sandbox.inject(
        { method: "POST", path: /\/messages$/ },
        { status, error: { code, message: "Slow down" } },
      );
      await ray.text(`rate${code}`);
      await bringJobsForward();
      await w.t.app.deps.jobs.drain();
      expect(
        (await botMessages(ray)).map((m) => m.status),
        `code ${code}`,
      ).toEqual(["sent"]);
      expect(sentMessages(w, ray.waId)).toHaveLength(2);
      expect((await runFor(w, flowId, ray)).run).toMatchObject({
        status: "active",
        current_node_key: "menu",
      });
    }
  });

  it(`gives up after ${MAX_SEND_ATTEMPTS} refused attempts: the message and its run fail`, async () => {
    const flowId = await menuFlow("giveup");
    const gus = customer(w, "Gus");
    w.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 400, error: { code: 131056, message: "Pair rate limit hit" }, times: 100 },
    );
    await gus.text("giveup");
    for (let i = 1; i < MAX_SEND_ATTEMPTS; i++) {
      await bringJobsForward();
      await w.t.app.deps.jobs.drain();
    }
    expect(sentMessages(w, gus.waId)).toHaveLength(MAX_SEND_ATTEMPTS);
    expect((await botMessages(gus)).map((m) => m.status)).toEqual(["failed"]);
    expect((await runFor(w, flowId, gus)).run).toMatchObject({ status: "failed", end_reason: "send_failed" });
  });

  it("never retries a refusal for good (bad number)", async () => {
    const flowId = await menuFlow("once400");
    const una = customer(w, "Una");
    w.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 400, error: { code: 131026, message: "Message undeliverable" } },
    );
    await una.text("once400");
    await bringJobsForward();
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, una.waId)).toHaveLength(1);
    expect((await botMessages(una)).map((m) => m.status)).toEqual(["failed"]);
    expect((await runFor(w, flowId, una)).run).toMatchObject({ status: "failed", end_reason: "send_failed" });
  });

  it("an answer it cannot read is an unknown outcome: no status named it within the window, so it is sent once more, and only once", async () => {
    const flowId = await menuFlow("unreadable");
    const una = customer(w, "Una");
    w.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 502, rawBody: "<html>Bad gateway</html>" },
    );
    await una.text("unreadable");
    await w.t.app.deps.jobs.drain();
    // Nothing more until the window ends (its settle job is due then).
    expect(sentMessages(w, una.waId)).toHaveLength(1);
    expect((await botMessages(una)).map((m) => m.status)).toEqual(["pending"]);
    await bringJobsForward(); // the window ends
    await w.t.app.deps.jobs.drain();
    const sends = sentMessages(w, una.waId);
    expect(sends).toHaveLength(2);
    const [bot] = await botMessages(una);
    expect(sends.map((body) => body.biz_opaque_callback_data)).toEqual([bot?.id, bot?.id]);
    expect((await botMessages(una)).map((m) => m.status)).toEqual(["sent"]);
    expect((await runFor(w, flowId, una)).run).toMatchObject({ status: "active", current_node_key: "menu" });
    await bringJobsForward();
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, una.waId)).toHaveLength(2);
  });

  it("a resend whose outcome is unknown again is not sent a third time: the message and its run fail", async () => {
    const flowId = await menuFlow("twice");
    const cy = customer(w, "Cy");
    w.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 502, rawBody: "<html>Bad gateway</html>", times: 2 },
    );
    await cy.text("twice");
    for (let i = 0; i < 3; i++) {
      await bringJobsForward();
      await w.t.app.deps.jobs.drain();
    }
    expect(sentMessages(w, cy.waId)).toHaveLength(2);
    expect((await botMessages(cy)).map((m) => m.status)).toEqual(["failed"]);
    const { run, events } = await runFor(w, flowId, cy);
    expect(run).toMatchObject({ status: "failed", end_reason: "send_outcome_unknown" });
    expect(events.at(-1)?.payload.message).toMatch(/not sent a third time/);
  });

  it("classifies each error kind", async () => {
    const api = (code: number | undefined, status: number) =>
      new GraphApiError("x", { kind: "api", code, status });
    expect(classifySendError(api(130429, 400))).toBe("retry");
    expect(classifySendError(api(131056, 400))).toBe("retry");
    expect(classifySendError(api(80007, 400))).toBe("retry");
    expect(classifySendError(api(4, 400))).toBe("retry");
    expect(classifySendError(api(2, 503))).toBe("retry");
    expect(classifySendError(api(131026, 400))).toBe("final");
    expect(classifySendError(api(190, 401))).toBe("final");
    expect(classifySendError(new GraphApiError("x", { kind: "timeout" }))).toBe("unknown");
    expect(classifySendError(new GraphApiError("x", { kind: "network", status: 200 }))).toBe("unknown");
    expect(classifySendError(new GraphApiError("x", { kind: "invalid_response", status: 502 }))).toBe(
      "unknown",
    );
    expect(classifySendError(new GraphApiError("x", { kind: "invalid_response", status: 404 }))).toBe(
      "final",
    );
    expect(classifySendError(new Error("bug"))).toBe("unknown");

    // A refused connection: the request provably never left.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const client = createGraphClient({
      baseUrl: `http://127.0.0.1:${closed}`,
      version: "v25.0",
      timeoutMs: 2000,
    });
    const refused = await client
      .sendMessage("token", "1", "2", { type: "text", text: { body: "x" } })
      .catch((e) => e);
    expect(classifySendError(refused)).toBe("retry");

    // Backoff grows and stays within its bounds, jitter included.
    expect(retryDelayMs(1, () => 0)).toBe(1000);
    expect(retryDelayMs(1, () => 1)).toBe(2000);
    expect(retryDelayMs(3, () => 1)).toBe(8000);
    expect(retryDelayMs(20, () => 1)).toBe(300_000);
  });
});

describe("runs across restarts and instances", () => {
  beforeEach(resetSandbox);

  const waitFlow = (keyword: string) =>
    activeFlow(w, {
      trigger_config: { keywords: [keyword], match_type: "exact" },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "hello" } },
        {
          node_key: "hello",
          node_type: "send_message",
          config: { text: "One moment", next_node_key: "pause" },
        },
        { node_key: "pause", node_type: "wait", config: { minutes: 60, next_node_key: "later" } },
        { node_key: "later", node_type: "send_message", config: { text: "Here we are" } },
      ],
    });

  it("a wait survives a restart and fires once even with two instances working", async () => {
    const flowId = await waitFlow("pause");
    const pia = customer(w, "Pia");
    await pia.text("pause");
    expect((await runFor(w, flowId, pia)).run).toMatchObject({ status: "active", current_node_key: "pause" });
    expect(sentMessages(w, pia.waId).map((m) => m.text?.body)).toEqual(["One moment"]);
    const { rows } = await w.t.database.pool.query<{ run_at: Date }>(
      "select run_at from graphile_worker._private_jobs where key like 'wait:%'",
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.run_at.getTime() - Date.now()).toBeGreaterThan(59 * 60_000);

    // The instance goes away; two others take over the same database.
    const others = await Promise.all(
      [1, 2].map(() => createTestApp({ databaseUrl: w.t.database.url, config: w.t.config })),
    );
    try {
      await bringJobsForward();
      await others[0]!.app.deps.jobs.drain();
      await w.t.app.deps.jobs.drain();
      expect(sentMessages(w, pia.waId).map((m) => m.text?.body)).toEqual(["One moment", "Here we are"]);
      const { run, events } = await runFor(w, flowId, pia);
      expect(run).toMatchObject({ status: "completed", end_reason: "end_of_path" });
      expect(events.filter((e) => e.node_key === "later" && e.event_type === "node_entered")).toHaveLength(1);
    } finally {
      for (const other of others) await other.app.close();
      for (const other of others) await other.database.close();
    }
  });

  it("a message during a wait is no answer and changes nothing", async () => {
    const flowId = await waitFlow("hush");
    const rio = customer(w, "Rio");
    await rio.text("hush");
    await rio.text("are you there?");
    const { run, events } = await runFor(w, flowId, rio);
    expect(run).toMatchObject({ status: "active", current_node_key: "pause" });
    expect(events.map((e) => e.event_type)).not.toContain("fallback_fired");
  });

  it("validates the wait node on activation: minutes from 1 to 43200", async () => {
    for (const minutes of [0, 43_201, "5"]) {
      const created = await w.t.app.inject({
        method: "POST",
        url: "/api/flows",
        headers: w.owner.headers,
        payload: {
          name: `Wait ${randomBytes(2).toString("hex")}`,
          trigger_type: "keyword",
          trigger_config: { keywords: ["w"] },
        },
      });
      const id = created.json().flow.id;
      await w.t.app.inject({
        method: "PUT",
        url: `/api/flows/${id}`,
        headers: w.owner.headers,
        payload: {
          entry_node_id: "start",
          nodes: [
            { node_key: "start", node_type: "start", config: { next_node_key: "pause" } },
            { node_key: "pause", node_type: "wait", config: { minutes, next_node_key: "end" } },
            { node_key: "end", node_type: "end", config: {} },
          ],
        },
      });
      const activated = await w.t.app.inject({
        method: "POST",
        url: `/api/flows/${id}/activate`,
        headers: w.owner.headers,
        payload: { status: "active" },
      });
      expect(activated.statusCode, String(minutes)).toBe(422);
      expect(JSON.stringify(activated.json().issues)).toContain("minutes must be a number from 1 to 43200");
    }
  });

  it("a run found between nodes (no send or wait pending) goes on from its node", async () => {
    const flowId = await menuFlow("stuck");
    const sol = customer(w, "Sol");
    await sol.text("stuck");
    const { contactId } = await conversationOf(w, sol);
    // As a run could be left by an older version: standing on a sending node, nothing pending.
    await w.t.database.db
      .update(flowRuns)
      .set({ currentNodeKey: "bye", questionSentAt: null })
      .where(eq(flowRuns.contactId, contactId));
    await sol.text("hello?");
    expect(sentMessages(w, sol.waId).map((m) => m.text?.body ?? m.interactive)).toHaveLength(2);
    expect((await runFor(w, flowId, sol)).run).toMatchObject({ status: "completed" });
  });
});
