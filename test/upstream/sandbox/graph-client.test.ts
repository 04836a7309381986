import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGraphClient, GraphApiError } from "../../../src/upstream/graph.js";

/** Answers that the sandbox cannot produce: a body that stalls or breaks after the headers. */
let server: Server;
let baseUrl: string;
beforeAll(async () => {
  server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/json", "content-length": "100" });
    response.write('{"id":"1"');
    if (request.url?.includes("break")) setTimeout(() => response.socket?.destroy(), 20);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const failure = (phoneNumberId: string) =>
  createGraphClient({ baseUrl, version: "v25.0", timeoutMs: 200 })
    .getPhoneNumber("token", phoneNumberId)
    .catch((error: unknown) => error as GraphApiError);

describe("Graph client, answers cut short", () => {
  it("reports a body that stalls after the headers as a timeout", async () => {
    const error = await failure("stall");
    expect(error).toBeInstanceOf(GraphApiError);
    expect(error.kind).toBe("timeout");
    expect(error.message).toBe("Upstream did not answer within 0.2 s");
  });

  it("reports a connection closed mid-body as a network error", async () => {
    const error = await failure("break");
    expect(error.kind).toBe("network");
    expect(error.message).toMatch(/closed before the answer was complete/);
  });
});
