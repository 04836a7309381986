import { inArray } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountEvents } from "../../src/db/schema/index.js";
import { purgeOldEvents, readEvents } from "../../src/events/log.js";
import { createTestApp, createTestDatabase, signUp } from "../helpers/harness.js";
import {
  allEvents,
  api,
  baseUrl,
  business,
  createWorld,
  customerOf,
  type Json,
  openStream,
  type SseEvent,
  settle,
  type World,
} from "./helpers.js";

let w: World;
beforeAll(async () => {
  w = await createWorld({ eventStreamHeartbeatMs: 100 });
});
afterAll(() => w.close());

/** Runs `work` while another application's database on the same server has a write transaction open. */
async function whileWritingElsewhere(work: (other: pg.Client) => Promise<void>) {
  const elsewhere = await createTestDatabase();
  const other = new pg.Client({ connectionString: elsewhere.url });
  await other.connect();
  try {
    await other.query("begin");
    await other.query("select pg_current_xact_id()");
    await work(other);
  } finally {
    await other.end();
    await elsewhere.drop();
  }
}

const streamUrl = (query = "") => `${baseUrl(w.t)}/api/events/stream${query}`;
const conversationsOf = async (b: { user: Parameters<typeof api>[1] }) =>
  (await api(w.t, b.user, "GET", "/api/conversations")).json().conversations;
const isMessage = (text: string) => (e: SseEvent) =>
  e.data.type === "message.received" && e.data.data.text === text;

describe("GET /api/events/stream", () => {
  it("answers 401 without a session and 403 without an account", async () => {
    const anonymous = await w.t.app.inject({ url: "/api/events/stream" });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ error: "Unauthorized" });
    const loner = await signUp(w.t.app);
    const noAccount = await w.t.app.inject({ url: "/api/events/stream", headers: loner.headers });
    expect(noAccount.statusCode).toBe(403);
  });

  it("sends an inbound customer message as it is stored, with the event id as the SSE id", async () => {
    const b = await business(w);
    const stream = await openStream(streamUrl(), b.user.headers);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
      await customerOf(w, b).text("Is the shop open today?");
      const event = await stream.next(isMessage("Is the shop open today?"));
      expect(event.id).toBe(event.data.id);
      expect(event.data).toEqual({
        id: expect.any(String),
        type: "message.received",
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        data: expect.objectContaining({ direction: "inbound", sender_type: "customer", status: "received" }),
      });
    } finally {
      await stream.close();
    }
  });

  it("starts at the present: events from before the connection are not replayed without Last-Event-ID", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    await customer.text("before");
    await settle(w.t);
    const stream = await openStream(streamUrl(), b.user.headers);
    try {
      await customer.text("after");
      await stream.next(isMessage("after"));
      expect(stream.events.filter(isMessage("before"))).toEqual([]);
    } finally {
      await stream.close();
    }
  });

  it("resumes after Last-Event-ID (header or query), sending what was missed in order", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    const first = await openStream(streamUrl(), b.user.headers);
    await customer.text("one");
    const one = await first.next(isMessage("one"));
    await first.close();

    await customer.text("two");
    await customer.text("three");
    await settle(w.t);

    for (const open of [
      () => openStream(streamUrl(), { ...b.user.headers, "last-event-id": one.id! }),
      () => openStream(streamUrl(`?last_event_id=${one.id}`), b.user.headers),
    ]) {
      const resumed = await open();
      try {
        await resumed.next(isMessage("three"));
        const texts = resumed.events
          .filter((e) => e.data.type === "message.received")
          .map((e) => e.data.data.text);
        expect(texts).toEqual(["two", "three"]);
      } finally {
        await resumed.close();
      }
    }
  });

  it("delivers a change made through another instance on the same database", async () => {
    const b = await business(w);
    await customerOf(w, b).text("Hello?");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    // An API-only instance: the agent's message is written by its request, in its process.
    const second = await createTestApp({
      databaseUrl: w.t.config.databaseUrl,
      config: w.t.config,
      workers: false,
    });
    const stream = await openStream(streamUrl(), b.user.headers);
    try {
      const sent = await api(second, b.user, "POST", `/api/conversations/${conversation.id}/messages`, {
        text: "Answered through instance two",
      });
      expect(sent.statusCode, sent.body).toBe(201);
      const event = await stream.next(
        (e) => e.data.type === "message.sent" && e.data.data.text === "Answered through instance two",
      );
      expect(event.data.data).toMatchObject({ id: sent.json().message.id, direction: "outbound" });
    } finally {
      await stream.close();
      await second.app.close();
      await second.database.close();
    }
  });

  it("never skips an event whose transaction commits after a later one", async () => {
    const b = await business(w);
    const first = customerOf(w, b, w.t, "First");
    const second = customerOf(w, b, w.t, "Second");
    await first.text("one");
    await second.text("two");
    await settle(w.t);
    const byName = new Map((await conversationsOf(b)).map((c: Json) => [c.contact.name, c.id]));
    const stream = await openStream(streamUrl(), b.user.headers);
    const slow = new pg.Client({ connectionString: w.t.config.databaseUrl });
    await slow.connect();
    try {
      const known = (await allEvents(w.t, b.user)).at(-1).id;
      // The slow transaction takes its id (and writes its event) first, but commits last.
      await slow.query("begin");
      await slow.query("update conversations set status = 'closed' where id = $1", [byName.get("First")]);
      await w.t.database.pool.query("update conversations set status = 'pending' where id = $1", [
        byName.get("Second"),
      ]);
      const meanwhile = (await api(w.t, b.user, "GET", `/api/events?after=${known}`)).json();
      expect(meanwhile).toMatchObject({ events: [], has_more: true });
      await slow.query("commit");

      const statusChange = (e: SseEvent) =>
        e.data.type === "conversation.updated" && e.data.data.status !== "open";
      await stream.waitFor(() => stream.events.filter(statusChange).length === 2);
      expect(stream.events.filter(statusChange).map((e) => e.data.data.status)).toEqual([
        "closed",
        "pending",
      ]);
      const paged = (await api(w.t, b.user, "GET", `/api/events?after=${known}`)).json();
      expect(paged.events.map((e: Json) => e.data.status)).toEqual(["closed", "pending"]);
    } finally {
      await slow.end();
      await stream.close();
    }
  });

  it("is not held back by a transaction writing in another database of the same server", async () => {
    const b = await business(w);
    await whileWritingElsewhere(async () => {
      const customer = customerOf(w, b);
      await customer.text("Hello");
      await settle(w.t);
      const stream = await openStream(streamUrl(), b.user.headers);
      try {
        await customer.text("Still there?");
        await settle(w.t);
        const page = (await api(w.t, b.user, "GET", "/api/events?limit=500")).json();
        expect(page.has_more).toBe(false);
        const received = page.events.filter((e: Json) => e.type === "message.received");
        expect(received.map((e: Json) => e.data.text)).toEqual(["Hello", "Still there?"]);
        const event = await stream.next(isMessage("Still there?"));
        expect(event.id).toBe(received[1].id);
        // The stream started at the present: the message from before it was not replayed.
        expect(stream.events.filter((e) => e.data.type === "message.received")).toEqual([event]);
      } finally {
        await stream.close();
      }
    });
  });

  it("reads on when another database's transaction ends between its looks", async () => {
    const b = await business(w);
    await whileWritingElsewhere(async (other) => {
      // Older than the customer's message, so the server-wide xmin holds that message back.
      await customerOf(w, b).text("Are you open?");
      await settle(w.t);
      // The log's first look sees the transaction running; it has ended by the second (which asks
      // which database each running transaction belongs to), so that one cannot place it.
      const { db } = w.t.database;
      let looks = 0;
      const between = {
        execute: async (query: Parameters<typeof db.execute>[0]) => {
          looks += 1;
          if (looks === 2) await other.query("commit");
          return db.execute(query);
        },
      } as unknown as typeof db;
      const batch = await readEvents(between, { accountId: b.accountId, after: null, limit: 500 });
      expect(batch.waiting).toBe(false);
      expect(batch.events.filter((e) => e.type === "message.received").map((e) => e.data.text)).toEqual([
        "Are you open?",
      ]);
    });
  });

  it("never shows another account's events", async () => {
    const mine = await business(w);
    const theirs = await business(w);
    const stream = await openStream(streamUrl(), mine.user.headers);
    try {
      await customerOf(w, theirs).text("their secret");
      await settle(w.t);
      await customerOf(w, mine).text("mine");
      await stream.next(isMessage("mine"));
      expect(JSON.stringify(stream.events)).not.toContain("their secret");
      expect(JSON.stringify(await allEvents(w.t, mine.user))).not.toContain("their secret");
    } finally {
      await stream.close();
    }
  });

  it("sends a comment heartbeat", async () => {
    const b = await business(w);
    const stream = await openStream(streamUrl(), b.user.headers);
    try {
      await stream.waitFor(() => stream.comments.includes("heartbeat"));
    } finally {
      await stream.close();
    }
  });

  it("ends the stream once the session is signed out", async () => {
    const b = await business(w);
    const stream = await openStream(streamUrl(), b.user.headers);
    const out = await w.t.app.inject({ method: "POST", url: "/api/auth/sign-out", headers: b.user.headers });
    expect(out.statusCode).toBe(200);
    await stream.ended;
    expect(stream.isEnded()).toBe(true);
  });

  it("ends open streams when the app closes, so shutdown does not hang", async () => {
    const own = await createWorld();
    const b = await business(own);
    const stream = await openStream(`${baseUrl(own.t)}/api/events/stream`, b.user.headers);
    await stream.waitFor(() => stream.comments.includes("connected"));
    await own.close();
    await stream.ended;
    expect(stream.isEnded()).toBe(true);
  });
});

describe("GET /api/events", () => {
  it("pages the account's events oldest first with after and limit", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    for (const text of ["a", "b", "c"]) await customer.text(text);
    await settle(w.t);
    const all = await allEvents(w.t, b.user);
    expect(all.filter((e) => e.type === "message.received").map((e) => e.data.text)).toEqual(["a", "b", "c"]);

    const first = (await api(w.t, b.user, "GET", "/api/events?limit=2")).json();
    expect(first.events.map((e: { id: string }) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
    expect(first).toMatchObject({ next_after: all[1].id, has_more: true });
    const rest = (await api(w.t, b.user, "GET", `/api/events?after=${first.next_after}&limit=500`)).json();
    expect(rest.events.map((e: { id: string }) => e.id)).toEqual(all.slice(2).map((e) => e.id));
    expect(rest.has_more).toBe(false);
    const empty = (await api(w.t, b.user, "GET", `/api/events?after=${all.at(-1).id}`)).json();
    expect(empty).toEqual({ events: [], next_after: all.at(-1).id, has_more: false });
  });

  it.each([
    ["limit=0", /limit/],
    ["limit=501", /limit/],
    ["after=00000000-0000-4000-8000-000000000000", /after: unknown event id/],
    ["after=not-an-id", /after: unknown event id/],
  ])("answers 400 for %s", async (query, message) => {
    const b = await business(w);
    const response = await api(w.t, b.user, "GET", `/api/events?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(message);
  });

  it("treats another account's event id as unknown", async () => {
    const mine = await business(w);
    const theirs = await business(w);
    await customerOf(w, theirs).text("hello");
    await settle(w.t);
    const [foreign] = await allEvents(w.t, theirs.user);
    const response = await api(w.t, mine.user, "GET", `/api/events?after=${foreign.id}`);
    expect(response.statusCode).toBe(400);
  });

  it.each([
    [{ "last-event-id": "not-an-id" }, "", /^Last-Event-ID: unknown event id/],
    [{ "last-event-id": "00000000-0000-4000-8000-000000000000" }, "", /^Last-Event-ID: unknown event id/],
    [{ "last-event-id": "x\u00e9\u0001".repeat(300) }, "", /^Last-Event-ID: unknown event id/],
    [{}, "?last_event_id=not-an-id", /^last_event_id: unknown event id/],
  ])("answers 400 on the stream for Last-Event-ID %j %s, like after=", async (headers, query, message) => {
    const b = await business(w);
    const response = await w.t.app.inject({
      url: `/api/events/stream${query}`,
      headers: { ...b.user.headers, ...(headers as Record<string, string>) },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(message);
  });

  it("answers 400 on the stream for another account's event id", async () => {
    const mine = await business(w);
    const theirs = await business(w);
    await customerOf(w, theirs).text("hello");
    await settle(w.t);
    const [foreign] = await allEvents(w.t, theirs.user);
    const response = await w.t.app.inject({
      url: "/api/events/stream",
      headers: { ...mine.user.headers, "last-event-id": foreign.id },
    });
    expect(response.statusCode).toBe(400);
  });

  it("answers 401 without a session", async () => {
    expect((await w.t.app.inject({ url: "/api/events" })).statusCode).toBe(401);
  });

  it("keeps events 7 days: the purge drops older ones", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    await customer.text("old");
    await settle(w.t);
    const old = (await allEvents(w.t, b.user)).map((e) => e.id);
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3600 * 1000);
    await w.t.database.db
      .update(accountEvents)
      .set({ createdAt: eightDaysAgo })
      .where(inArray(accountEvents.id, old));
    await customer.text("new");
    await settle(w.t);

    expect(await purgeOldEvents(w.t.database.db, new Date())).toBeGreaterThanOrEqual(old.length);
    const kept = await allEvents(w.t, b.user);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.filter((e) => old.includes(e.id))).toEqual([]);
    expect(kept.some((e) => e.type === "message.received" && e.data.text === "new")).toBe(true);
  });
});
