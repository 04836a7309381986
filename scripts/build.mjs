// Compiles src/ to dist/ (types are checked by `npm run check`, not here), copies the SQL
// migrations beside the compiled migrator, and builds the web console when its sources changed.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import path from "node:path";
import { buildConsole } from "./console-build.mjs";

const tsc = path.join("node_modules", ".bin", "tsc");
rmSync("dist", { recursive: true, force: true });
execFileSync(tsc, ["-p", "tsconfig.build.json", "--noCheck"], { stdio: "inherit" });
cpSync("src/db/migrations", "dist/db/migrations", { recursive: true });
const started = performance.now();
if (await buildConsole()) console.log(`web console built in ${Math.round(performance.now() - started)} ms`);
