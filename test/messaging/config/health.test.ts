import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/upstream/sandbox/server.js";
import { addMember, createTestApp, signUp, signUpWithAccount, type TestApp } from "../../helpers/harness.js";
import {
  addNumber,
  bodyFor,
  health,
  remove,
  save,
  startWithSandbox,
  storedRow,
  TRANSPORT_FAULTS,
} from "./setup.js";

let sandbox: Sandbox;
let t: TestApp;
beforeAll(async () => {
  ({ sandbox, t } = await startWithSandbox());
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});
beforeEach(() => sandbox.reset());

/** An account with a saved, verified configuration. */
async function connectedAccount() {
  const owner = await signUpWithAccount(t.app);
  const n = addNumber(sandbox);
  const saved = await save(
    t,
    owner.user,
    bodyFor(n, { business_account_id: n.businessAccountId, pin: "123456" }),
  );
  expect(saved.json()).toMatchObject({ success: true });
  return { ...owner, n };
}

describe("GET /api/messaging/config", () => {
  it("answers 401 without a session", async () => {
    const r = await health(t);
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 200 no_account when the profile has no account", async () => {
    const user = await signUp(t.app);
    const r = await health(t, user);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ connected: false, reason: "no_account", message: expect.any(String) });
  });

  it("answers 200 no_config when the account has no configuration", async () => {
    const { user } = await signUpWithAccount(t.app);
    const r = await health(t, user);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ connected: false, reason: "no_config", message: expect.any(String) });
  });

  it("answers connected with the upstream phone_info and the non-secret config fields", async () => {
    const { user, n } = await connectedAccount();
    sandbox.clearRequests();
    const r = await health(t, user);
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body).toEqual({
      connected: true,
      phone_info: {
        id: n.phoneNumberId,
        display_phone_number: n.displayPhoneNumber,
        verified_name: n.verifiedName,
        quality_rating: "GREEN",
      },
      config: {
        status: "connected",
        phone_number_id: n.phoneNumberId,
        business_account_id: n.businessAccountId,
        has_verify_token: false,
        connected_at: expect.any(String),
        registered_at: expect.any(String),
        subscribed_apps_at: expect.any(String),
        last_registration_error: null,
        messages_per_second: 80,
        updated_at: expect.any(String),
      },
    });
    expect(r.body).not.toContain(n.accessToken);
    // The stored token is what verifies upstream.
    expect(sandbox.requests()).toHaveLength(1);
    expect(sandbox.requests()[0]?.path).toMatch(new RegExp(`/${n.phoneNumberId}$`));
  });

  it("answers meta_api_error with a fixed prefix and the upstream text when Meta rejects the token", async () => {
    const { user, n } = await connectedAccount();
    sandbox.reset();
    sandbox.addNumber({ ...n, accessToken: "EAAG-rotated" });
    const r = await health(t, user);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({
      connected: false,
      reason: "meta_api_error",
      message: "Meta API error: Invalid OAuth access token - Cannot parse access token",
    });
  });

  it("answers meta_api_error carrying an injected Meta error", async () => {
    const { user } = await connectedAccount();
    sandbox.inject(
      { method: "GET" },
      { status: 400, error: { code: 131031, message: "Account has been locked" } },
    );
    expect((await health(t, user)).json()).toMatchObject({
      reason: "meta_api_error",
      message: "Meta API error: Account has been locked",
    });
  });

  for (const { name, fault, message } of TRANSPORT_FAULTS) {
    it(`answers meta_api_error on ${name}`, async () => {
      const { user } = await connectedAccount();
      sandbox.inject({ method: "GET" }, fault);
      const r = await health(t, user);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ connected: false, reason: "meta_api_error" });
      expect(r.json().message).toMatch(/^Meta API error: /);
      expect(r.json().message).toMatch(message);
    });
  }

  it("answers token_corrupted with needs_reset after a key change, and DELETE recovers", async () => {
    const { user, accountId, n } = await connectedAccount();
    const rekeyed = await createTestApp({
      databaseUrl: t.config.databaseUrl!,
      config: {
        graphApiUrl: sandbox.url,
        authSecret: t.config.authSecret,
        encryptionKey: randomBytes(32).toString("hex"),
      },
    });
    try {
      const r = await health(rekeyed, user);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({
        connected: false,
        reason: "token_corrupted",
        needs_reset: true,
        message: expect.any(String),
      });

      const deleted = await remove(rekeyed, user);
      expect(deleted.statusCode).toBe(200);
      expect(deleted.json()).toEqual({ success: true });
      expect((await health(rekeyed, user)).json()).toMatchObject({ reason: "no_config" });

      const saved = await save(rekeyed, user, bodyFor(n));
      expect(saved.json()).toMatchObject({ success: true });
      expect((await health(rekeyed, user)).json()).toMatchObject({ connected: true });
      expect(await storedRow(rekeyed, accountId)).toBeDefined();
    } finally {
      await rekeyed.close();
    }
  });

  it("answers 500 reason unknown naming the key requirement when ENCRYPTION_KEY is invalid", async () => {
    const { user } = await connectedAccount();
    const broken = await createTestApp({
      databaseUrl: t.config.databaseUrl!,
      config: { graphApiUrl: sandbox.url, authSecret: t.config.authSecret, encryptionKey: "short" },
    });
    try {
      const r = await health(broken, user);
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({
        connected: false,
        reason: "unknown",
        message: expect.stringContaining("64-character hex"),
      });
    } finally {
      await broken.close();
    }
  });

  it("is shared by teammates: a member sees, replaces and deletes the account's configuration", async () => {
    const { user: owner, accountId, n } = await connectedAccount();
    const member = await addMember(t.app, owner);
    expect((await health(t, member)).json()).toMatchObject({
      connected: true,
      config: { phone_number_id: n.phoneNumberId },
    });

    const other = addNumber(sandbox);
    expect((await save(t, member, bodyFor(other))).json()).toMatchObject({ success: true });
    const row = await storedRow(t, accountId);
    expect(row?.phoneNumberId).toBe(other.phoneNumberId);
    expect(row?.userId).toBe(owner.id);
    expect((await health(t, owner)).json()).toMatchObject({
      config: { phone_number_id: other.phoneNumberId },
    });

    expect((await remove(t, member)).json()).toEqual({ success: true });
    expect((await health(t, owner)).json()).toMatchObject({ reason: "no_config" });
  });

  it("does not show one account's configuration to another account", async () => {
    await connectedAccount();
    const stranger = await signUpWithAccount(t.app);
    expect((await health(t, stranger.user)).json()).toMatchObject({ reason: "no_config" });
  });
});

describe("DELETE /api/messaging/config", () => {
  it("answers 401 without a session and 403 without an account", async () => {
    expect((await remove(t)).statusCode).toBe(401);
    const user = await signUp(t.app);
    const r = await remove(t, user);
    expect(r.statusCode).toBe(403);
    expect(r.json()).toEqual({ error: expect.any(String) });
  });

  it("removes only the caller's account row and answers { success: true }, also when there is none", async () => {
    const mine = await connectedAccount();
    const theirs = await connectedAccount();
    expect((await remove(t, mine.user)).json()).toEqual({ success: true });
    expect(await storedRow(t, mine.accountId)).toBeUndefined();
    expect(await storedRow(t, theirs.accountId)).toBeDefined();
    const again = await remove(t, mine.user);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ success: true });
  });

  it("frees the number for another account", async () => {
    const first = await connectedAccount();
    const second = await signUpWithAccount(t.app);
    expect((await save(t, second.user, bodyFor(first.n))).statusCode).toBe(409);
    await remove(t, first.user);
    expect((await save(t, second.user, bodyFor(first.n))).statusCode).toBe(200);
  });
});

describe("storage errors", () => {
  it("GET answers db_error, POST and DELETE answer 500 when the table cannot be read", async () => {
    const throwaway = await createTestApp({ config: { graphApiUrl: sandbox.url } });
    try {
      const { user } = await signUpWithAccount(throwaway.app);
      const n = addNumber(sandbox);
      await throwaway.database.pool.query("drop table messaging_configs");

      const r = await health(throwaway, user);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ connected: false, reason: "db_error", message: expect.any(String) });

      const saved = await save(throwaway, user, bodyFor(n));
      expect(saved.statusCode).toBe(500);
      expect(saved.json()).toEqual({ error: expect.any(String) });
      expect(saved.json().error).not.toMatch(/messaging_configs|relation/);
      // The check failed before anything was sent upstream.
      expect(sandbox.requests()).toEqual([]);

      const deleted = await remove(throwaway, user);
      expect(deleted.statusCode).toBe(500);
      expect(deleted.json()).toEqual({ error: expect.any(String) });
    } finally {
      await throwaway.close();
    }
  });
});

describe("storage failure while storing the row", () => {
  it("answers 500 after verification and registration when the write fails", async () => {
    const throwaway = await createTestApp({ config: { graphApiUrl: sandbox.url } });
    try {
      const { user, accountId } = await signUpWithAccount(throwaway.app);
      const n = addNumber(sandbox);
      await throwaway.database.pool.query(`
        create function refuse_config_write() returns trigger language plpgsql as
          $$ begin raise exception 'disk full (simulated)'; end $$;
        create trigger refuse_config_write before insert or update on messaging_configs
          for each row execute function refuse_config_write();`);
      const r = await save(throwaway, user, bodyFor(n, { pin: "123456" }));
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({ error: "Could not save the messaging configuration" });
      expect(sandbox.requests().map((q) => q.method)).toEqual(["GET", "POST"]);
      expect(await storedRow(throwaway, accountId)).toBeUndefined();
    } finally {
      await throwaway.close();
    }
  });
});
