import { describe, expect } from "vitest";
import { isWindowOpen, WINDOW_MS, windowExpiresAt } from "../../src/inbox/window.js";
import { insertContact, sandboxTest as it } from "../helpers/fixtures.js";
import {
  type Business,
  business,
  conversationsOf,
  messagesOf,
  type SandboxedApp,
  upstreamCalls,
} from "../helpers/sandbox-app.js";

const HOUR = 60 * 60 * 1000;
const unix = (ms: number) => Math.floor(ms / 1000);

const send = (s: SandboxedApp, b: Business, conversationId: string, payload: unknown) =>
  s.t.app.inject({
    method: "POST",
    url: `/api/conversations/${conversationId}/messages`,
    headers: { ...b.user.headers, "content-type": "application/json" },
    payload: JSON.stringify(payload),
  });
const read = (s: SandboxedApp, b: Business, conversationId: string) =>
  s.t.app.inject({
    method: "POST",
    url: `/api/conversations/${conversationId}/read`,
    headers: b.user.headers,
  });

describe("the 24-hour window", () => {
  it("runs from Meta's timestamp of the customer's last message", async ({ s, biz: b, customer }) => {
    const wrote = unix(Date.now() - 23 * HOUR);
    await customer.text("Still open?", { timestamp: wrote });
    const [conversation] = await conversationsOf(s, b);
    expect(conversation.window_expires_at).toBe(new Date(wrote * 1000 + WINDOW_MS).toISOString());

    // An older message delivered late does not shorten the window.
    await customer.text("late delivery", { timestamp: wrote - 3600 });
    expect((await conversationsOf(s, b))[0].window_expires_at).toBe(conversation.window_expires_at);

    const response = await send(s, b, conversation.id, { text: "Yes, for another hour" });
    expect(response.statusCode).toBe(201);
  });

  it("answers 422 window_closed to a free-form send after it, before any upstream call", async ({
    s,
    biz: b,
    customer,
  }) => {
    await customer.text("Hello yesterday", { timestamp: unix(Date.now() - 25 * HOUR) });
    const [conversation] = await conversationsOf(s, b);
    s.sandbox.clearRequests();
    const response = await send(s, b, conversation.id, { text: "Sorry for the delay" });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toEqual({
      error: "The 24-hour customer service window has closed: only an approved template can be sent now",
      code: "window_closed",
    });
    expect(s.sandbox.requests()).toEqual([]);
    expect((await messagesOf(s, b, conversation.id)).map((m) => m.text)).toEqual(["Hello yesterday"]);
  });

  it("is null and closed when the customer never wrote", async ({ s, biz: b }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId, customerWroteAt: null });
    expect((await conversationsOf(s, b))[0].window_expires_at).toBeNull();
    const response = await send(s, b, conversation.id, { text: "Hi!" });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toEqual({
      error: expect.stringMatching(/has not written yet/),
      code: "window_closed",
    });
  });

  it("helpers tell when it closes and whether it is open", () => {
    const at = new Date("2026-01-01T10:00:00Z");
    expect(windowExpiresAt({ customerMessageAt: at })?.toISOString()).toBe("2026-01-02T10:00:00.000Z");
    expect(windowExpiresAt({ customerMessageAt: null })).toBeNull();
    expect(isWindowOpen({ customerMessageAt: at }, new Date("2026-01-02T09:59:59.999Z"))).toBe(true);
    expect(isWindowOpen({ customerMessageAt: at }, new Date("2026-01-02T10:00:00Z"))).toBe(false);
    expect(isWindowOpen({ customerMessageAt: null }, at)).toBe(false);
  });
});

describe("a send that Meta fails with 131047", () => {
  it("leaves the message failed with Meta's error", async ({ s, biz: b, customer }) => {
    await customer.text("hi");
    const [conversation] = await conversationsOf(s, b);
    const sent = (await send(s, b, conversation.id, { text: "answer" })).json().message;
    await customer.status({
      messageId: sent.message_id,
      status: "failed",
      error: { code: 131047, title: "Re-engagement message", message: "More than 24 hours have passed" },
    });
    const stored = (await messagesOf(s, b, conversation.id)).find((m) => m.id === sent.id);
    expect(stored).toMatchObject({
      status: "failed",
      error: { code: 131047, title: "Re-engagement message", message: "More than 24 hours have passed" },
    });
  });
});

describe("unread_count and POST /api/conversations/{id}/read", () => {
  it("counts customer messages, marks the latest read upstream, and resets the count", async ({
    s,
    biz: b,
    customer,
  }) => {
    await customer.text("one");
    const second = await customer.text("two");
    const [conversation] = await conversationsOf(s, b);
    expect(conversation.unread_count).toBe(2);
    await send(s, b, conversation.id, { text: "our reply does not count" });
    expect((await conversationsOf(s, b))[0].unread_count).toBe(2);

    s.sandbox.clearRequests();
    const response = await read(s, b, conversation.id);
    expect(response.statusCode).toBe(200);
    expect(response.json().conversation).toMatchObject({ id: conversation.id, unread_count: 0 });
    const calls = upstreamCalls(s, "POST", `/${b.phoneNumberId}/messages`);
    expect(calls.map((c) => c.body)).toEqual([
      { messaging_product: "whatsapp", status: "read", message_id: second.messageId },
    ]);

    s.sandbox.clearRequests();
    expect((await read(s, b, conversation.id)).statusCode).toBe(200);
    expect(s.sandbox.requests()).toEqual([]);

    await customer.text("three");
    expect((await conversationsOf(s, b))[0].unread_count).toBe(1);
  });

  it("changes nothing when Meta fails (502), and answers 404 for another account", async ({
    s,
    biz: b,
    customer,
  }) => {
    await customer.text("are you there?");
    const [conversation] = await conversationsOf(s, b);
    s.sandbox.inject(
      { method: "POST", path: "/messages", readReceipts: true },
      { status: 500, error: { code: 2, message: "Service unavailable" } },
    );
    const response = await read(s, b, conversation.id);
    expect(response.statusCode).toBe(502);
    expect(response.json()).toEqual({ error: "Service unavailable" });
    expect((await conversationsOf(s, b))[0].unread_count).toBe(1);

    const other = await business(s);
    expect((await read(s, other, conversation.id)).statusCode).toBe(404);
    expect((await read(s, other, "nope")).statusCode).toBe(404);
  });
});
