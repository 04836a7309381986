import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { users } from "../../src/db/schema/index.js";
import { redactUrl, serializeError } from "../../src/logging.js";
import { browserHeaders, createKey, FOREIGN_ORIGIN } from "../auth/helpers.js";
import { insertChannelConfig } from "../helpers/fixtures.js";
import { createTestApp, signUp, signUpWithAccount, type TestApp } from "../helpers/harness.js";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ captureLogs: true });
});
afterAll(() => t.close());

const lines = () =>
  t
    .logs()
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("one JSON log stream", () => {
  it("writes better-auth's lines as JSON through the app's logger, without email addresses", async () => {
    const consoleCalls: unknown[][] = [];
    const spies = (["log", "info", "warn", "error"] as const).map((name) =>
      vi.spyOn(console, name).mockImplementation((...args: unknown[]) => {
        consoleCalls.push(args);
      }),
    );
    try {
      const user = await signUp(t.app);
      // A taken email (logged by better-auth at info) and a foreign origin (logged at error).
      await t.app.inject({
        method: "POST",
        url: "/api/auth/sign-up/email",
        payload: { email: user.email, password: "another password", name: "Again" },
      });
      const refused = await t.app.inject({
        method: "POST",
        url: "/api/auth/sign-in/email",
        headers: browserHeaders(FOREIGN_ORIGIN),
        payload: { email: user.email, password: "correct horse battery" },
      });
      expect(refused.statusCode).toBe(403);
      const auth = lines().filter((line) => line.module === "better-auth");
      expect(auth.map((line) => line.msg)).toEqual(
        expect.arrayContaining([
          expect.stringContaining("existing email"),
          expect.stringContaining("Invalid origin"),
        ]),
      );
      expect(t.logs()).not.toContain(user.email);
      expect(consoleCalls).toEqual([]);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe("credentials in logs", () => {
  it("never logs an API key, whichever header carries it, nor the answer that shows it", async () => {
    const { user } = await signUpWithAccount(t.app);
    const { key } = await createKey(t.app, user);
    await t.app.inject({ url: "/api/flows", headers: { "x-api-key": key } });
    await t.app.inject({ url: "/api/flows", headers: { authorization: `Bearer ${key}` } });
    await t.app.inject({ url: "/api/flows", headers: { "x-api-key": `${key}x` } });
    expect(t.logs()).not.toContain(key.slice(12));
  });
});

describe("no values in error logs", () => {
  it("logs a failed query's SQL but not its parameters (the texts users wrote)", async () => {
    const { user } = await signUpWithAccount(t.app);
    await t.database.pool.query("alter table flows rename column description to description_gone");
    try {
      const response = await t.app.inject({
        method: "POST",
        url: "/api/flows",
        headers: user.headers,
        payload: { name: "Confidential launch plan", description: "Tell nobody about Project Kestrel" },
      });
      expect(response.statusCode).toBe(500);
    } finally {
      await t.database.pool.query("alter table flows rename column description_gone to description");
    }
    const failed = lines().filter((line) => line.err);
    expect(failed.length).toBeGreaterThan(0);
    expect(JSON.stringify(failed)).toContain("flows");
    expect(t.logs()).not.toContain("Confidential launch plan");
    expect(t.logs()).not.toContain("Kestrel");
  });

  it("keeps query values out of every logged URL, however they are encoded", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const { verifyToken } = await insertChannelConfig(t, { accountId, userId: user.id });
    const handshake = await t.app.inject({
      url: `/api/messaging/webhook?hub.mode=subscribe&hub%2Everify_token=${verifyToken}&hub.challenge=4242`,
    });
    expect(handshake.statusCode).toBe(200);
    await t.app.inject({ url: "/api/flows?limit=5&search=my%20private%20words", headers: user.headers });
    expect(t.logs()).not.toContain(String(verifyToken));
    expect(t.logs()).not.toContain("private");
    expect(t.logs()).toContain("hub.verify_token=[redacted]");
    expect(t.logs()).toContain("limit=5");
  });

  it("masks every form of a secret in a URL", () => {
    expect(redactUrl("/api/messaging/webhook?hub%2Everify_token=abc&hub.mode=subscribe")).toBe(
      "/api/messaging/webhook?hub.verify_token=[redacted]&hub.mode=subscribe",
    );
    expect(redactUrl("/api/x?%68ub.verify_token=abc")).toBe("/api/x?hub.verify_token=[redacted]");
    expect(redactUrl("/api/x?secret")).toBe("/api/x?[redacted]");
    expect(redactUrl("/api/x?bad%zz=abc")).toBe("/api/x?[redacted]");
    expect(redactUrl("/api/invitations/tok%2Fen/accept")).toBe("/api/invitations/[redacted]/accept");
    expect(redactUrl("/api/%69nvitations/token/accept")).toBe("/api/invitations/[redacted]/accept");
  });

  it("leaves pg's detail and quoted values out of a serialized database error", async () => {
    const email = `dupe-${Date.now()}@example.com`;
    await t.database.db.insert(users).values({ name: "A", email });
    const error = await t.database.db
      .insert(users)
      .values({ name: "B", email })
      .then(() => null)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const serialized = JSON.stringify(serializeError(error));
    expect(serialized).toContain("users_email_unique");
    expect(serialized).toContain("23505");
    expect(serialized).not.toContain(email);
  });
});
