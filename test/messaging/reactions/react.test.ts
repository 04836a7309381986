import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Sandbox, startSandbox } from "../../../src/upstream/sandbox/server.js";
import { insertChannelConfig, insertContact, insertMessage, uniqueDigits } from "../../helpers/fixtures.js";
import {
  addMember,
  createTestApp,
  signUp,
  signUpWithAccount,
  type TestApp,
  type TestUser,
} from "../../helpers/harness.js";

let sandbox: Sandbox;
let t: TestApp;
const tokens: string[] = [];

beforeAll(async () => {
  sandbox = await startSandbox();
  t = await createTestApp({
    config: { graphApiUrl: sandbox.url, reactRateLimit: { points: 1000, durationSeconds: 60 } },
    captureLogs: true,
    upstreamTimeoutMs: 500,
  });
});
afterAll(async () => {
  await t?.close();
  await sandbox?.close();
});
beforeEach(() => sandbox.clearRequests());

/** An account with a connected channel, a contact and one inbound message from them. */
async function world(options: { phone?: string | null; configured?: boolean } = {}) {
  const { user, accountId } = await signUpWithAccount(t.app);
  const phoneNumberId = uniqueDigits(15);
  let accessToken: string | undefined;
  if (options.configured !== false) {
    const saved = await insertChannelConfig(t, { accountId, userId: user.id, phoneNumberId });
    accessToken = saved.accessToken;
    tokens.push(accessToken);
    sandbox.addNumber({ phoneNumberId, accessToken });
  }
  const { contact, conversation } = await insertContact(t, {
    accountId,
    phone: options.phone === undefined ? "+44 (7700) 900-123" : options.phone,
  });
  const message = await insertMessage(t, { accountId, conversationId: conversation.id });
  return { user, accountId, phoneNumberId, accessToken, contact, conversation, message };
}

const answers: string[] = [];

async function react(user: TestUser | undefined, payload: unknown) {
  const response = await t.app.inject({
    method: "POST",
    url: "/api/messaging/react",
    headers: { ...user?.headers, "content-type": "application/json" },
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });
  answers.push(response.body);
  return response;
}

async function reactionRows(messageId: string) {
  const { rows } = await t.database.pool.query<{
    actor_type: string;
    actor_id: string;
    emoji: string;
    conversation_id: string;
    account_id: string;
  }>(
    `select actor_type, actor_id, emoji, conversation_id, account_id
       from message_reactions where message_id = $1 order by actor_type, created_at`,
    [messageId],
  );
  return rows;
}

const sends = () => sandbox.requests().filter((r) => r.method === "POST" && r.path.endsWith("/messages"));

describe("POST /api/messaging/react: checks in the spec's order", () => {
  it("answers 401 Unauthorized without a session", async () => {
    const response = await react(undefined, { message_id: crypto.randomUUID(), emoji: "👍" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 403 when the caller's profile has no account, even with a bad body", async () => {
    const loner = await signUp(t.app);
    for (const payload of [{ message_id: crypto.randomUUID(), emoji: "👍" }, {}, "{not json"]) {
      const response = await react(loner, payload);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ error: expect.any(String) });
    }
  });

  it.each([
    ["message_id missing", { message_id: undefined, emoji: "👍" }],
    ["message_id null", { message_id: null, emoji: "👍" }],
    ["message_id a number", { message_id: 42, emoji: "👍" }],
    ["message_id empty", { message_id: "", emoji: "👍" }],
    ["emoji missing", { emoji: undefined }],
    ["emoji null", { emoji: null }],
    ["emoji a number", { emoji: 1 }],
    ["emoji an array", { emoji: ["👍"] }],
    ["a JSON array body", []],
    ["a JSON string body", '"👍"'],
    ["a JSON null body", "null"],
  ])("answers 400 when %s", async (_name, body) => {
    const w = await world();
    const payload =
      typeof body === "string" || Array.isArray(body) ? body : { message_id: w.message.id, ...body };
    const response = await react(w.user, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.any(String) });
    expect(sends()).toHaveLength(0);
  });

  it.each([
    ["plain text", "ok"],
    ["two emoji", "👍👍"],
    ["a digit without keycap", "1"],
    ["whitespace", " "],
    ["an emoji with a trailing space", "👍 "],
  ])("answers 400 for %s as emoji, before any upstream call", async (_name, emoji) => {
    const w = await world();
    const response = await react(w.user, { message_id: w.message.id, emoji });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/one emoji/);
    expect(sends()).toHaveLength(0);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  it("checks the body (step 4) before looking the message up (step 5)", async () => {
    const w = await world();
    const response = await react(w.user, { message_id: crypto.randomUUID(), emoji: "no" });
    expect(response.statusCode).toBe(400);
  });

  it.each([
    ["an unknown message id", () => crypto.randomUUID()],
    ["a malformed message id", () => "not-a-uuid"],
    ["an upstream wamid instead of the internal id", () => "wamid.HBgLMTY1MDU1NTAxMjMVAgARGBI"],
  ])("answers 404 Message not found for %s", async (_name, id) => {
    const w = await world();
    const response = await react(w.user, { message_id: id(), emoji: "👍" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Message not found" });
    expect(sends()).toHaveLength(0);
  });

  it("answers 404 Message not found for another account's message", async () => {
    const mine = await world();
    const theirs = await world();
    const response = await react(mine.user, { message_id: theirs.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Message not found" });
    expect(await reactionRows(theirs.message.id)).toEqual([]);
    expect(sends()).toHaveLength(0);
  });

  it("answers 400 for a message that was never sent upstream", async () => {
    const w = await world();
    const unsent = await insertMessage(t, {
      accountId: w.accountId,
      conversationId: w.conversation.id,
      direction: "outbound",
      messageId: null,
    });
    const response = await react(w.user, { message_id: unsent.id, emoji: "👍" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/never sent/);
    expect(sends()).toHaveLength(0);
  });

  it("answers 404 Conversation not found when the message's conversation is outside the caller's account", async () => {
    const mine = await world();
    const theirs = await world();
    const stray = await insertMessage(t, {
      accountId: mine.accountId,
      conversationId: theirs.conversation.id,
    });
    const response = await react(mine.user, { message_id: stray.id, emoji: "👍" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Conversation not found" });
    expect(sends()).toHaveLength(0);
  });

  it.each([
    ["no phone", null],
    ["a phone without digits", "n/a"],
  ])("answers 400 when the contact has %s", async (_name, phone) => {
    const w = await world({ phone });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/no phone/);
    expect(sends()).toHaveLength(0);
  });

  it("answers 400 saying the messaging channel is not configured", async () => {
    const w = await world({ configured: false });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/messaging channel is not configured/);
    expect(response.json().error).not.toMatch(/WhatsApp not configured/);
  });

  it("checks that the message was sent (step 6) before the channel configuration (step 9)", async () => {
    const w = await world({ configured: false, phone: null });
    const unsent = await insertMessage(t, {
      accountId: w.accountId,
      conversationId: w.conversation.id,
      direction: "outbound",
      messageId: null,
    });
    const response = await react(w.user, { message_id: unsent.id, emoji: "👍" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/never sent/);
  });

  it("checks the contact's phone (step 8) before the channel configuration (step 9)", async () => {
    const w = await world({ configured: false, phone: null });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/no phone/);
  });

  it.each([
    ["invalid JSON", "{not json"],
    ["a truncated body", '{"message_id": "x", "emoji": "👍"'],
    ["an empty body", ""],
  ])("answers 500 Failed to react to message for %s", async (_name, raw) => {
    const w = await world();
    const response = await react(w.user, raw);
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Failed to react to message" });
    expect(sends()).toHaveLength(0);
  });

  it("answers 500 Failed to react to message when the stored token cannot be decrypted", async () => {
    const w = await world();
    await t.database.pool.query("update messaging_configs set access_token = $1 where account_id = $2", [
      "v1:garbage:garbage:garbage",
      w.accountId,
    ]);
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Failed to react to message" });
    expect(sends()).toHaveLength(0);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });
});

it("documents the endpoint in the OpenAPI description", async () => {
  const response = await t.app.inject({ url: "/api/openapi.json" });
  const operation = response.json().paths["/api/messaging/react"]?.post;
  expect(operation?.requestBody?.content?.["application/json"]?.schema?.required).toEqual([
    "message_id",
    "emoji",
  ]);
  expect(Object.keys(operation?.responses ?? {})).toEqual(
    expect.arrayContaining(["200", "400", "401", "403", "404", "429", "500", "502"]),
  );
});

describe("POST /api/messaging/react: sending and mirroring", () => {
  it("sends the reaction upstream to the contact's digits and stores the caller's agent row", async () => {
    const w = await world();
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍🏽" });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true });

    const [sent, ...more] = sends();
    expect(more).toHaveLength(0);
    expect(sent?.path).toBe(`/${t.config.graphApiVersion}/${w.phoneNumberId}/messages`);
    expect(sent?.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "447700900123",
      type: "reaction",
      reaction: { message_id: w.message.messageId, emoji: "👍🏽" },
    });

    expect(await reactionRows(w.message.id)).toEqual([
      {
        actor_type: "agent",
        actor_id: w.user.id,
        emoji: "👍🏽",
        conversation_id: w.conversation.id,
        account_id: w.accountId,
      },
    ]);
  });

  it("replaces the caller's previous emoji: one row with the new one", async () => {
    const w = await world();
    expect((await react(w.user, { message_id: w.message.id, emoji: "👍" })).statusCode).toBe(200);
    expect((await react(w.user, { message_id: w.message.id, emoji: "🇫🇷" })).statusCode).toBe(200);
    const rows = await reactionRows(w.message.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor_type: "agent", actor_id: w.user.id, emoji: "🇫🇷" });
  });

  it('removes the caller\'s reaction with "" upstream and locally', async () => {
    const w = await world();
    await react(w.user, { message_id: w.message.id, emoji: "❤️" });
    sandbox.clearRequests();

    const response = await react(w.user, { message_id: w.message.id, emoji: "" });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true });
    expect(sends().map((r) => (r.body as { reaction: unknown }).reaction)).toEqual([
      { message_id: w.message.messageId, emoji: "" },
    ]);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  it('answers 200 for "" when the caller had no reaction', async () => {
    const w = await world();
    const response = await react(w.user, { message_id: w.message.id, emoji: "" });
    expect(response.statusCode).toBe(200);
    expect(sends()).toHaveLength(1);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  it("keeps teammates' reactions as separate rows; removing one leaves the other", async () => {
    const w = await world();
    const teammate = await addMember(t.app, w.user);
    expect((await react(w.user, { message_id: w.message.id, emoji: "👍" })).statusCode).toBe(200);
    expect((await react(teammate, { message_id: w.message.id, emoji: "🎉" })).statusCode).toBe(200);
    expect((await reactionRows(w.message.id)).map((r) => [r.actor_id, r.emoji]).sort()).toEqual(
      [
        [w.user.id, "👍"],
        [teammate.id, "🎉"],
      ].sort(),
    );

    expect((await react(teammate, { message_id: w.message.id, emoji: "" })).statusCode).toBe(200);
    expect((await reactionRows(w.message.id)).map((r) => [r.actor_id, r.emoji])).toEqual([[w.user.id, "👍"]]);
  });

  it("never overwrites or removes the customer's own reaction", async () => {
    const w = await world();
    await t.database.pool.query(
      `insert into message_reactions (account_id, message_id, conversation_id, actor_type, actor_id, emoji)
       values ($1, $2, $3, 'customer', $4, '😮')`,
      [w.accountId, w.message.id, w.conversation.id, w.contact.id],
    );
    expect((await react(w.user, { message_id: w.message.id, emoji: "👍" })).statusCode).toBe(200);
    expect((await react(w.user, { message_id: w.message.id, emoji: "🙏" })).statusCode).toBe(200);
    expect((await reactionRows(w.message.id)).map((r) => [r.actor_type, r.actor_id, r.emoji])).toEqual([
      ["agent", w.user.id, "🙏"],
      ["customer", w.contact.id, "😮"],
    ]);

    expect((await react(w.user, { message_id: w.message.id, emoji: "" })).statusCode).toBe(200);
    expect((await reactionRows(w.message.id)).map((r) => [r.actor_type, r.emoji])).toEqual([
      ["customer", "😮"],
    ]);
  });

  it("answers 502 carrying the upstream message and writes nothing when upstream rejects the reaction", async () => {
    const w = await world();
    expect((await react(w.user, { message_id: w.message.id, emoji: "👍" })).statusCode).toBe(200);
    sandbox.inject(
      { method: "POST", path: `/${t.config.graphApiVersion}/${w.phoneNumberId}/messages` },
      { status: 400, error: { code: 131009, message: "(#131009) Parameter value is not valid" } },
    );

    const response = await react(w.user, { message_id: w.message.id, emoji: "🎉" });
    expect(response.statusCode).toBe(502);
    expect(response.json()).toEqual({
      error: expect.stringContaining("(#131009) Parameter value is not valid"),
    });
    expect(sends()).toHaveLength(2);
    expect((await reactionRows(w.message.id)).map((r) => r.emoji)).toEqual(["👍"]);
  });

  it("answers 502 and keeps the row when a removal fails upstream", async () => {
    const w = await world();
    await react(w.user, { message_id: w.message.id, emoji: "👍" });
    sandbox.inject({ method: "POST" }, { status: 503 });
    const response = await react(w.user, { message_id: w.message.id, emoji: "" });
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/Service temporarily unavailable/);
    expect(await reactionRows(w.message.id)).toHaveLength(1);
  });

  it("answers 502 when upstream drops the connection", async () => {
    const w = await world();
    sandbox.inject({ method: "POST" }, { drop: true });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(502);
    expect(response.json()).toEqual({ error: expect.any(String) });
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  it("answers 502 when upstream does not answer in time", async () => {
    const w = await world();
    sandbox.inject({ method: "POST" }, { delayMs: 1500 });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/did not answer within/);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  it("answers 502 with the upstream's text when the stored token is refused (code 190)", async () => {
    const w = await world();
    sandbox.addNumber({ phoneNumberId: w.phoneNumberId, accessToken: "EAAGrotated" });
    const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/Invalid OAuth access token/);
    expect(await reactionRows(w.message.id)).toEqual([]);
  });

  describe("when the local write fails after the upstream send", () => {
    beforeAll(async () => {
      await t.database.pool.query(`
        create function test_fail_reaction_write() returns trigger language plpgsql
          as $$ begin raise exception 'simulated storage failure'; end $$;`);
    });
    afterAll(async () => {
      await t.database.pool.query("drop function test_fail_reaction_write() cascade");
    });
    const breakWrites = () =>
      t.database.pool.query(`create trigger test_fail_reaction_write
        before insert or update or delete on message_reactions
        for each row execute function test_fail_reaction_write()`);
    const repairWrites = () =>
      t.database.pool.query("drop trigger test_fail_reaction_write on message_reactions");

    it("answers 500 saying the reaction was sent upstream but not saved, for a new emoji", async () => {
      const w = await world();
      await breakWrites();
      try {
        const response = await react(w.user, { message_id: w.message.id, emoji: "👍" });
        expect(response.statusCode).toBe(500);
        expect(response.json()).toEqual({
          error: "The reaction was sent to WhatsApp but saving it locally failed",
        });
        expect(sends()).toHaveLength(1);
      } finally {
        await repairWrites();
      }
      expect(await reactionRows(w.message.id)).toEqual([]);
    });

    it("answers the same 500 for a removal", async () => {
      const w = await world();
      await react(w.user, { message_id: w.message.id, emoji: "👍" });
      await breakWrites();
      try {
        const response = await react(w.user, { message_id: w.message.id, emoji: "" });
        expect(response.statusCode).toBe(500);
        expect(response.json().error).toMatch(/sent to WhatsApp but saving it locally failed/);
      } finally {
        await repairWrites();
      }
    });
  });

  it("never writes an access token into a response or a log line", async () => {
    expect(tokens.length).toBeGreaterThan(5);
    const logs = t.logs();
    expect(logs).toContain("simulated storage failure");
    for (const token of tokens) {
      expect(logs).not.toContain(token);
      for (const body of answers) expect(body).not.toContain(token);
    }
  });
});
