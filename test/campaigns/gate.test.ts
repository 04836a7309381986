import { describe, expect, it } from "vitest";
import { createCampaignGate } from "../../src/campaigns/gate.js";
import type { DbOrTx } from "../../src/db/client.js";

/**
 * The pipeline's look at a campaign before each send: a pause is seen within
 * the freshness plus one query, and a slow query never holds a send that an
 * answer still serves.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fakeDb(queryMs: number) {
  const state = { status: "running", queries: 0, failing: false };
  const db = {
    async execute() {
      state.queries += 1;
      await sleep(queryMs);
      if (state.failing) throw new Error("connection lost");
      return { rows: [{ status: state.status }] };
    },
  };
  return { state, db: db as unknown as DbOrTx };
}

/** How long a look at the gate takes to answer. */
async function timed(look: Promise<boolean>): Promise<{ going: boolean; ms: number }> {
  const started = performance.now();
  const going = await look;
  return { going, ms: performance.now() - started };
}

describe("the campaign gate", () => {
  it("answers the first send after one query, then from that answer; a pause is seen once the next look is in", async () => {
    const { state, db } = fakeDb(40);
    const gate = createCampaignGate(db, 100, 1_000);
    const first = await timed(gate("c1"));
    expect(first.going).toBe(true);
    expect(first.ms).toBeGreaterThanOrEqual(35);
    expect(state.queries).toBe(1);

    state.status = "paused";
    // Still fresh: no query, no wait.
    const cached = await timed(gate("c1"));
    expect(cached).toMatchObject({ going: true });
    expect(state.queries).toBe(1);

    await sleep(110);
    // Stale: the last answer serves at once while the next look is taken.
    const served = await timed(gate("c1"));
    expect(served.going).toBe(true);
    expect(served.ms).toBeLessThan(20);
    expect(state.queries).toBe(2);
    await sleep(60);
    expect(await gate("c1")).toBe(false);
    expect(state.queries).toBe(2);
  });

  it("makes a send wait for the look once the last answer is older than it may serve", async () => {
    const { state, db } = fakeDb(30);
    const gate = createCampaignGate(db, 50, 200);
    expect(await gate("c1")).toBe(true);
    state.status = "cancelled";
    await sleep(250);
    const late = await timed(gate("c1"));
    expect(late.going).toBe(false);
    expect(late.ms).toBeGreaterThanOrEqual(25);
  });

  it("a failed look keeps the last answer and is asked again; with no answer the caller sees the failure", async () => {
    const { state, db } = fakeDb(10);
    const gate = createCampaignGate(db, 30, 1_000);
    state.failing = true;
    await expect(gate("c2")).rejects.toThrow("connection lost");
    state.failing = false;
    expect(await gate("c2")).toBe(true);
    const asked = state.queries;
    await sleep(40);
    state.failing = true;
    expect(await gate("c2")).toBe(true);
    await sleep(20);
    expect(await gate("c2")).toBe(true);
    expect(state.queries).toBe(asked + 2);
  });

  it("keeps its campaigns apart", async () => {
    const { state, db } = fakeDb(5);
    const gate = createCampaignGate(db);
    expect(await gate("a")).toBe(true);
    state.status = "paused";
    expect(await gate("b")).toBe(false);
    expect(await gate("a")).toBe(true);
  });
});
