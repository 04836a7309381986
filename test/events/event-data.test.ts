import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversations } from "../../src/db/schema/index.js";
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

/**
 * Event data is built by database triggers; these tests pin it to what the
 * API's GET endpoints show for the same resource, so that a change to either
 * side that lets them drift apart fails here.
 */

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());

const latest = (events: Json[], type: string, id: string) =>
  events.filter((e) => e.type === type && e.data.id === id).at(-1);

async function conversationsOf(b: Business): Promise<Json[]> {
  return (await api(w.t, b.user, "GET", "/api/conversations")).json().conversations;
}
async function messagesOf(b: Business, conversationId: string): Promise<Json[]> {
  return (await api(w.t, b.user, "GET", `/api/conversations/${conversationId}/messages`)).json().messages;
}

describe("event data is the resource as the API shows it", () => {
  it("message.received and conversation.updated for a customer's message", async () => {
    const b = await business(w);
    await customerOf(w, b).text("Do you deliver on Sundays?");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    const [message] = await messagesOf(b, conversation.id);
    const events = await allEvents(w.t, b.user);

    expect(latest(events, "message.received", message.id).data).toEqual(message);
    expect(latest(events, "conversation.updated", conversation.id).data).toEqual(conversation);
    for (const event of events) {
      expect(event).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        type: expect.any(String),
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        data: expect.any(Object),
      });
    }
  });

  it("an event exists exactly when its change commits", async () => {
    const b = await business(w);
    await customerOf(w, b).text("Hi");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    const before = await allEvents(w.t, b.user);
    await expect(
      w.t.database.db.transaction(async (tx) => {
        await tx.update(conversations).set({ status: "closed" }).where(eq(conversations.id, conversation.id));
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await allEvents(w.t, b.user)).toEqual(before);

    await w.t.database.db
      .update(conversations)
      .set({ status: "closed" })
      .where(eq(conversations.id, conversation.id));
    const after = await allEvents(w.t, b.user);
    expect(after.slice(before.length).map((e) => [e.type, e.data.status])).toEqual([
      ["conversation.updated", "closed"],
    ]);
  });

  it("a redelivered message adds no event", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    const first = await customer.text("once");
    await settle(w.t);
    const before = await allEvents(w.t, b.user);
    await customer.text("once", { messageId: first.messageId });
    await settle(w.t);
    expect(await allEvents(w.t, b.user)).toEqual(before);
  });

  it("message.sent, then message.status as the upstream reports progress", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    await customer.text("Hi");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    const sent = await api(w.t, b.user, "POST", `/api/conversations/${conversation.id}/messages`, {
      text: "Hello!",
    });
    expect(sent.statusCode).toBe(201);
    const { message } = sent.json();

    let events = await allEvents(w.t, b.user);
    const stored = latest(events, "message.sent", message.id);
    expect(stored.data).toMatchObject({
      id: message.id,
      text: "Hello!",
      status: "pending",
      message_id: null,
    });
    let [shown] = (await messagesOf(b, conversation.id)).filter((m) => m.id === message.id);
    expect(latest(events, "message.status", message.id).data).toEqual(shown);
    expect(shown.status).toBe("sent");

    expect((await customer.status({ messageId: message.message_id, status: "delivered" })).status).toBe(200);
    await settle(w.t);
    events = await allEvents(w.t, b.user);
    [shown] = (await messagesOf(b, conversation.id)).filter((m) => m.id === message.id);
    expect(shown.status).toBe("delivered");
    expect(latest(events, "message.status", message.id).data).toEqual(shown);
    expect(
      events.filter((e) => e.type === "message.status" && e.data.id === message.id).map((e) => e.data.status),
    ).toEqual(["sent", "delivered"]);
  });

  it("reaction.updated carries the message with its reactions, for customers and agents, on add and removal", async () => {
    const b = await business(w);
    const customer = customerOf(w, b);
    await customer.text("Hi");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    const { message } = (
      await api(w.t, b.user, "POST", `/api/conversations/${conversation.id}/messages`, { text: "Welcome" })
    ).json();

    await customer.react(message.message_id, "👍");
    await settle(w.t);
    const react = (emoji: string) =>
      api(w.t, b.user, "POST", "/api/messaging/react", { message_id: message.id, emoji });
    expect((await react("🎉")).statusCode).toBe(200);
    let [shown] = (await messagesOf(b, conversation.id)).filter((m) => m.id === message.id);
    expect(shown.reactions).toHaveLength(2);
    expect(latest(await allEvents(w.t, b.user), "reaction.updated", message.id).data).toEqual(shown);

    expect((await react("")).statusCode).toBe(200);
    [shown] = (await messagesOf(b, conversation.id)).filter((m) => m.id === message.id);
    expect(shown.reactions).toEqual([expect.objectContaining({ actor_type: "customer", emoji: "👍" })]);
    expect(latest(await allEvents(w.t, b.user), "reaction.updated", message.id).data).toEqual(shown);
  });

  it("flow_run.updated for a run started by hand", async () => {
    const b = await business(w);
    await customerOf(w, b).text("Hi");
    await settle(w.t);
    const [conversation] = await conversationsOf(b);
    const created = await api(w.t, b.user, "POST", "/api/flows", { template_slug: "welcome_menu" });
    expect(created.statusCode).toBe(201);
    const flowId = created.json().flow.id;
    expect(
      (await api(w.t, b.user, "POST", `/api/flows/${flowId}/activate`, { status: "active" })).statusCode,
    ).toBe(200);
    const started = await api(w.t, b.user, "POST", `/api/flows/${flowId}/runs`, {
      contact_id: conversation.contact.id,
    });
    expect(started.statusCode, started.body).toBe(201);
    await settle(w.t);

    const runId = started.json().run.id;
    const { run } = (await api(w.t, b.user, "GET", `/api/flows/${flowId}/runs/${runId}`)).json();
    const events = await allEvents(w.t, b.user);
    expect(latest(events, "flow_run.updated", runId).data).toEqual(run);
    // The bot's menu went out as a message of the conversation.
    expect(events.some((e) => e.type === "message.sent" && e.data.sender_type === "bot")).toBe(true);
  });

  it("flow_run.updated once per advance, showing the run as the advance left it", async () => {
    const b = await business(w);
    const created = await api(w.t, b.user, "POST", "/api/flows", {
      name: "Greeter",
      trigger_type: "keyword",
      trigger_config: { keywords: ["hello"], match_type: "exact" },
    });
    const flowId = created.json().flow.id;
    const put = await w.t.app.inject({
      method: "PUT",
      url: `/api/flows/${flowId}`,
      headers: b.user.headers,
      payload: {
        entry_node_id: "start",
        nodes: [
          { node_key: "start", node_type: "start", config: { next_node_key: "greet" } },
          { node_key: "greet", node_type: "send_message", config: { text: "Hello there" } },
        ],
      },
    });
    expect(put.statusCode, put.body).toBe(200);
    await api(w.t, b.user, "POST", `/api/flows/${flowId}/activate`, { status: "active" });

    await customerOf(w, b).text("hello");
    await settle(w.t);

    const events = await allEvents(w.t, b.user);
    const runUpdates = events.filter((e) => e.type === "flow_run.updated");
    // The trigger's advance (the run inserted as that advance left it: no stale "start" before it)
    // and the send's advance.
    expect(runUpdates.map((e) => [e.data.status, e.data.current_node_key])).toEqual([
      ["active", "greet"],
      ["completed", "greet"],
    ]);
    const runId = runUpdates[0]!.data.id;
    const shown = (await api(w.t, b.user, "GET", `/api/flows/${flowId}/runs/${runId}`)).json();
    expect(runUpdates.at(-1)!.data).toEqual(shown.run);
    // The run's own events, in the order they happened.
    expect(shown.events.map((e: Json) => [e.event_type, e.node_key])).toEqual([
      ["started", null],
      ["node_entered", "start"],
      ["node_entered", "greet"],
      ["message_sent", "greet"],
      ["completed", "greet"],
    ]);
  });
});
