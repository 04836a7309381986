import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, signUp, type TestApp } from "../helpers/harness.js";
import { redisForTests, TEST_REDIS_URL } from "../helpers/redis.js";
import { listen } from "./helpers.js";

const REDIS_URL = TEST_REDIS_URL;
const PER_EMAIL = { points: 5, durationSeconds: 600 };
// Generous for the shared app (every test here signs in from 127.0.0.1); the address tests build their own.
const PER_ADDRESS = { points: 1000, durationSeconds: 600 };
const SMALL_PER_ADDRESS = { points: 3, durationSeconds: 600 };
const PASSWORD = "correct horse battery";

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp({
    config: { signInRateLimit: PER_EMAIL, signInIpRateLimit: PER_ADDRESS, redisUrl: undefined },
  });
  base = await listen(t);
});
afterAll(() => t.close());

const signIn = (url: string, email: string, password: string) =>
  fetch(`${url}/api/auth/sign-in/email`, { method: "POST", body: JSON.stringify({ email, password }) });

const statuses = async (responses: Promise<Response>[]) => {
  const counts: Record<number, number> = {};
  for (const response of await Promise.all(responses))
    counts[response.status] = (counts[response.status] ?? 0) + 1;
  return counts;
};

describe("sign-in throttling per email", () => {
  it("answers exactly the limit of concurrent wrong passwords with 401 and the rest with 429", async () => {
    const user = await signUp(t.app);
    const attempts = Array.from({ length: PER_EMAIL.points + 4 }, () =>
      signIn(base, user.email, "wrong password!"),
    );
    expect(await statuses(attempts)).toEqual({ 401: PER_EMAIL.points, 429: 4 });
  });

  it("answers 429 with Retry-After and { error, retry_after_seconds }, even to the right password", async () => {
    const user = await signUp(t.app);
    for (let i = 0; i < PER_EMAIL.points; i++) {
      expect((await signIn(base, user.email, "wrong password!")).status).toBe(401);
    }
    const blocked = await signIn(base, user.email, PASSWORD);
    expect(blocked.status).toBe(429);
    const retryAfter = Number(blocked.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(PER_EMAIL.durationSeconds);
    expect(await blocked.json()).toEqual({ error: expect.any(String), retry_after_seconds: retryAfter });
  });

  it("counts an unknown email like a known one, and leaves other emails alone", async () => {
    const unknown = `nobody-${Date.now()}@example.com`;
    const answers: number[] = [];
    for (let i = 0; i <= PER_EMAIL.points; i++)
      answers.push((await signIn(base, unknown, "whatever123")).status);
    expect(answers).toEqual([401, 401, 401, 401, 401, 429]);
    const other = await signUp(t.app);
    expect((await signIn(base, other.email, PASSWORD)).status).toBe(200);
  });

  it("forgets an email's failures after a successful sign-in", async () => {
    const user = await signUp(t.app);
    for (let i = 0; i < PER_EMAIL.points - 1; i++) await signIn(base, user.email, "wrong password!");
    expect((await signIn(base, user.email, PASSWORD)).status).toBe(200);
    const again = await statuses(
      Array.from({ length: PER_EMAIL.points + 1 }, () => signIn(base, user.email, "wrong password!")),
    );
    expect(again).toEqual({ 401: PER_EMAIL.points, 429: 1 });
  });
});

describe("sign-in throttling per client address", () => {
  let own: TestApp;
  let url: string;
  beforeAll(async () => {
    own = await createTestApp({
      config: { signInRateLimit: PER_EMAIL, signInIpRateLimit: SMALL_PER_ADDRESS, redisUrl: undefined },
    });
    url = await listen(own);
  });
  afterAll(() => own.close());

  it("does not count successful sign-ins against the address", async () => {
    const user = await signUp(own.app);
    const answers: number[] = [];
    for (let i = 0; i < SMALL_PER_ADDRESS.points + 2; i++) {
      answers.push((await signIn(url, user.email, PASSWORD)).status);
    }
    expect(answers).toEqual([200, 200, 200, 200, 200]);
  });

  it("stops an address that tries many emails, whatever the email", async () => {
    const victim = await signUp(own.app);
    const answers: number[] = [];
    for (let i = 0; i < SMALL_PER_ADDRESS.points; i++) {
      answers.push((await signIn(url, `guess${i}@example.com`, "nope-nope")).status);
    }
    answers.push((await signIn(url, victim.email, PASSWORD)).status);
    expect(answers).toEqual([401, 401, 401, 429]);
  });
});

describe("sign-up does not reveal who has an account", () => {
  it("answers a taken email exactly like a new one, and leaves the existing user untouched", async () => {
    const existing = await signUp(t.app);
    const signUpAs = (email: string) =>
      fetch(`${base}/api/auth/sign-up/email`, {
        method: "POST",
        body: JSON.stringify({ email, password: "another password 1", name: "Probe" }),
      });
    const taken = await signUpAs(existing.email);
    const fresh = await signUpAs(`fresh-${Date.now()}@example.com`);
    expect(taken.status).toBe(fresh.status);
    const [takenBody, freshBody] = [await taken.json(), await fresh.json()];
    expect(Object.keys(takenBody).sort()).toEqual(Object.keys(freshBody).sort());
    expect(Object.keys(takenBody.user).sort()).toEqual(Object.keys(freshBody.user).sort());
    expect(takenBody.token).toBeNull();
    expect(taken.headers.get("set-auth-token")).toBeNull();
    expect(taken.headers.getSetCookie()).toEqual([]);
    expect(fresh.headers.getSetCookie()).toEqual([]);
    expect((await signIn(base, existing.email, PASSWORD)).status).toBe(200);
    expect((await signIn(base, existing.email, "another password 1")).status).toBe(401);
  });
});

const redisUp = await redisForTests("shared sign-in throttling through Redis");

describe.skipIf(!redisUp)("sign-in throttling shared through Redis", () => {
  it("shares one email's budget between two instances", async () => {
    // A high address limit: the address key is shared with every other test using this Redis.
    const config = { signInRateLimit: PER_EMAIL, signInIpRateLimit: { points: 10_000, durationSeconds: 60 } };
    const first = await createTestApp({ config: { ...config, redisUrl: REDIS_URL } });
    const second = await createTestApp({
      config: {
        ...config,
        redisUrl: REDIS_URL,
        authSecret: first.config.authSecret,
        encryptionKey: first.config.encryptionKey,
      },
      databaseUrl: first.config.databaseUrl,
    });
    try {
      const [one, two] = [await listen(first), await listen(second)];
      const user = await signUp(first.app);
      const attempts = Array.from({ length: PER_EMAIL.points + 3 }, (_, i) =>
        signIn(i % 2 ? one : two, user.email, "wrong password!"),
      );
      expect(await statuses(attempts)).toEqual({ 401: PER_EMAIL.points, 429: 3 });
    } finally {
      await second.close();
      await first.close();
    }
  });
});
