import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/upstream/sandbox/server.js";
import { insertContact, insertMessage } from "../helpers/fixtures.js";
import { addMember, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { addNumber, bodyFor, health, remove, save, startWithSandbox } from "../messaging/config/setup.js";
import { createKey } from "./helpers.js";

let t: TestApp;
let sandbox: Sandbox;
beforeAll(async () => {
  ({ t, sandbox } = await startWithSandbox());
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});

const patch = (headers: Record<string, string>, userId: string, payload: unknown) =>
  t.app.inject({
    method: "PATCH",
    url: `/api/accounts/members/${userId}`,
    headers,
    payload: payload as object,
  });
const del = (headers: Record<string, string>, userId: string) =>
  t.app.inject({ method: "DELETE", url: `/api/accounts/members/${userId}`, headers });
const me = (user: TestUser) => t.app.inject({ url: "/api/me", headers: user.headers });
const roles = async (owner: TestUser) =>
  Object.fromEntries(
    (
      (await t.app.inject({ url: "/api/accounts/members", headers: owner.headers })).json() as {
        members: { user_id: string; role: string }[];
      }
    ).members.map((m) => [m.user_id, m.role]),
  );

describe("PATCH /api/accounts/members/{user_id}", () => {
  it("lets the owner make a member an owner, seen by that member at once", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    expect((await me(member)).json().profile.role).toBe("member");
    const changed = await patch(owner.headers, member.id, { role: "owner" });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toEqual({
      member: expect.objectContaining({ user_id: member.id, email: member.email, role: "owner" }),
    });
    expect((await me(member)).json().profile.role).toBe("owner");
    // The new owner can now do an owner's work, and make the first owner a member.
    expect((await patch(member.headers, owner.id, { role: "member" })).statusCode).toBe(200);
    expect(await roles(member)).toEqual({ [owner.id]: "member", [member.id]: "owner" });
  });

  it("protects the last owner with 409 and a clear error, and changes nothing", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    const demote = await patch(owner.headers, owner.id, { role: "member" });
    expect(demote.statusCode).toBe(409);
    expect(demote.json().error).toMatch(/at least one owner/);
    const leave = await del(owner.headers, owner.id);
    expect(leave.statusCode).toBe(409);
    expect(leave.json().error).toMatch(/at least one owner/);
    expect(await roles(owner)).toEqual({ [owner.id]: "owner", [member.id]: "member" });
    // Keeping the owner an owner is no change and is fine.
    expect((await patch(owner.headers, owner.id, { role: "owner" })).statusCode).toBe(200);
  });

  it("keeps one owner when two owners demote each other at once", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const second = await addMember(t.app, owner);
    expect((await patch(owner.headers, second.id, { role: "owner" })).statusCode).toBe(200);
    const [a, b] = await Promise.all([
      patch(owner.headers, second.id, { role: "member" }),
      patch(second.headers, owner.id, { role: "member" }),
    ]);
    // The loser is refused: 409 (the last owner) or 403 (no longer an owner itself).
    const codes = [a.statusCode, b.statusCode].sort();
    expect(codes[0]).toBe(200);
    expect([403, 409]).toContain(codes[1]);
    expect(Object.values(await roles(owner)).filter((r) => r === "owner")).toHaveLength(1);
  });

  it("answers 403 to a member and to an API key, before looking at the body, and changes nothing", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    const { key } = await createKey(t.app, owner);
    for (const headers of [member.headers, { "x-api-key": key }]) {
      expect((await patch(headers, member.id, { role: "owner" })).statusCode).toBe(403);
      expect((await patch(headers, owner.id, {})).statusCode).toBe(403);
      expect((await del(headers, owner.id)).statusCode).toBe(403);
      const self = await del(headers, member.id);
      expect(self.statusCode).toBe(403);
      expect(self.json()).toEqual({ error: expect.any(String) });
    }
    expect(await roles(owner)).toEqual({ [owner.id]: "owner", [member.id]: "member" });
  });

  it("answers 400 for a bad role, 404 for a user outside the account, 401 without a session", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const { user: stranger } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    for (const payload of [{}, { role: "admin" }, { role: null }]) {
      const bad = await patch(owner.headers, member.id, payload);
      expect(bad.statusCode, JSON.stringify(payload)).toBe(400);
      expect(bad.json().error).toMatch(/role/);
    }
    expect((await patch(owner.headers, stranger.id, { role: "member" })).statusCode).toBe(404);
    expect((await del(owner.headers, stranger.id)).statusCode).toBe(404);
    expect((await del(owner.headers, "not-a-uuid")).statusCode).toBe(404);
    expect((await patch({}, member.id, { role: "owner" })).statusCode).toBe(401);
    expect((await me(stranger)).json().profile.role).toBe("owner");
  });
});

describe("DELETE /api/accounts/members/{user_id}", () => {
  it("removes a member: they lose the account at once and leave the members list", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    expect((await t.app.inject({ url: "/api/conversations", headers: member.headers })).statusCode).toBe(200);
    const removed = await del(owner.headers, member.id);
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ ok: true });
    expect((await me(member)).json().profile).toEqual({ user_id: member.id, account_id: null, role: null });
    expect((await t.app.inject({ url: "/api/conversations", headers: member.headers })).statusCode).toBe(403);
    expect(await roles(owner)).toEqual({ [owner.id]: "owner" });
    expect((await del(owner.headers, member.id)).statusCode).toBe(404);
  });

  it("unassigns the removed member's conversations, ending the pause their assignment caused", async () => {
    const { user: owner, accountId } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    const { conversation } = await insertContact(t, { accountId });
    await insertMessage(t, { accountId, conversationId: conversation.id });
    const assigned = await t.app.inject({
      method: "PATCH",
      url: `/api/conversations/${conversation.id}`,
      headers: owner.headers,
      payload: { assigned_to: member.id },
    });
    expect(assigned.statusCode).toBe(200);
    expect(assigned.json().conversation).toMatchObject({
      assigned_to: member.id,
      automation: { state: "paused", reason: "assigned" },
    });
    expect((await del(owner.headers, member.id)).statusCode).toBe(200);
    const list = await t.app.inject({ url: "/api/conversations", headers: owner.headers });
    const after = (list.json().conversations as { id: string }[]).find((c) => c.id === conversation.id);
    expect(after).toMatchObject({ assigned_to: null, automation: { state: "active" } });
  });

  it("lets an owner leave when another owner remains", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const second = await addMember(t.app, owner);
    expect((await patch(owner.headers, second.id, { role: "owner" })).statusCode).toBe(200);
    expect((await del(owner.headers, owner.id)).statusCode).toBe(200);
    expect(await roles(second)).toEqual({ [second.id]: "owner" });
  });
});

describe("the channel configuration and roles", () => {
  // Decision: the spec lets every member of the account save and reset the configuration
  // (section 5: teammates share it; its only 403 is "no account"), so a member may.
  it("lets a member save over the owner's configuration and reset it", async () => {
    const { user: owner } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, owner);
    const first = addNumber(sandbox);
    const second = addNumber(sandbox);
    expect((await save(t, owner, bodyFor(first))).statusCode).toBe(200);
    const overwritten = await save(t, member, bodyFor(second));
    expect(overwritten.statusCode).toBe(200);
    expect(overwritten.json()).toMatchObject({ success: true, saved: true });
    expect((await health(t, owner)).json()).toMatchObject({ connected: true });
    const { rows } = await t.database.pool.query(
      "select phone_number_id from messaging_configs where account_id = (select account_id from profiles where user_id = $1)",
      [owner.id],
    );
    expect(rows).toEqual([{ phone_number_id: second.phoneNumberId }]);
    expect((await remove(t, member)).statusCode).toBe(200);
    expect((await health(t, owner)).json()).toMatchObject({ connected: false, reason: "no_config" });
  });
});
