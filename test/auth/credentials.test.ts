import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS_DIR } from "../../src/db/migrate.js";
import { createTestApp, signUp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { createKey } from "./helpers.js";

// No session cache: every request below is resolved from the database.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ sessionCacheTtlMs: 0 });
});
afterAll(() => t.close());

const PASSWORD = "correct horse battery";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const me = (headers: Record<string, string>) => t.app.inject({ url: "/api/me", headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The session's bare token (what better-auth generated), read the way a client can: get-session. */
async function bareToken(user: TestUser): Promise<string> {
  const response = await t.app.inject({ url: "/api/auth/get-session", headers: user.headers });
  return (response.json() as { session: { token: string } }).session.token;
}

async function storedTokens(userId: string): Promise<string[]> {
  const { rows } = await t.database.pool.query<{ token: string }>(
    "select token from sessions where user_id = $1",
    [userId],
  );
  return rows.map((row) => row.token);
}

describe("session tokens at rest", () => {
  it("stores only the SHA-256 of a session's token, never the token a client holds", async () => {
    const user = await signUp(t.app);
    const bare = await bareToken(user);
    const stored = await storedTokens(user.id);
    expect(stored).toEqual([sha256(bare)]);
    expect(stored).not.toContain(bare);
    expect(stored.join()).not.toContain(user.token.split(".")[0]);
  });

  it("does not take a stored hash as a credential, signed or not", async () => {
    const user = await signUp(t.app);
    const [stored] = await storedTokens(user.id);
    expect((await me(bearer(String(stored)))).statusCode).toBe(401);
    expect((await me(bearer(`sha256:${stored}`))).statusCode).toBe(401);
    expect((await me(user.headers)).statusCode).toBe(200);
  });

  it("does not take a stored hash as a credential even signed with the auth secret (a leaked database and secret)", async () => {
    const user = await signUp(t.app);
    const [stored] = await storedTokens(user.id);
    const signed = (value: string) =>
      `${value}.${createHmac("sha256", t.config.authSecret).update(value).digest("base64")}`;
    // The forging works: the bare token, signed so, is the user's bearer token.
    const bare = await bareToken(user);
    expect((await me(bearer(signed(bare)))).statusCode).toBe(200);
    expect(
      (await me({ cookie: `better-auth.session_token=${encodeURIComponent(signed(bare))}` })).statusCode,
    ).toBe(200);
    for (const value of [String(stored), `sha256:${stored}`]) {
      expect((await me(bearer(signed(value)))).statusCode, value).toBe(401);
      expect(
        (await me({ cookie: `better-auth.session_token=${encodeURIComponent(signed(value))}` })).statusCode,
      ).toBe(401);
    }
  });

  it("keeps sessions opened before the migration: the migration hashes their tokens", async () => {
    const user = await signUp(t.app);
    const bare = await bareToken(user);
    // The row as the code before this change wrote it: the bare token in clear.
    await t.database.pool.query("update sessions set token = $1 where user_id = $2", [bare, user.id]);
    expect((await me(user.headers)).statusCode).toBe(401);
    const migration = readFileSync(path.join(MIGRATIONS_DIR, "0014_trust_auth.sql"), "utf8");
    const hashing = migration.split("--> statement-breakpoint").find((s) => s.includes('UPDATE "sessions"'));
    await t.database.pool.query(`${hashing} where user_id = '${user.id}'`.replace(";", ""));
    expect(await storedTokens(user.id)).toEqual([sha256(bare)]);
    expect((await me(user.headers)).statusCode).toBe(200);
  });
});

describe("bearer tokens", () => {
  it("require their signature: the bare half of a token is 401", async () => {
    const user = await signUp(t.app);
    const [bare, signature] = user.token.split(".");
    expect(signature).toBeTruthy();
    expect((await me(bearer(String(bare)))).statusCode).toBe(401);
    expect((await me(bearer(await bareToken(user)))).statusCode).toBe(401);
    expect((await me(bearer(`${bare}.${"A".repeat(String(signature).length)}`))).statusCode).toBe(401);
    expect((await me(user.headers)).statusCode).toBe(200);
  });

  it("sign-in answers in its body the same signed token as set-auth-token, and it works", async () => {
    const user = await signUp(t.app);
    const response = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: user.email, password: PASSWORD },
    });
    const token = (response.json() as { token: string }).token;
    expect(token).toBe(response.headers["set-auth-token"]);
    expect((await me(bearer(token))).statusCode).toBe(200);
  });
});

describe("list-sessions", () => {
  it("answers every session without any token, and revoke-session takes a listed id", async () => {
    const user = await signUp(t.app);
    const other = await signUp(t.app);
    const second = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: user.email, password: PASSWORD },
    });
    const secondHeaders = bearer(String(second.headers["set-auth-token"]));
    const listed = await t.app.inject({ url: "/api/auth/list-sessions", headers: user.headers });
    expect(listed.statusCode).toBe(200);
    const sessions = listed.json() as Record<string, unknown>[];
    expect(sessions).toHaveLength(2);
    for (const session of sessions) expect(session).not.toHaveProperty("token");
    const stored = await storedTokens(user.id);
    for (const secret of [...stored, await bareToken(user), user.token.split(".")[0]]) {
      expect(listed.body).not.toContain(secret);
    }
    // Every value listed, tried as a credential: none works.
    for (const session of sessions) {
      for (const value of Object.values(session)) {
        expect((await me(bearer(String(value)))).statusCode).toBe(401);
      }
    }

    const secondId = (
      (await t.app.inject({ url: "/api/auth/get-session", headers: secondHeaders })).json() as {
        session: { id: string };
      }
    ).session.id;
    // Another user naming the id changes nothing.
    const foreign = await t.app.inject({
      method: "POST",
      url: "/api/auth/revoke-session",
      headers: other.headers,
      payload: { id: secondId },
    });
    expect(foreign.statusCode).toBe(200);
    expect((await me(secondHeaders)).statusCode).toBe(200);
    const revoked = await t.app.inject({
      method: "POST",
      url: "/api/auth/revoke-session",
      headers: user.headers,
      payload: { id: secondId },
    });
    expect(revoked.json()).toEqual({ status: true });
    expect((await me(secondHeaders)).statusCode).toBe(401);
    expect((await me(user.headers)).statusCode).toBe(200);
  });

  it("revoke-other-sessions keeps the caller's own session", async () => {
    const user = await signUp(t.app);
    const second = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: user.email, password: PASSWORD },
    });
    const secondHeaders = bearer(String(second.headers["set-auth-token"]));
    const out = await t.app.inject({
      method: "POST",
      url: "/api/auth/revoke-other-sessions",
      headers: user.headers,
    });
    expect(out.json()).toEqual({ status: true });
    expect((await me(secondHeaders)).statusCode).toBe(401);
    expect((await me(user.headers)).statusCode).toBe(200);
  });
});

describe("sign-out and update-user answers", () => {
  it("answers sign-out without credentials 401 Unauthorized, as the spec and the OpenAPI document say", async () => {
    const out = await t.app.inject({ method: "POST", url: "/api/auth/sign-out", payload: {} });
    expect(out.statusCode).toBe(401);
    expect(out.json()).toEqual({ error: "Unauthorized" });
    const stale = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-out",
      headers: bearer("nobody.nothing"),
      payload: {},
    });
    expect(stale.statusCode).toBe(401);
    const spec = (await t.app.inject({ url: "/api/openapi.json" })).json() as {
      paths: Record<string, { post: { responses: Record<string, unknown> } }>;
    };
    expect(Object.keys(spec.paths["/api/auth/sign-out"]?.post.responses ?? {})).toContain("401");
  });

  it("answers update-user with a null name 400 naming the field, and keeps the name", async () => {
    const user = await signUp(t.app, "Kept Name");
    for (const payload of [{ name: null }, { name: null, image: null }, { email: null }]) {
      const response = await t.app.inject({
        method: "POST",
        url: "/api/auth/update-user",
        headers: user.headers,
        payload,
      });
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().error).toMatch(/name|email/);
    }
    const image = await t.app.inject({
      method: "POST",
      url: "/api/auth/update-user",
      headers: user.headers,
      payload: { image: null },
    });
    expect(image.statusCode).toBe(200);
    expect(((await me(user.headers)).json() as { user: { name: string } }).user.name).toBe("Kept Name");
  });
});

describe("a request with both an API key and a session", () => {
  it("is the key's: an invalid X-API-Key is 401 beside a valid bearer or cookie, a valid one acts as the key", async () => {
    const { user: owner, accountId } = await signUpWithAccount(t.app);
    const loner = await signUp(t.app);
    const { key, id } = await createKey(t.app, owner);
    const cookie = String(
      (
        await t.app.inject({
          method: "POST",
          url: "/api/auth/sign-in/email",
          payload: { email: owner.email, password: PASSWORD },
        })
      ).headers["set-cookie"],
    ).split(";")[0];
    for (const session of [owner.headers, { cookie: String(cookie) }]) {
      for (const bad of ["wak_unknown", "", "not-a-key"]) {
        const response = await me({ ...session, "x-api-key": bad });
        expect(response.statusCode, `${bad} beside ${Object.keys(session)}`).toBe(401);
        expect(response.json()).toEqual({ error: "Unauthorized" });
      }
      expect((await me(session)).statusCode).toBe(200);
    }
    // A valid key beside another user's session: the request is the key's (member rights in its account).
    const both = await me({ ...loner.headers, "x-api-key": key });
    expect(both.statusCode).toBe(200);
    expect(both.json().profile).toEqual({ user_id: owner.id, account_id: accountId, role: "member" });
    // A deleted key never falls back to the session that came with it.
    await t.app.inject({ method: "DELETE", url: `/api/api-keys/${id}`, headers: owner.headers });
    expect((await me({ ...owner.headers, "x-api-key": key })).statusCode).toBe(401);

    const spec = (await t.app.inject({ url: "/api/openapi.json" })).json() as {
      components: { securitySchemes: Record<string, { description?: string }> };
    };
    expect(spec.components.securitySchemes.apiKey?.description).toMatch(/only credential.*401/);
  });
});
