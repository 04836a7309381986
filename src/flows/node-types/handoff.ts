import { LIMITS, optionalText, stringFields } from "./checks.js";
import { defineNodeType } from "./types.js";

export interface HandoffConfig {
  note?: string;
  /** User id of the member the conversation is assigned to. */
  assign_to?: string;
}

/** Ends the run and puts the conversation in the agents' queue, with a note and maybe an assignee. */
export const handoff = defineNodeType<HandoffConfig>()({
  type: "handoff",
  label: "Hand off to agent",
  defaultConfig: { note: "" },
  edges: () => [],
  validate: (c, report) => {
    optionalText(c, "note", LIMITS.bodyText, report);
    optionalText(c, "assign_to", 100, report);
  },
  texts: (c) => stringFields(c, ["note"]),
  enter: async (c, run) => {
    await run.handOff({
      note: typeof c.note === "string" ? run.render(c.note) : null,
      assignTo: c.assign_to,
    });
    return undefined;
  },
});
