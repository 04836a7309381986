import { fieldEdge, requireKey } from "./checks.js";
import { defineNodeType } from "./types.js";

/** Goes on to open_node_key inside the account's business hours, else to closed_node_key. */
export interface BusinessHoursConfig {
  open_node_key: string;
  closed_node_key: string;
}

export const business_hours = defineNodeType<BusinessHoursConfig>()({
  type: "business_hours",
  label: "Business hours",
  defaultConfig: { open_node_key: "", closed_node_key: "" },
  edges: (c) => [fieldEdge(c, "open_node_key", "open"), fieldEdge(c, "closed_node_key", "closed")],
  validate: (c, report) => {
    requireKey(c, "open_node_key", report);
    requireKey(c, "closed_node_key", report);
  },
  enter: async (c, run) => ({ next: (await run.isOpen()) ? c.open_node_key : c.closed_node_key }),
});
