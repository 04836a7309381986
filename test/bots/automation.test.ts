import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { accountEvents } from "../../src/db/schema/index.js";
import {
  activeFlow,
  type Customer,
  conversationOf,
  createWorld,
  customer,
  type Json,
  runsOf,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";
import { addMember } from "../helpers/harness.js";

let w: World;
let helpFlow: string;
beforeAll(async () => {
  w = await createWorld();
  helpFlow = await activeFlow(w, {
    trigger_config: { keywords: ["help"], match_type: "exact" },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "menu" } },
      {
        node_key: "menu",
        node_type: "send_buttons",
        config: {
          text: "How can we help?",
          buttons: [{ reply_id: "a", title: "Orders", next_node_key: "end" }],
        },
      },
      { node_key: "end", node_type: "end", config: {} },
    ],
  });
});
afterAll(() => w.close());
beforeEach(() => {
  w.sandbox.reset();
  w.sandbox.addNumber({ phoneNumberId: w.phoneNumberId, accessToken: w.accessToken });
});

const call = (method: "GET" | "POST" | "PATCH", url: string, payload?: object, headers = w.owner.headers) =>
  w.t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const conversation = async (id: string): Promise<Json> =>
  (await call("GET", "/api/conversations?limit=200")).json().conversations.find((c: Json) => c.id === id);

async function agentReply(conversationId: string, text = "Hi, Sam here") {
  const sent = await call("POST", `/api/conversations/${conversationId}/messages`, { text });
  expect(sent.statusCode, sent.body).toBe(201);
}

const menus = (who: Customer) => sentMessages(w, who.waId).filter((b) => b.type === "interactive");
const runsOfCustomer = async (conversationId: string) =>
  (await runsOf(w, helpFlow)).filter((r) => r.conversation_id === conversationId);

async function patchAutomation(id: string, automation: object) {
  const response = await call("PATCH", `/api/conversations/${id}`, { automation });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().conversation;
}

describe("the bot steps back for agents", () => {
  it("a keyword during an agent's chat starts no flow; after resume it does", async () => {
    const ann = customer(w, "Ann");
    await ann.text("hello?");
    const { id } = await conversationOf(w, ann);
    expect((await conversation(id)).automation).toEqual({ state: "active", until: null, reason: null });

    const before = Date.now();
    await agentReply(id);
    const paused = (await conversation(id)).automation;
    expect(paused).toMatchObject({ state: "paused", reason: "agent_reply" });
    const until = Date.parse(paused.until);
    expect(until).toBeGreaterThanOrEqual(before + 30 * 60_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 30 * 60_000 + 1000);

    await ann.text("help");
    expect(menus(ann)).toHaveLength(0);
    expect(await runsOfCustomer(id)).toHaveLength(0);
    const inbox = await conversationOf(w, ann);
    expect(inbox.messages.at(-1)).toMatchObject({ text: "help", sender_type: "customer" });

    expect(await patchAutomation(id, { state: "active" })).toMatchObject({
      automation: { state: "active", until: null, reason: null },
    });
    await ann.text("help");
    expect(menus(ann)).toHaveLength(1);
    expect(await runsOfCustomer(id)).toHaveLength(1);
  });

  it("an agent's message ends the contact's active run (ended_by_agent)", async () => {
    const bo = customer(w, "Bo");
    await bo.text("help");
    const { id } = await conversationOf(w, bo);
    expect((await runsOfCustomer(id))[0]).toMatchObject({ status: "active", current_node_key: "menu" });
    await agentReply(id);
    expect((await runsOfCustomer(id))[0]).toMatchObject({
      status: "completed",
      end_reason: "ended_by_agent",
    });
    // The customer's tap on the bot's menu now goes to the agent.
    await bo.button("a");
    expect(await runsOfCustomer(id)).toHaveLength(1);
  });

  it("assigning a person pauses until unassigned; closing re-arms; the changes are conversation.updated events", async () => {
    const mate = await addMember(w.t.app, w.owner, "Mate");
    const cy = customer(w, "Cy");
    await cy.text("hey");
    const { id } = await conversationOf(w, cy);
    const assigned = await call("PATCH", `/api/conversations/${id}`, { assigned_to: mate.id });
    expect(assigned.json().conversation.automation).toEqual({
      state: "paused",
      until: null,
      reason: "assigned",
    });
    await cy.text("help");
    expect(menus(cy)).toHaveLength(0);

    const unassigned = await call("PATCH", `/api/conversations/${id}`, { assigned_to: null });
    expect(unassigned.json().conversation.automation.state).toBe("active");

    await call("PATCH", `/api/conversations/${id}`, { assigned_to: mate.id });
    const closed = await call("PATCH", `/api/conversations/${id}`, { status: "closed" });
    expect(closed.json().conversation.automation.state).toBe("active");
    await cy.text("help");
    expect(menus(cy)).toHaveLength(1);

    const events = await w.t.database.db
      .select()
      .from(accountEvents)
      .where(and(eq(accountEvents.accountId, w.accountId), eq(accountEvents.type, "conversation.updated")));
    const states = events
      .map((e) => e.data as Json)
      .filter((d) => d.id === id)
      .map((d) => d.automation.reason);
    expect(states).toContain("assigned");
    expect(states.at(-1)).toBeNull();
  });

  it("pauses by hand for some minutes or until resumed; rejects a bad automation with 400", async () => {
    const di = customer(w, "Di");
    await di.text("hey");
    const { id } = await conversationOf(w, di);
    const timed = await patchAutomation(id, { state: "paused", minutes: 15 });
    expect(timed.automation).toMatchObject({ state: "paused", reason: "manual" });
    expect(Date.parse(timed.automation.until) - Date.now()).toBeGreaterThan(14 * 60_000);
    const open = await patchAutomation(id, { state: "paused" });
    expect(open.automation).toEqual({ state: "paused", until: null, reason: "manual" });
    for (const automation of [{ state: "sleeping" }, { state: "paused", minutes: 0 }, "paused"]) {
      const bad = await call("PATCH", `/api/conversations/${id}`, { automation });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatch(/automation/);
    }
  });

  it("with agent_reply_pause_minutes 0 an agent's message pauses nothing", async () => {
    const set = await call("PATCH", "/api/settings", { agent_reply_pause_minutes: 0 });
    expect(set.statusCode).toBe(200);
    try {
      const ed = customer(w, "Ed");
      await ed.text("hey");
      const { id } = await conversationOf(w, ed);
      await agentReply(id);
      expect((await conversation(id)).automation.state).toBe("active");
      await ed.text("help");
      expect(menus(ed)).toHaveLength(1);
    } finally {
      await call("PATCH", "/api/settings", { agent_reply_pause_minutes: 30 });
    }
  });
});
