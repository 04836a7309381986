import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { FollowUpOptions } from "../../src/jobs/follow-ups.js";
import { createJobSlots } from "../../src/jobs/job-slots.js";
import { createLocalStarts } from "../../src/jobs/local-start.js";
import type { LocallyStartedJob } from "../../src/ports.js";
import {
  activeFlow,
  createWorld,
  customer,
  postWebhook,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";
import { createTestApp, type TestApp } from "../helpers/harness.js";
import { jobRows, recordingTasks } from "./helpers.js";

// Jobs the instance adds and starts itself (src/jobs/local-start.ts and migration 0025): driven by
// hand on the real graphile-worker schema with no worker pool running, then end to end through the
// webhook of an instance that runs its workers.

describe("jobs started by the instance that adds them", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ workers: false });
  });
  afterAll(() => t.close());

  const { ran, tasks } = recordingTasks();
  let release: () => void = () => undefined;
  tasks.slow = async (payload) => {
    ran.push(String((payload as { name: string }).name));
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  };
  const jobsLeft = () => jobRows(t.database.pool);

  async function queueLocks(): Promise<Record<string, string | null>> {
    const { rows } = await t.database.pool.query<{ queue_name: string; locked_by: string | null }>(
      "select queue_name, locked_by from graphile_worker._private_job_queues order by id",
    );
    return Object.fromEntries(rows.map((r) => [r.queue_name, r.locked_by]));
  }

  const spec = (task: string, name: string, queue: string) => ({
    identifier: task,
    payload: { name },
    queue_name: queue,
    run_at: null,
    max_attempts: null,
    job_key: null,
    priority: null,
    flags: null,
  });

  /** What the webhook's batcher runs (src/queue/add.ts). */
  async function addStartedHere(specs: object[], max: number, workerId = "local-1") {
    const { rows } = await t.database.pool.query<LocallyStartedJob>(
      `select * from add_jobs_started_here(array(select spec from json_populate_recordset(
         null::graphile_worker.job_spec, $1::json) as spec), $2, $3)`,
      [JSON.stringify(specs), workerId, max],
    );
    return rows;
  }

  const followUps = (): FollowUpOptions => ({
    pool: t.database.pool,
    tasks,
    deps: t.app.deps,
    running: () => true,
  });

  beforeEach(async () => {
    ran.length = 0;
    await t.database.pool.query("delete from graphile_worker._private_jobs");
    await t.database.pool.query("delete from graphile_worker._private_job_queues");
  });

  it("adds up to max jobs locked, with their queues, and the rest as graphile-worker would", async () => {
    const started = await addStartedHere(
      [spec("record", "a", "qa"), spec("record", "b", "qb"), spec("record", "c", "qc")],
      2,
    );
    expect(started.map((job) => [job.identifier, job.payload, job.attempts])).toEqual([
      ["record", { name: "a" }, 1],
      ["record", { name: "b" }, 1],
    ]);
    expect(await jobsLeft()).toMatchObject([
      { name: "a", attempts: 1, locked_by: "local-1" },
      { name: "b", attempts: 1, locked_by: "local-1" },
      { name: "c", attempts: 0, locked_by: null },
    ]);
    expect(await queueLocks()).toEqual({ qa: "local-1", qb: "local-1", qc: null });
  });

  it("starts nothing when there is no room (max 0)", async () => {
    expect(await addStartedHere([spec("record", "a", "qa")], 0)).toEqual([]);
    expect(await jobsLeft()).toMatchObject([{ name: "a", attempts: 0, locked_by: null }]);
  });

  it("leaves a job whose queue another worker holds, or whose queue has a due job ahead, to the queue", async () => {
    await addStartedHere([spec("record", "held", "qa")], 1, "someone-else");
    await t.database.pool.query(
      "select graphile_worker.add_job('record', '{\"name\":\"waiting\"}'::json, queue_name := 'qb')",
    );
    const started = await addStartedHere([spec("record", "a", "qa"), spec("record", "b", "qb")], 5);
    expect(started).toEqual([]);
    expect(await jobsLeft()).toMatchObject([
      { name: "held", locked_by: "someone-else" },
      { name: "waiting", locked_by: null },
      { name: "a", attempts: 0, locked_by: null },
      { name: "b", attempts: 0, locked_by: null },
    ]);
    expect(await queueLocks()).toEqual({ qa: "someone-else", qb: null });
  });

  it("runs a started job, then the queue's due jobs behind it, deletes them and unlocks the queue", async () => {
    const local = createLocalStarts({
      followUps: followUps(),
      workerId: "local-1",
      slots: createJobSlots(4),
    });
    const started = await addStartedHere([spec("record", "first", "qa")], 1);
    // Added while the first runs: the worker holding the queue runs it next.
    await t.database.pool.query(
      "select graphile_worker.add_job('record', '{\"name\":\"second\"}'::json, queue_name := 'qa')",
    );
    local.run(started);
    await local.stop();
    expect(ran).toEqual(["first", "second"]);
    expect(await jobsLeft()).toEqual([]);
    expect(await queueLocks()).toEqual({ qa: null });
  });

  it("gives a job that throws back with graphile-worker's backoff and unlocks its queue", async () => {
    const local = createLocalStarts({
      followUps: followUps(),
      workerId: "local-1",
      slots: createJobSlots(4),
    });
    local.run(await addStartedHere([spec("explode", "x", "qa")], 1));
    await local.stop();
    const [job] = await jobsLeft();
    expect(job).toMatchObject({ name: "x", attempts: 1, locked_by: null, last_error: "boom" });
    expect(job!.due_in_s).toBeGreaterThan(1);
    expect(await queueLocks()).toEqual({ qa: null });
  });

  it("offers the job slots graphile-worker's jobs leave; once stopping, none, and hands back what comes", async () => {
    const slots = createJobSlots(3);
    const local = createLocalStarts({ followUps: followUps(), workerId: "local-1", slots });
    await slots.take(); // a graphile-worker job running
    expect(local.offer()).toEqual({ workerId: "local-1", max: 2 });
    local.run(await addStartedHere([spec("slow", "s", "qa")], 2));
    await vi.waitFor(() => expect(ran).toEqual(["s"]));
    expect(local.offer()).toEqual({ workerId: "local-1", max: 1 });
    // A second graphile-worker job takes the last slot; a third waits, and nothing is offered.
    await slots.take();
    let thirdRunning = false;
    const third = slots.take().then(() => {
      thirdRunning = true;
    });
    expect(local.offer()).toBeNull();
    // The job started here ends: its slot goes to the job that waited, not to a new start.
    release();
    await third;
    expect(thirdRunning).toBe(true);
    expect(local.offer()).toBeNull();
    slots.give();
    expect(local.offer()).toEqual({ workerId: "local-1", max: 1 });
    // A batch offered a slot before the stop hands its job over after it: the job is handed back
    // to the queue untried, for any instance's worker.
    const offered = local.offer();
    expect(offered).not.toBeNull();
    await local.stop();
    expect(local.offer()).toBeNull();
    ran.length = 0;
    local.run(await addStartedHere([spec("record", "late", "qb")], offered!.max));
    await vi.waitFor(async () =>
      expect(await jobsLeft()).toMatchObject([{ name: "late", attempts: 0, locked_by: null }]),
    );
    expect(await queueLocks()).toEqual({ qa: null, qb: null });
    expect(ran).toEqual([]);
  });
});

describe("a delivery acknowledged by an instance that runs its workers", () => {
  let w: World;
  beforeAll(async () => {
    w = await createWorld();
  });
  afterAll(() => w.close());

  it("is committed already locked for the instance's own worker, and answered from there", async () => {
    await activeFlow(w, {
      trigger_config: { keywords: ["local"], match_type: "exact" },
      nodes: [{ node_key: "hello", node_type: "send_message", config: { text: "Hello from here" } }],
    });
    const ada = customer(w, "Ada");
    // Storing the customer's message waits behind this lock, so the job is seen while it runs.
    const blocker = await w.t.database.pool.connect();
    try {
      await blocker.query("begin; lock table messages in share mode");
      await postWebhook(w, ada.textPayload("local").payload);
      const { rows } = await w.t.database.pool.query<{
        locked_by: string;
        attempts: number;
        queue_locked_by: string;
      }>(
        `select j.locked_by, j.attempts, q.locked_by as queue_locked_by
           from graphile_worker._private_jobs j
           join graphile_worker._private_tasks k on k.id = j.task_id
           join graphile_worker._private_job_queues q on q.id = j.job_queue_id
          where k.identifier = 'process-webhook'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.locked_by).toMatch(/^local-/);
      expect(rows[0]!.queue_locked_by).toBe(rows[0]!.locked_by);
      expect(rows[0]!.attempts).toBe(1);
      // The worker is the instance's: the reaper would free it if the instance died.
      const registered = await w.t.database.pool.query(
        "select 1 from worker_instances where worker_id = $1",
        [rows[0]!.locked_by],
      );
      expect(registered.rowCount).toBe(1);
    } finally {
      await blocker.query("commit");
      blocker.release();
    }
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, ada.waId).map((m) => m.text?.body)).toEqual(["Hello from here"]);
    const left = await w.t.database.pool.query(
      "select 1 from graphile_worker._private_job_queues where locked_by is not null",
    );
    expect(left.rowCount).toBe(0);
  });
});
