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
});
