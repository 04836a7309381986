import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { spawnSandbox, startSandboxProcess, stopSandboxProcesses } from "../../helpers/sandbox-process.js";
import { freePort } from "../../helpers/service.js";

// `npm run sandbox` as a person runs it (src/upstream/sandbox/main.ts), and its request log.

afterAll(stopSandboxProcesses);

interface Log {
  requests: Array<{ path: string; query: Record<string, string> }>;
  dropped: number;
}

const readLog = async (url: string) => (await (await fetch(`${url}/_sandbox/requests`)).json()) as Log;

describe("the sandbox's request log", () => {
  it("lists the Graph API requests received, and DELETE forgets them", async () => {
    const url = await startSandboxProcess();
    await fetch(`${url}/v25.0/100000000000001`, { headers: { authorization: "Bearer sandbox-token" } });
    await fetch(`${url}/v25.0/100000000000001/messages`, { method: "POST", body: "{}" });
    // Its own control routes (this read included) are not Graph API requests: not listed.
    expect(await readLog(url)).toMatchObject({
      requests: [{ path: "/v25.0/100000000000001" }, { path: "/v25.0/100000000000001/messages" }],
      dropped: 0,
    });

    const cleared = await fetch(`${url}/_sandbox/requests`, { method: "DELETE" });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toEqual({ cleared: 2 });
    expect((await readLog(url)).requests).toEqual([]);

    await fetch(`${url}/v25.0/100000000000001`);
    expect((await readLog(url)).requests).toHaveLength(1);
  }, 40_000);

  it("keeps the newest SANDBOX_LOG_LIMIT requests and says how many it forgot", async () => {
    const url = await startSandboxProcess({ SANDBOX_LOG_LIMIT: "5" });
    for (let n = 1; n <= 12; n += 1) await fetch(`${url}/v25.0/100000000000001?n=${n}`);
    const log = await readLog(url);
    expect(log.requests.map((r) => r.query.n)).toEqual(["8", "9", "10", "11", "12"]);
    expect(log.dropped).toBe(7);

    await fetch(`${url}/_sandbox/requests`, { method: "DELETE" });
    await fetch(`${url}/v25.0/100000000000001?n=13`);
    expect(await readLog(url)).toMatchObject({ requests: [{ query: { n: "13" } }], dropped: 0 });
  }, 40_000);

  it("counts the messages sent to each recipient, however many the log forgot, until DELETE", async () => {
    const url = await startSandboxProcess({ SANDBOX_LOG_LIMIT: "2" });
    const send = async (to: string, type: "text" | "reaction") => {
      const response = await fetch(`${url}/v25.0/100000000000001/messages`, {
        method: "POST",
        headers: { authorization: "Bearer sandbox-token", "content-type": "application/json" },
        body: JSON.stringify(
          type === "text"
            ? { messaging_product: "whatsapp", to, type, text: { body: "hi" } }
            : { messaging_product: "whatsapp", to, type, reaction: { message_id: "wamid.x", emoji: "👍" } },
        ),
      });
      expect(response.status).toBe(200);
    };
    const sends = async (query: string) => (await fetch(`${url}/_sandbox/sends?${query}`)).json();
    const before = Date.now();
    for (const to of ["15550001", "15550002", "15550003", "15550001", "16660001"]) await send(to, "text");
    await send("15550002", "reaction");
    // A read receipt is not a message.
    await fetch(`${url}/v25.0/100000000000001/messages`, {
      method: "POST",
      headers: { authorization: "Bearer sandbox-token", "content-type": "application/json" },
      body: JSON.stringify({ messaging_product: "whatsapp", status: "read", message_id: "wamid.x" }),
    });

    expect((await readLog(url)).dropped).toBe(5);
    const texts = await sends("type=text&to_prefix=1555");
    expect(texts).toMatchObject({ sends: 4, recipients: 3, repeated: 1 });
    expect(Date.parse(texts.first_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(texts.last_at)).toBeGreaterThanOrEqual(Date.parse(texts.first_at));
    expect(await sends("type=text")).toMatchObject({ sends: 5, recipients: 4, repeated: 1 });
    expect(await sends("type=reaction")).toMatchObject({ sends: 1, recipients: 1, repeated: 0 });
    expect(await sends("type=template")).toEqual({
      sends: 0,
      recipients: 0,
      repeated: 0,
      first_at: null,
      last_at: null,
    });
    const noType = await fetch(`${url}/_sandbox/sends`);
    expect(noType.status).toBe(400);
    expect((await noType.json()).error).toMatch(/type is required/);

    await fetch(`${url}/_sandbox/requests`, { method: "DELETE" });
    expect(await sends("type=text")).toMatchObject({ sends: 0, recipients: 0 });
  }, 40_000);

  it.each([
    ["SANDBOX_LOG_LIMIT", "lots", 'SANDBOX_LOG_LIMIT must be a whole number of at least 1 (got "lots")'],
    ["SANDBOX_LATENCY_MS", "-5", 'SANDBOX_LATENCY_MS must be a whole number from 0 to 60000 (got "-5")'],
    ["SANDBOX_LATENCY_MS", "0.5", 'SANDBOX_LATENCY_MS must be a whole number from 0 to 60000 (got "0.5")'],
  ])(
    "refuses to start with %s=%s, saying why",
    async (name, value, message) => {
      const child = spawnSandbox({ SANDBOX_PORT: String(await freePort()), [name]: value });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      expect(code).toBe(1);
      expect(stderr).toContain(message);
    },
    40_000,
  );
});

/** How long a Graph API call takes to be answered, in milliseconds. */
async function timedGraphCall(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${url}/v25.0/100000000000001`, {
    headers: { authorization: "Bearer sandbox-token" },
  });
  expect(response.status).toBe(200);
  return performance.now() - started;
}

describe("the sandbox's latency (Meta's round trip, imitated)", () => {
  it("makes every Graph API answer wait SANDBOX_LATENCY_MS, and PUT /_sandbox/latency changes it", async () => {
    const url = await startSandboxProcess({ SANDBOX_LATENCY_MS: "600" });
    expect(await (await fetch(`${url}/_sandbox/latency`)).json()).toEqual({ ms: 600 });
    expect(await timedGraphCall(url)).toBeGreaterThanOrEqual(590);
    // Control routes answer at once: the read above and this change were not delayed.
    const started = performance.now();
    const changed = await fetch(`${url}/_sandbox/latency`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ms: 0 }),
    });
    expect(performance.now() - started).toBeLessThan(500);
    expect(changed.status).toBe(200);
    expect(await changed.json()).toEqual({ ms: 0 });
    expect(await timedGraphCall(url)).toBeLessThan(500);
    // The delayed call was logged like any other, once.
    expect((await readLog(url)).requests).toHaveLength(2);
  }, 40_000);

  it("answers 400 to a latency that is not a whole number from 0 to 60000, and keeps the old one", async () => {
    const url = await startSandboxProcess({ SANDBOX_LATENCY_MS: "250" });
    for (const ms of [-1, 60_001, 1.5, "100", null]) {
      const response = await fetch(`${url}/_sandbox/latency`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ms }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: "ms must be a whole number from 0 to 60000" });
    }
    expect(await (await fetch(`${url}/_sandbox/latency`)).json()).toEqual({ ms: 250 });
  }, 40_000);
});

describe("the sandbox's customer", () => {
  it("keeps the name it was given on button replies, list replies and reactions", async () => {
    const bodies: Array<{
      entry: Array<{ changes: Array<{ value: { contacts?: Array<{ profile: { name: string } }> } }> }>;
    }> = [];
    const receiver = createServer((request, response) => {
      let raw = "";
      request.on("data", (chunk) => {
        raw += chunk;
      });
      request.on("end", () => {
        bodies.push(JSON.parse(raw));
        response.end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = receiver.address() as AddressInfo;
      const url = await startSandboxProcess({
        SANDBOX_WEBHOOK_URL: `http://127.0.0.1:${port}/hook`,
        SANDBOX_APP_SECRET: "sandbox-test-secret",
      });
      const post = (action: string, body: object) =>
        fetch(`${url}/_sandbox/customer/${action}`, { method: "POST", body: JSON.stringify(body) });
      expect((await post("text", { from: "15551234567", name: "Sam", text: "hi" })).status).toBe(200);
      expect(
        (await post("button_reply", { from: "15551234567", reply_id: "yes", title: "Yes" })).status,
      ).toBe(200);
      expect((await post("list_reply", { from: "15551234567", reply_id: "a", title: "A" })).status).toBe(200);
      expect(
        (await post("reaction", { from: "15551234567", message_id: "wamid.x", emoji: "👍" })).status,
      ).toBe(200);
      const names = bodies.map((b) => b.entry[0]?.changes[0]?.value.contacts?.[0]?.profile.name);
      expect(names).toEqual(["Sam", "Sam", "Sam", "Sam"]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  }, 40_000);
});
