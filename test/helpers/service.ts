import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import type { TestApp } from "./harness.js";

/**
 * The real service (src/main.ts) as a child process on a database of the
 * tests, for what only real processes show: kill -9, several instances.
 */

const root = path.resolve(import.meta.dirname, "../..");

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGKILL, and wait for the process to be gone. */
  kill9(): Promise<void>;
  /** SIGTERM, and wait for the exit code. */
  stop(): Promise<number | null>;
}

/**
 * What a real service needs to work on a test app's database, with Meta at
 * `graphApiUrl` signing its webhooks with `appSecret`.
 */
export const serviceEnv = (
  t: Pick<TestApp, "database" | "config">,
  graphApiUrl: string,
  appSecret: string,
) => ({
  DATABASE_URL: t.database.url,
  META_GRAPH_API_URL: graphApiUrl,
  META_GRAPH_API_VERSION: t.config.graphApiVersion,
  META_APP_SECRET: appSecret,
  ENCRYPTION_KEY: t.config.encryptionKey,
  AUTH_SECRET: t.config.authSecret,
});

/** The stall probe (stall-probe.ts), for a child whose timing a test checks. */
export const STALL_PROBE = path.join(import.meta.dirname, "stall-probe.ts");

export async function startService(
  env: Record<string, string>,
  options: { probeStalls?: boolean } = {},
): Promise<ServiceProcess> {
  const port = await freePort();
  const childEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...env,
    PORT: String(port),
  };
  const probe = options.probeStalls ? ["--import", STALL_PROBE] : [];
  const child = spawn(process.execPath, ["--import", "tsx", ...probe, "src/main.ts"], {
    cwd: root,
    env: childEnv,
  });
  let output = "";
  child.stdout?.on("data", (c) => {
    output += c;
  });
  child.stderr?.on("data", (c) => {
    output += c;
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${output}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 60_000) throw new Error(`service not ready in time: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    output: () => output,
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
  };
}
