// Compiles src/ to dist/ (types are checked by `npm run check`, not here), copies the SQL
// migrations beside the compiled migrator, and builds the web console. Each step is skipped when
// its inputs have not changed since the last build (a hash kept beside the output), so a second
// `npm start` goes straight to starting the service.
//
// The build keeps only a minimal environment (scripts/child-env.mjs) for itself and everything it
// starts, however it was run, and ends every helper it started (esbuild's service) before it exits.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { reduceOwnEnvironment } from "./child-env.mjs";
import { buildConsole, hashFiles } from "./console-build.mjs";

reduceOwnEnvironment();

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = path.join(root, "dist");
const serverHash = hashFiles(["src", "tsconfig.json", "tsconfig.build.json", "package-lock.json"]);
const hashFile = path.join(dist, ".source-hash");
const fresh =
  existsSync(path.join(dist, "main.js")) &&
  existsSync(hashFile) &&
  readFileSync(hashFile, "utf8").trim() === serverHash;
if (!fresh) {
  const tsc = path.join(root, "node_modules", ".bin", "tsc");
  rmSync(dist, { recursive: true, force: true });
  execFileSync(tsc, ["-p", path.join(root, "tsconfig.build.json"), "--noCheck"], { stdio: "inherit" });
  cpSync(path.join(root, "src/db/migrations"), path.join(dist, "db/migrations"), { recursive: true });
  writeFileSync(hashFile, `${serverHash}\n`);
}
const started = performance.now();
if (await buildConsole({ quiet: true })) {
  // JSON like every other line of the service's log.
  const line = {
    level: 30,
    time: Date.now(),
    pid: process.pid,
    msg: "web console built",
    buildMs: Math.round(performance.now() - started),
  };
  console.log(JSON.stringify(line));
}
