import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { INBOX_JS_BUDGET_BYTES, measureConsoleBundle } from "../../scripts/console-size.mjs";
import { ensureConsoleBuilt } from "./browser.js";

describe("the console's download", () => {
  beforeAll(() => ensureConsoleBuilt(), 180_000);

  it("keeps the inbox route's JavaScript within 250 KB gzip, with the canvas loaded lazily", () => {
    const m = measureConsoleBundle();
    expect(m.inboxJsGzipBytes).toBeGreaterThan(10_000);
    expect(m.inboxJsGzipBytes).toBeLessThanOrEqual(INBOX_JS_BUDGET_BYTES);
    // React Flow is in a chunk of its own that the inbox never fetches.
    expect(m.lazyFiles.some((f) => f.includes("flow-editor"))).toBe(true);
    expect(m.inboxFiles.some((f) => f.includes("flow-editor"))).toBe(false);
    expect(m.lazyJsGzipBytes).toBeGreaterThan(20_000);
  });

  it("is React's production build, also when a test run built it", () => {
    const dist = path.resolve(import.meta.dirname, "../../console/dist");
    for (const file of measureConsoleBundle().inboxFiles) {
      expect(readFileSync(path.join(dist, file), "utf8")).not.toContain("jsxDEV");
    }
  });
});
