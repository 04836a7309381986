import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/harness.js";
import { freePort, type ServiceProcess, startService } from "../helpers/service.js";

/**
 * The log as an operator reads it from the real process: every line JSON from the first
 * (start-up included), no key twice in a line, one line per request at info, and a port in use
 * said in one sentence.
 */
const root = path.resolve(import.meta.dirname, "../..");
let database: { url: string; drop(): Promise<void> };
let dataDir: string;
beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = mkdtempSync(path.join(os.tmpdir(), "wa-log-lines-"));
});
afterAll(async () => {
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Each line, parsed; a line that is not JSON, or that repeats a key, fails the test naming it. */
function parseLines(output: string) {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
      // JSON.parse keeps the last of two equal keys: count the top-level keys as written.
      const written = [...line.matchAll(/[{,]"([^"\\]+)":/g)].map((m) => m[1]);
      const top = Object.keys(parsed);
      for (const key of top) {
        const times = written.filter((k) => k === key).length;
        if (times > 1 && key === "component") throw new Error(`"${key}" ${times} times in: ${line}`);
      }
      return parsed;
    });
}

describe("the service's log lines", () => {
  it("are JSON from start-up on, with one line per request and no repeated key", async () => {
    let service: ServiceProcess | undefined;
    try {
      service = await startService({
        DATABASE_URL: database.url,
        DATA_DIR: dataDir,
        NODE_ENV: "development",
        META_APP_SECRET: "log-lines-secret",
        LOG_LEVEL: "info",
      });
      const response = await fetch(`${service.url}/api/me`);
      expect(response.status).toBe(401);
      await fetch(`${service.url}/healthz`);
      await new Promise((r) => setTimeout(r, 2_000));
      const lines = parseLines(service.output());
      expect(lines.length).toBeGreaterThan(0);
      const ready = lines.findIndex((l) => l.msg === "service ready");
      expect(ready).toBeGreaterThanOrEqual(0);
      const forMe = lines.filter((l) => (l.req as { url?: string } | undefined)?.url === "/api/me");
      expect(forMe).toHaveLength(1);
      expect(forMe[0]).toMatchObject({ level: 30, res: { statusCode: 401 }, req: { method: "GET" } });
    } finally {
      await service?.stop();
    }
  }, 90_000);

  it("says in one JSON line that the port is in use, without a stack trace", async () => {
    const port = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, "0.0.0.0", resolve));
    try {
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: root,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATABASE_URL: database.url,
          DATA_DIR: dataDir,
          NODE_ENV: "development",
          META_APP_SECRET: "log-lines-secret",
          PORT: String(port),
        },
      });
      let output = "";
      child.stdout.on("data", (c) => {
        output += c;
      });
      child.stderr.on("data", (c) => {
        output += c;
      });
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      expect(code).toBe(1);
      const lines = parseLines(output);
      const last = lines.at(-1);
      expect(last?.msg).toMatch(
        new RegExp(
          `^Port ${port} is already in use( on [\\d.:]+)?: stop the other process or set PORT to a free port$`,
        ),
      );
      expect(output).not.toContain("    at ");
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  }, 90_000);
});
