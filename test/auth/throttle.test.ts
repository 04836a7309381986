import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, signUp, type TestApp } from "../helpers/harness.js";
import { redisForTests, TEST_REDIS_URL } from "../helpers/redis.js";
import { listen } from "./helpers.js";

const REDIS_URL = TEST_REDIS_URL;
const PER_PAIR = { points: 5, durationSeconds: 600 };
// Generous for the shared app (every test here signs in from 127.0.0.1); the address tests build their own.
const PER_ADDRESS = { points: 1000, durationSeconds: 600 };
const PER_EMAIL = { points: 1000, durationSeconds: 600 };
const SMALL_PER_ADDRESS = { points: 3, durationSeconds: 600 };
const PASSWORD = "correct horse battery";
const config = {
  signInRateLimit: PER_PAIR,
  signInIpRateLimit: PER_ADDRESS,
  signInEmailRateLimit: PER_EMAIL,
  redisUrl: undefined,
};

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp({ config });
  base = await listen(t);
});
afterAll(() => t.close());

const signIn = (url: string, email: string, password: string) =>
  fetch(`${url}/api/auth/sign-in/email`, { method: "POST", body: JSON.stringify({ email, password }) });
/** A sign-in from a given client address. */
const signInFrom = (app: TestApp, client: string, email: string, password: string) =>
  app.app.inject({
    method: "POST",
    url: "/api/auth/sign-in/email",
    remoteAddress: client,
    payload: { email, password },
  });

const statuses = async (responses: Promise<Response>[]) => {
  const counts: Record<number, number> = {};
  for (const response of await Promise.all(responses))
    counts[response.status] = (counts[response.status] ?? 0) + 1;
  return counts;
};

describe("sign-in throttling per (email, client)", () => {
  it("answers exactly the free failures of a concurrent burst with 401 and the rest with 429", async () => {
    const user = await signUp(t.app);
    const attempts = Array.from({ length: PER_PAIR.points + 4 }, () =>
      signIn(base, user.email, "wrong password!"),
    );
    expect(await statuses(attempts)).toEqual({ 401: PER_PAIR.points, 429: 4 });
  });

  it("answers 429 with Retry-After and { error, retry_after_seconds }, and backs off exponentially", async () => {
    const user = await signUp(t.app);
    const client = "203.0.113.7";
    for (let i = 0; i < PER_PAIR.points; i++) {
      expect((await signInFrom(t, client, user.email, "wrong password!")).statusCode).toBe(401);
    }
    const waits: number[] = [];
    for (let round = 0; round < 2; round++) {
      const blocked = await signInFrom(t, client, user.email, PASSWORD);
      expect(blocked.statusCode).toBe(429);
      const retryAfter = Number(blocked.headers["retry-after"]);
      expect(blocked.json()).toEqual({ error: expect.any(String), retry_after_seconds: retryAfter });
      waits.push(retryAfter);
      await new Promise((r) => setTimeout(r, retryAfter * 1000 + 50));
      expect((await signInFrom(t, client, user.email, "wrong password!")).statusCode).toBe(401);
    }
    // Each failure past the free ones doubles the wait: 1 s, then 2 s, then 4 s.
    expect(waits).toEqual([1, 2]);
    const third = await signInFrom(t, client, user.email, PASSWORD);
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers["retry-after"])).toBe(4);
  });

  it("does not stop the victim signing in from another client after an attacker's many wrong guesses", async () => {
    const victim = await signUp(t.app);
    const attacker = "198.51.100.66";
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) {
      answers.push((await signInFrom(t, attacker, victim.email, `guess number ${i}`)).statusCode);
    }
    expect(answers.slice(0, PER_PAIR.points)).toEqual(Array(PER_PAIR.points).fill(401));
    expect(answers.slice(PER_PAIR.points)).toContain(429);
    const fromHome = await signInFrom(t, "192.0.2.10", victim.email, PASSWORD);
    expect(fromHome.statusCode).toBe(200);
  });

  it("counts an unknown email like a known one, and leaves other emails alone", async () => {
    const unknown = `nobody-${Date.now()}@example.com`;
    const answers: number[] = [];
    for (let i = 0; i <= PER_PAIR.points; i++)
      answers.push((await signIn(base, unknown, "whatever123")).status);
    expect(answers).toEqual([401, 401, 401, 401, 401, 429]);
    const other = await signUp(t.app);
    expect((await signIn(base, other.email, PASSWORD)).status).toBe(200);
  });

  it("forgets the pair's failures after a successful sign-in", async () => {
    const user = await signUp(t.app);
    for (let i = 0; i < PER_PAIR.points - 1; i++) await signIn(base, user.email, "wrong password!");
    expect((await signIn(base, user.email, PASSWORD)).status).toBe(200);
    const again = await statuses(
      Array.from({ length: PER_PAIR.points + 1 }, () => signIn(base, user.email, "wrong password!")),
    );
    expect(again).toEqual({ 401: PER_PAIR.points, 429: 1 });
  });

  it("keeps its counters in Postgres without Redis, keyed without the email in clear", async () => {
    const user = await signUp(t.app);
    await signIn(base, user.email, "wrong password!");
    const { rows } = await t.database.pool.query<{ key: string }>("select key from sign_in_attempts");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.key).join()).not.toContain("@");
  });
});

describe("sign-in throttling per email (all clients)", () => {
  it("slows attempts beyond the email's budget but never refuses its owner", async () => {
    const own = await createTestApp({
      config: { ...config, signInEmailRateLimit: { points: 3, durationSeconds: 600 } },
    });
    try {
      const victim = await signUp(own.app);
      // A distributed attacker: a few guesses from each of many addresses.
      const timings: number[] = [];
      for (let i = 0; i < 6; i++) {
        const started = Date.now();
        const answer = await signInFrom(own, `198.51.100.${i + 1}`, victim.email, "wrong password!");
        timings.push(Date.now() - started);
        expect(answer.statusCode).toBe(401);
      }
      expect(Math.min(...timings.slice(3))).toBeGreaterThanOrEqual(200);
      const started = Date.now();
      const home = await signInFrom(own, "192.0.2.10", victim.email, PASSWORD);
      expect(home.statusCode).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    } finally {
      await own.close();
    }
  });
});

describe("sign-in throttling per client address", () => {
  let own: TestApp;
  let url: string;
  beforeAll(async () => {
    own = await createTestApp({ config: { ...config, signInIpRateLimit: SMALL_PER_ADDRESS } });
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

describe("sign-in throttling shared through Postgres (no Redis)", () => {
  it("shares one pair's budget between two instances on one database", async () => {
    const second = await createTestApp({
      config: { ...config, authSecret: t.config.authSecret, encryptionKey: t.config.encryptionKey },
      databaseUrl: t.config.databaseUrl,
    });
    try {
      const other = await listen(second);
      const user = await signUp(t.app);
      const answers: number[] = [];
      for (let i = 0; i < PER_PAIR.points + 3; i++) {
        answers.push((await signIn(i % 2 ? base : other, user.email, "wrong password!")).status);
      }
      expect(answers).toEqual([...Array(PER_PAIR.points).fill(401), 429, 429, 429]);
    } finally {
      await second.close();
    }
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
  it("shares one pair's budget between two instances", async () => {
    // A high address limit: the address key is shared with every other test using this Redis.
    const shared = { ...config, signInIpRateLimit: { points: 10_000, durationSeconds: 60 } };
    const first = await createTestApp({ config: { ...shared, redisUrl: REDIS_URL } });
    const second = await createTestApp({
      config: {
        ...shared,
        redisUrl: REDIS_URL,
        authSecret: first.config.authSecret,
        encryptionKey: first.config.encryptionKey,
      },
      databaseUrl: first.config.databaseUrl,
    });
    try {
      const [one, two] = [await listen(first), await listen(second)];
      const user = await signUp(first.app);
      const attempts = Array.from({ length: PER_PAIR.points + 3 }, (_, i) =>
        signIn(i % 2 ? one : two, user.email, "wrong password!"),
      );
      expect(await statuses(attempts)).toEqual({ 401: PER_PAIR.points, 429: 3 });
      // Shared in Redis, not in Postgres.
      const { rows } = await first.database.pool.query("select key from sign_in_attempts");
      expect(rows).toEqual([]);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
