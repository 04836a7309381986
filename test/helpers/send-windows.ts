import type { Stall } from "./stalls.js";

/**
 * Whether sends seen by Meta (the sandbox's arrival times) held a rate: no
 * one-second window with more than `rate` of them, that is, sends n and
 * n + rate at least 1000 ms apart.
 *
 * The schedule writes such sends 1,050 ms apart or more, so up to 50 ms of
 * delay on the way is absorbed. On a shared two-core machine a process (the
 * service writing a send, or the sandbox reading it) now and then loses its
 * core for longer, and a send arrives late by that much: the earlier of a
 * close pair is excused by as much as a stall that ended as it arrived,
 * measured by stalls.ts in every process on the way. A pair closer than that
 * is the schedule's fault.
 */

export interface RateWindows {
  /** The most sends in any one-second window. */
  busiest: number;
  /** The least time between sends n and n + rate. */
  closest: number;
  /** Pairs closer than 1000 ms: when the earlier arrived, how far apart, and the stall that excuses it. */
  close: Array<{ at: number; gap: number; stalled: number }>;
  /** The close pairs that no stall excuses. */
  unexcused: Array<{ at: number; gap: number; stalled: number }>;
}

/** A stall delayed a send if it ended as the send arrived (a tick either side). */
const STALL_ENDS_BEFORE_MS = 30;
const STALL_ENDS_AFTER_MS = 15;

/** The most arrivals in any one-second window (each window starting at an arrival), of sorted times. */
function busiestOf(times: number[]): number {
  let busiest = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && (times[j] as number) < (times[i] as number) + 1000) j++;
    busiest = Math.max(busiest, j - i);
  }
  return busiest;
}

/** The most arrivals in any one-second window. */
export const busiestSecond = (arrivals: number[]) => busiestOf([...arrivals].sort((a, b) => a - b));

export function rateWindows(arrivals: number[], rate: number, stalls: Stall[] = []): RateWindows {
  const times = [...arrivals].sort((a, b) => a - b);
  const busiest = busiestOf(times);
  const close: RateWindows["close"] = [];
  let closest = Number.POSITIVE_INFINITY;
  for (let i = 0; i + rate < times.length; i++) {
    const at = times[i] as number;
    const gap = (times[i + rate] as number) - at;
    closest = Math.min(closest, gap);
    if (gap >= 1000) continue;
    const stalled = Math.max(
      0,
      ...stalls
        .filter((s) => s.to >= at - STALL_ENDS_BEFORE_MS && s.to <= at + STALL_ENDS_AFTER_MS)
        .map((s) => s.to - s.from),
    );
    close.push({ at, gap, stalled });
  }
  return { busiest, closest, close, unexcused: close.filter((c) => c.gap + c.stalled < 1000) };
}
