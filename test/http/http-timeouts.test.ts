import net from "node:net";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from "../../src/app.js";
import { connectDatabase, type Database } from "../../src/db/client.js";
import { createTestDatabase, testConfig } from "../helpers/harness.js";

/**
 * The app listening on a real port with shortened HTTP timeouts, driven over
 * raw TCP: a client that stops sending half-way through a request is answered
 * 408 and disconnected instead of holding its connection forever.
 */

let database: Database;
let owned: { url: string; drop(): Promise<void> };
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  owned = await createTestDatabase();
  const url = owned.url;
  database = connectDatabase(url);
  app = await buildApp({
    config: testConfig({ databaseUrl: url }),
    database,
    logger: pino({ level: "silent" }),
    workers: false,
    requestTimeoutMs: 1_000,
    headersTimeoutMs: 500,
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  port = typeof address === "object" && address ? address.port : 0;
});
afterAll(async () => {
  await app.close();
  await database.close();
  await owned.drop();
});

/** Opens a connection, writes `chunks`, and resolves with everything the server sent once it closes. */
function exchange(...chunks: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      for (const chunk of chunks) socket.write(chunk);
    });
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      data += chunk;
    });
    socket.on("close", () => resolve(data));
    socket.on("error", reject);
  });
}

const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));

describe("HTTP timeouts and limits", () => {
  it("answers 408 and closes the connection when the body stops short of its Content-Length", async () => {
    const response = await exchange(
      "POST /api/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
      '{"name":"x',
    );
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(response)).toEqual({ error: "Request timeout" });
  });

  it("answers 408 and closes the connection when the headers never end", async () => {
    const response = await exchange("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ");
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(response)).toEqual({ error: "Request timeout" });
  });

  it("answers 431 when the headers are larger than the server accepts", async () => {
    const response = await exchange(
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(response)).toEqual({ error: "Request headers are too large" });
  });

  it("serves complete requests, and an idle keep-alive connection longer than the request timeout", async () => {
    const socket = net.connect(port, "127.0.0.1");
    socket.setEncoding("utf8");
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk;
    });
    const answers = async (count: number) => {
      while ((data.match(/HTTP\/1\.1 \d{3} /g) ?? []).length < count) {
        if (socket.destroyed) throw new Error(`connection closed: ${data}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    await answers(1);
    // Idle between requests is not request time: the same connection still serves.
    await new Promise((r) => setTimeout(r, 1_500));
    socket.write(
      "POST /api/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    await answers(3);
    expect(data.match(/HTTP\/1\.1 \d{3}/g)).toEqual(["HTTP/1.1 200", "HTTP/1.1 401", "HTTP/1.1 200"]);
    expect(socket.destroyed).toBe(false);
    socket.destroy();
  });

  it("defaults to production timeouts: 30 s per request, 15 s for headers, 72 s keep-alive", async () => {
    const defaults = await buildApp({
      config: testConfig({ databaseUrl: "postgres://unused@127.0.0.1:1/none" }),
      database,
      logger: pino({ level: "silent" }),
      workers: false,
    });
    try {
      expect([REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS]).toEqual([
        30_000, 15_000, 72_000,
      ]);
      expect(defaults.server.requestTimeout).toBe(30_000);
      expect(defaults.server.headersTimeout).toBe(15_000);
      expect(defaults.server.keepAliveTimeout).toBe(72_000);
    } finally {
      await defaults.close();
    }
  });
});
