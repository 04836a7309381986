import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/harness.js";

/**
 * Migration 0026: a job due later is added, and a job's removal made, without
 * graphile-worker's NOTIFY (it would only wake an idle worker to find nothing
 * due), with the same rows graphile-worker's add_job and remove_job write.
 */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
let listener: pg.Client;
const heard: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on("notification", (n) => heard.push(n.channel));
  await listener.query(`listen "jobs:insert"; listen "sentinel"`);
});

afterAll(async () => {
  await listener.end();
  await pool.end();
  await db.drop();
});

/**
 * The channels notified by the statement's commit. PostgreSQL delivers
 * notifications in commit order, so a sentinel notified by a later commit marks
 * the end: what has not come before it was never sent.
 */
async function notifiedBy(statement: string): Promise<string[]> {
  heard.length = 0;
  await pool.query(statement);
  await pool.query(`select pg_notify('sentinel', '')`);
  const deadline = Date.now() + 5_000;
  while (!heard.includes("sentinel")) {
    if (Date.now() > deadline) throw new Error("the sentinel notification never came");
    await new Promise((r) => setTimeout(r, 5));
  }
  return heard.filter((channel) => channel !== "sentinel");
}

/** The jobs of these keys (a key cleared shows as null), in the order they were added. */
async function jobs(keys: string[]) {
  const { rows } = await pool.query(
    `select j.key, t.identifier, q.queue_name, j.payload, j.max_attempts, j.attempts, j.priority,
            j.revision, j.run_at > now() as later, j.locked_at is not null as locked
       from graphile_worker._private_jobs j
       join graphile_worker._private_tasks t on t.id = j.task_id
       left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      where j.key = any($1) or j.payload->>'key' = any($1)
      order by j.id`,
    [keys],
  );
  return rows;
}

const LATER = `now() + interval '10 minutes'`;

/** One job added by either function, its key also in its payload (to find it once the key is cleared). */
const add = (fn: "add_job_notify_if_due" | "graphile_worker.add_job", key: string, runAt: string, n = 1) =>
  `select ${fn}(identifier := 'settle-send', payload := json_build_object('key', '${key}', 'n', ${n}),
     queue_name := 'q-${key}', run_at := ${runAt}, max_attempts := 5, job_key := '${key}', priority := 3)`;

describe("jobs added and removed without a NOTIFY", () => {
  it("adds a job due later without a NOTIFY, and one due now with graphile-worker's", async () => {
    expect(await notifiedBy(add("add_job_notify_if_due", "later-1", LATER))).toEqual([]);
    expect(await notifiedBy(add("add_job_notify_if_due", "now-1", "null"))).toEqual(["jobs:insert"]);
    expect(await notifiedBy(add("add_job_notify_if_due", "past-1", `now() - interval '1 second'`))).toEqual([
      "jobs:insert",
    ]);
    // graphile-worker's own add_job notifies for a job due later too: what the function saves.
    expect(await notifiedBy(add("graphile_worker.add_job", "later-gw", LATER))).toEqual(["jobs:insert"]);

    const [later] = await jobs(["later-1"]);
    expect(later).toMatchObject({
      key: "later-1",
      identifier: "settle-send",
      queue_name: "q-later-1",
      payload: { key: "later-1", n: 1 },
      max_attempts: 5,
      attempts: 0,
      priority: 3,
      revision: 0,
      later: true,
      locked: false,
    });
  });

  it("writes the rows graphile-worker's add_job writes: a key replaces a waiting job, and a started one keeps running without it", async () => {
    const steps = async (fn: "add_job_notify_if_due" | "graphile_worker.add_job", key: string) => {
      await pool.query(add(fn, key, LATER, 1));
      await pool.query(add(fn, key, LATER, 2)); // replaces the waiting job
      await pool.query(
        `update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w', attempts = 1 where key = $1`,
        [key],
      );
      await pool.query(add(fn, key, LATER, 3)); // the started job loses its key; a new one takes it
      return (await jobs([key])).map(({ key: jobKey, queue_name, payload, ...row }) => ({
        ...row,
        keyed: jobKey === key,
        queue: queue_name === `q-${key}`,
        n: payload.n,
      }));
    };
    const ours = await steps("add_job_notify_if_due", "replace-ours");
    expect(ours).toEqual(await steps("graphile_worker.add_job", "replace-gw"));
    expect(ours.map((j) => [j.keyed, j.n, j.attempts, j.revision])).toEqual([
      [false, 2, 5, 1],
      [true, 3, 0, 0],
    ]);
  });

  it("removes a job without a NOTIFY, as graphile-worker's remove_job does", async () => {
    for (const key of ["remove-ours", "remove-gw", "held-ours", "held-gw"])
      await pool.query(add("add_job_notify_if_due", key, LATER));
    await pool.query(
      `update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w', attempts = 1
        where key in ('held-ours', 'held-gw')`,
    );

    expect(await notifiedBy(`select remove_job_quietly('remove-ours')`)).toEqual([]);
    expect(await notifiedBy(`select graphile_worker.remove_job('remove-gw')`)).toEqual(["jobs:insert"]);
    expect(await jobs(["remove-ours", "remove-gw"])).toEqual([]);

    // A job a worker holds is not deleted: it runs to its end without its key and is not tried again.
    const { rows } = await pool.query(`select (remove_job_quietly('held-ours')).id is not null as removed`);
    expect(rows[0].removed).toBe(true);
    await pool.query(`select graphile_worker.remove_job('held-gw')`);
    const held = await jobs(["held-ours", "held-gw"]);
    expect(held.map((j) => [j.key, j.locked, j.attempts, j.max_attempts])).toEqual([
      [null, true, 5, 5],
      [null, true, 5, 5],
    ]);

    const none = await pool.query(`select (remove_job_quietly('no-such-key')).id is null as nothing`);
    expect(none.rows[0].nothing).toBe(true);
  });
});
