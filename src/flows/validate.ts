import { type StoredTemplate, templateKey, templateProblem } from "../templates/placeholders.js";
import {
  CONDITION_OPERATORS,
  CONDITION_SUBJECTS,
  INPUT_VALIDATIONS,
  isNodeType,
  LIMITS,
  MEDIA_TYPES,
  outgoingKeys,
  TAG_MODES,
  WAIT_MINUTES,
} from "./nodes.js";
import { fallbackPolicyProblems, KEYWORD_MATCH_TYPES } from "./triggers.js";

/**
 * The full graph check run before a flow becomes active. Drafts may be
 * incomplete (PUT checks shape only); activation must not let a runner meet a
 * graph it cannot execute or a message WhatsApp would refuse.
 */

export interface ValidationIssue {
  severity: "error" | "warning";
  code: IssueCode;
  message: string;
  node_key?: string;
}

export type IssueCode =
  | "no_entry_node"
  | "entry_node_missing"
  | "duplicate_node_key"
  | "unknown_node_type"
  | "missing_target"
  | "missing_field"
  | "invalid_value"
  | "text_too_long"
  | "button_count"
  | "duplicate_reply_id"
  | "list_row_count"
  | "no_keywords"
  | "invalid_trigger_config"
  | "invalid_fallback_policy"
  | "unreachable_node"
  | "unknown_placeholder"
  | "template_unusable";

export interface GraphInput {
  trigger_type: string;
  trigger_config: unknown;
  entry_node_id: string | null;
  fallback_policy?: unknown;
  nodes: { node_key: string; node_type: string; config: unknown }[];
  /**
   * The account's synced templates by templateKey(name, language). When
   * given, each send_template node must name an approved one and give each
   * component the parameters its placeholders need.
   */
  templates?: Map<string, StoredTemplate>;
}

const PLACEHOLDER = /\{\{\s*([^}]*?)\s*\}\}/g;
const KNOWN_PLACEHOLDER = /^(vars\.[A-Za-z0-9_]+|contact\.name|contact\.phone)$/;

type Config = Record<string, unknown>;

const isObject = (value: unknown): value is Config =>
  value !== null && typeof value === "object" && !Array.isArray(value);

const nonBlank = (value: unknown): value is string => typeof value === "string" && value.trim() !== "";

export function validateFlowGraph(flow: GraphInput): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const error = (code: IssueCode, message: string, node_key?: string) =>
    issues.push({ severity: "error", code, message, ...(node_key === undefined ? {} : { node_key }) });
  const warning = (code: IssueCode, message: string, node_key?: string) =>
    issues.push({ severity: "warning", code, message, ...(node_key === undefined ? {} : { node_key }) });

  checkTrigger(flow, error);
  for (const problem of flow.fallback_policy === undefined
    ? []
    : fallbackPolicyProblems(flow.fallback_policy)) {
    error("invalid_fallback_policy", problem);
  }

  const keys = new Set<string>();
  for (const node of flow.nodes) {
    if (keys.has(node.node_key)) {
      error("duplicate_node_key", `More than one node uses the key "${node.node_key}"`, node.node_key);
    }
    keys.add(node.node_key);
  }

  if (flow.entry_node_id === null || flow.entry_node_id === "") {
    error("no_entry_node", "The flow has no entry node: set entry_node_id to the key of its first node");
  } else if (!keys.has(flow.entry_node_id)) {
    error("entry_node_missing", `The entry node "${flow.entry_node_id}" is not a node of this flow`);
  }

  for (const node of flow.nodes) {
    const at = node.node_key;
    if (!isNodeType(node.node_type)) {
      error("unknown_node_type", `Node "${at}" has the unknown type "${node.node_type}"`, at);
      continue;
    }
    const config = isObject(node.config) ? node.config : {};
    checkNodeConfig(node.node_type, config, (code, message) => error(code, `Node "${at}": ${message}`, at));
    if (node.node_type === "send_template" && flow.templates && nonBlank(config.template_name)) {
      const language = nonBlank(config.language) ? config.language : "";
      const problem = templateProblem(flow.templates.get(templateKey(config.template_name, language)), {
        name: config.template_name,
        language,
        components: config.components,
      });
      if (problem) error("template_unusable", `Node "${at}": ${problem}`, at);
    }
    for (const target of outgoingKeys(node)) {
      if (!keys.has(target)) {
        error("missing_target", `Node "${at}" leads to "${target}", which is not a node of this flow`, at);
      }
    }
    for (const text of textsOf(node.node_type, config)) {
      for (const match of text.matchAll(PLACEHOLDER)) {
        if (!KNOWN_PLACEHOLDER.test(match[1] ?? "")) {
          warning(
            "unknown_placeholder",
            `Node "${at}": ${match[0]} is not one of {{vars.<key>}}, {{contact.name}}, {{contact.phone}} and is sent as written`,
            at,
          );
        }
      }
    }
  }

  if (flow.entry_node_id && keys.has(flow.entry_node_id)) {
    const byKey = new Map(flow.nodes.map((n) => [n.node_key, n]));
    const reached = new Set<string>([flow.entry_node_id]);
    const queue = [flow.entry_node_id];
    for (let current = queue.pop(); current !== undefined; current = queue.pop()) {
      const node = byKey.get(current);
      for (const next of node ? outgoingKeys(node) : []) {
        if (keys.has(next) && !reached.has(next)) {
          reached.add(next);
          queue.push(next);
        }
      }
    }
    for (const key of keys) {
      if (!reached.has(key)) {
        warning("unreachable_node", `Node "${key}" cannot be reached from the entry node`, key);
      }
    }
  }
  return issues;
}

export const hasBlockingIssues = (issues: ValidationIssue[]) => issues.some((i) => i.severity === "error");

function checkTrigger(flow: GraphInput, error: (code: IssueCode, message: string) => void) {
  const config = isObject(flow.trigger_config) ? flow.trigger_config : {};
  const outside = config.outside_business_hours_only;
  if (outside !== undefined && typeof outside !== "boolean") {
    error("invalid_trigger_config", "trigger_config.outside_business_hours_only must be true or false");
  }
  if (flow.trigger_type !== "keyword") return;
  const keywords = config.keywords;
  if (!Array.isArray(keywords) || !keywords.some(nonBlank)) {
    error("no_keywords", "A keyword flow needs at least one keyword in trigger_config.keywords");
  } else if (!keywords.every(nonBlank)) {
    error("invalid_trigger_config", "Every keyword in trigger_config.keywords must be a non-empty string");
  }
  if (config.match_type !== undefined && !KEYWORD_MATCH_TYPES.includes(config.match_type as never)) {
    error(
      "invalid_trigger_config",
      `trigger_config.match_type must be one of ${KEYWORD_MATCH_TYPES.join(", ")}`,
    );
  }
  if (config.case_sensitive !== undefined && typeof config.case_sensitive !== "boolean") {
    error("invalid_trigger_config", "trigger_config.case_sensitive must be true or false");
  }
}

type Report = (code: IssueCode, message: string) => void;

function requireText(config: Config, field: string, max: number, report: Report, label = field) {
  const value = config[field];
  if (!nonBlank(value)) return report("missing_field", `${label} is required`);
  if (value.length > max)
    report("text_too_long", `${label} is ${value.length} characters; the limit is ${max}`);
}

function optionalText(config: Config, field: string, max: number, report: Report, label = field) {
  const value = config[field];
  if (value === undefined || value === null) return;
  if (typeof value !== "string") return report("invalid_value", `${label} must be a string`);
  if (value.length > max)
    report("text_too_long", `${label} is ${value.length} characters; the limit is ${max}`);
}

function requireKey(config: Config, field: string, report: Report, label = field) {
  if (!nonBlank(config[field])) report("missing_field", `${label} is required`);
}

function optionalKey(config: Config, field: string, report: Report) {
  const value = config[field];
  if (value !== undefined && value !== null && typeof value !== "string") {
    report("invalid_value", `${field} must be a node key`);
  }
}

function requireOneOf(config: Config, field: string, allowed: readonly string[], report: Report) {
  const value = config[field];
  if (value === undefined || value === null || value === "")
    return report("missing_field", `${field} is required`);
  if (!allowed.includes(value as string))
    report("invalid_value", `${field} must be one of ${allowed.join(", ")}`);
}

function checkReplyIds(replies: Config[], label: string, report: Report) {
  const seen = new Set<string>();
  replies.forEach((reply, i) => {
    requireText(reply, "reply_id", LIMITS.replyId, report, `${label}[${i}].reply_id`);
    const id = reply.reply_id;
    if (typeof id !== "string") return;
    if (seen.has(id))
      report("duplicate_reply_id", `reply_id "${id}" is used twice; replies must be told apart`);
    seen.add(id);
  });
}

function checkNodeConfig(type: string, config: Config, report: Report) {
  switch (type) {
    case "start":
      return requireKey(config, "next_node_key", report);
    case "send_message":
      requireText(config, "text", LIMITS.bodyText, report);
      return optionalKey(config, "next_node_key", report);
    case "send_buttons": {
      requireText(config, "text", LIMITS.bodyText, report);
      optionalText(config, "header_text", LIMITS.headerText, report);
      optionalText(config, "footer_text", LIMITS.footerText, report);
      if (!Array.isArray(config.buttons)) return report("missing_field", "buttons is required");
      const count = config.buttons.length;
      if (count < LIMITS.buttonsMin || count > LIMITS.buttonsMax) {
        report("button_count", `has ${count} buttons; it needs ${LIMITS.buttonsMin} to ${LIMITS.buttonsMax}`);
      }
      const buttons = config.buttons.map((b) => (isObject(b) ? b : {}));
      buttons.forEach((button, i) => {
        requireText(button, "title", LIMITS.buttonTitle, report, `buttons[${i}].title`);
        requireKey(button, "next_node_key", report, `buttons[${i}].next_node_key`);
      });
      checkReplyIds(buttons, "buttons", report);
      return;
    }
    case "send_list": {
      requireText(config, "text", LIMITS.bodyText, report);
      requireText(config, "button_label", LIMITS.listButtonLabel, report);
      optionalText(config, "header_text", LIMITS.headerText, report);
      optionalText(config, "footer_text", LIMITS.footerText, report);
      if (!Array.isArray(config.sections) || config.sections.length === 0) {
        return report("missing_field", "sections is required");
      }
      const sections = config.sections.map((s) => (isObject(s) ? s : {}));
      const rows: Config[] = [];
      for (const [s, section] of sections.entries()) {
        if (sections.length > 1) {
          requireText(section, "title", LIMITS.listSectionTitle, report, `sections[${s}].title`);
        } else {
          optionalText(section, "title", LIMITS.listSectionTitle, report, `sections[${s}].title`);
        }
        if (!Array.isArray(section.rows) || section.rows.length === 0) {
          report("missing_field", `sections[${s}].rows needs at least one row`);
          continue;
        }
        for (const [r, raw] of section.rows.entries()) {
          const row = isObject(raw) ? raw : {};
          const label = `sections[${s}].rows[${r}]`;
          requireText(row, "title", LIMITS.listRowTitle, report, `${label}.title`);
          optionalText(row, "description", LIMITS.listRowDescription, report, `${label}.description`);
          requireKey(row, "next_node_key", report, `${label}.next_node_key`);
          rows.push(row);
        }
      }
      if (rows.length > LIMITS.listRowsMax) {
        report(
          "list_row_count",
          `has ${rows.length} rows; a list holds at most ${LIMITS.listRowsMax} in all`,
        );
      }
      checkReplyIds(rows, "rows", report);
      return;
    }
    case "send_media": {
      requireOneOf(config, "media_type", MEDIA_TYPES, report);
      const url = config.media_url;
      if (!nonBlank(url)) report("missing_field", "media_url is required");
      else if (!/^https?:\/\/\S+$/i.test(url)) report("invalid_value", "media_url must be an http(s) URL");
      optionalText(config, "caption", LIMITS.bodyText, report);
      optionalText(config, "filename", 240, report);
      return optionalKey(config, "next_node_key", report);
    }
    case "send_template": {
      requireText(config, "template_name", 512, report);
      requireText(config, "language", 20, report);
      const components = config.components;
      if (components !== undefined && components !== null) {
        if (!Array.isArray(components)) return report("invalid_value", "components must be an array");
        components.forEach((c, i) => {
          if (!isObject(c) || !nonBlank(c.type) || !Array.isArray(c.parameters)) {
            report("invalid_value", `components[${i}] needs a type and a parameters array`);
          }
        });
      }
      return optionalKey(config, "next_node_key", report);
    }
    case "collect_input": {
      requireText(config, "prompt_text", LIMITS.bodyText, report);
      if (!nonBlank(config.var_key)) report("missing_field", "var_key is required");
      else if (!/^[A-Za-z0-9_]{1,64}$/.test(config.var_key)) {
        report("invalid_value", "var_key must be 1-64 letters, digits or underscores");
      }
      if (config.validation !== undefined && config.validation !== null) {
        requireOneOf(config, "validation", INPUT_VALIDATIONS, report);
      }
      if (config.validation === "regex") {
        if (!nonBlank(config.regex)) report("missing_field", "regex is required when validation is regex");
        else {
          try {
            new RegExp(config.regex);
          } catch {
            report("invalid_value", "regex is not a valid regular expression");
          }
        }
      }
      return requireKey(config, "next_node_key", report);
    }
    case "condition": {
      requireOneOf(config, "subject", CONDITION_SUBJECTS, report);
      requireKey(config, "subject_key", report);
      requireOneOf(config, "operator", CONDITION_OPERATORS, report);
      if (
        (config.operator === "equals" || config.operator === "contains") &&
        typeof config.value !== "string"
      ) {
        report("missing_field", `value is required for the ${config.operator} operator`);
      }
      requireKey(config, "true_next", report);
      return requireKey(config, "false_next", report);
    }
    case "set_tag":
      requireOneOf(config, "mode", TAG_MODES, report);
      requireText(config, "tag", 100, report);
      return requireKey(config, "next_node_key", report);
    case "handoff":
      optionalText(config, "note", LIMITS.bodyText, report);
      optionalText(config, "assign_to", 100, report);
      return;
    case "wait": {
      const minutes = config.minutes;
      if (
        typeof minutes !== "number" ||
        !Number.isFinite(minutes) ||
        minutes < WAIT_MINUTES.min ||
        minutes > WAIT_MINUTES.max
      ) {
        report(
          "invalid_value",
          `minutes must be a number from ${WAIT_MINUTES.min} to ${WAIT_MINUTES.max} (30 days)`,
        );
      }
      return requireKey(config, "next_node_key", report);
    }
    case "business_hours":
      requireKey(config, "open_node_key", report);
      return requireKey(config, "closed_node_key", report);
    case "end":
      return;
  }
}

/** The texts of a node that the runner fills with variables before sending. */
function textsOf(type: string, config: Config): string[] {
  const fields: Record<string, string[]> = {
    send_message: ["text"],
    send_buttons: ["text", "header_text", "footer_text"],
    send_list: ["text", "header_text", "footer_text"],
    send_media: ["caption"],
    collect_input: ["prompt_text"],
    handoff: ["note"],
  };
  const texts = (fields[type] ?? []).map((f) => config[f]).filter((v): v is string => typeof v === "string");
  if (type === "send_template" && Array.isArray(config.components)) {
    for (const component of config.components) {
      if (!isObject(component) || !Array.isArray(component.parameters)) continue;
      for (const parameter of component.parameters) {
        if (isObject(parameter) && typeof parameter.text === "string") texts.push(parameter.text);
      }
    }
  }
  return texts;
}
