import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contacts } from "../../../src/db/schema/index.js";
import { insertContact } from "../../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount } from "../../helpers/harness.js";
import {
  activeFlow,
  activeTemplate,
  api,
  conversationOf,
  createWorld,
  customer,
  type Json,
  sentMessages,
  type World,
} from "./helpers.js";

let w: World;
let manual: string;

beforeAll(async () => {
  w = await createWorld();
  manual = await activeFlow(w, {
    trigger_type: "manual",
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "hello" } },
      {
        node_key: "hello",
        node_type: "send_message",
        config: { text: "Hello {{contact.name}}, your parcel is on its way.", next_node_key: "tag" },
      },
      {
        node_key: "tag",
        node_type: "set_tag",
        config: { mode: "add", tag: "notified", next_node_key: "vip" },
      },
      {
        node_key: "vip",
        node_type: "condition",
        config: {
          subject: "tag",
          subject_key: "vip",
          operator: "present",
          true_next: "to_agent",
          false_next: "ask",
        },
      },
      {
        node_key: "ask",
        node_type: "collect_input",
        config: {
          prompt_text: "Rate us 1-5",
          var_key: "rating",
          validation: "number",
          next_node_key: "done",
        },
      },
      { node_key: "to_agent", node_type: "handoff", config: { note: "VIP {{contact.name}}", assign_to: "" } },
      { node_key: "done", node_type: "end", config: {} },
    ],
  });
});
afterAll(() => w.close());

const start = (flowId: string, body: unknown, headers = w.owner.headers) =>
  w.t.app.inject({
    method: "POST",
    url: `/api/flows/${flowId}/runs`,
    headers: { ...headers, "content-type": "application/json" },
    payload: typeof body === "string" ? body : JSON.stringify(body),
  });

describe("POST /api/flows/{id}/runs (manual start)", () => {
  it("starts the flow for a contact and walks it until it waits", async () => {
    const { contact } = await insertContact(w.t, { accountId: w.accountId, name: "Zoe" });
    const response = await start(manual, { contact_id: contact.id });
    expect(response.statusCode, response.body).toBe(201);
    // Answered once the run exists; its messages go out in the background, in order.
    expect(response.json().run).toMatchObject({ flow_id: manual, contact_id: contact.id, status: "active" });
    await w.t.app.deps.jobs.drain();
    const walked = await api(w, "GET", `/api/flows/${manual}/runs/${response.json().run.id}`);
    expect(walked.json().run).toMatchObject({ status: "active", current_node_key: "ask" });
    expect(sentMessages(w, contact.phone!).map((m) => m.text.body)).toEqual([
      "Hello Zoe, your parcel is on its way.",
      "Rate us 1-5",
    ]);
    const detail = await api(w, "GET", `/api/flows/${manual}/runs/${response.json().run.id}`);
    expect(detail.json().events[0]).toMatchObject({
      event_type: "started",
      payload: { trigger: "manual", started_by: w.owner.id },
    });
  });

  it("answers 409 while the contact has an active run", async () => {
    const { contact } = await insertContact(w.t, { accountId: w.accountId });
    expect((await start(manual, { contact_id: contact.id })).statusCode).toBe(201);
    const again = await start(manual, { contact_id: contact.id });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ error: "The contact already has an active flow run" });
  });

  it("follows the condition on the contact's tags", async () => {
    const { contact } = await insertContact(w.t, { accountId: w.accountId, name: "Vip" });
    await w.t.database.db
      .update(contacts)
      .set({ tags: ["vip"] })
      .where(eq(contacts.id, contact.id));
    const response = await start(manual, { contact_id: contact.id });
    expect(response.statusCode).toBe(201);
    await w.t.app.deps.jobs.drain();
    const walked = await api(w, "GET", `/api/flows/${manual}/runs/${response.json().run.id}`);
    expect(walked.json().run).toMatchObject({ status: "handed_off", end_reason: "handoff_node" });
    const [row] = await w.t.database.db.select().from(contacts).where(eq(contacts.id, contact.id));
    expect(row!.tags).toEqual(["vip", "notified"]);
  });

  it("answers 422 for a flow that is not active", async () => {
    const created = await api(w, "POST", "/api/flows", { name: "Draft", trigger_type: "manual" });
    const { contact } = await insertContact(w.t, { accountId: w.accountId });
    const response = await start(created.json().flow.id, { contact_id: contact.id });
    expect(response.statusCode).toBe(422);
    expect(response.json().error).toBe("Only active flows can be started; this flow is draft");
  });

  it("answers 404 for an unknown flow or a contact of another account, 400 for a bad body", async () => {
    const { contact } = await insertContact(w.t, { accountId: w.accountId });
    expect((await start("00000000-0000-4000-8000-000000000000", { contact_id: contact.id })).statusCode).toBe(
      404,
    );
    expect((await start("not-a-uuid", { contact_id: contact.id })).statusCode).toBe(404);
    const stranger = await signUpWithAccount(w.t.app, "Stranger");
    const theirs = await insertContact(w.t, { accountId: stranger.accountId });
    const foreign = await start(manual, { contact_id: theirs.contact.id });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toEqual({ error: "Contact not found" });
    expect((await start(manual, { contact_id: "nope" })).statusCode).toBe(404);
    expect((await start(manual, "{not json")).json()).toEqual({ error: "Invalid JSON" });
    const missing = await start(manual, {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/^contact_id/);
    // The stranger cannot start our flow even with our contact.
    expect((await start(manual, { contact_id: contact.id }, stranger.user.headers)).statusCode).toBe(404);
  });

  it("answers 401 without a session and 403 without an account", async () => {
    expect((await start(manual, {}, {})).statusCode).toBe(401);
    const loner = await signUp(w.t.app, "Loner");
    expect((await start(manual, {}, loner.headers)).statusCode).toBe(403);
  });
});

describe("GET /api/flows/{id}/runs", () => {
  it("pages the runs newest first, to members of the account only", async () => {
    const flowId = await activeTemplate(w, "faq_bot");
    const people = [customer(w, "R1"), customer(w, "R2"), customer(w, "R3")];
    for (const p of people) await p.text("faq");
    const conversations = await Promise.all(people.map((p) => conversationOf(w, p)));

    const first = await api(w, "GET", `/api/flows/${flowId}/runs?limit=2`);
    expect(first.statusCode).toBe(200);
    const page1 = first.json();
    expect(page1.runs.map((r: Json) => r.conversation_id)).toEqual([
      conversations[2]!.id,
      conversations[1]!.id,
    ]);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const page2 = (
      await api(w, "GET", `/api/flows/${flowId}/runs?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`)
    ).json();
    expect(page2.runs.map((r: Json) => r.conversation_id)).toEqual([conversations[0]!.id]);
    expect(page2.next_cursor).toBeNull();
    expect(page2.runs[0]).toMatchObject({
      status: "active",
      current_node_key: "topics",
      vars: {},
      reprompt_count: 0,
      end_reason: null,
      ended_at: null,
    });

    const member = await addMember(w.t.app, w.owner);
    expect(
      (await w.t.app.inject({ url: `/api/flows/${flowId}/runs`, headers: member.headers })).statusCode,
    ).toBe(200);
    const stranger = await signUpWithAccount(w.t.app, "Other");
    const hidden = await w.t.app.inject({ url: `/api/flows/${flowId}/runs`, headers: stranger.user.headers });
    expect(hidden.statusCode).toBe(404);
    const loner = await signUp(w.t.app, "Loner");
    expect(
      (await w.t.app.inject({ url: `/api/flows/${flowId}/runs`, headers: loner.headers })).statusCode,
    ).toBe(404);
    expect((await w.t.app.inject({ url: `/api/flows/${flowId}/runs` })).statusCode).toBe(401);
    expect((await api(w, "GET", `/api/flows/${flowId}/runs?limit=0`)).statusCode).toBe(400);
    expect((await api(w, "GET", `/api/flows/${flowId}/runs?cursor=bogus`)).statusCode).toBe(400);
  });
});

describe("GET /api/flows/{id}/runs/{run_id}", () => {
  it("answers the run with its events in order, and 404 through another flow or account", async () => {
    const flowId = await activeTemplate(w, "welcome_menu");
    const other = await activeTemplate(w, "faq_bot");
    const ray = customer(w, "Ray");
    await ray.text("support");
    const runs = (await api(w, "GET", `/api/flows/${flowId}/runs`)).json().runs as Json[];
    expect(runs).toHaveLength(1);
    const run = runs[0]!;
    const detail = await api(w, "GET", `/api/flows/${flowId}/runs/${run.id}`);
    expect(detail.statusCode).toBe(200);
    const events = detail.json().events as Json[];
    expect(events.map((e) => e.event_type)).toEqual([
      "started",
      "node_entered",
      "node_entered",
      "message_sent",
    ]);
    expect(events.map((e) => Number(e.id))).toEqual(
      [...events.map((e) => Number(e.id))].sort((a, b) => a - b),
    );
    expect(events[3]).toMatchObject({ node_key: "menu", payload: { type: "interactive" } });

    expect((await api(w, "GET", `/api/flows/${other}/runs/${run.id}`)).statusCode).toBe(404);
    expect((await api(w, "GET", `/api/flows/${flowId}/runs/not-a-uuid`)).statusCode).toBe(404);
    const stranger = await signUpWithAccount(w.t.app, "Other");
    const hidden = await w.t.app.inject({
      url: `/api/flows/${flowId}/runs/${run.id}`,
      headers: stranger.user.headers,
    });
    expect(hidden.statusCode).toBe(404);
  });
});
