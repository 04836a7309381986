import type { StoredTemplate } from "../templates/placeholders.js";
import { type IssueCode, nodeModule, outgoingKeys } from "./node-types/index.js";
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

export type { IssueCode };

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
    const type = nodeModule(node.node_type);
    if (!type) {
      error("unknown_node_type", `Node "${at}" has the unknown type "${node.node_type}"`, at);
      continue;
    }
    const config = isObject(node.config) ? node.config : {};
    type.validate(config, (code, message) => error(code, `Node "${at}": ${message}`, at), {
      ...(flow.templates ? { templates: flow.templates } : {}),
    });
    for (const target of outgoingKeys(node)) {
      if (!keys.has(target)) {
        error("missing_target", `Node "${at}" leads to "${target}", which is not a node of this flow`, at);
      }
    }
    for (const text of type.texts?.(config) ?? []) {
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
