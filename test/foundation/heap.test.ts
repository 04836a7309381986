import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { boundHeapGrowth } from "../../src/heap.js";

// What the bound does to memory depends on V8's timing (its own growth factor weighs how fast the
// collector runs against how fast the program allocates), so it is shown by the benchmark
// (docs/benchmarks.md, "Memory and the flow write"), not here. This is who decides.
describe("the heap's growth (src/heap.ts)", () => {
  it("is left to an operator who started node with a growth of their own", () => {
    expect(boundHeapGrowth(["--enable-source-maps", "--heap-growing-percent=50"])).toBe(false);
    expect(boundHeapGrowth(["--heap_growing_percent", "50"])).toBe(false);
  });

  it("is bounded otherwise", () => {
    expect(boundHeapGrowth(["--enable-source-maps", "--heap-prof"])).toBe(true);
    expect(boundHeapGrowth([])).toBe(true);
  });

  // V8 reads the flag when a full collection sets its next limit, and the start's last full
  // collection comes while the modules load: set any later, V8's own limit holds until the heap
  // first reaches it (docs/benchmarks.md, "V8's heap flag came after the start's last full
  // collection"). ES modules are evaluated in the order they are imported.
  it("is applied by the service's first import, before the other modules are evaluated", () => {
    const main = readFileSync(new URL("../../src/main.ts", import.meta.url), "utf8");
    const imported = [...main.matchAll(/^import\s+(?!type\b)[^;]*?["']([^"']+)["'];/gm)].map((m) => m[1]);
    expect(imported.length).toBeGreaterThan(3);
    expect(imported[0]).toBe("./heap-bound.js");
    const bound = readFileSync(new URL("../../src/heap-bound.ts", import.meta.url), "utf8");
    expect(bound).toMatch(/^boundHeapGrowth\(\);$/m);
  });
});
