import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A webhook receiver on loopback. It answers each request with the next
 * status of `script` (the last one repeats) and keeps what it got.
 */
export async function startReceiver(script: number[] = [200]) {
  const received: Received[] = [];
  let waiters: Array<() => void> = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      const status = script[Math.min(received.length - 1, script.length - 1)] ?? 200;
      response.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "thanks" : "not now");
      const current = waiters;
      waiters = [];
      for (const wake of current) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    /** Resolves once at least `count` requests have arrived. */
    async waitFor(count: number) {
      while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    /** Verifies a request's Standard Webhooks signature with the official verifier; returns the payload. */
    verify(secret: string, request: Received) {
      const headers: Record<string, string> = {
        "webhook-id": String(request.headers["webhook-id"]),
        "webhook-timestamp": String(request.headers["webhook-timestamp"]),
        "webhook-signature": String(request.headers["webhook-signature"]),
      };
      return new Webhook(secret).verify(request.body, headers) as Record<string, unknown>;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
