import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets its heap grow past what the last full collection kept alive
 * before it collects again, in percent.
 *
 * The service's live heap is about 50 MB and steady; what it allocates under
 * load (a 500-node PUT's body and its copies, a flood's deliveries and
 * statements) is short-lived. V8's own factor for a small heap lets that
 * garbage pile up to several times the live heap before a full collection:
 * in the benchmark a PUT of 500 nodes took the process from 150 to 250 MB of
 * RSS with 47 MB live. At 20 % it peaks at about 180 MB with the same
 * throughput (docs/benchmarks.md, "Memory and the flow write").
 */
export const HEAP_GROWING_PERCENT = 20;

/**
 * Sets V8's heap growth to HEAP_GROWING_PERCENT, unless the process was
 * started with its own `--heap-growing-percent` (an operator's choice wins).
 * V8 reads the flag at each full collection, so setting it once the process
 * runs applies to every collection after.
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
