import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_DELIVERY_POLICY, deliverEvent, retryDelayMs } from "../../src/events/delivery.js";
import type { TestUser } from "../helpers/harness.js";
import {
  allEvents,
  api,
  type Business,
  business,
  createWorld,
  customerOf,
  type Json,
  settle,
  type World,
} from "./helpers.js";
import { startReceiver } from "./receiver.js";

// `fast` retries after 50, 100, 200, 200... ms; `brittle` never retries and disables an endpoint at its first failure.
let fast: World;
let brittle: World;
beforeAll(async () => {
  fast = await createWorld({
    config: { webhookAllowPrivate: true },
    webhookDelivery: { firstRetryMs: 50, retryFactor: 2, maxRetryDelayMs: 200 },
  });
  brittle = await createWorld({
    config: { webhookAllowPrivate: true },
    webhookDelivery: { retryWindowMs: 0, disableAfterMs: 0 },
  });
});
afterAll(async () => {
  await fast.close();
  await brittle.close();
});

async function endpoint(w: World, user: TestUser, url: string, events: string[] = ["*"]) {
  const response = await api(w.t, user, "POST", "/api/webhook-endpoints", { url, events });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { endpoint: Json; secret: string };
}

const deliveries = async (w: World, user: TestUser, id: string): Promise<Json[]> =>
  (await api(w.t, user, "GET", `/api/webhook-endpoints/${id}/deliveries?limit=200`)).json().deliveries;

async function pendingDeliveryJobs(w: World) {
  const { rows } = await w.t.database.db.execute<{ n: number }>(
    sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'deliver-webhook'`,
  );
  return rows[0]!.n;
}

describe("the retry schedule", () => {
  it("retries first within 10 s, then backs off exponentially up to 6 h, within 24 h", () => {
    const delays = Array.from({ length: 9 }, (_, i) => retryDelayMs(DEFAULT_DELIVERY_POLICY, i + 1, () => 0));
    expect(delays).toEqual([
      5_000, 20_000, 80_000, 320_000, 1_280_000, 5_120_000, 20_480_000, 21_600_000, 21_600_000,
    ]);
    expect(retryDelayMs(DEFAULT_DELIVERY_POLICY, 1, () => 1)).toBe(4_500);
    expect(DEFAULT_DELIVERY_POLICY).toMatchObject({
      timeoutMs: 10_000,
      retryWindowMs: 86_400_000,
      disableAfterMs: 259_200_000,
    });
  });
});

describe("outbound webhook deliveries", () => {
  it("retries a failing receiver (500, 500, then 200) and delivers the event exactly once more", async () => {
    const receiver = await startReceiver([500, 500, 200]);
    try {
      const b = await business(fast);
      const { endpoint: hook, secret } = await endpoint(fast, b.user, receiver.url, ["message.received"]);
      await customerOf(fast, b).text("Where is my order?");
      await receiver.waitFor(3);
      await settle(fast.t);
      expect(await pendingDeliveryJobs(fast)).toBe(0);
      expect(receiver.received).toHaveLength(3);

      const [event] = (await allEvents(fast.t, b.user)).filter((e) => e.type === "message.received");
      for (const request of receiver.received) {
        expect(request.headers["webhook-id"]).toBe(event.id);
        expect(receiver.verify(secret, request)).toEqual(event);
      }
      const log = await deliveries(fast, b.user, hook.id);
      expect(log.map((d) => [d.attempt, d.status, d.response_status, d.event_id])).toEqual([
        [3, "delivered", 200, event.id],
        [2, "failed", 500, event.id],
        [1, "failed", 500, event.id],
      ]);
      expect(log[0].next_attempt_at).toBeNull();
      expect(log[1].next_attempt_at).not.toBeNull();
      expect(log[2]).toMatchObject({
        error: "HTTP 500",
        response_body: "not now",
        event_type: "message.received",
      });
      const after = await api(fast.t, b.user, "GET", `/api/webhook-endpoints/${hook.id}`);
      expect(after.json().endpoint).toMatchObject({ enabled: true, failing_since: null });
    } finally {
      await receiver.close();
    }
  });

  it("sends only the subscribed types, and only the account's own events", async () => {
    const receiver = await startReceiver([200]);
    try {
      const mine = await business(fast);
      const theirs = await business(fast);
      await endpoint(fast, mine.user, receiver.url, ["message.received", "conversation.updated"]);
      await customerOf(fast, theirs).text("their words");
      await settle(fast.t);
      await customerOf(fast, mine).text("my words");
      await settle(fast.t);

      const received = receiver.received.map((r) => JSON.parse(r.body));
      expect(received.map((e) => e.type).sort()).toEqual(["conversation.updated", "message.received"]);
      expect(JSON.stringify(received)).toContain("my words");
      expect(JSON.stringify(received)).not.toContain("their words");
    } finally {
      await receiver.close();
    }
  });

  it("makes an attempt once, even when its job runs twice", async () => {
    const receiver = await startReceiver([200]);
    try {
      const b = await business(fast);
      const { endpoint: hook } = await endpoint(fast, b.user, receiver.url, ["message.received"]);
      await customerOf(fast, b).text("once");
      await settle(fast.t);
      expect(receiver.received).toHaveLength(1);
      const [event] = (await allEvents(fast.t, b.user)).filter((e) => e.type === "message.received");
      const again = await deliverEvent(fast.t.app.deps, {
        endpointId: hook.id,
        eventId: event.id,
        attempt: 1,
      });
      expect(again).toBe("skipped");
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it("stops at the end of the retry window and disables an endpoint that keeps failing", async () => {
    const receiver = await startReceiver([503]);
    try {
      const b: Business = await business(brittle);
      const { endpoint: hook } = await endpoint(brittle, b.user, receiver.url, ["message.received"]);
      const customer = customerOf(brittle, b);
      await customer.text("first");
      await settle(brittle.t);
      expect(receiver.received).toHaveLength(1);
      const [attempt] = await deliveries(brittle, b.user, hook.id);
      expect(attempt).toMatchObject({
        attempt: 1,
        status: "failed",
        response_status: 503,
        next_attempt_at: null,
      });

      const disabled = (await api(brittle.t, b.user, "GET", `/api/webhook-endpoints/${hook.id}`)).json()
        .endpoint;
      expect(disabled).toMatchObject({
        enabled: false,
        disabled_reason: expect.stringMatching(/^Disabled automatically/),
      });
      expect(disabled.failing_since).not.toBeNull();

      // Disabled: new events are not sent.
      await customer.text("second");
      await settle(brittle.t);
      expect(receiver.received).toHaveLength(1);

      const enabled = await api(brittle.t, b.user, "PATCH", `/api/webhook-endpoints/${hook.id}`, {
        enabled: true,
      });
      expect(enabled.json().endpoint).toMatchObject({
        enabled: true,
        disabled_reason: null,
        failing_since: null,
      });
      await customer.text("third");
      await settle(brittle.t);
      expect(receiver.received).toHaveLength(2);
      expect(JSON.parse(receiver.received[1]!.body).data.text).toBe("third");
    } finally {
      await receiver.close();
    }
  });

  it("drops the pending deliveries of a removed endpoint", async () => {
    const receiver = await startReceiver([500]);
    try {
      const b = await business(fast);
      const { endpoint: hook } = await endpoint(fast, b.user, receiver.url, ["message.received"]);
      await customerOf(fast, b).text("hello");
      await receiver.waitFor(1);
      expect((await api(fast.t, b.user, "DELETE", `/api/webhook-endpoints/${hook.id}`)).statusCode).toBe(204);
      const before = receiver.received.length;
      // The scheduled retry still runs, finds the endpoint gone and ends the chain.
      while ((await pendingDeliveryJobs(fast)) > 0) {
        await settle(fast.t);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // At most the attempt that was already on its way when the endpoint went.
      expect(receiver.received.length).toBeLessThanOrEqual(before + 1);
      const { rows } = await fast.t.database.db.execute(
        sql`select 1 from webhook_deliveries where endpoint_id = ${hook.id}`,
      );
      expect(rows).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
