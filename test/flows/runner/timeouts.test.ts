import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepTimedOutRuns } from "../../../src/flows/runner/timeouts.js";
import {
  activeFlow,
  activeRunCount,
  conversationOf,
  createWorld,
  customer,
  ORDER_QUESTION,
  runFor,
  type World,
} from "./helpers.js";

const HOUR = 60 * 60 * 1000;
let clock = new Date("2030-01-01T09:00:00.000Z");
let w: World;

beforeAll(async () => {
  w = await createWorld({ now: () => clock });
});
afterAll(() => w.close());

const advance = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
};

const question = (keyword: string, fallback_policy?: Record<string, unknown>) =>
  activeFlow(w, {
    trigger_config: { keywords: [keyword] },
    ...(fallback_policy ? { fallback_policy } : {}),
    nodes: ORDER_QUESTION,
  });

describe("timeout sweep", () => {
  it("times out a run idle for longer than on_timeout_hours (default 24) and frees the contact", async () => {
    const flowId = await question("order");
    const ann = customer(w, "Ann");
    await ann.text("order");

    advance(23 * HOUR);
    await sweepTimedOutRuns(w.t.app.deps, clock);
    expect((await runFor(w, flowId, ann)).run.status).toBe("active");

    // A reprompt is activity: the 24 hours count again from it.
    await ann.text("soon");
    advance(23 * HOUR);
    expect((await sweepTimedOutRuns(w.t.app.deps, clock)).timedOut).toBe(0);

    advance(1 * HOUR + 1000);
    expect(await sweepTimedOutRuns(w.t.app.deps, clock)).toEqual({ swept: true, timedOut: 1 });
    const { run, events } = await runFor(w, flowId, ann);
    expect(run).toMatchObject({ status: "timed_out", end_reason: "timeout" });
    expect(events.at(-1)).toMatchObject({
      event_type: "timeout",
      node_key: "ask",
      payload: { on_timeout_hours: 24 },
    });
    expect(await activeRunCount(w, (await conversationOf(w, ann)).contactId)).toBe(0);

    // A late answer starts nothing and changes nothing.
    await ann.text("12345");
    expect((await runFor(w, flowId, ann)).run.status).toBe("timed_out");
  });

  it("uses the flow's own on_timeout_hours", async () => {
    const flowId = await question("quick", { on_timeout_hours: 0.5 });
    const ben = customer(w, "Ben");
    await ben.text("quick");
    advance(29 * 60 * 1000);
    await sweepTimedOutRuns(w.t.app.deps, clock);
    expect((await runFor(w, flowId, ben)).run.status).toBe("active");
    advance(2 * 60 * 1000);
    await sweepTimedOutRuns(w.t.app.deps, clock);
    expect((await runFor(w, flowId, ben)).run.status).toBe("timed_out");
  });

  it("skips the sweep while another instance holds the sweep lock", async () => {
    const flowId = await question("held", { on_timeout_hours: 1 });
    const cal = customer(w, "Cal");
    await cal.text("held");
    advance(2 * HOUR);
    const other = await w.t.database.pool.connect();
    try {
      await other.query("select pg_advisory_lock(hashtextextended('flow-runner:timeout-sweep', 0))");
      expect(await sweepTimedOutRuns(w.t.app.deps, clock)).toEqual({ swept: false, timedOut: 0 });
      expect((await runFor(w, flowId, cal)).run.status).toBe("active");
    } finally {
      await other.query("select pg_advisory_unlock(hashtextextended('flow-runner:timeout-sweep', 0))");
      other.release();
    }
    expect((await sweepTimedOutRuns(w.t.app.deps, clock)).timedOut).toBeGreaterThanOrEqual(1);
    expect((await runFor(w, flowId, cal)).run.status).toBe("timed_out");
  });
});
