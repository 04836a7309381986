// Compiles src/ to dist/ (types are checked by `npm run check`, not here) and
// copies the SQL migrations beside the compiled migrator.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import path from "node:path";

const tsc = path.join("node_modules", ".bin", "tsc");
rmSync("dist", { recursive: true, force: true });
execFileSync(tsc, ["-p", "tsconfig.build.json", "--noCheck"], { stdio: "inherit" });
cpSync("src/db/migrations", "dist/db/migrations", { recursive: true });
