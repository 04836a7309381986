import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * The import's parsing thread runs in a heap of its own, capped small
 * (PARSER_LIMITS): it loads the plain rules (contacts/values.ts,
 * http/storable.ts), never zod, drizzle or the schema, which cost it 5 MB of
 * heap. A module the thread imports that brings one of them back fails here.
 *
 * A child process loads the thread's module as Node does (through tsx, as in
 * development) with a load hook that reports every module loaded; the module
 * then stops at its first line of work, outside a worker.
 */

const root = path.resolve(import.meta.dirname, "../..");

const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) { port.postMessage(url); return next(url, context); }`;

const PROBE = `
import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const loaded = [];
const END = "data:text/javascript,export{}//end";
const ended = new Promise((resolve) => port1.on("message", (url) => (url === END ? resolve() : loaded.push(url))));
register("data:text/javascript," + encodeURIComponent(process.env.HOOKS), { data: { port: port2 }, transferList: [port2] });
await import(process.env.MODULE).catch(() => undefined);
await import(END);
await ended;
port1.close();
process.stdout.write(JSON.stringify(loaded));`;

const execFileAsync = promisify(execFile);

/** The modules loaded by importing `file` (relative to the project). */
async function modulesLoadedBy(file: string): Promise<string[]> {
  const { stdout } = await execFileAsync(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "--eval", PROBE],
    {
      cwd: root,
      env: { PATH: process.env.PATH, HOOKS, MODULE: new URL(file, `file://${root}/`).href },
    },
  );
  return JSON.parse(stdout) as string[];
}

const HEAVY = /\/node_modules\/(zod|drizzle-orm)\/|\/src\/db\/schema\//;

describe("the import's parsing thread", () => {
  it("loads csv-parse, pg and the plain rules, and no zod, drizzle or schema", async () => {
    const loaded = await modulesLoadedBy("src/contacts/import-worker.ts");
    expect(loaded.some((url) => url.includes("/node_modules/csv-parse/"))).toBe(true);
    expect(loaded.some((url) => url.includes("/node_modules/pg/"))).toBe(true);
    expect(loaded.some((url) => url.endsWith("/src/contacts/values.ts"))).toBe(true);
    expect(loaded.filter((url) => HEAVY.test(url))).toEqual([]);
  }, 30_000);

  it("would be seen loading them: the attribute schemas beside it do", async () => {
    const loaded = await modulesLoadedBy("src/contacts/attributes.ts");
    expect(loaded.some((url) => url.includes("/node_modules/zod/"))).toBe(true);
    expect(loaded.some((url) => url.includes("/src/db/schema/"))).toBe(true);
  }, 30_000);
});
