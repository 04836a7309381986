import { describe, expect, it } from "vitest";
import { rateWindows } from "../helpers/send-windows.js";

/** The rate tests' measure: what it counts, and what it excuses. */

const every = (ms: number, count: number, from = 0) => Array.from({ length: count }, (_, i) => from + i * ms);

describe("rateWindows", () => {
  it("finds no close pair in sends 105 ms apart at 10/s", () => {
    const windows = rateWindows(every(105, 30), 10);
    expect(windows.busiest).toBe(10);
    expect(windows.closest).toBe(1050);
    expect(windows.close).toEqual([]);
  });

  it("counts eleven sends in a second, and no stall excuses them", () => {
    const windows = rateWindows(every(95, 30), 10, [{ from: 5_000, to: 5_100 }]);
    expect(windows.busiest).toBe(11);
    expect(windows.closest).toBe(950);
    expect(windows.unexcused).toHaveLength(20);
  });

  it("excuses a send that arrived late by a stall ending as it arrived, and only by as much", () => {
    const times = every(105, 30);
    times[4] = 514; // written at 420, read 94 ms late
    const stalled = rateWindows(times, 10, [{ from: 425, to: 516 }]);
    expect(stalled.busiest).toBe(11);
    expect(stalled.close).toEqual([{ at: 514, gap: 956, stalled: 91 }]);
    expect(stalled.unexcused).toEqual([]);
    // A short stall, or one long before, excuses nothing.
    expect(rateWindows(times, 10, [{ from: 480, to: 516 }]).unexcused).toHaveLength(1);
    expect(rateWindows(times, 10, [{ from: 100, to: 300 }]).unexcused).toHaveLength(1);
  });
});
