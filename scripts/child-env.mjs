// The environment of every process the service and its build start (the compiler, the console's
// bundler and its esbuild service, the build itself when `npm start` runs it): what a program
// needs to run and nothing of the service's configuration, which holds its secrets
// (ENCRYPTION_KEY, AUTH_SECRET, META_APP_SECRET, REDIS_URL with its password, DATABASE_URL...) and,
// under npm, npm's own settings (registry tokens among them). A process's environment can be read
// by others (/proc/PID/environ, a database superuser's pg_read_file), so none is passed on.

/** The variables passed on, when set. */
export const PASSED_ON = [
  "PATH",
  "HOME",
  "TMPDIR",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TERM",
  "NO_COLOR",
  "FORCE_COLOR",
  "CI",
];

/** A minimal environment taken from `env` (the process's own by default). */
export function minimalEnvironment(env = process.env) {
  const out = {};
  for (const name of PASSED_ON) if (env[name] !== undefined) out[name] = env[name];
  return out;
}

/** Leaves only the minimal environment in this process, for everything it starts from now on. */
export function reduceOwnEnvironment() {
  const keep = new Set(PASSED_ON);
  for (const name of Object.keys(process.env)) if (!keep.has(name)) delete process.env[name];
}
