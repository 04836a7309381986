import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The real `npm start` entry (src/main.ts) on an empty DATA_DIR, with its own
 * embedded PostgreSQL: starts, answers, stops on SIGTERM, starts again on the
 * same data, and recovers after a kill -9.
 */

const root = path.resolve(import.meta.dirname, "../..");
let dataDir: string;
let port: number;
const children: ChildProcess[] = [];

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });

function start(): ChildProcess & { output: () => string } {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn" };
  for (const name of ["DATABASE_URL", "ENCRYPTION_KEY", "AUTH_SECRET", "NODE_ENV", "REDIS_URL"])
    delete env[name];
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { cwd: root, env });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (c) => {
    output += c;
  });
  child.stderr?.on("data", (c) => {
    output += c;
  });
  return Object.assign(child, { output: () => output });
}

async function waitReady(child: ChildProcess & { output: () => string }, timeoutMs = 60_000) {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${child.output()}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (response.status === 200) return Date.now() - started;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`service not ready in time: ${child.output()}`);
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });

const postgresPid = () => {
  const pidFile = path.join(dataDir, "postgres", "postmaster.pid");
  return existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").split("\n")[0]) : undefined;
};

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wa-start-"));
  await fs.chmod(dataDir, 0o755);
  port = await freePort();
});
afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  const pid = postgresPid();
  if (pid && existsSync(`/proc/${pid}`)) process.kill(pid, "SIGINT");
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe("npm start entry", () => {
  it("starts on an empty DATA_DIR, stops on SIGTERM, starts again on the same data", async () => {
    const cold = start();
    const coldMs = await waitReady(cold);
    const signUp = await fetch(`http://127.0.0.1:${port}/api/auth/sign-up/email`, {
      method: "POST",
      body: JSON.stringify({ email: "boot@example.com", password: "long enough password", name: "Boot" }),
    });
    expect(signUp.status).toBe(200);
    const pid = postgresPid();
    expect(pid).toBeGreaterThan(0);

    cold.kill("SIGTERM");
    expect(await exited(cold)).toBe(0);
    expect(existsSync(`/proc/${pid}`)).toBe(false);

    const warm = start();
    const warmMs = await waitReady(warm);
    // The same data: the user created before the restart can sign in.
    const signIn = await fetch(`http://127.0.0.1:${port}/api/auth/sign-in/email`, {
      method: "POST",
      body: JSON.stringify({ email: "boot@example.com", password: "long enough password" }),
    });
    expect(signIn.status).toBe(200);
    console.log(`start-up to /readyz: cold ${coldMs} ms, warm ${warmMs} ms`);
    warm.kill("SIGTERM");
    expect(await exited(warm)).toBe(0);
  }, 180_000);

  it("recovers after kill -9 left its PostgreSQL running", async () => {
    const first = start();
    await waitReady(first);
    const orphan = postgresPid();
    first.kill("SIGKILL");
    await exited(first);
    expect(orphan && existsSync(`/proc/${orphan}`)).toBe(true);

    const second = start();
    await waitReady(second);
    expect(postgresPid()).not.toBe(orphan);
    second.kill("SIGTERM");
    expect(await exited(second)).toBe(0);
  }, 180_000);
});
