import { fieldEdge, requireKey, requireOneOf, requireText } from "./checks.js";
import { defineNodeType } from "./types.js";

export const TAG_MODES = ["add", "remove"] as const;

export interface SetTagConfig {
  mode: (typeof TAG_MODES)[number];
  tag: string;
  next_node_key: string;
}

/** Adds a tag to the contact or removes one, then goes on to next_node_key. */
export const set_tag = defineNodeType<SetTagConfig>()({
  type: "set_tag",
  label: "Tag contact",
  defaultConfig: { mode: "add", tag: "" },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => {
    requireOneOf(c, "mode", TAG_MODES, report);
    requireText(c, "tag", 100, report);
    requireKey(c, "next_node_key", report);
  },
  enter: async (c, run) => {
    const tag = typeof c.tag === "string" ? c.tag.trim() : "";
    if (tag === "" || (c.mode !== "add" && c.mode !== "remove")) {
      run.invalid(`set_tag "${run.key}" needs a tag and mode add or remove`);
      return undefined;
    }
    await run.setTag(c.mode, tag);
    return { next: c.next_node_key };
  },
});
