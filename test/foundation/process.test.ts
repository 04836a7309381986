import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The service as an operator runs it: `npm start`, or the compiled
 * `node dist/main.js`, each on its own DATA_DIR with its own embedded
 * PostgreSQL, stopped with real signals. Linux only (it reads /proc).
 */

const root = path.resolve(import.meta.dirname, "../..");
const linux = existsSync("/proc/self/stat");
if (!linux) console.log("SKIPPED: process tests need Linux /proc");

type Service = ChildProcess & { output: () => string; port: number };
const started: Service[] = [];
const dirs: string[] = [];
const fallbackClusters: string[] = [];

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });

async function newDataDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wa-process-"));
  // The embedded server runs as its own user when we are root: it must reach the folder.
  await fs.chmod(dir, 0o755);
  dirs.push(dir);
  return dir;
}

function environment(dataDir: string, port: number, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn" };
  for (const name of [
    "DATABASE_URL",
    "ENCRYPTION_KEY",
    "AUTH_SECRET",
    "META_APP_SECRET",
    "NODE_ENV",
    "REDIS_URL",
  ])
    delete env[name];
  return { ...env, ...extra };
}

async function launch(
  how: "npm" | "node",
  dataDir: string,
  extra: Record<string, string> = {},
): Promise<Service> {
  const port = await freePort();
  const env = environment(dataDir, port, extra);
  const child =
    how === "npm"
      ? spawn("npm", ["start"], { cwd: root, env })
      : spawn(process.execPath, ["dist/main.js"], { cwd: root, env });
  let output = "";
  child.stdout?.on("data", (c) => {
    output += c;
  });
  child.stderr?.on("data", (c) => {
    output += c;
  });
  const service = Object.assign(child, { output: () => output, port });
  started.push(service);
  return service;
}

async function waitReady(service: Service, timeoutMs = 90_000): Promise<void> {
  const since = Date.now();
  while (Date.now() - since < timeoutMs) {
    if (service.exitCode !== null || service.signalCode !== null)
      throw new Error(`service exited early: ${service.output()}`);
    try {
      const response = await fetch(`http://127.0.0.1:${service.port}/readyz`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`service not ready in time: ${service.output()}`);
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });

/** A start of the service (initdb on a busy machine) takes seconds: real-process tests get minutes. */
const SLOW = 240_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (pid: number | undefined) => pid !== undefined && existsSync(`/proc/${pid}`);

async function gone(pid: number | undefined): Promise<boolean> {
  for (let i = 0; i < 300 && alive(pid); i++) await sleep(50);
  return !alive(pid);
}

function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** Every running process whose command line mentions `text`. */
function processesNaming(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text)) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(path.join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return undefined;
  }
}

async function signUp(service: Service, email: string) {
  return fetch(`http://127.0.0.1:${service.port}/api/auth/sign-up/email`, {
    method: "POST",
    body: JSON.stringify({ email, password: "long enough password", name: "Ops" }),
  });
}

async function signIn(service: Service, email: string) {
  return fetch(`http://127.0.0.1:${service.port}/api/auth/sign-in/email`, {
    method: "POST",
    body: JSON.stringify({ email, password: "long enough password" }),
  });
}

beforeAll(() => {
  if (linux) execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "ignore" });
}, 120_000);

afterAll(async () => {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of [...dirs, ...fallbackClusters]) {
    // Only servers of our own clusters: their command line names the folder.
    for (const pid of processesNaming(dir)) process.kill(pid, "SIGKILL");
  }
  for (const dir of [...dirs, ...fallbackClusters]) await fs.rm(dir, { recursive: true, force: true });
}, 60_000);

describe.runIf(linux)("npm start", () => {
  it(
    "refuses a second start on a DATA_DIR in use, naming it and the running pid, and leaves the first serving",
    async () => {
      const dataDir = await newDataDir();
      const first = await launch("npm", dataDir);
      await waitReady(first);
      expect((await signUp(first, "first@example.com")).status).toBe(200);
      const [servicePid] = childrenOf(first.pid!);
      const postgres = postmasterPid(dataDir);
      expect(alive(postgres)).toBe(true);

      const second = await launch("npm", dataDir);
      const code = await exited(second);
      expect(code).not.toBe(0);
      expect(second.output()).toContain(
        `DATA_DIR ${dataDir} is in use by a running wa-inbox service (pid ${servicePid})`,
      );

      // The first service, its database and its data are untouched.
      expect(postmasterPid(dataDir)).toBe(postgres);
      expect(alive(postgres)).toBe(true);
      expect((await fetch(`http://127.0.0.1:${first.port}/readyz`)).status).toBe(200);
      expect((await signIn(first, "first@example.com")).status).toBe(200);

      first.kill("SIGTERM");
      expect(await exited(first)).toBe(0);
    },
    SLOW,
  );

  it(
    "stops the service and its PostgreSQL when npm itself gets SIGTERM or SIGINT",
    async () => {
      const dataDir = await newDataDir();
      for (const signal of ["SIGTERM", "SIGINT"] as const) {
        const npm = await launch("npm", dataDir);
        await waitReady(npm);
        const [servicePid] = childrenOf(npm.pid!);
        const postgres = postmasterPid(dataDir);
        expect(alive(servicePid) && alive(postgres)).toBe(true);

        process.kill(npm.pid!, signal);
        expect(await exited(npm)).toBe(0);
        expect(await gone(servicePid)).toBe(true);
        expect(await gone(postgres)).toBe(true);
        // A clean stop releases DATA_DIR.
        expect(existsSync(path.join(dataDir, "wa-inbox.pid"))).toBe(false);
      }
    },
    SLOW,
  );
});

describe.runIf(linux)("the compiled service", () => {
  it(
    "starts after a kill -9 left its lock and its PostgreSQL behind",
    async () => {
      const dataDir = await newDataDir();
      const first = await launch("node", dataDir);
      await waitReady(first);
      const orphan = postmasterPid(dataDir);
      first.kill("SIGKILL");
      await exited(first);
      expect(readFileSync(path.join(dataDir, "wa-inbox.pid"), "utf8").split("\n")[0]).toBe(String(first.pid));
      expect(alive(orphan)).toBe(true);

      const second = await launch("node", dataDir);
      await waitReady(second);
      expect(await gone(orphan)).toBe(true);
      expect(readFileSync(path.join(dataDir, "wa-inbox.pid"), "utf8").split("\n")[0]).toBe(
        String(second.pid),
      );
      second.kill("SIGTERM");
      expect(await exited(second)).toBe(0);
    },
    SLOW,
  );

  it(
    "keeps the service's secrets out of the environment of PostgreSQL and every process it starts",
    async () => {
      const dataDir = await newDataDir();
      const secrets = {
        ENCRYPTION_KEY: "e".repeat(64),
        AUTH_SECRET: "auth-secret-that-must-stay-in-the-service",
        META_APP_SECRET: "meta-app-secret-that-must-stay-in-the-service",
      };
      const service = await launch("node", dataDir, secrets);
      // Watch every process that names the data folder while the service starts
      // (its checks, initdb and its bootstrap backends, the server).
      const environments = new Map<number, { command: string; environ: string }>();
      const record = async (pid: number) => {
        const read = (file: string) => fs.readFile(`/proc/${pid}/${file}`, "utf8").catch(() => undefined);
        const [command, environ] = [await read("cmdline"), await read("environ")];
        if (command && environ) environments.set(pid, { command: command.split("\0")[0] ?? "", environ });
      };
      const watch = (async () => {
        while (service.exitCode === null) {
          for (const pid of processesNaming(dataDir)) {
            if (pid !== service.pid && !environments.has(pid)) await record(pid);
          }
          await sleep(5);
        }
      })();
      await waitReady(service);
      const postgres = postmasterPid(dataDir)!;
      for (const pid of [postgres, ...childrenOf(postgres)]) await record(pid);
      service.kill("SIGTERM");
      expect(await exited(service)).toBe(0);
      await watch;

      const commands = [...environments.values()].map((p) => path.basename(p.command));
      console.log(`environments read: ${commands.join(", ")}`);
      expect(environments.get(postgres)).toBeDefined();
      for (const [pid, { command, environ }] of environments) {
        for (const value of Object.values(secrets)) expect(environ, `process ${pid}`).not.toContain(value);
        // The server and initdb get exactly this environment (backends and
        // initdb's helpers may show theirs rewritten by PostgreSQL).
        if (pid === postgres || command.endsWith("/initdb")) {
          const names = environ
            .split("\0")
            .filter(Boolean)
            .map((entry) => entry.split("=")[0]);
          expect(names.sort(), command).toEqual(["HOME", "LANG", "LC_ALL", "PATH"]);
        }
      }
    },
    SLOW,
  );

  it(
    "closes idle keep-alive connections at once on SIGTERM, and the one in flight after its answer",
    async () => {
      const dataDir = await newDataDir();
      const service = await launch("node", dataDir);
      await waitReady(service);
      const connect = () => {
        const socket = net.connect(service.port, "127.0.0.1");
        socket.setEncoding("utf8");
        let data = "";
        socket.on("data", (chunk) => {
          data += chunk;
        });
        const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(data)));
        return { socket, closed, data: () => data };
      };
      const idle = connect();
      idle.socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
      while (!idle.data().includes('{"ok":true}')) await sleep(20);
      // A request whose body is still coming when the signal arrives.
      const inFlight = connect();
      inFlight.socket.write("POST /api/accounts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 15\r\n\r\n{");
      // Let the server read the headers: the connection is then busy, not idle.
      await new Promise((r) => inFlight.socket.once("connect", r));
      await sleep(1_000);

      service.kill("SIGTERM");
      expect(await idle.closed).toMatch(/^HTTP\/1\.1 200 /);
      expect(inFlight.socket.destroyed).toBe(false);
      inFlight.socket.write('"name":"Shop"}');
      const answer = await inFlight.closed;
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      expect(answer.toLowerCase()).toContain("connection: close");
      expect(await exited(service)).toBe(0);
    },
    SLOW,
  );
});

/**
 * As root, a DATA_DIR the postgres user cannot reach keeps its cluster in
 * /var/lib/wa-inbox/<hash>, linked from DATA_DIR/postgres.
 */
const root_ = process.getuid?.() === 0;
if (linux && !root_) console.log("SKIPPED: the fallback cluster tests need root");

describe.runIf(linux && root_)("the fallback cluster of an unreachable DATA_DIR", () => {
  let dataDir: string;
  let fallback: string;

  beforeAll(async () => {
    const parent = await fs.mkdtemp(path.join(os.tmpdir(), "wa-private-"));
    await fs.chmod(parent, 0o700);
    dirs.push(parent);
    dataDir = path.join(parent, "data");
    fallback = path.join(
      "/var/lib/wa-inbox",
      createHash("sha256").update(dataDir).digest("hex").slice(0, 16),
    );
    fallbackClusters.push(fallback, `${fallback}.previous`);
  });

  it(
    "gives a deleted and recreated DATA_DIR a new cluster, stopping the old one's server",
    async () => {
      const first = await launch("node", dataDir);
      await waitReady(first);
      expect(await fs.realpath(path.join(dataDir, "postgres"))).toBe(fallback);
      expect((await signUp(first, "old@example.com")).status).toBe(200);
      const orphan = postmasterPid(dataDir);
      first.kill("SIGKILL");
      await exited(first);
      await fs.rm(dataDir, { recursive: true, force: true });
      expect(alive(orphan)).toBe(true);

      const second = await launch("node", dataDir);
      await waitReady(second);
      expect(await gone(orphan)).toBe(true);
      expect(second.output()).toContain(`${fallback}.previous`);
      expect(existsSync(path.join(`${fallback}.previous`, "PG_VERSION"))).toBe(true);
      // A new, empty database: the old user is not there, a new one can sign up.
      expect((await signIn(second, "old@example.com")).status).toBe(401);
      expect((await signUp(second, "new@example.com")).status).toBe(200);
      second.kill("SIGTERM");
      expect(await exited(second)).toBe(0);
      expect(processesNaming(fallback)).toEqual([]);
    },
    SLOW,
  );

  it(
    "fails with a clear message and leaves no server running when the cluster's password is wrong or missing",
    async () => {
      const passwordFile = path.join(dataDir, "secrets", "postgres_password");
      const kept = await fs.readFile(passwordFile, "utf8");

      await fs.writeFile(passwordFile, "not-the-password\n");
      const wrong = await launch("node", dataDir);
      expect(await exited(wrong)).not.toBe(0);
      expect(wrong.output()).toContain("started but the service could not use it");
      expect(wrong.output()).toContain("password authentication failed");
      expect(processesNaming(fallback)).toEqual([]);

      await fs.rm(passwordFile);
      const missing = await launch("node", dataDir);
      expect(await exited(missing)).not.toBe(0);
      expect(missing.output()).toContain(`${passwordFile}, which is missing`);
      expect(processesNaming(fallback)).toEqual([]);

      // With its password back, the same cluster serves again.
      await fs.writeFile(passwordFile, kept, { mode: 0o600 });
      const restored = await launch("node", dataDir);
      await waitReady(restored);
      expect((await signIn(restored, "new@example.com")).status).toBe(200);
      restored.kill("SIGTERM");
      expect(await exited(restored)).toBe(0);
    },
    SLOW,
  );
});
