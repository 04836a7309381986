import { defineNodeType } from "./types.js";

export type EndConfig = Record<string, never>;

/** Completes the run. */
export const end = defineNodeType<EndConfig>()({
  type: "end",
  label: "End",
  defaultConfig: {},
  edges: () => [],
  validate: () => {},
  enter: (_c, run) => {
    run.complete("end_node");
    return undefined;
  },
});
