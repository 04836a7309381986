import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

/**
 * One running service per DATA_DIR: the embedded cluster inside it must have
 * exactly one owner. The owner is recorded in `DATA_DIR/wa-inbox.pid` (its pid
 * on the first line, the process's start time on the second), so a lock left
 * by a killed service is recognised as stale (that process is gone, or the pid
 * now belongs to another process) and taken over, while a live owner makes
 * the next start refuse.
 */
export const LOCK_FILE = "wa-inbox.pid";

/** A start-up failure whose message is meant for the operator as it is (no stack). */
export class StartupError extends Error {}

export interface DataDirLock {
  release(): Promise<void>;
}

/** Lock files held by this process (its own pid in a lock file says nothing about them). */
const held = new Set<string>();

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, LOCK_FILE);
  if (held.has(file)) {
    throw new StartupError(`DATA_DIR ${dataDir} is already in use by this process (pid ${process.pid})`);
  }
  held.add(file);
  const mine = `${process.pid}\n${startTimeOf(process.pid) ?? ""}\n`;
  const lock: DataDirLock = {
    release: async () => {
      if (!held.delete(file)) return;
      const content = await fs.readFile(file, "utf8").catch(() => undefined);
      if (content === mine) await fs.rm(file, { force: true });
    },
  };
  try {
    await acquire(dataDir, file, mine);
    return lock;
  } catch (error) {
    held.delete(file);
    throw error;
  }
}

async function acquire(dataDir: string, file: string, mine: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    if (await createExclusively(file, mine)) return;
    const content = await fs.readFile(file, "utf8").catch(() => undefined);
    if (content === undefined) continue; // released meanwhile: try again
    const owner = parseOwner(content);
    if (!owner && attempt < 10) {
      // Being written by a starting service (where the lock cannot be linked into place): look again.
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    if (owner && isRunning(owner)) {
      throw new StartupError(
        `DATA_DIR ${dataDir} is in use by a running wa-inbox service (pid ${owner.pid}): stop it first, or start this one with another DATA_DIR`,
      );
    }
    await removeStale(file, content);
  }
  throw new StartupError(`could not take the lock ${file}: other services keep starting on this DATA_DIR`);
}

/**
 * Creates `file` with its whole content, or reports that it already exists:
 * written aside, then linked into place, so no one reads a half-written lock.
 * On a file system without hard links, an exclusive create does.
 */
async function createExclusively(file: string, content: string): Promise<boolean> {
  const staging = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await fs.writeFile(staging, content, { mode: 0o644 });
  try {
    await fs.link(staging, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    return await fs.writeFile(file, content, { mode: 0o644, flag: "wx" }).then(
      () => true,
      (failure: NodeJS.ErrnoException) => {
        if (failure.code === "EEXIST") return false;
        throw failure;
      },
    );
  } finally {
    await fs.rm(staging, { force: true });
  }
}

/**
 * Several services may find the same stale lock at once. Only one removes it:
 * the one that creates its takeover mark (`<lock>.takeover.<digest of the
 * stale content>`), and only while the lock still holds that stale content.
 * The others try again: by then the lock is gone (they race to create it, and
 * exactly one succeeds) or is a fresh one. Nobody ever moves a lock that is not
 * the stale one, so a fresh lock cannot be lost in between. A mark left by a
 * service killed during these few steps is ignored after a few seconds.
 */
async function removeStale(file: string, staleContent: string): Promise<void> {
  const digest = createHash("sha256").update(staleContent).digest("hex").slice(0, 16);
  const mark = `${file}.takeover.${digest}`;
  if (!(await createExclusively(mark, `${process.pid}\n`))) {
    const age = await fs.stat(mark).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > ABANDONED_MARK_MS) await fs.rm(mark, { force: true });
    else await new Promise((r) => setTimeout(r, 50));
    return;
  }
  try {
    const now = await fs.readFile(file, "utf8").catch(() => undefined);
    if (now === staleContent) await fs.rm(file, { force: true });
  } finally {
    await fs.rm(mark, { force: true });
  }
}

/** A takeover mark older than this was left by a service that died while taking over. */
const ABANDONED_MARK_MS = 5_000;

interface Owner {
  pid: number;
  startTime: string | undefined;
}

function parseOwner(content: string): Owner | undefined {
  const [pidLine, startLine] = content.split("\n");
  const pid = Number(pidLine);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, startTime: startLine || undefined };
}

/**
 * The recorded process still runs: same pid and, where /proc tells, the same
 * start time (a reused pid, after a reboot or in a new container, is not the
 * owner). A lock naming this very process is stale: a container's service
 * often gets the same pid at every start.
 */
function isRunning(owner: Owner): boolean {
  if (owner.pid === process.pid) return false;
  if (existsSync("/proc/self/stat")) {
    const startTime = startTimeOf(owner.pid);
    return startTime !== undefined && (owner.startTime === undefined || startTime === owner.startTime);
  }
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
export function startTimeOf(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

/** The parent of a running process (field 4 of /proc/<pid>/stat). */
export function parentOf(pid: number): number | undefined {
  const ppid = Number(procStat(pid)?.[1]);
  return Number.isInteger(ppid) && ppid > 0 ? ppid : undefined;
}

/** The fields of /proc/<pid>/stat from the third (the state) on. */
function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may contain spaces.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}
