import { defineConfig } from "vitest/config";

/**
 * Files that start the real service as child processes (npm start, node dist/main.js) and kill,
 * restart or time them. They run after the rest, one at a time, so that timings measured against
 * a real process (a drain within 10 s, a send on the wire before SIGTERM) are not decided by the
 * other test files competing for the same two cores and the same database connections.
 */
const PROCESS_TESTS = [
  "test/logging/log-lines.test.ts",
  "test/campaigns/crash.test.ts",
  "test/campaigns/sandbox-statuses.test.ts",
  "test/foundation/child-env.test.ts",
  "test/db/data-dir-lock.test.ts",
  "test/foundation/process.test.ts",
  "test/foundation/startup.test.ts",
  "test/jobs/crash.test.ts",
  "test/upstream/sandbox/control-routes.test.ts",
  "test/sending/processes.test.ts",
];

/**
 * Files that need no database and start no process (pure functions, parsers, and clients tried
 * against a loopback server of their own): the fast `unit` project, run without the global
 * setup that migrates a template database (`npx vitest run --project unit`). A file that needs
 * the database belongs in `service`: inject() has no database to give here.
 */
const UNIT_TESTS = [
  "test/auth/config.test.ts",
  "test/campaigns/parameters.test.ts",
  "test/console/api-paths.test.ts",
  "test/console/sse.test.ts",
  "test/events/address-guard.test.ts",
  "test/events/readme.test.ts",
  "test/events/resource-sql.test.ts",
  "test/flows/node-types.test.ts",
  "test/flows/nodes.test.ts",
  "test/flows/validate.test.ts",
  "test/foundation/config.test.ts",
  "test/foundation/engines.test.ts",
  "test/foundation/heap.test.ts",
  "test/http/json-body.test.ts",
  "test/media/store.test.ts",
  "test/messaging/reactions/emoji.test.ts",
  "test/flows/runner/rules.test.ts",
  "test/upstream/sandbox/graph-client.test.ts",
  "test/sending/send-windows.test.ts",
  "test/upstream/sandbox/webhook-payloads.test.ts",
  "test/templates/placeholders.test.ts",
  "test/messaging/webhook/payload.test.ts",
];

/** One PostgreSQL for the run, migrations applied once to a template database each file clones. */
const DATABASE_SETUP = ["test/helpers/global-setup.ts"];

export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Files run in parallel, each on its own database cloned from the migrated template.
    fileParallelism: true,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: UNIT_TESTS,
        },
      },
      {
        extends: true,
        test: {
          name: "service",
          globalSetup: DATABASE_SETUP,
          include: ["test/**/*.test.ts"],
          exclude: [...PROCESS_TESTS, ...UNIT_TESTS],
        },
      },
      {
        extends: true,
        test: {
          name: "processes",
          globalSetup: DATABASE_SETUP,
          include: PROCESS_TESTS,
          sequence: { groupOrder: 1 },
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
