import { fieldEdge, requireKey } from "./checks.js";
import { defineNodeType } from "./types.js";

export interface StartConfig {
  next_node_key: string;
}

/** Where a flow begins: goes straight on to next_node_key. */
export const start = defineNodeType<StartConfig>()({
  type: "start",
  label: "Start",
  begins: true,
  defaultConfig: {},
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => requireKey(c, "next_node_key", report),
  enter: (c) => ({ next: c.next_node_key }),
});
