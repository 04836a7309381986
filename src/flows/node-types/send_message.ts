import {
  fieldEdge,
  LIMITS,
  nonBlank,
  optionalKey,
  problem,
  requireText,
  stringFields,
  textMessage,
} from "./checks.js";
import { defineNodeType } from "./types.js";

export interface SendMessageConfig {
  text: string;
  next_node_key?: string;
}

/** Sends a text, then goes on to next_node_key (the run completes without one). */
export const send_message = defineNodeType<SendMessageConfig>()({
  type: "send_message",
  label: "Send message",
  defaultConfig: { text: "" },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => {
    requireText(c, "text", LIMITS.bodyText, report);
    optionalKey(c, "next_node_key", report);
  },
  texts: (c) => stringFields(c, ["text"]),
  build: (c, render) =>
    nonBlank(c.text) ? textMessage(render(c.text)) : problem("config.text must be a non-empty string"),
  afterSend: (c) => c.next_node_key,
  enter: async (_c, run) => {
    await run.send();
    return undefined;
  },
});
