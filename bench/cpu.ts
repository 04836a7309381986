/**
 * CPU time of the bench's processes, read from /proc (Linux): what a flood
 * cost each of them, so that a reply's cost can be split between the service,
 * PostgreSQL and the sandbox. A process tree counts its live descendants and
 * what its exited children left in its own `cutime`/`cstime` once reaped
 * (PostgreSQL's backends are children of its postmaster). Where /proc cannot
 * be read (another system), every figure is 0 and `available` is false.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

interface Stat {
  ppid: number;
  /** utime + stime, in clock ticks. */
  own: number;
  /** cutime + cstime: reaped children's, in clock ticks. */
  children: number;
}

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function statOf(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: the fields after its last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const field = (n: number) => Number(fields[n - 3]);
    return { ppid: field(4), own: field(14) + field(15), children: field(16) + field(17) };
  } catch {
    return undefined;
  }
}

export const cpuAvailable = statOf(process.pid) !== undefined;

/** One process's own CPU, in ms (0 when it is gone or /proc is not there). */
export function processCpuMs(pid: number): number {
  const stat = statOf(pid);
  return stat ? (stat.own * 1000) / ticksPerSecond : 0;
}

/** A process and all its descendants, living or reaped, in ms. */
export function treeCpuMs(root: number): number {
  const stats = new Map<number, Stat>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat) stats.set(Number(name), stat);
  }
  const rootStat = stats.get(root);
  if (!rootStat) return 0;
  let ticks = rootStat.own + rootStat.children;
  const below = [root];
  while (below.length > 0) {
    const parent = below.pop();
    for (const [pid, stat] of stats) {
      if (stat.ppid !== parent) continue;
      ticks += stat.own;
      below.push(pid);
    }
  }
  return (ticks * 1000) / ticksPerSecond;
}

/** The parent of a process (PostgreSQL's postmaster, from one of its backends' pids). */
export function parentOf(pid: number): number | undefined {
  return statOf(pid)?.ppid;
}
