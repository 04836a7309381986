import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/upstream/sandbox/server.js";
import { createTestApp, signUp, signUpWithAccount, type TestApp } from "../../helpers/harness.js";
import { addNumber, bodyFor, health, save, startWithSandbox, storedRow, TRANSPORT_FAULTS } from "./setup.js";

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

const graphCalls = () => sandbox.requests().map((r) => `${r.method} ${r.path.replace(/^\/v\d+\.\d+/, "")}`);

describe("POST /api/messaging/config: checks before anything happens", () => {
  it("answers 401 without a session, before looking at the body", async () => {
    const r = await save(t, undefined, "{not json");
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 403 when the profile has no account, before looking at the body", async () => {
    const user = await signUp(t.app);
    const r = await save(t, user, "{not json");
    expect(r.statusCode).toBe(403);
    expect(r.json()).toEqual({ error: expect.any(String) });
  });

  it("answers 500 Internal server error for a body that cannot be parsed", async () => {
    const { user } = await signUpWithAccount(t.app);
    for (const payload of ["{not json", ""]) {
      const r = await save(t, user, payload);
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({ error: "Internal server error" });
    }
  });

  it("answers 400 when phone_number_id or access_token is missing or empty", async () => {
    const { user } = await signUpWithAccount(t.app);
    const bodies = [
      {},
      { phone_number_id: "123" },
      { access_token: "tok" },
      { phone_number_id: "", access_token: "tok" },
      { phone_number_id: "123", access_token: "   " },
      { phone_number_id: 123, access_token: "tok" },
      [],
      null,
    ];
    for (const body of bodies) {
      const r = await save(t, user, JSON.stringify(body));
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json().error).toMatch(/phone_number_id and access_token are required/);
    }
    expect(sandbox.requests()).toEqual([]);
  });

  it("checks the required fields before the PIN", async () => {
    const { user } = await signUpWithAccount(t.app);
    const r = await save(t, user, { phone_number_id: "123", pin: "12" });
    expect(r.json().error).toMatch(/phone_number_id and access_token/);
  });

  it("answers 400 for a PIN that is not a string of exactly 6 ASCII digits", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    for (const pin of ["12345", "1234567", 123456, "12a456", " 123456", "١٢٣٤٥٦", true, {}, ["123456"]]) {
      const r = await save(t, user, bodyFor(n, { pin }));
      expect(r.statusCode, JSON.stringify(pin)).toBe(400);
      expect(r.json()).toEqual({ error: "pin must be a string of exactly 6 digits" });
    }
    expect(sandbox.requests()).toEqual([]);
  });

  it("treats an absent, null or empty PIN as no PIN", async () => {
    const { user } = await signUpWithAccount(t.app);
    for (const pin of [undefined, null, ""]) {
      const n = addNumber(sandbox);
      const r = await save(t, user, bodyFor(n, pin === undefined ? {} : { pin }));
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ success: true, registration_skipped: true, registered: false });
    }
  });

  it("answers 409 when another account holds the number, before calling upstream", async () => {
    const first = await signUpWithAccount(t.app);
    const second = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    expect((await save(t, first.user, bodyFor(n))).statusCode).toBe(200);
    sandbox.clearRequests();

    const r = await save(t, second.user, bodyFor(n, { pin: "123456" }));
    expect(r.statusCode).toBe(409);
    expect(r.json()).toEqual({ error: expect.stringMatching(/already connected to another account/) });
    expect(sandbox.requests()).toEqual([]);
    expect(await storedRow(t, second.accountId)).toBeUndefined();
    expect((await storedRow(t, first.accountId))?.phoneNumberId).toBe(n.phoneNumberId);
  });

  it("checks the PIN before the other-account conflict", async () => {
    const first = await signUpWithAccount(t.app);
    const second = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, first.user, bodyFor(n));
    const r = await save(t, second.user, bodyFor(n, { pin: "12" }));
    expect(r.statusCode).toBe(400);
  });

  it("lets exactly one of two accounts saving the same number at once win", async () => {
    const a = await signUpWithAccount(t.app);
    const b = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    // Both pass the conflict check, then wait on upstream: the database constraint decides.
    sandbox.inject({ method: "GET" }, { delayMs: 150, times: 2 });
    const results = await Promise.all([save(t, a.user, bodyFor(n)), save(t, b.user, bodyFor(n))]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.statusCode === 409)?.json()).toEqual({
      error: expect.stringMatching(/already connected to another account/),
    });
    expect(graphCalls().filter((c) => c.startsWith("GET"))).toHaveLength(2);
    const rows = [await storedRow(t, a.accountId), await storedRow(t, b.accountId)].filter(Boolean);
    expect(rows).toHaveLength(1);
  });
});

describe("POST /api/messaging/config: upstream verification comes before storage", () => {
  it("answers 400 carrying the upstream message when Meta rejects the token, and stores nothing", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(
      t,
      user,
      bodyFor(n, { access_token: "EAAGwrong", pin: "123456", business_account_id: n.businessAccountId }),
    );
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({
      error: "Failed to verify credentials with Meta: Invalid OAuth access token - Cannot parse access token",
    });
    expect(await storedRow(t, accountId)).toBeUndefined();
    expect(graphCalls()).toEqual([`GET /${n.phoneNumberId}`]);
  });

  it("answers 400 for an unknown phone number id (Meta error 100)", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(t, user, { phone_number_id: "999000999", access_token: n.accessToken });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toMatch(
      /^Failed to verify credentials with Meta: Unsupported get request\. Object with ID '999000999'/,
    );
  });

  for (const { name, fault, message } of TRANSPORT_FAULTS) {
    it(`answers 400 with a clear message on ${name} during verification`, async () => {
      const { user, accountId } = await signUpWithAccount(t.app);
      const n = addNumber(sandbox);
      sandbox.inject({ method: "GET", path: `/${n.phoneNumberId}` }, fault);
      const r = await save(t, user, bodyFor(n, { pin: "123456" }));
      expect(r.statusCode).toBe(400);
      expect(r.json().error).toMatch(/^Failed to verify credentials with Meta: /);
      expect(r.json().error).toMatch(message);
      expect(await storedRow(t, accountId)).toBeUndefined();
      expect(graphCalls().some((c) => c.includes("/register"))).toBe(false);
    });
  }

  it("answers 500 naming the 64-character hex requirement when ENCRYPTION_KEY is invalid, after verifying", async () => {
    const broken = await createTestApp({
      databaseUrl: t.config.databaseUrl!,
      config: { graphApiUrl: sandbox.url, encryptionKey: "not-a-hex-key" },
    });
    try {
      const { user, accountId } = await signUpWithAccount(broken.app);
      const n = addNumber(sandbox);
      const r = await save(broken, user, bodyFor(n, { pin: "123456" }));
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({ error: expect.stringContaining("valid 64-character hex string") });
      expect(r.json().error).toMatch(/ENCRYPTION_KEY/);
      expect(graphCalls()).toEqual([`GET /${n.phoneNumberId}`]);
      expect(await storedRow(t, accountId)).toBeUndefined();
    } finally {
      await broken.close();
    }
  });
});

describe("POST /api/messaging/config: registration (the sameNumber rule)", () => {
  it("skips registration of a new number saved without a PIN", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(t, user, bodyFor(n));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({
      success: true,
      saved: true,
      registered: false,
      registration_skipped: true,
      phone_info: {
        id: n.phoneNumberId,
        display_phone_number: n.displayPhoneNumber,
        verified_name: n.verifiedName,
        quality_rating: "GREEN",
      },
    });
    expect(graphCalls()).toEqual([`GET /${n.phoneNumberId}`]);
    const row = await storedRow(t, accountId);
    expect(row).toMatchObject({
      status: "connected",
      registeredAt: null,
      lastRegistrationError: null,
      userId: user.id,
    });
    expect(row?.connectedAt).toBeInstanceOf(Date);
  });

  it("registers a new number with the PIN given, sending Meta's register body", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(t, user, bodyFor(n, { pin: "246810" }));
    expect(r.json()).toMatchObject({
      success: true,
      saved: true,
      registered: true,
      registration_skipped: false,
    });
    const register = sandbox.requests().find((q) => q.path.endsWith("/register"));
    expect(register?.body).toEqual({ messaging_product: "whatsapp", pin: "246810" });
    expect(register?.path).toBe(`/${t.config.graphApiVersion}/${n.phoneNumberId}/register`);
    const row = await storedRow(t, accountId);
    expect(row?.registeredAt).toBeInstanceOf(Date);
    expect(row?.status).toBe("connected");
  });

  it("does not register again when the same registered number is saved without a PIN", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { pin: "135790" }));
    const registeredAt = (await storedRow(t, accountId))?.registeredAt;
    sandbox.clearRequests();

    const r = await save(t, user, bodyFor(n));
    expect(r.json()).toMatchObject({ success: true, registered: true, registration_skipped: false });
    expect(graphCalls()).toEqual([`GET /${n.phoneNumberId}`]);
    expect((await storedRow(t, accountId))?.registeredAt).toEqual(registeredAt);
  });

  it("registers again when the same registered number is saved with a PIN", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { pin: "135790" }));
    sandbox.clearRequests();
    const r = await save(t, user, bodyFor(n, { pin: "135790" }));
    expect(r.json()).toMatchObject({ success: true, registered: true, registration_skipped: false });
    expect(graphCalls()).toContain(`POST /${n.phoneNumberId}/register`);
  });

  it("still needs registration for the same number never registered: skipped again without a PIN", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n));
    const r = await save(t, user, bodyFor(n));
    expect(r.json()).toMatchObject({ success: true, registered: false, registration_skipped: true });
  });

  it("needs registration when the account switches to another number", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const first = addNumber(sandbox);
    const second = addNumber(sandbox);
    await save(t, user, bodyFor(first, { pin: "111111" }));

    const skipped = await save(t, user, bodyFor(second));
    expect(skipped.json()).toMatchObject({ success: true, registered: false, registration_skipped: true });
    expect(await storedRow(t, accountId)).toMatchObject({
      phoneNumberId: second.phoneNumberId,
      registeredAt: null,
    });

    const registered = await save(t, user, bodyFor(first, { pin: "111111" }));
    expect(registered.json()).toMatchObject({ success: true, registered: true });
  });

  it("saves the row disconnected with the error when registration with the PIN fails", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox, { pin: "999999" });
    const r = await save(t, user, bodyFor(n, { pin: "123456" }));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({
      success: false,
      saved: true,
      registered: false,
      registration_error: "Two step verification PIN Mismatch",
      phone_info: expect.objectContaining({ id: n.phoneNumberId }),
    });
    expect(await storedRow(t, accountId)).toMatchObject({
      status: "disconnected",
      connectedAt: null,
      registeredAt: null,
      lastRegistrationError: "Two step verification PIN Mismatch",
    });
    const check = await health(t, user);
    expect(check.json()).toMatchObject({
      connected: true,
      config: { status: "disconnected", last_registration_error: "Two step verification PIN Mismatch" },
    });
  });

  it("clears registered_at when a re-registration fails, and recovers with the right PIN", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { pin: "222222" }));
    expect((await save(t, user, bodyFor(n, { pin: "333333" }))).json()).toMatchObject({ success: false });
    expect(await storedRow(t, accountId)).toMatchObject({ registeredAt: null, status: "disconnected" });

    const fixed = await save(t, user, bodyFor(n, { pin: "222222" }));
    expect(fixed.json()).toMatchObject({ success: true, registered: true });
    const row = await storedRow(t, accountId);
    expect(row).toMatchObject({ status: "connected", lastRegistrationError: null });
    expect(row?.connectedAt).toBeInstanceOf(Date);
  });

  for (const { name, fault, message } of TRANSPORT_FAULTS) {
    it(`keeps saving with a registration error on ${name} during registration`, async () => {
      const { user, accountId } = await signUpWithAccount(t.app);
      const n = addNumber(sandbox);
      sandbox.inject({ method: "POST", path: "/register" }, fault);
      const r = await save(t, user, bodyFor(n, { pin: "123456" }));
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ success: false, saved: true, registered: false });
      expect(r.json().registration_error).toMatch(message);
      expect((await storedRow(t, accountId))?.status).toBe("disconnected");
    });
  }
});

describe("POST /api/messaging/config: subscription of the business account", () => {
  it("subscribes the business account when business_account_id is given", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(t, user, bodyFor(n, { business_account_id: n.businessAccountId }));
    expect(r.json()).toMatchObject({ success: true });
    expect(graphCalls()).toContain(`POST /${n.businessAccountId}/subscribed_apps`);
    const row = await storedRow(t, accountId);
    expect(row?.subscribedAppsAt).toBeInstanceOf(Date);
    expect(row?.businessAccountId).toBe(n.businessAccountId);
  });

  it("stores subscribed_apps_at and business_account_id null without business_account_id, and calls nothing", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { business_account_id: n.businessAccountId }));
    sandbox.clearRequests();
    await save(t, user, bodyFor(n));
    expect(graphCalls().some((c) => c.includes("subscribed_apps"))).toBe(false);
    expect(await storedRow(t, accountId)).toMatchObject({ subscribedAppsAt: null, businessAccountId: null });
  });

  it("treats a rejected subscription as non-fatal (unknown business account)", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    const r = await save(t, user, bodyFor(n, { business_account_id: "404404404", pin: "123456" }));
    expect(r.json()).toMatchObject({ success: true, saved: true, registered: true });
    expect(await storedRow(t, accountId)).toMatchObject({ subscribedAppsAt: null, status: "connected" });
  });

  for (const { name, fault } of TRANSPORT_FAULTS) {
    it(`treats ${name} during subscription as non-fatal`, async () => {
      const { user, accountId } = await signUpWithAccount(t.app);
      const n = addNumber(sandbox);
      await save(t, user, bodyFor(n, { business_account_id: n.businessAccountId }));
      sandbox.inject({ method: "POST", path: "/subscribed_apps" }, fault);
      const r = await save(t, user, bodyFor(n, { business_account_id: n.businessAccountId }));
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ success: true, saved: true });
      expect((await storedRow(t, accountId))?.subscribedAppsAt).toBeNull();
    });
  }
});

describe("POST /api/messaging/config: the stored row", () => {
  it("stores both tokens encrypted and the verify token's keyed hash", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { verify_token: "my-verify-token-42" }));
    const row = await storedRow(t, accountId);
    const { cipher } = t.app.deps;
    expect(row?.accessToken).toMatch(/^v1:/);
    expect(row?.accessToken).not.toContain(n.accessToken);
    expect(cipher.decrypt(row!.accessToken)).toBe(n.accessToken);
    expect(cipher.decrypt(row!.verifyToken!)).toBe("my-verify-token-42");
    expect(row?.verifyTokenHash).toBe(cipher.keyedHash("my-verify-token-42"));
  });

  it("stores the verify token and its hash as null when none (or an empty one) is given", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n, { verify_token: "v" }));
    await save(t, user, bodyFor(n, { verify_token: "" }));
    expect(await storedRow(t, accountId)).toMatchObject({ verifyToken: null, verifyTokenHash: null });
  });

  it("sets updated_at on each save and keeps the member who first saved it", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    await save(t, user, bodyFor(n));
    const first = await storedRow(t, accountId);
    await new Promise((r) => setTimeout(r, 10));
    await save(t, user, bodyFor(n));
    const second = await storedRow(t, accountId);
    expect(second!.updatedAt.getTime()).toBeGreaterThan(first!.updatedAt.getTime());
    expect(second?.createdAt).toEqual(first?.createdAt);
    expect(second?.userId).toBe(user.id);
  });

  it("answers 400 for a non-string business_account_id or verify_token", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox);
    expect((await save(t, user, bodyFor(n, { business_account_id: 42 }))).statusCode).toBe(400);
    expect((await save(t, user, bodyFor(n, { verify_token: ["x"] }))).statusCode).toBe(400);
  });
});
