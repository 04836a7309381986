import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/harness.js";
import { freePort } from "../helpers/service.js";

/**
 * `npm start` on a fresh copy of the sources, so that its first build really
 * runs (the compiler, then the console's bundler with its esbuild service),
 * watched through /proc: every process started under the service, the build's
 * included, has an environment without the service's secrets, and no build
 * helper is left once the service serves. Linux only (it reads /proc).
 */

const root = path.resolve(import.meta.dirname, "../..");
const linux = existsSync("/proc/self/stat");
if (!linux) console.log("SKIPPED: child process environment tests need Linux /proc");

const SECRETS = {
  ENCRYPTION_KEY: `${"c0ffee".repeat(10)}beef`,
  AUTH_SECRET: "auth-secret-kept-inside-the-service-0001",
  META_APP_SECRET: "meta-app-secret-kept-inside-the-service-02",
  REDIS_URL: "redis://:redis-password-kept-inside-03@127.0.0.1:1/0",
};

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const read = (pid: number, file: string) => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
};
const parentOf = (pid: number) => {
  const stat = read(pid, "stat");
  return stat ? Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) : undefined;
};

/** Every live process below `pid`. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentOf(Number(entry));
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length) {
    const next = queue.shift()!;
    found.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return found;
}

/** A copy of what `npm start` builds from, without any build output. */
function freshCopy(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "wa-child-env-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of ["src", "scripts", "console"]) {
    cpSync(path.join(root, name), path.join(dir, name), {
      recursive: true,
      filter: (source) => !/[/\\](dist|node_modules)$/.test(source),
    });
  }
  for (const name of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"]) {
    cpSync(path.join(root, name), path.join(dir, name));
  }
  symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"), "dir");
  return dir;
}

describe.runIf(linux)("processes started by npm start", () => {
  it("get no secret in their environment, the build's included, and no esbuild outlives the build", async () => {
    const dir = freshCopy();
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const port = await freePort();
    const npm: ChildProcess = spawn("npm", ["start"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...SECRETS,
        DATABASE_URL: database.url,
        DATA_DIR: path.join(dir, "data"),
        PORT: String(port),
        LOG_LEVEL: "warn",
      },
    });
    cleanups.push(() => {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill("SIGKILL");
    });
    let output = "";
    npm.stdout?.on("data", (c) => {
      output += c;
    });
    npm.stderr?.on("data", (c) => {
      output += c;
    });

    // The service is npm's child (npm runs `sh -c "exec node scripts/start.mjs"`): it holds the
    // secrets by design. Everything below it is watched, each process once it runs its own
    // program (a child between fork and exec still shows its parent's environment).
    const seen = new Map<number, { command: string; environ: string }>();
    const watch = () => {
      const [service] = descendants(npm.pid!);
      if (service === undefined) return;
      for (const pid of descendants(service)) {
        const command = read(pid, "cmdline");
        const parent = parentOf(pid);
        const environ = read(pid, "environ");
        if (!command || environ === undefined || parent === undefined) continue;
        if (command === read(parent, "cmdline")) continue;
        seen.set(pid, { command: command.split("\0").filter(Boolean).join(" "), environ });
      }
    };
    const started = Date.now();
    for (;;) {
      if (npm.exitCode !== null) throw new Error(`npm start exited early: ${output}`);
      watch();
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() - started > 300_000) throw new Error(`not ready in time: ${output}`);
      await sleep(10);
    }
    expect(existsSync(path.join(dir, "dist", "main.js"))).toBe(true);
    expect(existsSync(path.join(dir, "console", "dist", "index.html"))).toBe(true);

    const commands = [...seen.values()].map((p) => p.command);
    console.log(`processes seen under the service: ${commands.map((c) => c.slice(0, 100)).join(" | ")}`);
    const leaks = [...seen.entries()].flatMap(([pid, { command, environ }]) =>
      Object.entries(SECRETS)
        .filter(([, value]) => environ.includes(value))
        .map(([name]) => `${name} in process ${pid} (${command.slice(0, 80)})`),
    );
    expect(leaks).toEqual([]);
    const names = [...seen.values()].flatMap(({ environ }) =>
      environ
        .split("\0")
        .filter(Boolean)
        .map((entry) => entry.split("=")[0]!),
    );
    for (const name of [...Object.keys(SECRETS), "DATABASE_URL", "PORT"]) expect(names).not.toContain(name);

    // The watch saw the build run: the compiler and the bundler's esbuild service.
    expect(commands.some((c) => /tsc/.test(c))).toBe(true);
    expect(commands.some((c) => /esbuild/.test(c))).toBe(true);

    // Serving now: no build helper is left below the service.
    const [service] = descendants(npm.pid!);
    const alive = descendants(service!)
      .map((pid) => read(pid, "cmdline") ?? "")
      .filter((command) => /esbuild|tsc|build\.mjs/.test(command));
    expect(alive).toEqual([]);

    npm.kill("SIGTERM");
    await new Promise((resolve) => npm.once("exit", resolve));
  }, 360_000);
});
