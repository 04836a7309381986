import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversations } from "../../../src/db/schema/index.js";
import { insertChannelConfig, insertContact, insertMessage, uniqueDigits } from "../../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../../helpers/harness.js";
import {
  APP_SECRET,
  batch,
  messagesChange,
  postWebhook,
  sign,
  statusChange,
  textBatch,
  textMessage,
  wamid,
} from "./meta.js";

let t: TestApp;

interface Tenant {
  user: TestUser;
  accountId: string;
  phoneNumberId: string;
  verifyToken: string;
}

async function tenant(): Promise<Tenant> {
  const { user, accountId } = await signUpWithAccount(t.app);
  const config = await insertChannelConfig(t, { accountId, userId: user.id });
  return { user, accountId, phoneNumberId: config.row.phoneNumberId, verifyToken: config.verifyToken! };
}

/** The inbox as the tenant's agent sees it. */
async function inbox(who: Tenant) {
  const response = await t.app.inject({ url: "/api/conversations?limit=200", headers: who.user.headers });
  expect(response.statusCode).toBe(200);
  return response.json().conversations as Array<{
    id: string;
    status: string;
    contact: { id: string; wa_id: string; name: string | null; phone: string | null };
    last_message: { text: string | null } | null;
  }>;
}

async function thread(who: Tenant, waId: string) {
  const conversation = (await inbox(who)).find((c) => c.contact.wa_id === waId);
  if (!conversation) return null;
  const response = await t.app.inject({
    url: `/api/conversations/${conversation.id}/messages?limit=200`,
    headers: who.user.headers,
  });
  expect(response.statusCode).toBe(200);
  return { conversation, messages: response.json().messages as Array<Record<string, unknown>> };
}

beforeAll(async () => {
  t = await createTestApp({ config: { appSecret: APP_SECRET } });
});
afterAll(() => t.close());

describe("GET /api/messaging/webhook (handshake)", () => {
  const handshake = (query: string) => t.app.inject({ url: `/api/messaging/webhook?${query}` });

  it("answers the challenge as plain text for an account's verify token", async () => {
    const a = await tenant();
    const response = await handshake(
      `hub.mode=subscribe&hub.verify_token=${encodeURIComponent(a.verifyToken)}&hub.challenge=1158201444`,
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain/);
    expect(response.body).toBe("1158201444");
  });

  it("answers 403 for an unknown token or another mode", async () => {
    const a = await tenant();
    const wrong = await handshake("hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1");
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json()).toEqual({ error: "Verification failed" });
    const mode = await handshake(`hub.mode=unsubscribe&hub.verify_token=${a.verifyToken}&hub.challenge=1`);
    expect(mode.statusCode).toBe(403);
    const empty = await handshake("hub.mode=subscribe&hub.verify_token=&hub.challenge=1");
    expect(empty.statusCode).toBe(403);
  });

  it.each([
    ["no parameters", ""],
    ["no challenge", "hub.mode=subscribe&hub.verify_token=x"],
    ["no token", "hub.mode=subscribe&hub.challenge=1"],
    ["no mode", "hub.verify_token=x&hub.challenge=1"],
  ])("answers 400 with %s", async (_name, query) => {
    const response = await handshake(query);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/hub\.challenge/);
  });
});

describe("POST /api/messaging/webhook: signature", () => {
  it.each([
    ["no signature", () => ({ "x-hub-signature-256": "" })],
    [
      "a signature made with another secret",
      (raw: string) => ({ "x-hub-signature-256": sign(raw, "other") }),
    ],
    ["the signature of another body", () => ({ "x-hub-signature-256": sign("{}") })],
    ["a malformed signature", () => ({ "x-hub-signature-256": "sha256=not-hex" })],
    ["a sha1 signature", (raw: string) => ({ "x-hub-signature-256": sign(raw).replace("sha256", "sha1") })],
  ])("answers 401 and stores nothing with %s", async (_name, headers) => {
    const a = await tenant();
    const body = JSON.stringify(
      textBatch({ phoneNumberId: a.phoneNumberId, from: uniqueDigits(11), body: "hi" }),
    );
    const response = await postWebhook(t.app, body, headers(body));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Invalid signature" });
    expect(await inbox(a)).toEqual([]);
  });

  it("answers 401 to every POST when META_APP_SECRET is not configured", async () => {
    const bare = await createTestApp({ databaseUrl: t.config.databaseUrl, config: { appSecret: undefined } });
    try {
      const response = await postWebhook(bare.app, batch());
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toMatch(/META_APP_SECRET is not configured/);
    } finally {
      await bare.app.close();
      await bare.database.close();
    }
  });

  it("answers 400 to a signed body that is not JSON", async () => {
    const response = await postWebhook(t.app, "not json {");
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "Invalid JSON" });
  });

  it("answers 413 to a body over 1 MiB", async () => {
    const response = await postWebhook(t.app, JSON.stringify({ entry: [], pad: "x".repeat(1024 * 1024) }));
    expect(response.statusCode).toBe(413);
  });
});

describe("POST /api/messaging/webhook: messages", () => {
  it("stores Meta's text example as a contact, a conversation and a message", async () => {
    const a = await tenant();
    const id = wamid();
    const from = uniqueDigits(11);
    const response = await postWebhook(
      t.app,
      textBatch({ phoneNumberId: a.phoneNumberId, from, name: "Sheena Nelson", body: "Another color?", id }),
    );
    expect(response.statusCode).toBe(200);

    const found = await thread(a, from);
    expect(found?.conversation).toMatchObject({
      status: "open",
      contact: { wa_id: from, name: "Sheena Nelson", phone: from, tags: [] },
      last_message: { text: "Another color?" },
    });
    expect(found?.messages).toEqual([
      expect.objectContaining({
        message_id: id,
        direction: "inbound",
        sender_type: "customer",
        type: "text",
        text: "Another color?",
        status: "received",
        upstream_timestamp: "2025-06-08T20:59:43.000Z",
        reactions: [],
      }),
    ]);
  });

  it("stores button and list replies with their ids, titles and the message they answer", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const buttonContext = wamid();
    const response = await postWebhook(
      t.app,
      batch(
        messagesChange(a.phoneNumberId, [
          {
            context: { from: "15550783881", id: buttonContext },
            from,
            id: wamid(),
            timestamp: "1750025136",
            type: "interactive",
            interactive: { type: "button_reply", button_reply: { id: "cancel-button", title: "Cancel" } },
          },
          {
            context: { from: "15550783881", id: wamid() },
            from,
            id: wamid(),
            timestamp: "1750025137",
            type: "interactive",
            interactive: {
              type: "list_reply",
              list_reply: {
                id: "priority_express",
                title: "Priority Mail Express",
                description: "Next Day to 2 Days",
              },
            },
          },
          {
            from,
            id: wamid(),
            timestamp: "1750091045",
            type: "button",
            button: { payload: "Unsubscribe", text: "Unsubscribe" },
          },
        ]),
      ),
    );
    expect(response.statusCode).toBe(200);
    const found = await thread(a, from);
    expect(found?.messages.map((m) => [m.type, m.interactive, m.text])).toEqual([
      ["interactive", { type: "button_reply", id: "cancel-button", title: "Cancel" }, "Cancel"],
      [
        "interactive",
        {
          type: "list_reply",
          id: "priority_express",
          title: "Priority Mail Express",
          description: "Next Day to 2 Days",
        },
        "Priority Mail Express",
      ],
      ["button", { type: "button", id: "Unsubscribe", title: "Unsubscribe" }, "Unsubscribe"],
    ]);
    expect(found?.messages[0]?.context_message_id).toBe(buttonContext);
  });

  it("stores media metadata, and unmodelled types as unsupported with their original payload", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const location = {
      address: "101 Forest Ave, Palo Alto, CA 94301",
      latitude: 37.44221496582,
      longitude: -122.16165924072,
      name: "Philz Coffee",
    };
    const response = await postWebhook(
      t.app,
      batch(
        messagesChange(a.phoneNumberId, [
          {
            from,
            id: wamid(),
            timestamp: "1744344496",
            type: "image",
            image: {
              caption: "Taj Mahal",
              mime_type: "image/jpeg",
              sha256: "SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=",
              id: "1003383421387256",
            },
          },
          { from, id: wamid(), timestamp: "1744344497", type: "location", location },
          {
            from,
            id: wamid(),
            timestamp: "1750090702",
            type: "unsupported",
            errors: [{ code: 131051, title: "Message type unknown" }],
          },
          { from, id: wamid(), timestamp: "1750090703", type: "hologram", hologram: { depth: 3 } },
          // Known type, unexpected shape: kept rather than lost.
          { from, id: wamid(), timestamp: "1750090704", type: "text", text: "not an object" },
        ]),
      ),
    );
    expect(response.statusCode).toBe(200);
    const found = await thread(a, from);
    expect(found?.messages.map((m) => [m.type, m.media, m.payload])).toEqual([
      [
        "image",
        {
          id: "1003383421387256",
          mime_type: "image/jpeg",
          sha256: "SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=",
          caption: "Taj Mahal",
          status: expect.stringMatching(/^(pending|failed)$/),
        },
        null,
      ],
      ["unsupported", null, { type: "location", location }],
      [
        "unsupported",
        null,
        { type: "unsupported", errors: [{ code: 131051, title: "Message type unknown" }] },
      ],
      ["unsupported", null, { type: "hologram", hologram: { depth: 3 } }],
      ["unsupported", null, { type: "text", text: "not an object" }],
    ]);
  });

  it("keeps a newer profile name and reopens a closed conversation when the customer writes again", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    await postWebhook(t.app, textBatch({ phoneNumberId: a.phoneNumberId, from, name: "Old", body: "one" }));
    const first = await thread(a, from);
    await t.database.db
      .update(conversations)
      .set({ status: "closed" })
      .where(eq(conversations.id, first!.conversation.id));

    await postWebhook(t.app, textBatch({ phoneNumberId: a.phoneNumberId, from, name: "New", body: "two" }));
    const again = await thread(a, from);
    expect(again?.conversation.id).toBe(first?.conversation.id);
    expect(again?.conversation).toMatchObject({ status: "open", contact: { name: "New" } });
    expect(again?.messages.map((m) => m.text)).toEqual(["one", "two"]);
  });

  it("stores a batch of 100 messages, listed in the order they were sent", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const messages = Array.from({ length: 100 }, (_, i) => textMessage(from, `message ${i}`));
    const response = await postWebhook(t.app, batch(messagesChange(a.phoneNumberId, messages)));
    expect(response.statusCode).toBe(200);
    const found = await thread(a, from);
    expect(found?.messages.map((m) => m.text)).toEqual(messages.map((m) => m.text.body));
  });

  it("routes several entries of one batch to their accounts and ignores unknown numbers", async () => {
    const a = await tenant();
    const b = await tenant();
    const fromA = uniqueDigits(11);
    const fromB = uniqueDigits(11);
    const response = await postWebhook(t.app, {
      object: "whatsapp_business_account",
      entry: [
        { id: "1", changes: [messagesChange(a.phoneNumberId, [textMessage(fromA, "for a")])] },
        { id: "2", changes: [messagesChange(uniqueDigits(15), [textMessage(fromA, "for nobody")])] },
        { id: "3", changes: [messagesChange(b.phoneNumberId, [textMessage(fromB, "for b")])] },
      ],
    });
    expect(response.statusCode).toBe(200);
    expect((await inbox(a)).map((c) => [c.contact.wa_id, c.last_message?.text])).toEqual([[fromA, "for a"]]);
    expect((await inbox(b)).map((c) => [c.contact.wa_id, c.last_message?.text])).toEqual([[fromB, "for b"]]);
  });

  it.each([
    ["an empty object", {}],
    ["entry that is not an array", { entry: "x" }],
    ["an entry without changes", { entry: [{ id: "1" }] }],
    ["changes that are not an array", { entry: [{ changes: {} }] }],
    ["a change without value", { entry: [{ changes: [{ field: "messages" }] }] }],
    ["a change without metadata", { entry: [{ changes: [{ field: "messages", value: { messages: [] } }] }] }],
    ["a JSON array", [1, 2]],
    ["a JSON string", "hello"],
    ["null", null],
  ])("acknowledges %s with 200", async (_name, body) => {
    const response = await postWebhook(t.app, JSON.stringify(body));
    expect(response.statusCode).toBe(200);
  });

  it("keeps the valid messages beside malformed ones", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const response = await postWebhook(t.app, {
      entry: [
        "not an entry",
        { changes: "not changes" },
        {
          changes: [
            { field: "messages", value: { metadata: {}, messages: [textMessage(from, "lost")] } },
            { field: "messages", value: { metadata: { phone_number_id: 42 } } },
            {
              field: "messages",
              value: {
                metadata: { phone_number_id: a.phoneNumberId },
                contacts: "not a list",
                messages: [
                  null,
                  { from, type: "text", text: { body: "no id" } },
                  { id: wamid(), type: "text", text: { body: "no from" } },
                  { from: 16505551234, id: wamid(), type: "text", text: { body: "numeric from" } },
                  textMessage(from, "kept 1"),
                  { from, id: wamid(), type: "reaction", reaction: {} },
                  textMessage(from, "with a NUL \u0000 and a lone \ud800 surrogate"),
                ],
                statuses: "not a list",
              },
            },
            { field: "messages", value: { metadata: { phone_number_id: a.phoneNumberId }, messages: {} } },
          ],
        },
        { changes: [messagesChange(a.phoneNumberId, [textMessage(from, "kept 2")])] },
      ],
    });
    expect(response.statusCode).toBe(200);
    const found = await thread(a, from);
    expect(found?.messages.map((m) => m.text)).toEqual([
      "kept 1",
      "with a NUL \ufffd and a lone \ufffd surrogate",
      "kept 2",
    ]);
  });

  it("stores a message delivered twice once, also when the deliveries are concurrent", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const body = JSON.stringify(textBatch({ phoneNumberId: a.phoneNumberId, from, body: "once" }));
    const responses = await Promise.all(Array.from({ length: 8 }, () => postWebhook(t.app, body)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    expect((await postWebhook(t.app, body)).statusCode).toBe(200);
    expect((await inbox(a)).length).toBe(1);
    expect((await thread(a, from))?.messages.map((m) => m.text)).toEqual(["once"]);
  });

  it("isolates accounts: the same customer and message id stay separate per business number", async () => {
    const a = await tenant();
    const b = await tenant();
    const from = uniqueDigits(11);
    const id = wamid();
    await postWebhook(t.app, textBatch({ phoneNumberId: a.phoneNumberId, from, body: "to a", id }));
    await postWebhook(t.app, textBatch({ phoneNumberId: b.phoneNumberId, from, body: "to b", id }));
    const inA = await thread(a, from);
    const inB = await thread(b, from);
    expect(inA?.messages.map((m) => m.text)).toEqual(["to a"]);
    expect(inB?.messages.map((m) => m.text)).toEqual(["to b"]);
    expect(inA?.conversation.id).not.toBe(inB?.conversation.id);

    const peek = await t.app.inject({
      url: `/api/conversations/${inB?.conversation.id}/messages`,
      headers: a.user.headers,
    });
    expect(peek.statusCode).toBe(404);
  });
});

describe("POST /api/messaging/webhook: storage failure", () => {
  it("acknowledges the delivery, keeps the changes beside a failed one, and stores the failed one once on the job's retry", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    // A real storage failure for one change: PostgreSQL itself refuses the row.
    await t.database.pool.query(`
      create function refuse_marked_text() returns trigger language plpgsql as $$
      begin
        if new.text = 'refused by the database' then raise exception 'disk on fire'; end if;
        return new;
      end $$;
      create trigger refuse_marked_text before insert on messages
        for each row execute function refuse_marked_text();`);
    const body = JSON.stringify({
      entry: [
        { changes: [messagesChange(a.phoneNumberId, [textMessage(from, "stored")])] },
        { changes: [messagesChange(a.phoneNumberId, [textMessage(from, "refused by the database")])] },
      ],
    });
    try {
      const accepted = await postWebhook(t.app, body);
      expect(accepted.statusCode).toBe(200);
      expect((await thread(a, from))?.messages.map((m) => m.text)).toEqual(["stored"]);
      const { rows } = await t.database.pool.query<{ attempts: number; last_error: string }>(
        `select attempts, last_error from graphile_worker._private_jobs
          where locked_at is null and attempts > 0 and payload::jsonb ? 'delivery'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]?.last_error).toContain("could not be processed");
    } finally {
      await t.database.pool.query(
        "drop trigger refuse_marked_text on messages; drop function refuse_marked_text();",
      );
    }
    // The job's next attempt (brought forward instead of waiting for its backoff).
    await t.database.pool.query("update graphile_worker._private_jobs set run_at = now() where attempts > 0");
    await t.app.deps.jobs.drain();
    expect((await thread(a, from))?.messages.map((m) => m.text)).toEqual([
      "stored",
      "refused by the database",
    ]);
  });
});

describe("POST /api/messaging/webhook: reactions", () => {
  async function outboundTo(a: Tenant) {
    const { contact, conversation } = await insertContact(t, { accountId: a.accountId });
    const message = await insertMessage(t, {
      accountId: a.accountId,
      conversationId: conversation.id,
      direction: "outbound",
      text: "Our offer",
    });
    return { contact, conversation, message };
  }
  const react = (a: Tenant, from: string, target: string, emoji?: string) =>
    postWebhook(
      t.app,
      batch(
        messagesChange(a.phoneNumberId, [
          {
            from,
            id: wamid(),
            timestamp: "1749419544",
            type: "reaction",
            reaction: { message_id: target, ...(emoji === undefined ? {} : { emoji }) },
          },
        ]),
      ),
    );

  it("records, replaces and removes a customer's reaction", async () => {
    const a = await tenant();
    const { contact, message } = await outboundTo(a);
    const reactions = async () =>
      (await thread(a, contact.waId))?.messages.find((m) => m.id === message.id)?.reactions;

    expect((await react(a, contact.waId, message.messageId!, "👍")).statusCode).toBe(200);
    expect(await reactions()).toEqual([{ actor_type: "customer", actor_id: contact.id, emoji: "👍" }]);
    await react(a, contact.waId, message.messageId!, "❤️");
    expect(await reactions()).toEqual([{ actor_type: "customer", actor_id: contact.id, emoji: "❤️" }]);
    await react(a, contact.waId, message.messageId!, "");
    expect(await reactions()).toEqual([]);
    await react(a, contact.waId, message.messageId!, "🎉");
    await react(a, contact.waId, message.messageId!);
    expect(await reactions()).toEqual([]);
  });

  it("is not a message: no new message row", async () => {
    const a = await tenant();
    const { contact, message } = await outboundTo(a);
    await react(a, contact.waId, message.messageId!, "👍");
    expect((await thread(a, contact.waId))?.messages.map((m) => m.id)).toEqual([message.id]);
  });

  it("ignores reactions to unknown messages and to another customer's or account's messages", async () => {
    const a = await tenant();
    const b = await tenant();
    const mine = await outboundTo(a);
    const theirs = await outboundTo(a);
    const otherAccount = await outboundTo(b);
    expect((await react(a, mine.contact.waId, wamid(), "👍")).statusCode).toBe(200);
    expect((await react(a, mine.contact.waId, theirs.message.messageId!, "👍")).statusCode).toBe(200);
    expect((await react(a, mine.contact.waId, otherAccount.message.messageId!, "👍")).statusCode).toBe(200);
    for (const [who, c] of [
      [a, mine],
      [a, theirs],
      [b, otherAccount],
    ] as const) {
      expect((await thread(who, c.contact.waId))?.messages.map((m) => m.reactions)).toEqual([[]]);
    }
  });
});

describe("POST /api/messaging/webhook: statuses", () => {
  async function sent(a: Tenant) {
    const { contact, conversation } = await insertContact(t, { accountId: a.accountId });
    const message = await insertMessage(t, {
      accountId: a.accountId,
      conversationId: conversation.id,
      direction: "outbound",
    });
    const view = async () => (await thread(a, contact.waId))?.messages.find((m) => m.id === message.id);
    return { message, view };
  }
  const report = (a: Tenant, id: string, status: string, errors?: unknown[]) =>
    postWebhook(t.app, batch(statusChange(a.phoneNumberId, [{ id, status, ...(errors ? { errors } : {}) }])));

  it("moves an outbound message forward: sent, delivered, read", async () => {
    const a = await tenant();
    const { message, view } = await sent(a);
    expect((await report(a, message.messageId!, "delivered")).statusCode).toBe(200);
    expect((await view())?.status).toBe("delivered");
    await report(a, message.messageId!, "read");
    expect((await view())?.status).toBe("read");
  });

  it("never moves backwards, and a read message stays read when Meta reports a failure", async () => {
    const a = await tenant();
    const { message, view } = await sent(a);
    await report(a, message.messageId!, "read");
    await report(a, message.messageId!, "delivered");
    await report(a, message.messageId!, "sent");
    await report(a, message.messageId!, "failed", [{ code: 131047, title: "Re-engagement message" }]);
    expect(await view()).toMatchObject({ status: "read", error: null });
  });

  it("stores a failure with Meta's error, and nothing later revives the message", async () => {
    const a = await tenant();
    const { message, view } = await sent(a);
    await report(a, message.messageId!, "failed", [
      {
        code: 131026,
        title: "Message undeliverable",
        message: "Message undeliverable",
        error_data: { details: "Message Undeliverable." },
      },
    ]);
    await report(a, message.messageId!, "delivered");
    expect(await view()).toMatchObject({
      status: "failed",
      error: {
        code: 131026,
        title: "Message undeliverable",
        message: "Message undeliverable",
        details: "Message Undeliverable.",
      },
    });
  });

  it("applies a batch of statuses in order and ignores unknown ids, unknown statuses and other accounts", async () => {
    const a = await tenant();
    const b = await tenant();
    const { message, view } = await sent(a);
    const other = await sent(b);
    const response = await postWebhook(
      t.app,
      batch(
        statusChange(a.phoneNumberId, [
          { id: message.messageId!, status: "delivered" },
          { id: wamid(), status: "read" },
          { id: message.messageId!, status: "deleted" },
          { id: other.message.messageId!, status: "read" },
        ]),
      ),
    );
    expect(response.statusCode).toBe(200);
    expect((await view())?.status).toBe("delivered");
    expect((await other.view())?.status).toBe("sent");
  });

  it("does not change inbound messages", async () => {
    const a = await tenant();
    const from = uniqueDigits(11);
    const id = wamid();
    await postWebhook(t.app, textBatch({ phoneNumberId: a.phoneNumberId, from, body: "hi", id }));
    await report(a, id, "read");
    expect((await thread(a, from))?.messages[0]?.status).toBe("received");
  });
});
