import { describe, expect } from "vitest";
import { appTest as it } from "../helpers/fixtures.js";
import {
  addMember,
  createTestApp,
  markEmailVerified,
  signUp,
  signUpWithAccount,
} from "../helpers/harness.js";

describe("sign-up and sessions", () => {
  it("answers sign-up with the user but no session: the client signs in next", async ({ t }) => {
    const response = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-up/email",
      payload: { email: "new@example.com", password: "long enough password", name: "New" },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ token: null, user: { email: "new@example.com" } });
    expect(response.headers["set-auth-token"]).toBeUndefined();
    expect(response.headers["set-cookie"]).toBeUndefined();
  });

  it("authenticates with the bearer token and with the cookie from sign-in", async ({ t }) => {
    await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-up/email",
      payload: { email: "both@example.com", password: "long enough password", name: "Both" },
    });
    const response = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: "both@example.com", password: "long enough password" },
    });
    const token = String(response.headers["set-auth-token"]);
    const cookie = String(response.headers["set-cookie"]).split(";")[0] ?? "";
    expect(cookie).toContain("better-auth.session_token=");

    const byBearer = await t.app.inject({ url: "/api/me", headers: { authorization: `Bearer ${token}` } });
    expect(byBearer.statusCode).toBe(200);
    expect(byBearer.json().user.email).toBe("both@example.com");

    const byCookie = await t.app.inject({ url: "/api/me", headers: { cookie } });
    expect(byCookie.statusCode).toBe(200);
    expect(byCookie.json().user.email).toBe("both@example.com");
  });

  it("signs in with the password and rejects a wrong one with { error }", async ({ t }) => {
    const user = await signUp(t.app);
    const ok = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: user.email, password: "correct horse battery" },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers["set-auth-token"]).toEqual(expect.any(String));

    const bad = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: user.email, password: "wrong password!" },
    });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual({ error: "Unauthorized", code: expect.any(String) });
  });

  it("revokes the session on sign-out", async ({ t }) => {
    const user = await signUp(t.app);
    expect((await t.app.inject({ url: "/api/me", headers: user.headers })).statusCode).toBe(200);
    const out = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-out",
      headers: user.headers,
      payload: {},
    });
    expect(out.statusCode).toBe(200);
    const after = await t.app.inject({ url: "/api/me", headers: user.headers });
    expect(after.statusCode).toBe(401);
    expect(after.json()).toEqual({ error: "Unauthorized" });
  });

  it.for([
    ["no credentials", {}],
    ["a garbage bearer token", { authorization: "Bearer not-a-token" }],
    ["a malformed authorization header", { authorization: "Basic Zm9vOmJhcg==" }],
    ["a forged signed token", { authorization: "Bearer abc.def" }],
    ["a garbage cookie", { cookie: "better-auth.session_token=garbage" }],
  ] as [string, Record<string, string>][])(
    "answers 401 Unauthorized for %s",
    async ([_label, headers], { t }) => {
      const response = await t.app.inject({ url: "/api/me", headers });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error: "Unauthorized" });
    },
  );

  it("answers 401 for an expired session", async ({ t }) => {
    const user = await signUp(t.app);
    await t.database.pool.query(
      "update sessions set expires_at = now() - interval '1 minute' where user_id = $1",
      [user.id],
    );
    const response = await t.app.inject({ url: "/api/me", headers: user.headers });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("drops a cached session at once when it is deleted behind the app's back (as by another instance)", async () => {
    const short = await createTestApp({ sessionCacheTtlMs: 60_000 });
    try {
      const user = await signUp(short.app);
      expect((await short.app.inject({ url: "/api/me", headers: user.headers })).statusCode).toBe(200);
      // Deleting the row notifies every instance (LISTEN auth_revoked): the cache, good for a minute
      // here, forgets the session within a second instead.
      await short.database.pool.query("delete from sessions where user_id = $1", [user.id]);
      const deadline = Date.now() + 1000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await short.app.inject({ url: "/api/me", headers: user.headers })).statusCode;
        if (status === 200) await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe(401);
    } finally {
      await short.close();
    }
  });

  it("stores credentials outside a table named account", async ({ t }) => {
    const { rows } = await t.database.pool.query(
      "select table_name from information_schema.tables where table_schema = 'public' and table_name in ('account', 'auth_credentials')",
    );
    expect(rows.map((r) => r.table_name)).toEqual(["auth_credentials"]);
  });
});

describe("accounts and invitations", () => {
  it("shows /api/me without an account, then with one after POST /api/accounts", async ({ t }) => {
    const user = await signUp(t.app, "Solo");
    const before = await t.app.inject({ url: "/api/me", headers: user.headers });
    expect(before.json()).toMatchObject({
      user: { id: user.id, email: user.email, name: "Solo" },
      profile: { user_id: user.id, account_id: null, role: null },
      account: null,
    });

    const created = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: user.headers,
      payload: { name: "  Solo Shop  " },
    });
    expect(created.statusCode).toBe(201);
    const account = created.json().account;
    expect(account).toMatchObject({
      name: "Solo Shop",
      id: expect.any(String),
      created_at: expect.any(String),
    });

    const after = await t.app.inject({ url: "/api/me", headers: user.headers });
    expect(after.json()).toMatchObject({
      profile: { account_id: account.id, role: "owner" },
      account: { id: account.id },
    });
  });

  it("answers 409 when the caller already has an account, and 400 for a blank name", async ({
    t,
    owner: { user },
  }) => {
    const again = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: user.headers,
      payload: { name: "Two" },
    });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ error: expect.any(String) });

    const fresh = await signUp(t.app);
    const blank = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: fresh.headers,
      payload: { name: " " },
    });
    expect(blank.statusCode).toBe(400);
    const notJson = await t.app.inject({
      method: "POST",
      url: "/api/accounts",
      headers: fresh.headers,
      payload: "{nope",
    });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error).toMatch(/Invalid JSON/);
  });

  it("lets an invitee join, lists both members, and keeps another account's members apart", async ({ t }) => {
    const { user: owner, accountId } = await signUpWithAccount(t.app, "Owner");
    const member = await addMember(t.app, owner, "Mate");
    const me = await t.app.inject({ url: "/api/me", headers: member.headers });
    expect(me.json()).toMatchObject({ profile: { account_id: accountId, role: "member" } });

    const members = await t.app.inject({ url: "/api/accounts/members", headers: member.headers });
    expect(members.statusCode).toBe(200);
    expect(
      members
        .json()
        .members.map((m: { email: string }) => m.email)
        .sort(),
    ).toEqual([owner.email, member.email].sort());

    const { user: stranger } = await signUpWithAccount(t.app, "Stranger");
    const theirs = await t.app.inject({ url: "/api/accounts/members", headers: stranger.headers });
    expect(theirs.json().members.map((m: { email: string }) => m.email)).toEqual([stranger.email]);
  });

  it("stores only a hash of the invitation token, and a token works once", async ({
    t,
    owner: { user: owner },
  }) => {
    const first = await signUp(t.app);
    await markEmailVerified(t.app, first); // the owner's token needs a verified email (test/mail)
    const invite = await t.app.inject({
      method: "POST",
      url: "/api/accounts/invitations",
      headers: owner.headers,
      payload: { email: first.email },
    });
    expect(invite.statusCode).toBe(201);
    const { token, id, expires_at } = invite.json().invitation;
    expect(new Date(expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);
    const { rows } = await t.database.pool.query("select token_hash from account_invitations where id = $1", [
      id,
    ]);
    expect(rows[0].token_hash).not.toContain(token);

    expect(
      (
        await t.app.inject({
          method: "POST",
          url: `/api/invitations/${token}/accept`,
          headers: first.headers,
        })
      ).statusCode,
    ).toBe(200);
    const second = await signUp(t.app);
    const reused = await t.app.inject({
      method: "POST",
      url: `/api/invitations/${token}/accept`,
      headers: second.headers,
    });
    expect(reused.statusCode).toBe(404);
  });

  it("answers 404 for an expired or unknown invitation and 409 for a linked user", async ({
    t,
    owner: { user: owner },
  }) => {
    const invitee = await signUp(t.app);
    const invite = await t.app.inject({
      method: "POST",
      url: "/api/accounts/invitations",
      headers: owner.headers,
      payload: { email: invitee.email },
    });
    const { token, id } = invite.json().invitation;
    await t.database.pool.query(
      "update account_invitations set expires_at = now() - interval '1 second' where id = $1",
      [id],
    );
    const expired = await t.app.inject({
      method: "POST",
      url: `/api/invitations/${token}/accept`,
      headers: invitee.headers,
    });
    expect(expired.statusCode).toBe(404);
    expect(expired.json()).toEqual({ error: expect.any(String) });
    const unknown = await t.app.inject({
      method: "POST",
      url: "/api/invitations/nope/accept",
      headers: invitee.headers,
    });
    expect(unknown.statusCode).toBe(404);

    const fresh = await t.app.inject({
      method: "POST",
      url: "/api/accounts/invitations",
      headers: owner.headers,
      payload: { email: owner.email },
    });
    const linked = await t.app.inject({
      method: "POST",
      url: `/api/invitations/${fresh.json().invitation.token}/accept`,
      headers: owner.headers,
    });
    expect(linked.statusCode).toBe(409);
  });

  it("answers 403 to invitations and members for a user without an account", async ({ t }) => {
    const user = await signUp(t.app);
    for (const [method, url] of [
      ["POST", "/api/accounts/invitations"],
      ["GET", "/api/accounts/members"],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: user.headers });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ error: expect.any(String) });
    }
  });
});
