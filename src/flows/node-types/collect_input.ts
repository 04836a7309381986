import { checkInput } from "../runner/rules.js";
import {
  fieldEdge,
  LIMITS,
  nonBlank,
  problem,
  requireKey,
  requireOneOf,
  requireText,
  stringFields,
  textMessage,
} from "./checks.js";
import { defineNodeType } from "./types.js";

export const INPUT_VALIDATIONS = ["text", "email", "number", "phone", "regex"] as const;

export interface CollectInputConfig {
  prompt_text: string;
  var_key: string;
  validation?: (typeof INPUT_VALIDATIONS)[number];
  /** Used when validation is `regex`. */
  regex?: string;
  next_node_key: string;
}

/** Asks a question and waits for a text answer that passes `validation`, kept in vars.<var_key>. */
export const collect_input = defineNodeType<CollectInputConfig>()({
  type: "collect_input",
  label: "Ask a question",
  defaultConfig: { prompt_text: "", var_key: "answer", validation: "text" },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => {
    requireText(c, "prompt_text", LIMITS.bodyText, report);
    if (!nonBlank(c.var_key)) report("missing_field", "var_key is required");
    else if (!/^[A-Za-z0-9_]{1,64}$/.test(c.var_key)) {
      report("invalid_value", "var_key must be 1-64 letters, digits or underscores");
    }
    if (c.validation !== undefined && c.validation !== null) {
      requireOneOf(c, "validation", INPUT_VALIDATIONS, report);
    }
    if (c.validation === "regex") {
      if (!nonBlank(c.regex)) report("missing_field", "regex is required when validation is regex");
      else {
        try {
          new RegExp(c.regex);
        } catch {
          report("invalid_value", "regex is not a valid regular expression");
        }
      }
    }
    requireKey(c, "next_node_key", report);
  },
  texts: (c) => stringFields(c, ["prompt_text"]),
  build: (c, render) =>
    nonBlank(c.prompt_text)
      ? textMessage(render(c.prompt_text))
      : problem("config.prompt_text must be a non-empty string"),
  answer: (c, message) => {
    if (message.type !== "text" || message.text === null) return null;
    const checked = checkInput(message.text, c.validation, c.regex);
    if ("invalidConfig" in checked) return checked.invalidConfig;
    if (!checked.ok) return null;
    const varKey = typeof c.var_key === "string" && c.var_key !== "" ? c.var_key : null;
    if (!varKey) return "collect_input needs a var_key";
    return {
      next: c.next_node_key,
      payload: { var_key: varKey, value: checked.value },
      vars: { [varKey]: checked.value },
    };
  },
  enter: async (_c, run) => {
    await run.ask();
    return undefined;
  },
});
