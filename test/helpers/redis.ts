import net from "node:net";

/** The Redis the tests use when one answers (the machine's, by default). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** True when a Redis answers PING at `url` within half a second. */
export function redisAnswers(url = TEST_REDIS_URL): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port || 6379) });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => finish(false));
    socket.once("error", () => finish(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => finish(data.toString().startsWith("+PONG")));
  });
}

/**
 * Whether the Redis tests of a file run: true when Redis answers. When none
 * does, prints one SKIPPED line naming `what` and answers false, except under
 * REQUIRE_REDIS=1 (CI), where a missing Redis fails the file instead of
 * skipping it silently.
 */
export async function redisForTests(what: string): Promise<boolean> {
  if (await redisAnswers()) return true;
  const why = `no Redis answered PING on ${TEST_REDIS_URL}`;
  if (process.env.REQUIRE_REDIS === "1") throw new Error(`REQUIRE_REDIS=1 but ${why} (${what})`);
  console.warn(`SKIPPED: ${what} (${why}; start one there, or set TEST_REDIS_URL)`);
  return false;
}
