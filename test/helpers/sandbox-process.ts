import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { freePort, STALL_PROBE } from "./service.js";

/**
 * `npm run sandbox` as a person runs it (src/upstream/sandbox/main.ts), in a
 * process of its own: a Graph API that is not also busy with the test's work,
 * as Meta is not. Its request log is read at `/_sandbox/requests`; what it
 * wrote to stderr, from `sandboxOutput(url)`.
 */

const root = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];
const outputs = new Map<string, () => string>();

export function spawnSandbox(env: Record<string, string>, options: { probeStalls?: boolean } = {}) {
  const probe = options.probeStalls ? ["--import", STALL_PROBE] : [];
  const child = spawn(process.execPath, ["--import", "tsx", ...probe, "src/upstream/sandbox/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  return child;
}

/** Starts the sandbox and answers its URL once it listens. */
export async function startSandboxProcess(
  env: Record<string, string> = {},
  options: { probeStalls?: boolean } = {},
): Promise<string> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnSandbox({ SANDBOX_PORT: String(port), ...env }, options);
  let output = "";
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  outputs.set(url, () => output);
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

/** What the sandbox started at `url` wrote to stderr so far. */
export const sandboxOutput = (url: string) => outputs.get(url)?.() ?? "";

/** Stops every sandbox this file started (for afterAll). */
export function stopSandboxProcesses() {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGTERM");
}
