import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/service.js";

// `npm run sandbox` as a person runs it (src/upstream/sandbox/main.ts), and its request log.

const root = path.resolve(import.meta.dirname, "../..");
let child: ChildProcess;
let url: string;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, ["--import", "tsx", "src/upstream/sandbox/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SANDBOX_PORT: String(port) },
    stdio: "ignore",
  });
  const started = Date.now();
  for (;;) {
    try {
      if ((await fetch(`${url}/_sandbox`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 30_000) throw new Error("the sandbox did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
}, 40_000);
afterAll(() => {
  child?.kill("SIGTERM");
});

const logged = async () =>
  ((await (await fetch(`${url}/_sandbox/requests`)).json()) as { requests: Array<{ path: string }> })
    .requests;

describe("the sandbox's request log", () => {
  it("lists the Graph API requests received, and DELETE forgets them", async () => {
    await fetch(`${url}/v25.0/100000000000001`, { headers: { authorization: "Bearer sandbox-token" } });
    await fetch(`${url}/v25.0/100000000000001/messages`, { method: "POST", body: "{}" });
    expect((await logged()).map((r) => r.path)).toEqual([
      "/v25.0/100000000000001",
      "/v25.0/100000000000001/messages",
    ]);

    const cleared = await fetch(`${url}/_sandbox/requests`, { method: "DELETE" });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toEqual({ cleared: 2 });
    expect(await logged()).toEqual([]);

    await fetch(`${url}/v25.0/100000000000001`);
    expect(await logged()).toHaveLength(1);
  });
});
