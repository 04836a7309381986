import { eq } from "drizzle-orm";
import { describe, expect } from "vitest";
import { contacts, conversations, messageReactions, messages } from "../../src/db/schema/index.js";
import { insertContact, insertMessage, appTest as it } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestApp } from "../helpers/harness.js";

let clock = Date.parse("2025-01-01T00:00:00Z");

/** A stored message; each one a second after the previous, so that order never depends on timing. */
async function message(t: TestApp, input: Parameters<typeof insertMessage>[1]) {
  const row = await insertMessage(t, input);
  clock += 1000;
  const [updated] = await t.database.db
    .update(messages)
    .set({ createdAt: new Date(clock) })
    .where(eq(messages.id, row.id))
    .returning();
  return updated!;
}

const get = (t: TestApp, url: string, headers: Record<string, string>) => t.app.inject({ url, headers });

/** A conversation whose last activity is `at`. */
async function conversationAt(t: TestApp, accountId: string, at: string, name: string) {
  const { contact, conversation } = await insertContact(t, { accountId, name });
  await t.database.db
    .update(conversations)
    .set({ lastMessageAt: new Date(at) })
    .where(eq(conversations.id, conversation.id));
  return { contact, conversation };
}

describe("authentication and visibility", () => {
  const routes = (id: string) => [
    { method: "GET" as const, url: "/api/conversations" },
    { method: "GET" as const, url: `/api/conversations/${id}/messages` },
    { method: "POST" as const, url: `/api/conversations/${id}/messages`, payload: { text: "hi" } },
  ];

  it("answers 401 without a session and 403 without an account", async ({ t, owner: { accountId } }) => {
    const { conversation } = await insertContact(t, { accountId });
    const loner = await signUp(t.app);
    for (const route of routes(conversation.id)) {
      const anonymous = await t.app.inject(route);
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json()).toEqual({ error: "Unauthorized" });
      const noAccount = await t.app.inject({ ...route, headers: loner.headers });
      expect(noAccount.statusCode).toBe(403);
    }
  });

  it.for([
    ["another account's conversation", "other"],
    ["an unknown id", "00000000-0000-4000-8000-000000000000"],
    ["a malformed id", "not-a-uuid"],
  ] as const)("answers 404 for %s", async ([_name, which], { t }) => {
    const me = await signUpWithAccount(t.app);
    const other = await signUpWithAccount(t.app);
    const { conversation } = await insertContact(t, { accountId: other.accountId });
    const id = which === "other" ? conversation.id : which;
    for (const route of routes(id).slice(1)) {
      const response = await t.app.inject({ ...route, headers: me.user.headers });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: "Not found" });
    }
  });

  it("shows teammates the same inbox, and nobody else's", async ({ t, owner }) => {
    const teammate = await addMember(t.app, owner.user);
    const stranger = await signUpWithAccount(t.app);
    const { conversation } = await insertContact(t, { accountId: owner.accountId, name: "Ana" });
    await message(t, { accountId: owner.accountId, conversationId: conversation.id, text: "Hola" });

    const seen = await get(t, "/api/conversations", teammate.headers);
    expect(seen.json().conversations.map((c: { id: string }) => c.id)).toEqual([conversation.id]);
    const messages = await get(t, `/api/conversations/${conversation.id}/messages`, teammate.headers);
    expect(messages.json().messages.map((m: { text: string }) => m.text)).toEqual(["Hola"]);
    expect((await get(t, "/api/conversations", stranger.user.headers)).json()).toEqual({
      conversations: [],
      next_cursor: null,
    });
  });
});

describe("GET /api/conversations", () => {
  it("lists the most recent activity first, with the contact and the last message", async ({
    t,
    owner: { user, accountId },
  }) => {
    const older = await conversationAt(t, accountId, "2025-01-01T10:00:00Z", "Older");
    const newer = await conversationAt(t, accountId, "2025-01-02T10:00:00Z", "Newer");
    const empty = await conversationAt(t, accountId, "2024-12-31T10:00:00Z", "Empty");
    await message(t, { accountId, conversationId: newer.conversation.id, text: "first" });
    const last = await message(t, {
      accountId,
      conversationId: newer.conversation.id,
      direction: "outbound",
      text: "our answer",
    });

    const response = await get(t, "/api/conversations", user.headers);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.next_cursor).toBeNull();
    expect(body.conversations.map((c: { contact: { name: string } }) => c.contact.name)).toEqual([
      "Newer",
      "Older",
      "Empty",
    ]);
    expect(body.conversations[0]).toEqual({
      id: newer.conversation.id,
      status: "open",
      assigned_to: null,
      handoff_note: null,
      automation: { state: "active", until: null, reason: null },
      last_message_at: "2025-01-02T10:00:00.000Z",
      window_expires_at: expect.any(String),
      unread_count: 0,
      created_at: expect.any(String),
      contact: {
        id: newer.contact.id,
        wa_id: newer.contact.waId,
        name: "Newer",
        phone: newer.contact.phone,
        tags: [],
        attributes: {},
        opted_out: false,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      last_message: expect.objectContaining({
        id: last.id,
        message_id: last.messageId,
        direction: "outbound",
        sender_type: "agent",
        text: "our answer",
        status: "sent",
      }),
    });
    expect(body.conversations[0].last_message).not.toHaveProperty("reactions");
    expect(body.conversations[1].id).toBe(older.conversation.id);
    expect(body.conversations[2]).toMatchObject({ id: empty.conversation.id, last_message: null });
  });

  it("pages with limit and an opaque cursor, without gaps or repeats, also across equal timestamps", async ({
    t,
    owner: { user, accountId },
  }) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      // Three share one timestamp: the id breaks the tie.
      const at = i < 3 ? "2025-03-01T00:00:00Z" : `2025-03-0${i}T00:00:00Z`;
      ids.push((await conversationAt(t, accountId, at, `c${i}`)).conversation.id);
    }
    const full = (await get(t, "/api/conversations", user.headers))
      .json()
      .conversations.map((c: { id: string }) => c.id);
    expect([...full].sort()).toEqual([...ids].sort());

    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `limit=2&cursor=${encodeURIComponent(cursor)}` : "limit=2";
      const page = await get(t, `/api/conversations?${query}`, user.headers);
      expect(page.statusCode).toBe(200);
      const body = page.json();
      sizes.push(body.conversations.length);
      seen.push(...body.conversations.map((c: { id: string }) => c.id));
      cursor = body.next_cursor;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(full);
  });

  it.for([
    ["limit=0", /limit/],
    ["limit=201", /limit/],
    ["limit=abc", /limit/],
    ["limit=1.5", /limit/],
    ["cursor=garbage", /cursor/],
    [`cursor=${Buffer.from('["yesterday","x"]').toString("base64url")}`, /cursor/],
  ] as [string, RegExp][])("answers 400 to %s", async ([query, message], { t }) => {
    const { user } = await signUpWithAccount(t.app);
    const response = await get(t, `/api/conversations?${query}`, user.headers);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(message);
  });

  it("writes each conversation exactly as GET /api/conversations/{id} does (its SQL is read back from the same serializers), keys in order", async ({
    t,
    owner: { user, accountId },
  }) => {
    const hour = 60 * 60 * 1000;
    const plain = await conversationAt(t, accountId, "2025-01-03T10:00:00Z", "Plain");
    const busy = await conversationAt(t, accountId, "2025-01-04T10:00:00Z", "Busy");
    const pausedUntilLater = await conversationAt(t, accountId, "2025-01-05T10:00:00Z", "Later");
    const pauseOver = await conversationAt(t, accountId, "2025-01-06T10:00:00Z", "Over");
    const unnamed = await insertContact(t, { accountId, name: null, phone: null, customerWroteAt: null });
    await t.database.db
      .update(conversations)
      .set({
        status: "pending",
        assignedTo: user.id,
        handoffNote: "Wants a refund",
        automationState: "paused",
        automationUntil: null,
        automationReason: "assigned",
        unreadCount: 3,
        customerMessageAt: new Date("2025-01-04T09:59:58.123Z"),
      })
      .where(eq(conversations.id, busy.conversation.id));
    await t.database.db
      .update(conversations)
      .set({
        automationState: "paused",
        automationUntil: new Date(Date.now() + hour),
        automationReason: "manual",
      })
      .where(eq(conversations.id, pausedUntilLater.conversation.id));
    await t.database.db
      .update(conversations)
      .set({
        automationState: "paused",
        automationUntil: new Date(Date.now() - hour),
        automationReason: "agent_reply",
      })
      .where(eq(conversations.id, pauseOver.conversation.id));
    await t.database.db
      .update(contacts)
      .set({ tags: ["vip", "b2b"], attributes: { plan: "gold", city: 'Köln "Süd"' } })
      .where(eq(contacts.id, busy.contact.id));
    await message(t, { accountId, conversationId: plain.conversation.id, text: "only one" });
    const rich = await message(t, { accountId, conversationId: busy.conversation.id, direction: "outbound" });
    await t.database.db
      .update(messages)
      .set({
        type: "image",
        text: null,
        media: { id: "m1", mime_type: "image/jpeg", caption: 'a "quoted" line\nand ünïcode 👍' },
        payload: { z: 1, a: [1, 2, { b: null }] },
        interactive: { type: "button_reply", id: "yes", title: "Yes" },
        error: { code: 131047, message: "Re-engagement" },
        status: "failed",
        contextMessageId: "wamid.context",
        upstreamTimestamp: new Date("2025-01-04T10:00:00.007Z"),
      })
      .where(eq(messages.id, rich.id));

    const listed = (await get(t, "/api/conversations", user.headers)).json().conversations;
    expect(listed.map((c: { id: string }) => c.id)).toEqual([
      unnamed.conversation.id, // its activity is now
      pauseOver.conversation.id,
      pausedUntilLater.conversation.id,
      busy.conversation.id,
      plain.conversation.id,
    ]);
    for (const conversation of listed) {
      const one = await get(t, `/api/conversations/${conversation.id}`, user.headers);
      expect(one.statusCode).toBe(200);
      // JSON.stringify keeps key order: equal strings are equal values with their keys in the same order.
      expect(JSON.stringify(conversation)).toBe(JSON.stringify(one.json().conversation));
    }
  });

  it("defaults to 50 per page and allows 200", async ({ t, owner: { user, accountId } }) => {
    for (let i = 0; i < 51; i++) await insertContact(t, { accountId });
    const first = (await get(t, "/api/conversations", user.headers)).json();
    expect(first.conversations).toHaveLength(50);
    expect(first.next_cursor).toEqual(expect.any(String));
    const all = (await get(t, "/api/conversations?limit=200", user.headers)).json();
    expect(all.conversations).toHaveLength(51);
    expect(all.next_cursor).toBeNull();
  });
});

describe("GET /api/conversations/:id/messages", () => {
  it("lists oldest first with each message's reactions from agents and the customer", async ({
    t,
    owner: { user, accountId },
  }) => {
    const { contact, conversation } = await insertContact(t, { accountId });
    const question = await message(t, { accountId, conversationId: conversation.id, text: "Open today?" });
    const answer = await message(t, {
      accountId,
      conversationId: conversation.id,
      direction: "outbound",
      text: "Until 6 pm",
    });
    await t.database.db.insert(messageReactions).values([
      {
        accountId,
        messageId: question.id,
        conversationId: conversation.id,
        actorType: "agent",
        actorId: user.id,
        emoji: "👀",
      },
      {
        accountId,
        messageId: answer.id,
        conversationId: conversation.id,
        actorType: "customer",
        actorId: contact.id,
        emoji: "🙏",
      },
    ]);

    const response = await get(t, `/api/conversations/${conversation.id}/messages`, user.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      messages: [
        {
          id: question.id,
          conversation_id: conversation.id,
          message_id: question.messageId,
          direction: "inbound",
          sender_type: "customer",
          sender_user_id: null,
          type: "text",
          text: "Open today?",
          interactive: null,
          media: null,
          payload: null,
          context_message_id: null,
          status: "received",
          error: null,
          upstream_timestamp: null,
          created_at: expect.any(String),
          updated_at: expect.any(String),
          reactions: [{ actor_type: "agent", actor_id: user.id, emoji: "👀" }],
        },
        expect.objectContaining({
          id: answer.id,
          text: "Until 6 pm",
          reactions: [{ actor_type: "customer", actor_id: contact.id, emoji: "🙏" }],
        }),
      ],
      next_cursor: null,
    });
  });

  it("pages through a conversation in order", async ({ t, owner: { user, accountId } }) => {
    const { conversation } = await insertContact(t, { accountId });
    const texts = ["a", "b", "c", "d", "e"];
    for (const text of texts) await message(t, { accountId, conversationId: conversation.id, text });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `limit=2&cursor=${encodeURIComponent(cursor)}` : "limit=2";
      const body = (
        await get(t, `/api/conversations/${conversation.id}/messages?${query}`, user.headers)
      ).json();
      seen.push(...body.messages.map((m: { text: string }) => m.text));
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(texts);
  });
});
