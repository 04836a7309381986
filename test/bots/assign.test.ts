import { and, eq, ne } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversations } from "../../src/db/schema/index.js";
import { inboundTextPayload, signPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import {
  APP_SECRET,
  activeFlow,
  type Customer,
  conversationOf,
  createWorld,
  customer,
  runFor,
  type World,
} from "../flows/runner/helpers.js";
import { uniqueDigits } from "../helpers/fixtures.js";
import { addMember, createTestApp, type TestApp, type TestUser } from "../helpers/harness.js";

let w: World;
let ana: TestUser;
let ben: TestUser;
beforeAll(async () => {
  w = await createWorld();
  ana = await addMember(w.t.app, w.owner, "Ana");
  ben = await addMember(w.t.app, w.owner, "Ben");
  // The owner is away: the two members take the conversations.
  await me(w.owner, "away");
});
afterAll(() => w.close());

async function me(user: TestUser, availability: string, app = w.t.app) {
  const response = await app.inject({
    method: "PATCH",
    url: "/api/me",
    headers: user.headers,
    payload: { availability },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

async function rule(mode: string, max_open_per_agent: number | null) {
  const response = await w.t.app.inject({
    method: "PATCH",
    url: "/api/settings",
    headers: w.owner.headers,
    payload: { auto_assign: { mode, max_open_per_agent } },
  });
  expect(response.statusCode, response.body).toBe(200);
}

const patch = (id: string, payload: object) =>
  w.t.app.inject({ method: "PATCH", url: `/api/conversations/${id}`, headers: w.owner.headers, payload });

/** Closes every conversation, so each test starts with nobody busy. */
const closeAll = () =>
  w.t.database.db
    .update(conversations)
    .set({ status: "closed" })
    .where(and(eq(conversations.accountId, w.accountId), ne(conversations.status, "closed")));

async function newCustomers(n: number): Promise<Customer[]> {
  const list: Customer[] = [];
  for (let i = 0; i < n; i++) {
    const c = customer(w, `C${i}`);
    await c.text("hello");
    list.push(c);
  }
  return list;
}

const assignee = async (who: Customer) => (await conversationOf(w, who)).assigned_to;

describe("auto-assignment", () => {
  it("round robin under the cap; the rest wait; a freed place takes the oldest waiting conversation", async () => {
    await rule("round_robin", 2);
    const people = await newCustomers(5);
    const owners = await Promise.all(people.map(assignee));
    expect(owners.slice(0, 4).sort()).toEqual([ana.id, ana.id, ben.id, ben.id].sort());
    expect(owners[0]).not.toBe(owners[1]);
    expect(owners[4]).toBeNull();
    const first = await conversationOf(w, people[0]!);
    const listed = await w.t.app.inject({
      method: "GET",
      url: "/api/conversations?limit=200",
      headers: w.owner.headers,
    });
    const shown = listed.json().conversations.find((c: { id: string }) => c.id === first.id);
    expect(shown.automation).toEqual({ state: "paused", until: null, reason: "assigned" });

    // The first member closes one: under the cap again, they get the waiting conversation.
    const closed = await patch(first.id, { status: "closed" });
    expect(closed.statusCode).toBe(200);
    expect(await assignee(people[4]!)).toBe(owners[0]);
  });

  it("least busy; away members get nothing; coming online takes the oldest waiting ones", async () => {
    await closeAll();
    await rule("least_busy", 3);
    await me(ben, "away");
    const early = await newCustomers(4);
    expect(await Promise.all(early.map(assignee))).toEqual([ana.id, ana.id, ana.id, null]);
    await me(ben, "online");
    expect(await assignee(early[3]!)).toBe(ben.id);
    const [next] = await newCustomers(1);
    expect(await assignee(next!)).toBe(ben.id);
    const members = await w.t.app.inject({
      method: "GET",
      url: "/api/accounts/members",
      headers: w.owner.headers,
    });
    expect(
      members
        .json()
        .members.map((m: { availability: string }) => m.availability)
        .sort(),
    ).toEqual(["away", "online", "online"]);
  });

  it("manual assignment wins: over the cap, and an unassigned conversation is not taken back at once", async () => {
    await closeAll();
    await rule("round_robin", 1);
    const [one, two] = await newCustomers(2);
    const a = await conversationOf(w, one!);
    const b = await conversationOf(w, two!);
    expect([a.assigned_to, b.assigned_to].sort()).toEqual([ana.id, ben.id].sort());
    const over = await patch(b.id, { assigned_to: a.assigned_to });
    expect(over.statusCode).toBe(200);
    expect(over.json().conversation.assigned_to).toBe(a.assigned_to);
    const none = await patch(a.id, { assigned_to: null });
    expect(none.json().conversation.assigned_to).toBeNull();
    expect((await conversationOf(w, one!)).assigned_to).toBeNull();
  });

  it("a handoff goes to an available member", async () => {
    await closeAll();
    await rule("round_robin", 5);
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["human"], match_type: "exact" },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "h" } },
        { node_key: "h", node_type: "handoff", config: { note: "Wants a person" } },
      ],
    });
    // Off while the customer writes first, so only the handoff assigns.
    await rule("off", 5);
    const kai = customer(w, "Kai");
    await kai.text("hi");
    expect(await assignee(kai)).toBeNull();
    await rule("round_robin", 5);
    await kai.text("human");
    const { status, assigned_to } = await conversationOf(w, kai);
    expect(status).toBe("pending");
    expect([ana.id, ben.id]).toContain(assigned_to);
    const { events } = await runFor(w, flowId, kai);
    expect(events.find((e) => e.event_type === "handoff")?.payload).toMatchObject({
      assigned_to,
      auto_assigned: true,
    });
  });

  it("rejects a cap below 1 with 400 naming the field, and a bad availability", async () => {
    const cap = await w.t.app.inject({
      method: "PATCH",
      url: "/api/settings",
      headers: w.owner.headers,
      payload: { auto_assign: { mode: "round_robin", max_open_per_agent: 0 } },
    });
    expect(cap.statusCode).toBe(400);
    expect(cap.json().error).toMatch(/max_open_per_agent/);
    const bad = await w.t.app.inject({
      method: "PATCH",
      url: "/api/me",
      headers: ana.headers,
      payload: { availability: "busy" },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/availability/);
  });
});

describe("auto-assignment under concurrency", () => {
  let second: TestApp;
  beforeAll(async () => {
    second = await createTestApp({
      databaseUrl: w.t.database.url,
      config: { appSecret: APP_SECRET, graphApiUrl: w.sandbox.url },
    });
  });
  afterAll(() => second.close());

  it("two instances auto-assigning 50 new conversations at once never go over the cap", async () => {
    await closeAll();
    const cap = 7;
    await rule("least_busy", cap);
    const deliveries = Array.from({ length: 50 }, (_, i) => {
      const { payload } = inboundTextPayload({
        phoneNumberId: w.phoneNumberId,
        from: uniqueDigits(12),
        name: `Crowd ${i}`,
        text: "hello",
        timestamp: Math.floor(Date.now() / 1000),
      });
      const raw = JSON.stringify(payload);
      const deliver = () =>
        (i % 2 === 0 ? w.t.app : second.app).inject({
          method: "POST",
          url: "/api/messaging/webhook",
          headers: {
            "content-type": "application/json",
            "x-hub-signature-256": signPayload(raw, APP_SECRET),
          },
          payload: raw,
        });
      // Meta delivers again what got no 200 (a busy shared database can refuse a connection).
      return (async () => {
        let response = await deliver();
        for (let attempt = 1; attempt < 5 && response.statusCode !== 200; attempt++) {
          await new Promise((r) => setTimeout(r, 200 * attempt));
          response = await deliver();
        }
        return response;
      })();
    });
    for (const response of await Promise.all(deliveries)) expect(response.statusCode).toBe(200);
    await Promise.all([
      w.t.app.deps.jobs.drain({ timeoutMs: 60_000 }),
      second.app.deps.jobs.drain({ timeoutMs: 60_000 }),
    ]);

    const open = await w.t.database.db
      .select({ assignedTo: conversations.assignedTo })
      .from(conversations)
      .where(and(eq(conversations.accountId, w.accountId), ne(conversations.status, "closed")));
    expect(open).toHaveLength(50);
    const per = new Map<string | null, number>();
    for (const c of open) per.set(c.assignedTo, (per.get(c.assignedTo) ?? 0) + 1);
    expect(per.get(ana.id)).toBe(cap);
    expect(per.get(ben.id)).toBe(cap);
    expect(per.get(w.owner.id)).toBeUndefined();
    expect(per.get(null)).toBe(50 - 2 * cap);
  });
});
