import { describe, expect, it } from "vitest";
import { type AckFirstGate, createAckFirst } from "../../src/jobs/ack-first.js";
import { createTestApp, signUpWithAccount } from "../helpers/harness.js";
import { insertChannelConfig, uniqueDigits } from "../helpers/rows.js";
import { APP_SECRET, sign, textBatch } from "../messaging/webhook/meta.js";

/** A gate on a clock the test moves, windows of 100 ms, at most 8 jobs at once. */
function gateAt(options: { floor?: number; turnMs?: number } = {}) {
  let clock = 0;
  const gate = createAckFirst({ max: 8, timer: false, now: () => clock, ...options });
  return {
    gate,
    /** One window of answers taking these times, then the window closes. */
    window(...answers: number[]) {
      for (const ms of answers) gate.acknowledged(ms);
      clock += 100;
      gate.tick();
    },
    advance(ms: number) {
      clock += ms;
      gate.tick();
    },
  };
}

/** A job that runs until the test ends it. */
function heldJob() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  let started = false;
  return {
    work: async () => {
      started = true;
      await ended;
    },
    started: () => started,
    end,
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("jobs step back while webhook deliveries overlap", () => {
  // Windows of 100 ms: answers that took 200 ms in all mean two deliveries waited at once, on average.

  it("runs the instance's full width while deliveries do not overlap", async () => {
    const { gate, window } = gateAt();
    window(2, 2, 3);
    window(50, 60, 80); // 1.9 at once: busy, not piling up
    expect(gate.limit).toBe(8);
    const jobs = Array.from({ length: 9 }, heldJob);
    const done = jobs.map((j) => gate.run(j.work));
    await settle();
    expect(jobs.filter((j) => j.started())).toHaveLength(8);
    expect(gate.waiting).toBe(1);
    jobs[0]!.end();
    await settle();
    expect(jobs[8]!.started()).toBe(true);
    for (const j of jobs) j.end();
    await Promise.all(done);
    expect(gate.running).toBe(0);
  });

  it("halves the jobs at once for each window in which deliveries overlapped, down to one, and adds one back per calm window", () => {
    const { gate, window } = gateAt();
    window(100, 100); // exactly two at once
    expect(gate.limit).toBe(4);
    window(80, 80, 80);
    expect(gate.limit).toBe(2);
    window(300);
    window(300);
    expect(gate.limit).toBe(1);
    window(10, 10);
    expect(gate.limit).toBe(2);
    window();
    expect(gate.limit).toBe(3);
  });

  it("spreads the answers over every window a late timer closes", () => {
    const { gate, window, advance } = gateAt();
    window(300);
    window(300);
    expect(gate.limit).toBe(2);
    // 450 ms of answers over three windows: 1.5 at once, calm; one more job per window.
    gate.acknowledged(450);
    advance(300);
    expect(gate.limit).toBe(5);
  });

  it("keeps a floor other than one when asked, and never stops a running job", async () => {
    const { gate, window } = gateAt({ floor: 2 });
    const jobs = Array.from({ length: 6 }, heldJob);
    const done = jobs.map((j) => gate.run(j.work));
    await settle();
    for (let i = 0; i < 4; i++) window(300);
    expect(gate.limit).toBe(2);
    // The six jobs that started before the answers slowed all run on.
    expect(gate.running).toBe(6);
    const late = Array.from({ length: 3 }, heldJob);
    const lateDone = late.map((j) => gate.run(j.work));
    for (const j of jobs) j.end();
    await Promise.all(done);
    await settle();
    expect(late.filter((j) => j.started())).toHaveLength(2);
    for (const j of late) j.end();
    await Promise.all(lateDone);
  });

  it("lets a long job hold its turn for a second at most, then run on uncounted", async () => {
    const { gate, window, advance } = gateAt({ turnMs: 1000 });
    for (let i = 0; i < 3; i++) window(300);
    expect(gate.limit).toBe(1);
    const long = heldJob();
    const next = heldJob();
    const done = [gate.run(long.work), gate.run(next.work)];
    await settle();
    expect(next.started()).toBe(false);
    // Still slowed: the limit stays at one, but the long job's turn runs out.
    for (let i = 0; i < 5; i++) window(300);
    await settle();
    expect(next.started()).toBe(false);
    advance(500);
    await settle();
    expect(next.started()).toBe(true);
    expect(gate.running).toBe(1);
    long.end();
    await settle();
    expect(gate.running).toBe(1);
    next.end();
    await Promise.all(done);
    expect(gate.running).toBe(0);
  });

  it("lets every waiting job run when it closes (the instance is stopping)", async () => {
    const { gate, window } = gateAt();
    for (let i = 0; i < 3; i++) window(300);
    const jobs = Array.from({ length: 4 }, heldJob);
    const done = jobs.map((j) => gate.run(j.work));
    await settle();
    expect(gate.waiting).toBe(3);
    gate.close();
    await settle();
    expect(jobs.every((j) => j.started())).toBe(true);
    for (const j of jobs) j.end();
    await Promise.all(done);
  });

  it("gives the turn back when a job fails", async () => {
    const { gate } = gateAt();
    await expect(gate.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(gate.running).toBe(0);
  });
});

describe("an instance's jobs and its webhook answers", () => {
  it("answers every delivery, times it, and runs the deliveries' jobs one at a time while its answers are slowed", async () => {
    let clock = 0;
    const inner = createAckFirst({ max: 8, timer: false, now: () => clock });
    const answers: number[] = [];
    let most = 0;
    const gate: AckFirstGate = {
      acknowledged(ms) {
        answers.push(ms);
        inner.acknowledged(ms);
      },
      run: (work) =>
        inner.run(() => {
          most = Math.max(most, inner.running);
          return work();
        }),
      get limit() {
        return inner.limit;
      },
      get running() {
        return inner.running;
      },
      get waiting() {
        return inner.waiting;
      },
      tick: () => inner.tick(),
      close: () => inner.close(),
    };
    const t = await createTestApp({ config: { appSecret: APP_SECRET }, ackFirst: gate });
    try {
      const { user, accountId } = await signUpWithAccount(t.app);
      const { row } = await insertChannelConfig(t, { accountId, userId: user.id });
      // Three windows in which three deliveries waited at once, on average: one job at a time.
      for (let i = 0; i < 3; i++) {
        inner.acknowledged(300);
        clock += 100;
        inner.tick();
      }
      expect(gate.limit).toBe(1);

      // Twelve customers at once: twelve queues, which the eight job slots would take together.
      const customers = Array.from({ length: 12 }, (_, i) => `4917${uniqueDigits(7)}${i}`);
      const responses = await Promise.all(
        customers.map((from) => {
          const raw = JSON.stringify(textBatch({ phoneNumberId: row.phoneNumberId, from, body: "hello" }));
          return t.app.inject({
            method: "POST",
            url: "/api/messaging/webhook",
            headers: { "content-type": "application/json", "x-hub-signature-256": sign(raw) },
            payload: raw,
          });
        }),
      );
      expect(responses.map((r) => r.statusCode)).toEqual(customers.map(() => 200));
      expect(answers).toHaveLength(12);
      expect(answers.every((ms) => ms >= 0)).toBe(true);

      await t.app.deps.jobs.drain();
      expect(most).toBe(1);
      const inbox = await t.app.inject({ url: "/api/conversations?limit=50", headers: user.headers });
      const waIds = (inbox.json().conversations as Array<{ contact: { wa_id: string } }>).map(
        (c) => c.contact.wa_id,
      );
      expect(waIds.sort()).toEqual([...customers].sort());
    } finally {
      await t.close();
    }
  });
});
