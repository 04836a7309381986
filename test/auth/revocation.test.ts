import type { FastifyInstance } from "fastify";
import { describe, expect } from "vitest";
import { appTest as it } from "../helpers/fixtures.js";
import { createTestApp, signUp, type TestApp, type TestUser } from "../helpers/harness.js";

// The app's default session cache (5 s): every check below happens well within it, so a
// session that still worked would be one served from the cache after its revocation.

const PASSWORD = "correct horse battery";

/** Another session of the same user: its bearer token and its cookie. */
async function newSession(app: FastifyInstance, user: TestUser, password = PASSWORD) {
  const response = await app.inject({
    method: "POST",
    url: "/api/auth/sign-in/email",
    payload: { email: user.email, password },
  });
  expect(response.statusCode).toBe(200);
  return {
    bearer: { authorization: `Bearer ${String(response.headers["set-auth-token"])}` },
    cookie: { cookie: String(response.headers["set-cookie"]).split(";")[0] ?? "" },
    token: response.json().token as string,
  };
}

const me = (t: TestApp, headers: Record<string, string>) => t.app.inject({ url: "/api/me", headers });
const post = (
  t: TestApp,
  url: string,
  headers: Record<string, string>,
  payload: Record<string, unknown> = {},
) => t.app.inject({ method: "POST", url, headers, payload });

describe("revocation takes effect at once on the instance that revoked", () => {
  it("revoke-other-sessions, from a session this instance never resolved", async ({ t }) => {
    const user = await signUp(t.app);
    const other = await newSession(t.app, user);
    expect((await me(t, other.bearer)).statusCode).toBe(200); // now cached
    const revoking = await newSession(t.app, user);
    expect((await post(t, "/api/auth/revoke-other-sessions", revoking.bearer)).statusCode).toBe(200);
    expect((await me(t, other.bearer)).statusCode).toBe(401);
    expect((await me(t, user.headers)).statusCode).toBe(401);
    expect((await me(t, revoking.bearer)).statusCode).toBe(200);
  });

  it("change-password with revokeOtherSessions", async ({ t }) => {
    const user = await signUp(t.app);
    const other = await newSession(t.app, user);
    expect((await me(t, other.bearer)).statusCode).toBe(200);
    const changed = await post(t, "/api/auth/change-password", user.headers, {
      currentPassword: PASSWORD,
      newPassword: "a brand new password",
      revokeOtherSessions: true,
    });
    expect(changed.statusCode).toBe(200);
    expect((await me(t, other.bearer)).statusCode).toBe(401);
    expect((await me(t, user.headers)).statusCode).toBe(401);
    const fresh = await newSession(t.app, user, "a brand new password");
    expect((await me(t, fresh.bearer)).statusCode).toBe(200);
  });

  it("sign-out by cookie while the bearer form of the same session is cached", async ({ t }) => {
    const user = await signUp(t.app);
    const session = await newSession(t.app, user);
    expect((await me(t, session.bearer)).statusCode).toBe(200);
    expect((await post(t, "/api/auth/sign-out", session.cookie)).statusCode).toBe(200);
    expect((await me(t, session.bearer)).statusCode).toBe(401);
  });

  it("sign-out by bearer while the cookie form of the same session is cached", async ({ t }) => {
    const user = await signUp(t.app);
    const session = await newSession(t.app, user);
    expect((await me(t, session.cookie)).statusCode).toBe(200);
    expect((await post(t, "/api/auth/sign-out", session.bearer)).statusCode).toBe(200);
    expect((await me(t, session.cookie)).statusCode).toBe(401);
  });

  it("revoke-session of one other session, and revoke-sessions of all", async ({ t }) => {
    const user = await signUp(t.app);
    const [a, b] = [await newSession(t.app, user), await newSession(t.app, user)];
    expect((await me(t, a.bearer)).statusCode).toBe(200);
    expect((await me(t, b.cookie)).statusCode).toBe(200);
    expect((await post(t, "/api/auth/revoke-session", user.headers, { token: a.token })).statusCode).toBe(
      200,
    );
    expect((await me(t, a.bearer)).statusCode).toBe(401);
    expect((await me(t, b.cookie)).statusCode).toBe(200);
    expect((await post(t, "/api/auth/revoke-sessions", b.bearer)).statusCode).toBe(200);
    expect((await me(t, b.cookie)).statusCode).toBe(401);
    expect((await me(t, user.headers)).statusCode).toBe(401);
  });
});

describe("revocation through another instance", () => {
  it("ends a session there at once when that instance had not cached it", async ({ t }) => {
    const other = await createTestApp({
      databaseUrl: t.config.databaseUrl,
      config: { authSecret: t.config.authSecret, encryptionKey: t.config.encryptionKey },
    });
    try {
      const user = await signUp(t.app);
      const session = await newSession(t.app, user);
      expect((await post(t, "/api/auth/sign-out", session.bearer)).statusCode).toBe(200);
      const there = await other.app.inject({ url: "/api/me", headers: session.bearer });
      expect(there.statusCode).toBe(401);
    } finally {
      await other.close();
    }
  });
});
