import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertChannelConfig } from "../helpers/fixtures.js";
import {
  createTestApp,
  markEmailVerified,
  signUp,
  signUpWithAccount,
  type TestApp,
} from "../helpers/harness.js";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ captureLogs: true });
});
afterAll(() => t.close());

describe("one error shape", () => {
  it("answers unknown routes with 404 { error: 'Not found' }", async () => {
    const response = await t.app.inject({ url: "/api/nothing-here" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "Not found" });
  });

  it("answers a body over 1 MiB with 413 { error }", async () => {
    const user = await signUp(t.app);
    const response = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: { ...user.headers, "content-type": "application/json" },
      payload: JSON.stringify({ name: "x".repeat(1024 * 1024 + 10) }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ error: expect.stringContaining("1 MiB") });
  });

  it("answers a malformed URL with 400 { error }", async () => {
    const response = await t.app.inject({ url: "/api/%E0%A4%A" });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.any(String) });
  });

  it("answers unexpected failures with 500 and no internals, and logs them", async () => {
    const user = await signUp(t.app);
    await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: user.headers,
      payload: { name: "Shop" },
    });
    await t.database.pool.query("alter table account_invitations rename to account_invitations_gone");
    try {
      const response = await t.app.inject({
        method: "POST",
        url: "/api/accounts/invitations",
        headers: user.headers,
        payload: { email: "someone@example.com" },
      });
      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual({ error: "Internal server error" });
      expect(response.body).not.toMatch(/account_invitations|select|insert|at \w+ \(/i);
      expect(t.logs()).toContain("account_invitations");
    } finally {
      await t.database.pool.query("alter table account_invitations_gone rename to account_invitations");
    }
  });

  it("answers an HTTP framing error in the same { error } shape", async () => {
    await t.app.listen({ port: 0, host: "127.0.0.1" });
    const address = t.app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => socket.write("GARBAGE\r\n\r\n"));
      let data = "";
      socket.on("data", (chunk) => {
        data += chunk.toString();
      });
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect(raw.slice(raw.indexOf("\r\n\r\n") + 4)).toBe(JSON.stringify({ error: "Bad request" }));
  });
});

describe("request bodies", () => {
  it("reads JSON whatever the Content-Type says, including none", async () => {
    for (const contentType of [undefined, "text/plain", "application/x-www-form-urlencoded"]) {
      const user = await signUp(t.app);
      const response = await t.app.inject({
        method: "POST",
        url: "/api/accounts",
        headers: { ...user.headers, ...(contentType ? { "content-type": contentType } : {}) },
        body: JSON.stringify({ name: "Plain" }),
      });
      expect(response.statusCode, String(contentType)).toBe(201);
    }
  });

  it("signs up with a JSON body sent without a Content-Type", async () => {
    const response = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-up/email",
      body: JSON.stringify({ email: "noctype@example.com", password: "long enough password", name: "N" }),
    });
    expect(response.statusCode).toBe(200);
  });

  it("removes __proto__ and constructor keys instead of honouring them", async () => {
    const user = await signUp(t.app);
    const response = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: user.headers,
      body: '{"name":"Safe","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().account.name).toBe("Safe");
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe("health, docs and logs", () => {
  it("answers /healthz and /readyz without a session", async () => {
    expect((await t.app.inject({ url: "/healthz" })).json()).toEqual({ ok: true });
    expect((await t.app.inject({ url: "/readyz" })).json()).toEqual({ ok: true });
  });

  it("serves an OpenAPI 3.1 document and a docs page", async () => {
    const spec = await t.app.inject({ url: "/api/openapi.json" });
    expect(spec.statusCode).toBe(200);
    expect(spec.json().openapi).toBe("3.1.0");
    expect(Object.keys(spec.json().paths)).toEqual(expect.arrayContaining(["/api/me", "/api/accounts"]));
    const page = await t.app.inject({ url: "/docs" });
    expect([200, 302]).toContain(page.statusCode);
  });

  it("masks the secrets that travel in URLs: the webhook verify token and invitation tokens", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const { verifyToken } = await insertChannelConfig(t, { accountId, userId: user.id });
    const handshake = await t.app.inject({
      url: `/api/messaging/webhook?hub.mode=subscribe&hub.verify_token=${verifyToken}&hub.challenge=12345`,
    });
    expect(handshake.statusCode).toBe(200);
    expect(handshake.body).toBe("12345");

    const invitee = await signUp(t.app);
    await markEmailVerified(t.app, invitee);
    const invite = await t.app.inject({
      method: "POST",
      url: "/api/accounts/invitations",
      headers: user.headers,
      payload: { email: invitee.email },
    });
    const invitationToken = invite.json().invitation.token as string;
    const accepted = await t.app.inject({
      method: "POST",
      url: `/api/invitations/${invitationToken}/accept`,
      headers: invitee.headers,
    });
    expect(accepted.statusCode).toBe(200);

    const logs = t.logs();
    expect(logs).toContain("hub.verify_token=[redacted]");
    expect(logs).toContain("/api/invitations/[redacted]/accept");
    expect(logs).not.toContain(String(verifyToken));
    expect(logs).not.toContain(invitationToken);
  });

  it("writes JSON log lines with a request id and never the session token or password", async () => {
    const user = await signUp(t.app);
    await t.app.inject({ url: "/api/me", headers: { ...user.headers, "x-request-id": "req-123" } });
    const lines = t
      .logs()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = lines.filter((l) => l.reqId === "req-123");
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(t.logs()).not.toContain(user.token);
    expect(t.logs()).not.toContain("correct horse battery");
  });
});
