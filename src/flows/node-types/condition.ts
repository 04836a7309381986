import { evaluateCondition } from "../runner/rules.js";
import { fieldEdge, requireKey, requireOneOf } from "./checks.js";
import { defineNodeType } from "./types.js";

export const CONDITION_SUBJECTS = ["var", "contact_field", "tag"] as const;
export const CONDITION_OPERATORS = ["equals", "contains", "present", "absent"] as const;

export interface ConditionConfig {
  subject: (typeof CONDITION_SUBJECTS)[number];
  subject_key: string;
  operator: (typeof CONDITION_OPERATORS)[number];
  value?: string;
  true_next: string;
  false_next: string;
}

/** Tests a variable, a contact field or a tag, and goes on to true_next or false_next. */
export const condition = defineNodeType<ConditionConfig>()({
  type: "condition",
  label: "Condition",
  defaultConfig: {
    subject: "var",
    subject_key: "",
    operator: "equals",
    value: "",
    true_next: "",
    false_next: "",
  },
  edges: (c) => [fieldEdge(c, "true_next", "true"), fieldEdge(c, "false_next", "false")],
  validate: (c, report) => {
    requireOneOf(c, "subject", CONDITION_SUBJECTS, report);
    requireKey(c, "subject_key", report);
    requireOneOf(c, "operator", CONDITION_OPERATORS, report);
    if ((c.operator === "equals" || c.operator === "contains") && typeof c.value !== "string") {
      report("missing_field", `value is required for the ${c.operator} operator`);
    }
    requireKey(c, "true_next", report);
    requireKey(c, "false_next", report);
  },
  enter: (c, run) => {
    const result = evaluateCondition(c, run.vars, run.contact);
    if (result === null) {
      run.invalid(`Condition "${run.key}" cannot be evaluated (check subject and operator)`);
      return undefined;
    }
    return { next: result ? c.true_next : c.false_next };
  },
});
