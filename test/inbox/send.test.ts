import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Customer, createCustomer } from "../../src/upstream/sandbox/customer.js";
import { type Sandbox, startSandbox } from "../../src/upstream/sandbox/server.js";
import { insertChannelConfig, insertContact, uniqueDigits } from "../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

const APP_SECRET = "test-secret";
let sandbox: Sandbox;
let t: TestApp;
let webhookUrl: string;

beforeAll(async () => {
  sandbox = await startSandbox();
  t = await createTestApp({
    config: { appSecret: APP_SECRET, graphApiUrl: sandbox.url },
    upstreamTimeoutMs: 500,
  });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  webhookUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/messaging/webhook`;
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});
beforeEach(() => sandbox.clearRequests());

interface Business {
  user: TestUser;
  accountId: string;
  phoneNumberId: string;
  accessToken: string;
}

async function business(): Promise<Business> {
  const { user, accountId } = await signUpWithAccount(t.app);
  const { row, accessToken } = await insertChannelConfig(t, { accountId, userId: user.id });
  sandbox.addNumber({ phoneNumberId: row.phoneNumberId, accessToken });
  return { user, accountId, phoneNumberId: row.phoneNumberId, accessToken };
}

/** A sandbox customer whose every delivery is waited for until the service has processed it. */
function customerOf(b: Business, name = "Sheena Nelson"): Customer {
  const customer = createCustomer({
    webhookUrl,
    appSecret: APP_SECRET,
    phoneNumberId: b.phoneNumberId,
    waId: uniqueDigits(11),
    name,
  });
  const settled =
    <A extends unknown[], R>(deliver: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      const delivery = await deliver(...args);
      await t.app.deps.jobs.drain();
      return delivery;
    };
  return {
    ...customer,
    text: settled(customer.text),
    buttonReply: settled(customer.buttonReply),
    listReply: settled(customer.listReply),
    react: settled(customer.react),
    status: settled(customer.status),
  };
}

const send = (b: Business, conversationId: string, payload: unknown) =>
  t.app.inject({
    method: "POST",
    url: `/api/conversations/${conversationId}/messages`,
    headers: b.user.headers,
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });

async function conversations(b: Business) {
  const response = await t.app.inject({ url: "/api/conversations", headers: b.user.headers });
  return response.json().conversations as Array<{
    id: string;
    contact: { wa_id: string; name: string };
    last_message: Record<string, unknown> | null;
  }>;
}

async function messagesOf(b: Business, conversationId: string) {
  const response = await t.app.inject({
    url: `/api/conversations/${conversationId}/messages`,
    headers: b.user.headers,
  });
  return response.json().messages as Array<Record<string, unknown>>;
}

const sends = () => sandbox.requests().filter((r) => r.method === "POST" && r.path.endsWith("/messages"));

describe("a conversation through the sandbox", () => {
  it("customer writes, the agent answers, the delivery status comes back", async () => {
    const b = await business();
    const customer = customerOf(b);
    const inbound = await customer.text("Do you deliver on Sundays?");
    expect(inbound.status).toBe(200);

    const [conversation] = await conversations(b);
    expect(conversation?.contact.name).toBe("Sheena Nelson");
    expect(conversation?.last_message).toMatchObject({
      text: "Do you deliver on Sundays?",
      message_id: inbound.messageId,
    });

    const response = await send(b, conversation!.id, { text: "  Yes, from 9 to 12.  " });
    expect(response.statusCode).toBe(201);
    const { message } = response.json();
    expect(message).toMatchObject({
      conversation_id: conversation!.id,
      direction: "outbound",
      sender_type: "agent",
      sender_user_id: b.user.id,
      type: "text",
      text: "Yes, from 9 to 12.",
      status: "sent",
      error: null,
    });
    expect(message.message_id).toMatch(/^wamid\./);
    expect(response.body).not.toContain(b.accessToken);

    expect(sends()).toHaveLength(1);
    expect(sends()[0]?.path).toBe(`/${t.config.graphApiVersion}/${b.phoneNumberId}/messages`);
    expect(sends()[0]?.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: conversation!.contact.wa_id,
      type: "text",
      text: { body: "Yes, from 9 to 12." },
      // Our message id, which Meta echoes in the message's status webhooks.
      biz_opaque_callback_data: message.id,
    });

    expect((await customer.status({ messageId: message.message_id, status: "delivered" })).status).toBe(200);
    expect((await customer.status({ messageId: message.message_id, status: "read" })).status).toBe(200);
    expect((await customer.status({ messageId: message.message_id, status: "delivered" })).status).toBe(200);
    expect((await customer.react(message.message_id, "👍")).status).toBe(200);

    const thread = await messagesOf(b, conversation!.id);
    expect(thread.map((m) => [m.sender_type, m.text, m.status])).toEqual([
      ["customer", "Do you deliver on Sundays?", "received"],
      ["agent", "Yes, from 9 to 12.", "read"],
    ]);
    expect(thread[1]?.reactions).toEqual([
      { actor_type: "customer", actor_id: expect.any(String), emoji: "👍" },
    ]);
    expect((await conversations(b))[0]?.last_message).toMatchObject({ id: message.id, status: "read" });
  });

  it("stores button and list replies from the sandbox customer", async () => {
    const b = await business();
    const customer = customerOf(b);
    await customer.buttonReply({ replyId: "yes", title: "Yes" });
    await customer.listReply({ replyId: "large", title: "Large", description: "500 ml" });
    const [conversation] = await conversations(b);
    expect((await messagesOf(b, conversation!.id)).map((m) => m.interactive)).toEqual([
      { type: "button_reply", id: "yes", title: "Yes" },
      { type: "list_reply", id: "large", title: "Large", description: "500 ml" },
    ]);
  });
});

describe("POST /api/conversations/:id/messages", () => {
  it("answers 502 with the upstream error and keeps the message as failed, without upstream id", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId });
    sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      {
        status: 400,
        error: { code: 131030, message: "(#131030) Recipient phone number not in allowed list" },
      },
    );
    const response = await send(b, conversation.id, { text: "Hello?" });
    expect(response.statusCode).toBe(502);
    expect(response.json()).toEqual({
      error: "(#131030) Recipient phone number not in allowed list",
      message: expect.objectContaining({ text: "Hello?", status: "failed", message_id: null }),
    });

    const [stored] = await messagesOf(b, conversation.id);
    expect(stored).toMatchObject({
      text: "Hello?",
      status: "failed",
      message_id: null,
      error: { message: "(#131030) Recipient phone number not in allowed list", code: 131030, kind: "api" },
    });
  });

  it("answers 502 when the upstream does not answer in time, the message kept as failed", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId });
    sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 1500 });
    const response = await send(b, conversation.id, { text: "Anyone there?" });
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/did not answer within 0.5 s/);
    expect(await messagesOf(b, conversation.id)).toEqual([
      expect.objectContaining({ status: "failed", error: expect.objectContaining({ kind: "timeout" }) }),
    ]);
  });

  it("answers 502 for a rejected token without revealing it", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId });
    sandbox.addNumber({ phoneNumberId: b.phoneNumberId, accessToken: "rotated-elsewhere" });
    const response = await send(b, conversation.id, { text: "Hi" });
    expect(response.statusCode).toBe(502);
    expect(response.body).not.toContain(b.accessToken);
    const [stored] = await messagesOf(b, conversation.id);
    expect(stored).toMatchObject({ status: "failed", error: expect.objectContaining({ code: 190 }) });
    expect(JSON.stringify(stored)).not.toContain(b.accessToken);
  });

  it.each([
    ["no text", { msg: "hi" }, /text/],
    ["text that is not a string", { text: 42 }, /text: must be a string/],
    ["empty text", { text: "" }, /text: must not be empty/],
    ["blank text", { text: " \n\t " }, /text: must not be empty/],
    ["a NUL in the text", { text: "a\u0000b" }, /text: must not contain NUL/],
    [
      "an unpaired surrogate in the text",
      { text: "a\ud800b" },
      /text: must not contain NUL characters or unpaired/,
    ],
    ["text over 4096 characters", { text: "x".repeat(4097) }, /at most 4096/],
    ["a body that is not JSON", "{text:", /Invalid JSON/],
    ["a JSON array", [{ text: "hi" }], /Invalid JSON/],
  ])("answers 400 to %s and sends nothing", async (_name, payload, error) => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId });
    const response = await send(b, conversation.id, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(error);
    expect(sends()).toEqual([]);
    expect(await messagesOf(b, conversation.id)).toEqual([]);
  });

  it("sends a text of exactly 4096 characters", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId });
    const response = await send(b, conversation.id, { text: "x".repeat(4096) });
    expect(response.statusCode).toBe(201);
  });

  it("answers 400 when the channel is not configured", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const { conversation } = await insertContact(t, { accountId });
    const response = await t.app.inject({
      method: "POST",
      url: `/api/conversations/${conversation.id}/messages`,
      headers: user.headers,
      payload: { text: "Hi" },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/not configured/);
    expect(sends()).toEqual([]);
  });

  it("answers 400 when the contact has no phone number", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId, phone: null });
    const response = await send(b, conversation.id, { text: "Hi" });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "The contact has no phone number" });
    expect(sends()).toEqual([]);
  });

  it("sends to the digits of a formatted phone number", async () => {
    const b = await business();
    const { conversation } = await insertContact(t, { accountId: b.accountId, phone: "+1 (650) 555-1234" });
    expect((await send(b, conversation.id, { text: "Hi" })).statusCode).toBe(201);
    expect(sends()[0]?.body).toMatchObject({ to: "16505551234" });
  });
});
