import { describe, expect } from "vitest";
import { appTest as it } from "../helpers/fixtures.js";
import { addMember, markEmailVerified, signUp, type TestApp } from "../helpers/harness.js";
import { createKey } from "./helpers.js";

const invite = (t: TestApp, headers: Record<string, string>, payload: unknown) =>
  t.app.inject({ method: "POST", url: "/api/accounts/invitations", headers, payload: payload as object });
const accept = (t: TestApp, token: string, headers: Record<string, string>) =>
  t.app.inject({ method: "POST", url: `/api/invitations/${token}/accept`, headers });

describe("owner-only routes", () => {
  it("answers 403 { error } to a member and to an API key, and changes nothing", async ({
    t,
    owner: { user: owner, accountId },
  }) => {
    const member = await addMember(t.app, owner);
    const { id, key } = await createKey(t.app, owner);
    const routes = [
      ["POST", "/api/accounts/invitations", { email: "new@example.com" }],
      ["POST", "/api/api-keys", { name: "mine" }],
      ["GET", "/api/api-keys", undefined],
      ["DELETE", `/api/api-keys/${id}`, undefined],
    ] as const;
    for (const headers of [member.headers, { "x-api-key": key }]) {
      for (const [method, url, payload] of routes) {
        const response = await t.app.inject({ method, url, headers, payload });
        expect(response.statusCode, `${method} ${url}`).toBe(403);
        expect(response.json()).toEqual({ error: expect.any(String) });
      }
    }
    const { rows: keys } = await t.database.pool.query("select id from api_keys where account_id = $1", [
      accountId,
    ]);
    expect(keys.map((r) => r.id)).toEqual([id]);
    const { rows: invitations } = await t.database.pool.query(
      "select 1 from account_invitations where account_id = $1 and email = 'new@example.com'",
      [accountId],
    );
    expect(invitations).toEqual([]);
  });

  it("checks the role before the body: a member's invalid body is 403, an owner's is 400", async ({
    t,
    owner: { user: owner },
  }) => {
    const member = await addMember(t.app, owner);
    expect((await invite(t, member.headers, {})).statusCode).toBe(403);
    expect((await invite(t, owner.headers, {})).statusCode).toBe(400);
  });

  it("leaves shared routes open to members", async ({ t, owner: { user: owner } }) => {
    const member = await addMember(t.app, owner);
    const members = await t.app.inject({ url: "/api/accounts/members", headers: member.headers });
    expect(members.statusCode).toBe(200);
  });
});

describe("invitations bound to an email", () => {
  it("requires an email: 400 naming it", async ({ t, owner: { user: owner } }) => {
    for (const payload of [{}, { email: null }, { email: "not an email" }]) {
      const response = await invite(t, owner.headers, payload);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(/^email/);
    }
  });

  it("lets only the invited email accept, whatever its case, and keeps the invitation open for them", async ({
    t,
    owner: { user: owner, accountId },
  }) => {
    const invitee = await signUp(t.app, "Invitee");
    await markEmailVerified(t.app, invitee); // the owner's token needs a verified email (test/mail)
    const created = await invite(t, owner.headers, { email: invitee.email.toUpperCase() });
    expect(created.statusCode).toBe(201);
    const { token, email } = created.json().invitation;
    expect(email).toBe(invitee.email);

    const stranger = await signUp(t.app, "Stranger");
    const refused = await accept(t, token, stranger.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: expect.stringMatching(/another email/) });
    const strangerMe = await t.app.inject({ url: "/api/me", headers: stranger.headers });
    expect(strangerMe.json().profile.account_id).toBeNull();

    const accepted = await accept(t, token, invitee.headers);
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json().account.id).toBe(accountId);
    const inviteeMe = await t.app.inject({ url: "/api/me", headers: invitee.headers });
    expect(inviteeMe.json().profile).toMatchObject({ account_id: accountId, role: "member" });
  });

  it("lets the invited email accept after signing up later", async ({ t, owner: { user: owner } }) => {
    const email = `later-${Date.now()}@example.com`;
    const { token } = (await invite(t, owner.headers, { email })).json().invitation;
    await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-up/email",
      payload: { email, password: "correct horse battery", name: "Later" },
    });
    const signIn = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email, password: "correct horse battery" },
    });
    const headers = { authorization: `Bearer ${String(signIn.headers["set-auth-token"])}` };
    await t.database.pool.query("update users set email_verified = true where id = $1", [
      signIn.json().user.id,
    ]);
    expect((await accept(t, token, headers)).statusCode).toBe(200);
  });
});
