import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * A process that keeps about 40 MB alive and allocates short-lived JSON the way a burst of
 * large PUTs does (ten bodies in flight, each replaced by the next), printing the largest heap
 * V8 reserved on the way and what boundHeapGrowth answered.
 */
function churn(call: boolean, nodeFlags: string[] = []): { bounded: boolean | null; peakMb: number } {
  const script = `
    import { boundHeapGrowth } from ${JSON.stringify(path.join(root, "src/heap.ts"))};
    const bounded = ${call} ? boundHeapGrowth() : null;
    const live = [];
    for (let i = 0; i < 300000; i++) live.push({ i, s: "x" + i, a: [i, i + 1] });
    let peak = 0;
    const inFlight = [];
    for (let round = 0; round < 300; round++) {
      const nodes = [];
      for (let j = 0; j < 5000; j++) nodes.push({ id: "n" + j, config: { text: "hello " + j + round, list: [1, 2, 3] } });
      inFlight.push(JSON.stringify(nodes));
      if (inFlight.length > 10) inFlight.shift();
      await new Promise((resolve) => setImmediate(resolve));
      peak = Math.max(peak, process.memoryUsage().heapTotal);
    }
    console.log(JSON.stringify({ bounded, peakMb: peak / 1048576, kept: live.length }));
  `;
  const out = execFileSync(
    process.execPath,
    [...nodeFlags, "--import", "tsx", "--input-type=module", "-e", script],
    {
      cwd: root,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "" },
    },
  );
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}");
}

describe("the heap's growth (src/heap.ts)", () => {
  it("keeps a process's heap smaller under short-lived garbage than V8's default growth", () => {
    const unbounded = churn(false);
    const bounded = churn(true);
    expect(bounded.bounded).toBe(true);
    // Measured: about 100 MB bounded against 128 MB (the live 40 MB, the garbage on top).
    expect(bounded.peakMb).toBeLessThan(unbounded.peakMb * 0.9);
  });

  it("leaves the growth an operator gave node on its command line", () => {
    const operator = churn(true, ["--heap-growing-percent=300"]);
    expect(operator.bounded).toBe(false);
    expect(operator.peakMb).toBeGreaterThan(churn(true).peakMb);
  });
});
