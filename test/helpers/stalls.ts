/**
 * Moments a process could not run: its event loop was blocked, or the machine
 * gave its core to another process. A timer ticks every TICK_MS; a tick that
 * comes more than STALL_OVER_MS late marks a stall from the tick before it to
 * now. A request that arrived meanwhile is read, and timed, only at its end.
 *
 * The rate tests compare send times across processes on a shared two-core
 * machine, where a process now and then loses its core for tens of
 * milliseconds: what they allow for is measured here, never assumed.
 */

export interface Stall {
  /** Epoch ms: the last tick before the stall, and the first after it. */
  from: number;
  to: number;
}

const TICK_MS = 5;
/** Late by less than this is ordinary timer jitter, well within the schedule's own margin. */
const STALL_OVER_MS = 20;
const LINE = /^event-loop stall (\d+) (\d+)$/gm;

/** Calls `onStall` for each stall of this process until the returned stop is called. */
export function watchStalls(onStall: (stall: Stall) => void): () => void {
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    if (now - last > TICK_MS + STALL_OVER_MS) onStall({ from: last, to: now });
    last = now;
  }, TICK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** The line a probed child process writes to stderr for a stall. */
export const stallLine = ({ from, to }: Stall) => `event-loop stall ${from} ${to}\n`;

/** The stalls a probed child process reported in its output. */
export function stallsIn(output: string): Stall[] {
  return [...output.matchAll(LINE)].map((m) => ({ from: Number(m[1]), to: Number(m[2]) }));
}
