/**
 * Applies boundHeapGrowth as the service's first module is evaluated, before
 * the other 900 modules are: V8 takes the flag into its next full collection
 * only, and the last full collection of the start comes while those modules
 * load. Applied later, the limit that collection sets (V8's own, about four
 * times the live heap for a small one) held until the heap first reached it,
 * often under the first burst of load (docs/benchmarks.md, "V8's heap flag came
 * after the start's last full collection").
 */
import { boundHeapGrowth } from "./heap.js";

boundHeapGrowth();
