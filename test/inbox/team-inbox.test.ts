import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contacts, conversations, messages } from "../../src/db/schema/index.js";
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
} from "../flows/runner/helpers.js";
import { insertContact, insertMessage } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestUser } from "../helpers/harness.js";

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());

const as = (
  user: TestUser,
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  url: string,
  payload?: unknown,
) =>
  w.t.app.inject({
    method,
    url,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

/** A new account with an owner, a teammate and a stranger (member of another account). */
async function team() {
  const { user: owner, accountId } = await signUpWithAccount(w.t.app);
  const teammate = await addMember(w.t.app, owner);
  const stranger = await signUpWithAccount(w.t.app);
  return { owner, teammate, accountId, stranger: stranger.user, strangerAccountId: stranger.accountId };
}

let clock = Date.parse("2025-03-01T00:00:00Z");
async function conversationWith(accountId: string, name: string, tags: string[] = []) {
  const { contact, conversation } = await insertContact(w.t, { accountId, name });
  clock += 60_000;
  await w.t.database.db.update(contacts).set({ tags }).where(eq(contacts.id, contact.id));
  await w.t.database.db
    .update(conversations)
    .set({ lastMessageAt: new Date(clock) })
    .where(eq(conversations.id, conversation.id));
  return { contact, conversation };
}

const idsOf = (body: Json) => (body.conversations as Array<{ id: string }>).map((c) => c.id);

describe("PATCH /api/conversations/{id}", () => {
  it("sets the status and the assignee, and shows them to teammates", async () => {
    const { owner, teammate, accountId } = await team();
    const { conversation } = await conversationWith(accountId, "Ana");
    const response = await as(owner, "PATCH", `/api/conversations/${conversation.id}`, {
      status: "pending",
      assigned_to: teammate.id,
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().conversation).toMatchObject({
      id: conversation.id,
      status: "pending",
      assigned_to: teammate.id,
      handoff_note: null,
      contact: expect.objectContaining({ name: "Ana" }),
    });
    const seen = await as(teammate, "GET", "/api/conversations?assigned_to=me");
    expect(idsOf(seen.json())).toEqual([conversation.id]);

    const unassigned = await as(teammate, "PATCH", `/api/conversations/${conversation.id}`, {
      assigned_to: null,
    });
    expect(unassigned.json().conversation).toMatchObject({ status: "pending", assigned_to: null });
    const closed = await as(teammate, "PATCH", `/api/conversations/${conversation.id}`, { status: "closed" });
    expect(closed.json().conversation).toMatchObject({ status: "closed", assigned_to: null });
  });

  it.each([
    ["an unknown status", { status: "archived" }, /status: must be one of open, pending, closed/],
    ["an assignee who is not a user id", { assigned_to: "bob" }, /assigned_to: must be a user id or null/],
    ["nothing to change", {}, /Nothing to change/],
    ["a body that is not JSON", "{", /Invalid JSON/],
  ])("answers 400 for %s and changes nothing", async (_name, payload, error) => {
    const { owner, accountId } = await team();
    const { conversation } = await conversationWith(accountId, "Ana");
    const response = await as(owner, "PATCH", `/api/conversations/${conversation.id}`, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(error);
    const [row] = await w.t.database.db
      .select()
      .from(conversations)
      .where(eq(conversations.id, conversation.id));
    expect(row).toMatchObject({ status: "open", assignedTo: null, updatedAt: conversation.updatedAt });
  });

  it("answers 400 when the assignee is not a member of the account", async () => {
    const { owner, accountId, stranger } = await team();
    const loner = await signUp(w.t.app);
    const { conversation } = await conversationWith(accountId, "Ana");
    for (const user of [stranger, loner]) {
      const response = await as(owner, "PATCH", `/api/conversations/${conversation.id}`, {
        assigned_to: user.id,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: "assigned_to: must be a member of the account" });
    }
  });

  it("answers 404 for another account's conversation, 401 without a session, 403 without an account", async () => {
    const { owner, stranger, strangerAccountId } = await team();
    const { conversation } = await conversationWith(strangerAccountId, "Theirs");
    const response = await as(owner, "PATCH", `/api/conversations/${conversation.id}`, { status: "closed" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Not found" });
    const anonymous = await w.t.app.inject({
      method: "PATCH",
      url: `/api/conversations/${conversation.id}`,
      payload: { status: "closed" },
    });
    expect(anonymous.statusCode).toBe(401);
    const loner = await signUp(w.t.app);
    expect(
      (await as(loner, "PATCH", `/api/conversations/${conversation.id}`, { status: "closed" })).statusCode,
    ).toBe(403);
    const [row] = await w.t.database.db
      .select()
      .from(conversations)
      .where(eq(conversations.id, conversation.id));
    expect(row?.status).toBe("open");
    expect((await as(stranger, "GET", "/api/conversations")).json().conversations[0].status).toBe("open");
  });
});

describe("GET /api/conversations filters and counts", () => {
  it("filters by status, assignee and contact tag, and counts each status", async () => {
    const { owner, teammate, accountId } = await team();
    const a = await conversationWith(accountId, "Alma", ["vip"]);
    const b = await conversationWith(accountId, "Bruno", ["vip", "late"]);
    const c = await conversationWith(accountId, "Carla");
    const d = await conversationWith(accountId, "Dario", ["late"]);
    await as(owner, "PATCH", `/api/conversations/${a.conversation.id}`, { assigned_to: owner.id });
    await as(owner, "PATCH", `/api/conversations/${b.conversation.id}`, {
      status: "pending",
      assigned_to: teammate.id,
    });
    await as(owner, "PATCH", `/api/conversations/${c.conversation.id}`, {
      status: "closed",
      assigned_to: owner.id,
    });

    const list = async (query: string, user = owner) => {
      const response = await as(user, "GET", `/api/conversations?${query}`);
      expect(response.statusCode, response.body).toBe(200);
      return idsOf(response.json());
    };
    expect(await list("status=open")).toEqual([d.conversation.id, a.conversation.id]);
    expect(await list("status=pending")).toEqual([b.conversation.id]);
    expect(await list("assigned_to=me")).toEqual([c.conversation.id, a.conversation.id]);
    expect(await list("assigned_to=me", teammate)).toEqual([b.conversation.id]);
    expect(await list(`assigned_to=${teammate.id}`)).toEqual([b.conversation.id]);
    expect(await list("assigned_to=none")).toEqual([d.conversation.id]);
    expect(await list("tag=vip")).toEqual([b.conversation.id, a.conversation.id]);
    expect(await list("tag=late&status=open")).toEqual([d.conversation.id]);
    expect(await list("tag=nobody")).toEqual([]);

    const counts = await as(owner, "GET", "/api/conversations/counts");
    expect(counts.statusCode).toBe(200);
    expect(counts.json()).toEqual({ open: 2, pending: 1, closed: 1, mine: 1, unassigned: 1, unread: 0 });
    expect((await as(teammate, "GET", "/api/conversations/counts")).json()).toMatchObject({ mine: 1 });
  });

  it("pages a filtered list without gaps or repeats", async () => {
    const { owner, accountId } = await team();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await conversationWith(accountId, `Page ${i}`, ["paged"]));
    await conversationWith(accountId, "Untagged");
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      const body: Json = (await as(owner, "GET", `/api/conversations?tag=paged&limit=2${query}`)).json();
      seen.push(...idsOf(body));
      cursor = body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(made.map((m) => m.conversation.id).reverse());
  });

  it.each([
    ["status=archived", /status: must be one of/],
    ["assigned_to=bob", /assigned_to: must be me, none or a user id/],
    ["q=ab", /q: must be at least 3 characters/],
    [`q=${"x".repeat(201)}`, /q: must be at most 200 characters/],
    ["q=a%00bc", /q: must not contain NUL/],
    ["tag=%00", /tag: must not contain NUL/],
    ["status=open&status=closed", /status/],
    ["limit=0", /limit/],
  ])("answers 400 for %s", async (query, error) => {
    const { owner } = await team();
    const response = await as(owner, "GET", `/api/conversations?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(error);
  });

  it("counts only the caller's account", async () => {
    const { owner, stranger, strangerAccountId } = await team();
    await conversationWith(strangerAccountId, "Theirs");
    expect((await as(owner, "GET", "/api/conversations/counts")).json()).toEqual({
      open: 0,
      pending: 0,
      closed: 0,
      mine: 0,
      unassigned: 0,
      unread: 0,
    });
    expect((await as(stranger, "GET", "/api/conversations/counts")).json()).toMatchObject({ open: 1 });
  });
});

describe("search", () => {
  it("finds conversations by contact name, phone digits or message text, within the account", async () => {
    const { owner, accountId, strangerAccountId } = await team();
    const byName = await conversationWith(accountId, "Zoë Margarethe");
    const byText = await conversationWith(accountId, "Someone");
    await insertMessage(w.t, {
      accountId,
      conversationId: byText.conversation.id,
      text: "My parcel 100% LOST",
    });
    const { contact: phoned, conversation: byPhone } = await insertContact(w.t, {
      accountId,
      name: "Phone",
      phone: "4915123456789",
    });
    const theirs = await conversationWith(strangerAccountId, "Zoë Margarethe");
    await insertMessage(w.t, {
      accountId: strangerAccountId,
      conversationId: theirs.conversation.id,
      text: "lost",
    });

    const search = async (q: string) =>
      idsOf((await as(owner, "GET", `/api/conversations?q=${encodeURIComponent(q)}`)).json());
    expect(await search("margar")).toEqual([byName.conversation.id]);
    expect(await search("parcel 100%")).toEqual([byText.conversation.id]);
    expect(await search("lost")).toEqual([byText.conversation.id]);
    expect(await search("100_")).toEqual([]);
    expect(await search("+49 151 234")).toEqual([byPhone.id]);
    expect(await search("nothing like it")).toEqual([]);
    expect(phoned.phone).toBe("4915123456789");
  });
});

describe("notes", () => {
  it("stores a note in the thread, visible to teammates, never sent upstream", async () => {
    const who = customer(w, "Noted");
    await who.text("hello");
    const { id } = await conversationOf(w, who);
    const teammate = await addMember(w.t.app, w.owner);
    const before = w.sandbox.requests().length;
    const response = await api(w, "POST", `/api/conversations/${id}/notes`, {
      text: "  Call back after 5pm  ",
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().message).toMatchObject({
      conversation_id: id,
      type: "note",
      direction: "internal",
      sender_type: "agent",
      sender_user_id: w.owner.id,
      text: "Call back after 5pm",
      status: "stored",
      message_id: null,
    });
    expect(w.sandbox.requests().length).toBe(before);
    const thread = await as(teammate, "GET", `/api/conversations/${id}/messages`);
    expect(thread.json().messages.map((m: Json) => [m.type, m.text])).toEqual([
      ["text", "hello"],
      ["note", "Call back after 5pm"],
    ]);
  });

  it.each([
    ["no text", {}, /text: must be a string/],
    ["blank text", { text: "  " }, /text: must not be empty/],
    ["text over 4096 characters", { text: "n".repeat(4097) }, /at most 4096/],
    ["a NUL", { text: "a\u0000" }, /text: must not contain NUL/],
  ])("answers 400 for %s and stores nothing", async (_name, payload, error) => {
    const { owner, accountId } = await team();
    const { conversation } = await conversationWith(accountId, "Ana");
    const response = await as(owner, "POST", `/api/conversations/${conversation.id}/notes`, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(error);
    const rows = await w.t.database.db
      .select()
      .from(messages)
      .where(eq(messages.conversationId, conversation.id));
    expect(rows).toEqual([]);
  });

  it("answers 404 for another account's conversation", async () => {
    const { owner, strangerAccountId } = await team();
    const { conversation } = await conversationWith(strangerAccountId, "Theirs");
    const response = await as(owner, "POST", `/api/conversations/${conversation.id}/notes`, { text: "peek" });
    expect(response.statusCode).toBe(404);
    const rows = await w.t.database.db
      .select()
      .from(messages)
      .where(eq(messages.conversationId, conversation.id));
    expect(rows).toEqual([]);
  });
});

describe("handoff_note and execution_count", () => {
  it("shows why a flow handed the conversation over, and how often the flow ran", async () => {
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["agent please"] },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "human" } },
        { node_key: "human", node_type: "handoff", config: { note: "Wants a human: {{contact.name}}" } },
      ],
    });
    const who = customer(w, "Handed");
    await who.text("agent please");
    const list = (await api(w, "GET", "/api/conversations?limit=200")).json();
    const conversation = list.conversations.find((c: Json) => c.contact.wa_id === who.waId);
    expect(conversation.handoff_note).toBe("Wants a human: Handed");
    const flow = (await api(w, "GET", `/api/flows/${flowId}`)).json().flow;
    expect(flow.execution_count).toBe(1);
    const listed = (await api(w, "GET", "/api/flows")).json().flows.find((f: Json) => f.id === flowId);
    expect(listed.execution_count).toBe(1);
  });
});

describe("opted-out contacts", () => {
  it("get nothing from agents (422 opted_out) and start no flow", async () => {
    const flowId = await activeTemplate(w, "faq_bot");
    const runs = async () =>
      (await api(w, "GET", `/api/flows/${flowId}/runs?limit=200`)).json().runs as Json[];
    const who = customer(w, "Quiet");
    await who.text("hello");
    const { id, contactId } = await conversationOf(w, who);
    const patched = await as(w.owner, "PATCH", `/api/contacts/${contactId}`, { opted_out: true });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().contact.opted_out).toBe(true);
    const sentBefore = sentMessages(w, who.waId).length;

    const send = await api(w, "POST", `/api/conversations/${id}/messages`, { text: "Any news?" });
    expect(send.statusCode).toBe(422);
    expect(send.json()).toEqual({ error: expect.stringMatching(/opted out/), code: "opted_out" });

    const manual = await api(w, "POST", `/api/flows/${flowId}/runs`, { contact_id: contactId });
    expect(manual.statusCode).toBe(422);
    expect(manual.json().code).toBe("opted_out");

    await who.text("faq please");
    expect((await runs()).filter((r) => r.contact_id === contactId)).toEqual([]);
    expect(sentMessages(w, who.waId).length).toBe(sentBefore);
    expect((await conversationOf(w, who)).messages.some((m) => m.text === "Any news?")).toBe(false);

    // The same words from a contact who has not opted out start the flow.
    const other = customer(w, "Chatty");
    await other.text("faq please");
    const otherContact = (await conversationOf(w, other)).contactId;
    expect((await runs()).filter((r) => r.contact_id === otherContact)).toHaveLength(1);

    // Opting back in lets agents write again.
    await as(w.owner, "PATCH", `/api/contacts/${contactId}`, { opted_out: false });
    expect((await api(w, "POST", `/api/conversations/${id}/messages`, { text: "Back" })).statusCode).toBe(
      201,
    );
  });
});
