import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/service.js";

// `npm run sandbox` as a person runs it (src/upstream/sandbox/main.ts), and its request log.

const root = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGTERM");
});

function spawnSandbox(env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", "tsx", "src/upstream/sandbox/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  return child;
}

/** Starts the sandbox and answers its URL once it listens. */
async function startSandboxProcess(env: Record<string, string> = {}): Promise<string> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  spawnSandbox({ SANDBOX_PORT: String(port), ...env });
  const started = Date.now();
  for (;;) {
    try {
      if ((await fetch(`${url}/_sandbox`)).status === 200) return url;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 30_000) throw new Error("the sandbox did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
}

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

  it("refuses to start with a SANDBOX_LOG_LIMIT that is not a whole number of at least 1", async () => {
    const child = spawnSandbox({ SANDBOX_PORT: String(await freePort()), SANDBOX_LOG_LIMIT: "lots" });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('SANDBOX_LOG_LIMIT must be a whole number of at least 1 (got "lots")');
  }, 40_000);
});
