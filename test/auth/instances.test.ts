import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStream } from "../events/helpers.js";
import { addMember, createTestApp, signUpWithAccount, type TestApp } from "../helpers/harness.js";
import { createKey, listen } from "./helpers.js";

// Two instances of the service on one database, with the app's defaults (a 5 s session
// cache, a 15 s stream heartbeat): anything that ends within a second below was told.
let a: TestApp;
let b: TestApp;
let urlB: string;
beforeAll(async () => {
  a = await createTestApp();
  b = await createTestApp({
    databaseUrl: a.config.databaseUrl,
    config: { authSecret: a.config.authSecret, encryptionKey: a.config.encryptionKey },
  });
  urlB = await listen(b);
});
afterAll(async () => {
  await b.close();
  await a.close();
});

/** Milliseconds until `check` holds, polling every 20 ms; fails after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean> | boolean): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
}

const meOn = (t: TestApp, headers: Record<string, string>) => t.app.inject({ url: "/api/me", headers });

describe("revocation reaches every instance at once", () => {
  it("a session signed out on one instance is refused by another that had it cached", async () => {
    const { user } = await signUpWithAccount(a.app);
    expect((await meOn(b, user.headers)).statusCode).toBe(200); // cached on b for 5 s
    const out = await a.app.inject({ method: "POST", url: "/api/auth/sign-out", headers: user.headers });
    expect(out.statusCode).toBe(200);
    await within(1_000, async () => (await meOn(b, user.headers)).statusCode === 401);
  });

  it("closes the revoked session's open event stream on another instance within a second", async () => {
    const { user } = await signUpWithAccount(a.app);
    const stream = await openStream(`${urlB}/api/events/stream`, user.headers);
    try {
      expect(stream.status).toBe(200);
      await stream.waitFor(() => stream.comments.includes("connected"));
      const out = await a.app.inject({ method: "POST", url: "/api/auth/sign-out", headers: user.headers });
      expect(out.statusCode).toBe(200);
      await within(1_000, () => stream.isEnded());
    } finally {
      await stream.close();
    }
  });

  it("closes a deleted API key's open event stream on another instance within a second", async () => {
    const { user } = await signUpWithAccount(a.app);
    const { id, key } = await createKey(a.app, user);
    const stream = await openStream(`${urlB}/api/events/stream`, { "x-api-key": key });
    const kept = await openStream(`${urlB}/api/events/stream`, user.headers);
    try {
      expect(stream.status).toBe(200);
      await stream.waitFor(() => stream.comments.includes("connected"));
      const deleted = await a.app.inject({
        method: "DELETE",
        url: `/api/api-keys/${id}`,
        headers: user.headers,
      });
      expect(deleted.statusCode).toBe(200);
      await within(1_000, () => stream.isEnded());
      expect((await meOn(b, { "x-api-key": key })).statusCode).toBe(401);
      // The owner's own stream (same user, a credential still valid) stays open.
      await new Promise((r) => setTimeout(r, 200));
      expect(kept.isEnded()).toBe(false);
    } finally {
      await stream.close();
      await kept.close();
    }
  });

  it("a member removed on one instance loses the account on another at once, open stream included", async () => {
    const { user: owner } = await signUpWithAccount(a.app);
    const member = await addMember(a.app, owner);
    expect((await meOn(b, member.headers)).json().profile.role).toBe("member"); // cached on b
    const stream = await openStream(`${urlB}/api/events/stream`, member.headers);
    try {
      await stream.waitFor(() => stream.comments.includes("connected"));
      const removed = await a.app.inject({
        method: "DELETE",
        url: `/api/accounts/members/${member.id}`,
        headers: owner.headers,
      });
      expect(removed.statusCode).toBe(200);
      await within(1_000, () => stream.isEnded());
      await within(1_000, async () => (await meOn(b, member.headers)).json().profile.account_id === null);
    } finally {
      await stream.close();
    }
  });
});
