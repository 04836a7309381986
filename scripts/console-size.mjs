// The console's download per route, from Vite's manifest: what the inbox needs before it can show
// anything (the entry chunk and everything it imports statically) and what loads lazily (the flow
// canvas). Sizes are gzip, as a browser downloads them from a compressing proxy.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "console", "dist");

/** Budget of the inbox route's JavaScript, gzip (issue 15). */
export const INBOX_JS_BUDGET_BYTES = 250 * 1024;

export function measureConsoleBundle() {
  const manifest = JSON.parse(readFileSync(path.join(dist, ".vite", "manifest.json"), "utf8"));
  const gzip = (file) => gzipSync(readFileSync(path.join(dist, file)), { level: 9 }).length;
  const entryKey = Object.keys(manifest).find((k) => manifest[k].isEntry);
  if (!entryKey) throw new Error("the console's manifest has no entry");

  const staticFiles = new Set();
  const visit = (key) => {
    const chunk = manifest[key];
    if (!chunk || staticFiles.has(chunk.file)) return;
    staticFiles.add(chunk.file);
    for (const imported of chunk.imports ?? []) visit(imported);
  };
  visit(entryKey);
  const lazyFiles = new Set();
  for (const key of manifest[entryKey].dynamicImports ?? []) {
    const file = manifest[key]?.file;
    if (file && !staticFiles.has(file)) lazyFiles.add(file);
  }
  const sum = (files) => [...files].filter((f) => f.endsWith(".js")).reduce((total, f) => total + gzip(f), 0);
  return {
    inboxJsGzipBytes: sum(staticFiles),
    lazyJsGzipBytes: sum(lazyFiles),
    inboxFiles: [...staticFiles],
    lazyFiles: [...lazyFiles],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const m = measureConsoleBundle();
  const kb = (b) => `${(b / 1024).toFixed(1)} KB`;
  console.log(
    `console: inbox route JavaScript ${kb(m.inboxJsGzipBytes)} gzip (budget ${kb(INBOX_JS_BUDGET_BYTES)})`,
  );
  console.log(`console: loaded lazily (flow canvas) ${kb(m.lazyJsGzipBytes)} gzip`);
  if (m.inboxJsGzipBytes > INBOX_JS_BUDGET_BYTES) process.exitCode = 1;
}
