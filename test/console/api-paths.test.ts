import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The console calls the API through each feature's api.ts (fetchers and query keys) and lib/;
 * components never spell an API path. This lists every `"/api/…` literal (in quotes or a
 * template) found anywhere else under console/src.
 */
const SRC = path.resolve(import.meta.dirname, "../../console/src");
const LITERAL = /["'`]\/api\//;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|tsx)$/.test(entry.name) ? [full] : [];
  });
}

/** `file:line: text` of each API path literal outside api.ts files and lib/. */
function apiPathLiterals(root: string): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(root)) {
    const relative = path.relative(root, file);
    if (path.basename(file) === "api.ts" || relative.startsWith(`lib${path.sep}`)) continue;
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (LITERAL.test(line)) found.push(`${relative}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe("console API paths", () => {
  it("appear only in the features' api.ts modules and lib/", () => {
    expect(apiPathLiterals(SRC)).toEqual([]);
  });

  it("finds a literal in a component, with its file and line (the check can fail)", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "console-src-"));
    try {
      const write = (file: string, text: string) => {
        mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        writeFileSync(path.join(root, file), text);
      };
      write("features/demo/api.ts", 'export const demo = () => api("/api/demo");\n');
      write("lib/session.ts", 'export const me = () => api("/api/me");\n');
      write("features/demo/page.tsx", 'const id = 1;\nconst answer = api("/api/demo/" + id);\n');
      expect(apiPathLiterals(root)).toEqual([
        `${path.join("features", "demo", "page.tsx")}:2: const answer = api("/api/demo/" + id);`,
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
