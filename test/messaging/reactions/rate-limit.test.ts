import { randomUUID } from "node:crypto";
import net from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertChannelConfig, insertContact, insertMessage } from "../../helpers/fixtures.js";
import {
  createTestApp,
  signUp,
  signUpWithAccount,
  type TestApp,
  type TestUser,
} from "../../helpers/harness.js";
import { redisForTests, TEST_REDIS_URL } from "../../helpers/redis.js";

const LIMIT = { points: 5, durationSeconds: 60 };
const REDIS_URL = TEST_REDIS_URL;

function react(t: TestApp, user: TestUser | undefined, payload: unknown = { emoji: "👍" }) {
  return t.app.inject({
    method: "POST",
    url: "/api/messaging/react",
    headers: { ...user?.headers, "content-type": "application/json" },
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });
}

function expectRateLimited(response: Awaited<ReturnType<typeof react>>, points: number, window: number) {
  expect(response.statusCode).toBe(429);
  const body = response.json() as { error: string; retry_after_seconds: number };
  expect(body).toEqual({ error: "Rate limit exceeded", retry_after_seconds: expect.any(Number) });
  expect(Number.isInteger(body.retry_after_seconds)).toBe(true);
  expect(body.retry_after_seconds).toBeGreaterThanOrEqual(1);
  expect(body.retry_after_seconds).toBeLessThanOrEqual(window);
  expect(response.headers["retry-after"]).toBe(String(body.retry_after_seconds));
  expect(response.headers["ratelimit-policy"]).toBe(`${points};w=${window}`);
  expect(response.headers.ratelimit).toBe(`limit=${points}, remaining=0, reset=${body.retry_after_seconds}`);
}

const countStatuses = (responses: Array<{ statusCode: number }>) => {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.statusCode] = (counts[r.statusCode] ?? 0) + 1;
  return counts;
};

describe("reaction rate limit (in-memory store)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ config: { reactRateLimit: LIMIT, redisUrl: undefined } });
  });
  afterAll(() => t?.close());

  it("answers 429 with Retry-After, RateLimit-Policy and RateLimit once the budget is spent", async () => {
    const { user } = await signUpWithAccount(t.app);
    for (let i = 1; i <= LIMIT.points; i++) {
      const response = await react(t, user, { message_id: randomUUID(), emoji: "👍" });
      expect(response.statusCode).toBe(404);
      expect(response.headers["ratelimit-policy"]).toBe("5;w=60");
      expect(response.headers.ratelimit).toMatch(
        new RegExp(`^limit=5, remaining=${LIMIT.points - i}, reset=\\d+$`),
      );
      expect(response.headers["retry-after"]).toBeUndefined();
    }
    expectRateLimited(await react(t, user, { message_id: randomUUID(), emoji: "👍" }), 5, 60);
  });

  it("shows a user without an account 403 until the limit, then 429", async () => {
    const loner = await signUp(t.app);
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT.points + 3; i++) statuses.push((await react(t, loner)).statusCode);
    expect(statuses).toEqual([403, 403, 403, 403, 403, 429, 429, 429]);
  });

  it("always answers 401, never 429, to an unauthenticated caller", async () => {
    const responses = [];
    for (let i = 0; i < LIMIT.points * 3; i++) responses.push(await react(t, undefined));
    expect(countStatuses(responses)).toEqual({ 401: LIMIT.points * 3 });
    expect(responses[0]?.json()).toEqual({ error: "Unauthorized" });
  });

  it("checks the limit before reading the body: invalid JSON over the limit is 429, not 500", async () => {
    const { user } = await signUpWithAccount(t.app);
    for (let i = 0; i < LIMIT.points; i++) expect((await react(t, user, "{oops")).statusCode).toBe(500);
    expectRateLimited(await react(t, user, "{oops"), 5, 60);
  });

  it("allows exactly the budget out of concurrent requests in one window", async () => {
    const { user } = await signUpWithAccount(t.app);
    const responses = await Promise.all(
      Array.from({ length: LIMIT.points + 7 }, () => react(t, user, { emoji: "👍" })),
    );
    expect(countStatuses(responses)).toEqual({ 400: LIMIT.points, 429: 7 });
  });

  it("counts each user separately", async () => {
    const a = await signUpWithAccount(t.app);
    const b = await signUpWithAccount(t.app);
    for (let i = 0; i < LIMIT.points; i++) await react(t, a.user);
    expect((await react(t, a.user)).statusCode).toBe(429);
    expect((await react(t, b.user)).statusCode).toBe(400);
  });

  it("gives a new budget when the window ends", async () => {
    const short = await createTestApp({
      config: { reactRateLimit: { points: 2, durationSeconds: 1 }, redisUrl: undefined },
      databaseUrl: t.config.databaseUrl,
    });
    try {
      const { user } = await signUpWithAccount(short.app);
      expect((await react(short, user)).statusCode).toBe(400);
      expect((await react(short, user)).statusCode).toBe(400);
      const limited = await react(short, user);
      expectRateLimited(limited, 2, 1);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await react(short, user)).statusCode).toBe(400);
    } finally {
      await short.close();
    }
  });
});

/** True when a Redis server answers PING on 127.0.0.1:6379 within half a second. */
/** A TCP relay in front of Redis that a test can cut, as if Redis went away. */
async function startRelay(targetPort: number) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    cut: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    },
    restore: () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)),
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const redisUp = await redisForTests(
  "the Redis rate-limit tests (shared limit across instances, fallback to memory)",
);

describe.skipIf(!redisUp)("reaction rate limit (Redis store on 127.0.0.1:6379)", () => {
  let first: TestApp;
  let second: TestApp;
  let probe: Redis;
  beforeAll(async () => {
    first = await createTestApp({ config: { reactRateLimit: LIMIT, redisUrl: REDIS_URL } });
    // A second instance of the same deployment: same database, same secrets.
    second = await createTestApp({
      config: {
        reactRateLimit: LIMIT,
        redisUrl: REDIS_URL,
        authSecret: first.config.authSecret,
        encryptionKey: first.config.encryptionKey,
      },
      databaseUrl: first.config.databaseUrl,
    });
    probe = new Redis(REDIS_URL, { lazyConnect: true });
    await probe.connect();
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    probe?.disconnect();
  });

  it("shares one budget between two instances", async () => {
    const { user } = await signUpWithAccount(first.app);
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT.points + 2; i++) {
      statuses.push((await react(i % 2 === 0 ? first : second, user)).statusCode);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429, 429]);
    expect(await probe.get(`wa-inbox:rl:react:${user.id}`)).toBe(String(LIMIT.points + 2));
    expectRateLimited(await react(second, user), 5, 60);
  });

  it("allows exactly the budget out of concurrent requests spread over both instances", async () => {
    const { user } = await signUpWithAccount(first.app);
    const responses = await Promise.all(
      Array.from({ length: LIMIT.points + 9 }, (_, i) => react(i % 2 ? first : second, user)),
    );
    expect(countStatuses(responses)).toEqual({ 400: LIMIT.points, 429: 9 });
  });

  it("sends and mirrors a reaction normally with the Redis store", async () => {
    const { startSandbox } = await import("../../../src/upstream/sandbox/server.js");
    const sandbox = await startSandbox();
    const t = await createTestApp({
      config: { graphApiUrl: sandbox.url, reactRateLimit: LIMIT, redisUrl: REDIS_URL },
      databaseUrl: first.config.databaseUrl,
      upstreamTimeoutMs: 500,
    });
    try {
      const { user, accountId } = await signUpWithAccount(t.app);
      const { row, accessToken } = await insertChannelConfig(t, { accountId, userId: user.id });
      sandbox.addNumber({ phoneNumberId: row.phoneNumberId, accessToken });
      const { conversation } = await insertContact(t, { accountId });
      const message = await insertMessage(t, { accountId, conversationId: conversation.id });
      const response = await react(t, user, { message_id: message.id, emoji: "🙌" });
      expect(response.statusCode).toBe(200);
      expect(response.headers.ratelimit).toBe("limit=5, remaining=4, reset=60");
    } finally {
      await t.close();
      await sandbox.close();
    }
  });

  it("falls back to memory without failing requests when Redis goes away, and logs it", async () => {
    const relay = await startRelay(6379);
    const t = await createTestApp({
      config: { reactRateLimit: LIMIT, redisUrl: relay.url },
      databaseUrl: first.config.databaseUrl,
      captureLogs: true,
    });
    try {
      const { user } = await signUpWithAccount(t.app);
      expect((await react(t, user)).statusCode).toBe(400);
      expect((await react(t, user)).statusCode).toBe(400);
      expect(await probe.get(`wa-inbox:rl:react:${user.id}`)).toBe("2");
      expect(t.logs()).not.toContain("Redis rate-limit store unavailable");

      await relay.cut();
      const after = [];
      for (let i = 0; i < LIMIT.points + 2; i++) after.push((await react(t, user)).statusCode);
      // The in-memory stand-in starts its own count: a full budget, then 429.
      expect(after).toEqual([400, 400, 400, 400, 400, 429, 429]);
      expect(await probe.get(`wa-inbox:rl:react:${user.id}`)).toBe("2");
      expect(t.logs()).toContain("Redis rate-limit store unavailable");
      expect(t.logs()).not.toContain(relay.url);

      // Redis returns: counting is shared again, in Redis, and the log says so.
      await relay.restore();
      await expect
        .poll(() => t.logs().includes("Redis rate-limit store is back"), { timeout: 8000 })
        .toBe(true);
      const limited = await react(t, user);
      expect(limited.statusCode).toBe(400);
      expect(await probe.get(`wa-inbox:rl:react:${user.id}`)).toBe("3");
    } finally {
      await relay.cut();
      await t.close();
    }
  });

  it("starts and limits in memory when Redis is unreachable from the start", async () => {
    const port = await closedPort();
    const t = await createTestApp({
      config: { reactRateLimit: LIMIT, redisUrl: `redis://:s3cret-password@127.0.0.1:${port}` },
      databaseUrl: first.config.databaseUrl,
      captureLogs: true,
    });
    try {
      const { user } = await signUpWithAccount(t.app);
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT.points + 1; i++) statuses.push((await react(t, user)).statusCode);
      expect(statuses).toEqual([400, 400, 400, 400, 400, 429]);
      expect(t.logs()).toContain("Redis rate-limit store unavailable");
      expect(t.logs()).not.toContain("s3cret-password");
    } finally {
      await t.close();
    }
  });

  it("closes its Redis connection when the app closes", async () => {
    const clients = async () => {
      const list = (await probe.call("CLIENT", "LIST")) as string;
      return list.split("\n").filter((line) => / name=wa-inbox-rate-limit /.test(line)).length;
    };
    const before = await clients();
    const t = await createTestApp({
      config: { reactRateLimit: LIMIT, redisUrl: REDIS_URL },
      databaseUrl: first.config.databaseUrl,
    });
    expect(await clients()).toBe(before + 1);
    await t.close();
    await expect.poll(clients, { timeout: 2000 }).toBe(before);
  });
});
