// Compiles src/ to dist/ (types are checked by `npm run check`, not here) and
// copies the SQL migrations beside the compiled migrator. Paths are the
// project's, whatever the current directory.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = path.join(root, "node_modules", ".bin", "tsc");
rmSync(path.join(root, "dist"), { recursive: true, force: true });
execFileSync(tsc, ["-p", path.join(root, "tsconfig.build.json"), "--noCheck"], { stdio: "inherit" });
cpSync(path.join(root, "src/db/migrations"), path.join(root, "dist/db/migrations"), { recursive: true });
