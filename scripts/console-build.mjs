// Builds the web console (console/) with Vite into console/dist, unless the last build was made
// from the same sources: a hash of every input file is kept in console/dist/.source-hash, so a
// second `npm start` skips the build.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { reduceOwnEnvironment } from "./child-env.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const consoleDir = path.join(root, "console");
const outDir = path.join(consoleDir, "dist");
const hashFile = path.join(outDir, ".source-hash");

function* files(dir) {
  if (!existsSync(dir)) return;
  if (statSync(dir).isFile()) {
    yield dir;
    return;
  }
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "dist" && entry.name !== "node_modules" && !entry.name.startsWith("."))
        yield* files(full);
    } else yield full;
  }
}

/** A hash of every file under the given paths (relative to the repository), names included. */
export function hashFiles(paths) {
  const hash = createHash("sha256");
  for (const file of paths.flatMap((p) => [...files(path.join(root, p))])) {
    hash.update(path.relative(root, file));
    hash.update("\0");
    hash.update(readFileSync(file));
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** A hash of the console's sources and the locked dependency versions. */
export function consoleSourceHash() {
  return hashFiles(["console", "package-lock.json"]);
}

export function consoleIsFresh() {
  if (!existsSync(path.join(outDir, "index.html")) || !existsSync(hashFile)) return false;
  return readFileSync(hashFile, "utf8").trim() === consoleSourceHash();
}

/**
 * Ends the esbuild service process Vite started (it would otherwise live as long as this process,
 * with this process's environment). Vite's own copy of esbuild, which may differ from ours.
 */
async function stopEsbuild() {
  const fromVite = createRequire(createRequire(import.meta.url).resolve("vite"));
  await fromVite("esbuild").stop();
}

/** Builds unless fresh (or when forced); answers whether it built. */
export async function buildConsole({ force = false, quiet = false } = {}) {
  if (!force && consoleIsFresh()) return false;
  const sourceHash = consoleSourceHash();
  const { build } = await import("vite");
  // Always React's production build, even when called from a test run (vitest sets NODE_ENV=test,
  // which Vite would otherwise carry into the bundle as a development build that a later
  // `npm start` would then serve as fresh).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({
      configFile: path.join(consoleDir, "vite.config.ts"),
      mode: "production",
      logLevel: quiet ? "error" : "warn",
    });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
    await stopEsbuild();
  }
  writeFileSync(hashFile, `${sourceHash}\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // Run on its own (`npm run build:console`): the bundler gets the minimal environment too.
  reduceOwnEnvironment();
  const started = performance.now();
  const built = await buildConsole({ force: process.argv.includes("--force") });
  console.log(
    built
      ? `console built in ${Math.round(performance.now() - started)} ms`
      : "console up to date (sources unchanged since the last build)",
  );
}
