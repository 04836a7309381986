import { fieldEdge, requireKey } from "./checks.js";
import { defineNodeType } from "./types.js";

/** A `wait` node's bounds, in minutes: 1 minute to 30 days. */
export const WAIT_MINUTES = { min: 1, max: 30 * 24 * 60 } as const;

/** Pauses the run for `minutes` (see WAIT_MINUTES), then goes on to next_node_key. */
export interface WaitConfig {
  minutes: number;
  next_node_key: string;
}

const validMinutes = (minutes: unknown): minutes is number =>
  typeof minutes === "number" &&
  Number.isFinite(minutes) &&
  minutes >= WAIT_MINUTES.min &&
  minutes <= WAIT_MINUTES.max;

export const wait = defineNodeType<WaitConfig>()({
  type: "wait",
  label: "Wait",
  defaultConfig: { minutes: 60 },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => {
    if (!validMinutes(c.minutes)) {
      report(
        "invalid_value",
        `minutes must be a number from ${WAIT_MINUTES.min} to ${WAIT_MINUTES.max} (30 days)`,
      );
    }
    requireKey(c, "next_node_key", report);
  },
  resume: (c) => c.next_node_key,
  enter: async (c, run) => {
    if (!validMinutes(c.minutes)) {
      run.invalid(`wait "${run.key}" needs minutes between ${WAIT_MINUTES.min} and ${WAIT_MINUTES.max}`);
      return undefined;
    }
    await run.sleep(c.minutes);
    return undefined;
  },
});
