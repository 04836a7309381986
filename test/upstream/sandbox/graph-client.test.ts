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

describe("Graph client, a send written when its gate says so", () => {
  let meta: Server;
  let metaUrl: string;
  const received: Array<{ body: string; at: number }> = [];
  let connections = 0;
  beforeAll(async () => {
    meta = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        received.push({ body, at: Date.now() });
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ messages: [{ id: `wamid.${received.length}` }] }));
      });
    });
    meta.on("connection", () => {
      connections += 1;
    });
    await new Promise<void>((resolve) => meta.listen(0, "127.0.0.1", resolve));
    metaUrl = `http://127.0.0.1:${(meta.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    meta.closeAllConnections();
    return new Promise<void>((resolve) => meta.close(() => resolve()));
  });

  const sendText = (body: string, writeWhenReady: () => boolean | Promise<boolean>, timeoutMs = 10_000) =>
    createGraphClient({ baseUrl: metaUrl, version: "v25.0", timeoutMs }).sendMessage(
      "token",
      "100",
      "15550001",
      { type: "text", text: { body } },
      { writeWhenReady },
    );
  const bodies = () => received.map((r) => JSON.parse(r.body).text.body);

  it("writes once its connection is ready and the gate says yes, on a new connection and a kept-alive one", async () => {
    const first = await sendText("first", () => true);
    const second = await sendText("second", () => true);
    expect([first.messageId, second.messageId]).toEqual(["wamid.1", "wamid.2"]);
    expect(bodies()).toEqual(["first", "second"]);
    expect(connections).toBe(1);
  });

  it("holds the connection, unwritten, while the gate waits for a later moment", async () => {
    let opened = 0;
    const sent = await sendText("later", async () => {
      await new Promise((r) => setTimeout(r, 300));
      opened = Date.now();
      return true;
    });
    expect(sent.messageId).toBe("wamid.3");
    expect(received.at(-1)?.at).toBeGreaterThanOrEqual(opened);
  });

  it("answers `late` and writes nothing when the gate says no", async () => {
    const before = received.length;
    const error = await sendText("too late", async () => false).then(
      () => undefined,
      (e: unknown) => e as GraphApiError,
    );
    expect(error).toBeInstanceOf(GraphApiError);
    expect(error?.kind).toBe("late");
    expect(error?.message).toBe("The request was not written in time; nothing was sent");
    // Meta never saw it, and the next send goes as usual.
    await new Promise((r) => setTimeout(r, 100));
    expect(received.length).toBe(before);
    const next = await sendText("on time", () => true);
    expect(next.messageId).toBe(`wamid.${before + 1}`);
    expect(bodies()).not.toContain("too late");
  });

  it("answers `late`, not a timeout, when the time runs out while the gate still waits: nothing was sent", async () => {
    const before = received.length;
    const error = await sendText(
      "waited too long",
      async () => {
        await new Promise((r) => setTimeout(r, 400));
        return true;
      },
      200,
    ).then(
      () => undefined,
      (e: unknown) => e as GraphApiError,
    );
    expect(error?.kind).toBe("late");
    await new Promise((r) => setTimeout(r, 400));
    expect(received.length).toBe(before);
  });
});
