import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { LOCK_FILE, lockDataDir, StartupError, startTimeOf } from "../../src/db/data-dir-lock.js";

/**
 * The DATA_DIR lock against real processes: a running owner makes a start
 * refuse; a gone owner, or a pid now used by another process, does not; of
 * several services finding the same stale lock, exactly one takes it.
 */

const root = path.resolve(import.meta.dirname, "../..");
const linux = existsSync("/proc/self/stat");
if (!linux) console.log("SKIPPED: the DATA_DIR lock tests need Linux /proc");

const children: ChildProcess[] = [];
let dataDir: string;
let lockFile: string;

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });

function sleeper(): ChildProcess {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  children.push(child);
  return child;
}

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wa-lock-"));
  lockFile = path.join(dataDir, LOCK_FILE);
  return () => fs.rm(dataDir, { recursive: true, force: true });
});
afterAll(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

describe.runIf(linux)("the DATA_DIR lock", () => {
  it("refuses while the recorded process runs, naming it, and is taken over once that process is gone", async () => {
    const owner = sleeper();
    await new Promise((r) => owner.once("spawn", r));
    await fs.writeFile(lockFile, `${owner.pid}\n${startTimeOf(owner.pid!)}\n`);

    const refusal = await lockDataDir(dataDir).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(StartupError);
    expect((refusal as Error).message).toBe(
      `DATA_DIR ${dataDir} is in use by a running wa-inbox service (pid ${owner.pid}): stop it first, or start this one with another DATA_DIR`,
    );
    expect(readFileSync(lockFile, "utf8").split("\n")[0]).toBe(String(owner.pid));

    owner.kill("SIGKILL");
    await exited(owner);
    const lock = await lockDataDir(dataDir);
    expect(readFileSync(lockFile, "utf8").split("\n")[0]).toBe(String(process.pid));
    await lock.release();
    expect(existsSync(lockFile)).toBe(false);
  });

  it("does not take a pid now used by another process for the owner", async () => {
    const other = sleeper();
    await new Promise((r) => other.once("spawn", r));
    // The pid of a running process, but not the start time the owner recorded.
    await fs.writeFile(lockFile, `${other.pid}\n1\n`);
    const lock = await lockDataDir(dataDir);
    expect(readFileSync(lockFile, "utf8").split("\n")[0]).toBe(String(process.pid));
    await lock.release();
  });

  it("lets one process hold a DATA_DIR once, and a release never removes another owner's lock", async () => {
    const lock = await lockDataDir(dataDir);
    await expect(lockDataDir(dataDir)).rejects.toThrow(
      `is already in use by this process (pid ${process.pid})`,
    );
    await fs.writeFile(lockFile, "12345\n1\n");
    await lock.release();
    expect(readFileSync(lockFile, "utf8")).toBe("12345\n1\n");
  });

  it("gives a stale lock to exactly one of several services starting at once", async () => {
    const gone = spawn("true");
    await exited(gone);
    await fs.writeFile(lockFile, `${gone.pid}\n1\n`);

    // Each racer loads the code, says "ready", and tries the lock on "go": all at once.
    const script = `
      import { lockDataDir } from "./src/db/data-dir-lock.ts";
      console.log("ready");
      process.stdin.once("data", async () => {
        try {
          await lockDataDir(process.argv[1]);
          console.log("won");
          process.stdin.on("end", () => process.exit(0));
        } catch (error) {
          console.log("refused: " + error.message);
          process.exit(2);
        }
      });`;
    const racers = Array.from({ length: 4 }, () => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script, dataDir],
        {
          cwd: root,
          stdio: ["pipe", "pipe", "inherit"],
        },
      );
      children.push(child);
      let output = "";
      const lines = () => output.split("\n").filter(Boolean);
      const waitFor = (count: number) =>
        new Promise<string>((resolve) => {
          const check = () => (lines().length >= count ? resolve(lines()[count - 1]!) : undefined);
          child.stdout?.on("data", check);
          child.once("exit", () => resolve(lines()[count - 1] ?? ""));
          check();
        });
      child.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      return { child, ready: waitFor(1), answered: waitFor(2) };
    });
    await Promise.all(racers.map((r) => r.ready));
    for (const { child } of racers) child.stdin?.write("go\n");
    // The winner holds the lock until its stdin closes: every racer answers first.
    const answers = await Promise.all(racers.map((r) => r.answered));
    const winners = racers.filter((_, i) => answers[i] === "won");
    expect(winners).toHaveLength(1);
    const winnerPid = winners[0]!.child.pid;
    for (const answer of answers.filter((a) => a !== "won")) {
      expect(answer).toBe(
        `refused: DATA_DIR ${dataDir} is in use by a running wa-inbox service (pid ${winnerPid}): stop it first, or start this one with another DATA_DIR`,
      );
    }
    expect(readFileSync(lockFile, "utf8").split("\n")[0]).toBe(String(winnerPid));
    for (const { child } of racers) child.stdin?.end();
    await Promise.all(racers.map((r) => exited(r.child)));
  }, 60_000);
});
