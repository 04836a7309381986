/**
 * The floors of src/ (docs/architecture.md), checked by `npm run check`.
 * A room is a top-level folder of src/ or a root file of it. Type-only imports
 * count: a room that names another's type depends on it.
 *
 * @type {import("dependency-cruiser").IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-room-cycle",
      comment:
        "Rooms import each other in one direction only: no chain of imports leads from a folder of src/ back to it. Move the shared part down (a type to ports.ts, a job to src/queue), or have the lower room declare the narrow dependency it needs.",
      severity: "error",
      scope: "folder",
      // Reported from the top-level folders: a cycle between two subfolders of one room
      // (flows/runner and flows/node-types) stays inside that room.
      from: { path: "^src/[^/]+$" },
      to: { circular: true },
    },
    {
      name: "low-root-files",
      comment:
        "deps.ts, ports.ts, config.ts and logging.ts stand below every feature (features import them, so they import no feature): they import only each other, db/, queue/, the Graph client (upstream/, not its sandbox) and the mailer.",
      severity: "error",
      from: { path: "^src/(deps|ports|config|logging)[.]ts$" },
      to: {
        path: "^src/",
        pathNot: "^src/((deps|ports|config|logging)[.]ts$|db/|queue/|upstream/(?!sandbox/)|mail/mailer[.]ts$)",
      },
    },
    {
      name: "ground-rooms",
      comment: "db/, queue/, the Graph client (upstream/, not its sandbox) and the mailer import no feature.",
      severity: "error",
      from: { path: "^src/(db|queue)/|^src/upstream/(?!sandbox/)|^src/mail/mailer[.]ts$" },
      to: { path: "^src/", pathNot: "^src/(db/|queue/|upstream/(?!sandbox/)|ports[.]ts$|config[.]ts$)" },
    },
    {
      name: "jobs-from-the-composition-root",
      comment:
        "src/jobs (the worker runtime and its task adapters) is imported by app.ts and main.ts alone: features enqueue through src/queue.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(jobs/|app[.]ts$|main[.]ts$)" },
      to: { path: "^src/jobs/" },
    },
    {
      name: "composition-root-on-top",
      comment: "Nothing imports app.ts but main.ts, and nothing imports main.ts.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/main[.]ts$" },
      to: { path: "^src/(app|main)[.]ts$" },
    },
    {
      name: "sandbox-is-a-program-of-its-own",
      comment:
        "src/upstream/sandbox is the development stand-in for Meta (npm run sandbox): it may use the service's modules, the service never uses it.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/upstream/sandbox/" },
      to: { path: "^src/upstream/sandbox/" },
    },
  ],
  options: {
    // TypeScript 7 has no JavaScript API for dependency-cruiser: swc reads the sources.
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    // The sandbox's own imports are left out of the rooms (see the rule above).
    doNotFollow: { path: ["node_modules", "^src/upstream/sandbox/"] },
  },
};
