import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MAX_FOLLOW_UPS, runFollowUps, TAKE_NEXT_JOB } from "../../src/jobs/follow-ups.js";
import { createTestApp, type TestApp } from "../helpers/harness.js";
import { jobRows, recordingTasks } from "./helpers.js";

// The worker holding a named queue runs the jobs that became due in it (src/jobs/follow-ups.ts),
// driven here by hand on the real graphile-worker schema, with no worker pool running.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ workers: false });
});
afterAll(() => t.close());

const { ran, tasks } = recordingTasks();
const jobsLeft = () => jobRows(t.database.pool);

/** Adds the jobs to queue "q", then locks the queue for worker "w1" as a running job would. */
async function queue(jobs: Array<{ task: string; name: string; runAt?: Date }>) {
  for (const job of jobs) {
    // Names of this test's own tasks, so not through the typed addJob (src/queue).
    await t.database.pool.query(
      "select graphile_worker.add_job($1, $2::json, queue_name := 'q', run_at := $3::timestamptz)",
      [job.task, JSON.stringify({ name: job.name }), job.runAt?.toISOString() ?? null],
    );
  }
  const { rows } = await t.database.pool.query<{ id: number }>(
    `update graphile_worker._private_job_queues set locked_by = 'w1', locked_at = now()
      where queue_name = 'q' returning id`,
  );
  return { queueId: rows[0]!.id, workerId: "w1" };
}

const run = (held: { queueId: number; workerId: string }) =>
  runFollowUps({ pool: t.database.pool, tasks, deps: t.app.deps, running: () => true }, held);

beforeEach(async () => {
  ran.length = 0;
  await t.database.pool.query("delete from graphile_worker._private_jobs");
  await t.database.pool.query("delete from graphile_worker._private_job_queues");
});

describe("follow-up jobs of a held queue", () => {
  it("runs the due jobs in queue order and deletes them", async () => {
    const held = await queue([
      { task: "record", name: "first" },
      { task: "record", name: "second" },
    ]);
    await run(held);
    expect(ran).toEqual(["first", "second"]);
    expect(await jobsLeft()).toEqual([]);
  });

  it("deletes each job that succeeded in the same statement that takes the next", async () => {
    const held = await queue([
      { task: "record", name: "first" },
      { task: "record", name: "second" },
      { task: "record", name: "third" },
    ]);
    const statements: string[] = [];
    const pool = t.database.pool;
    const counting = {
      query: (text: unknown, values?: unknown[]) => {
        statements.push(String(text));
        return pool.query(text as string, values);
      },
    } as unknown as typeof pool;
    await runFollowUps({ pool: counting, tasks, deps: t.app.deps, running: () => true }, held);
    expect(ran).toEqual(["first", "second", "third"]);
    expect(await jobsLeft()).toEqual([]);
    // Three takes and the last, empty look that also deletes the third: no separate deletes.
    expect(statements).toHaveLength(4);
    expect(statements.every((s) => s === TAKE_NEXT_JOB)).toBe(true);
  });

  it("deletes the last job it may run, with no look after it", async () => {
    const names = Array.from({ length: MAX_FOLLOW_UPS }, (_, i) => `job${i}`);
    const held = await queue(names.map((name) => ({ task: "record", name })));
    await run(held);
    expect(ran).toEqual(names);
    expect(await jobsLeft()).toEqual([]);
  });

  it("stops at a job it has no task for, leaving it and what follows untouched", async () => {
    const held = await queue([
      { task: "record", name: "first" },
      { task: "someone-else", name: "foreign" },
      { task: "record", name: "after" },
    ]);
    await run(held);
    expect(ran).toEqual(["first"]);
    expect((await jobsLeft()).map((j) => [j.name, j.attempts, j.locked_by])).toEqual([
      ["foreign", 0, null],
      ["after", 0, null],
    ]);
  });

  it("gives a failing job back with its attempt counted and a backoff, and stops there", async () => {
    const held = await queue([
      { task: "explode", name: "bad" },
      { task: "record", name: "next" },
    ]);
    await run(held);
    expect(ran).toEqual([]);
    const [bad, next] = await jobsLeft();
    expect(bad).toMatchObject({ name: "bad", attempts: 1, locked_by: null, last_error: "boom" });
    expect(bad!.due_in_s).toBeGreaterThan(1);
    expect(next).toMatchObject({ name: "next", attempts: 0, locked_by: null });
  });

  it("leaves jobs that are not due yet", async () => {
    const held = await queue([{ task: "record", name: "later", runAt: new Date(Date.now() + 60_000) }]);
    await run(held);
    expect(ran).toEqual([]);
    expect((await jobsLeft()).map((j) => j.name)).toEqual(["later"]);
  });

  it(`runs at most ${MAX_FOLLOW_UPS}, then hands the queue back`, async () => {
    const names = Array.from({ length: MAX_FOLLOW_UPS + 2 }, (_, i) => `job${i}`);
    const held = await queue(names.map((name) => ({ task: "record", name })));
    await run(held);
    expect(ran).toEqual(names.slice(0, MAX_FOLLOW_UPS));
    expect((await jobsLeft()).map((j) => j.name)).toEqual(names.slice(MAX_FOLLOW_UPS));
  });

  it("starts none once the instance is stopping", async () => {
    const held = await queue([{ task: "record", name: "first" }]);
    await runFollowUps({ pool: t.database.pool, tasks, deps: t.app.deps, running: () => false }, held);
    expect(ran).toEqual([]);
    expect(await jobsLeft()).toHaveLength(1);
  });

  it("finds the queue's next job with one index probe, however long the backlog of other queues", async () => {
    // 20,000 due jobs spread over 64 other queues, as during a flood of deliveries.
    await t.database.pool.query(
      `select count(*) from graphile_worker.add_jobs(array(
         select ('record', json_build_object('name', 'other' || i), 'other' || (i % 64),
                 null, null, null, null, null)::graphile_worker.job_spec
           from generate_series(1, 20000) i))`,
    );
    const held = await queue([{ task: "record", name: "mine" }]);
    await t.database.pool.query("analyze graphile_worker._private_jobs");
    const { rows } = await t.database.pool.query<{ "QUERY PLAN": unknown }>(
      `explain (format json) ${TAKE_NEXT_JOB}`,
      [held.queueId, held.workerId, ["record"], null],
    );
    const plan = JSON.stringify(rows[0]!["QUERY PLAN"]);
    expect(plan).toContain('"Index Name":"jobs_queue_due_idx"');
    expect(plan).not.toContain('"Node Type":"Seq Scan"');
    await run({ ...held });
    expect(ran[0]).toBe("mine");
  });
});
