import { defineConfig } from "vitest/config";

/**
 * Files that start the real service as child processes (npm start, node dist/main.js) and kill,
 * restart or time them. They run after the rest, one at a time, so that timings measured against
 * a real process (a drain within 10 s, a send on the wire before SIGTERM) are not decided by the
 * other test files competing for the same two cores and the same database connections.
 */
const PROCESS_TESTS = [
  "test/access/log-lines.test.ts",
  "test/campaigns/crash.test.ts",
  "test/campaigns/sandbox-statuses.test.ts",
  "test/foundation/child-env.test.ts",
  "test/foundation/data-dir-lock.test.ts",
  "test/foundation/process.test.ts",
  "test/foundation/startup.test.ts",
  "test/jobs/crash.test.ts",
  "test/sandbox/control-routes.test.ts",
  "test/sending/processes.test.ts",
];

export default defineConfig({
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Files run in parallel, each on its own database cloned from the migrated template.
    fileParallelism: true,
    projects: [
      {
        extends: true,
        test: {
          name: "service",
          include: ["test/**/*.test.ts"],
          exclude: PROCESS_TESTS,
        },
      },
      {
        extends: true,
        test: {
          name: "processes",
          include: PROCESS_TESTS,
          sequence: { groupOrder: 1 },
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
