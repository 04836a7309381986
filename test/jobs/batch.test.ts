import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { DbOrTx } from "../../src/db/client.js";
import { createJobBatcher, type JobBatcher, type JobOptions } from "../../src/queue/add.js";
import { createTestApp, type TestApp } from "../helpers/harness.js";

// Jobs added by requests at the same moment share one insert and one commit (the webhook's
// deliveries): each is acknowledged only once committed, and a queue keeps its order.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ workers: false });
});
afterAll(() => t.close());

beforeEach(async () => {
  await t.database.pool.query("delete from graphile_worker._private_jobs");
});

/** The database, counting the inserts that go through it. */
function counting() {
  let inserts = 0;
  const db = {
    execute: (query: Parameters<DbOrTx["execute"]>[0]) => {
      inserts += 1;
      return t.database.db.execute(query);
    },
  } as unknown as DbOrTx;
  return { db, inserts: () => inserts };
}

/** Adds a job of a name no task has (no worker runs here): the batcher is what is tested. */
const noop = (batcher: JobBatcher, n: number, options?: JobOptions) =>
  (batcher.add as (task: string, payload: object, options?: JobOptions) => Promise<void>)(
    "noop",
    { n },
    options,
  );

async function queued(): Promise<Array<{ n: number; queue: string | null }>> {
  const { rows } = await t.database.pool.query<{ n: number; queue: string | null }>(
    `select (j.payload->>'n')::int as n, q.queue_name as queue
       from graphile_worker._private_jobs j
       left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      order by j.id`,
  );
  return rows;
}

describe("the job batcher", () => {
  it("commits every job it acknowledges, many of them in one insert", async () => {
    const { db, inserts } = counting();
    const batcher = createJobBatcher(db);
    await Promise.all(Array.from({ length: 50 }, (_, n) => noop(batcher, n)));
    const rows = await queued();
    expect(rows.map((r) => r.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
    // The first goes alone, the 49 that arrived meanwhile in the next insert.
    expect(inserts()).toBe(2);
  });

  it("keeps the order of one queue's jobs: they never share an insert", async () => {
    const { db, inserts } = counting();
    const batcher = createJobBatcher(db);
    await Promise.all([
      noop(batcher, 1, { queueName: "a" }),
      noop(batcher, 2, { queueName: "a" }),
      noop(batcher, 3, { queueName: "b" }),
      noop(batcher, 4, { queueName: "a" }),
      noop(batcher, 5),
    ]);
    const rows = await queued();
    expect(rows.filter((r) => r.queue === "a").map((r) => r.n)).toEqual([1, 2, 4]);
    expect(rows).toHaveLength(5);
    expect(inserts()).toBe(3);
  });

  it("rejects every job of a batch that could not be stored, and goes on with the next", async () => {
    let fail = true;
    const db = {
      execute: (query: Parameters<DbOrTx["execute"]>[0]) => {
        if (fail) return Promise.reject(new Error("connection lost"));
        return t.database.db.execute(query);
      },
    } as unknown as DbOrTx;
    const batcher = createJobBatcher(db);
    const failed = await Promise.allSettled([noop(batcher, 1), noop(batcher, 2)]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(await queued()).toEqual([]);
    fail = false;
    await noop(batcher, 3);
    expect((await queued()).map((r) => r.n)).toEqual([3]);
  });
});
