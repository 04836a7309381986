import { ApiError } from "../http/errors.js";
import { isStorable, jsonValueProblem, UNSTORABLE_MESSAGE } from "../http/input.js";

/**
 * The node model of a flow (product.md section 4). Edges live inside each
 * node's config as node_key strings, so a graph can be written in one request
 * before any node id exists.
 */

export const NODE_TYPES = [
  "start",
  "send_message",
  "send_buttons",
  "send_list",
  "send_media",
  "send_template",
  "collect_input",
  "condition",
  "set_tag",
  "handoff",
  "wait",
  "business_hours",
  "end",
] as const;

export type NodeType = (typeof NODE_TYPES)[number];

export const MEDIA_TYPES = ["image", "video", "document"] as const;
export const INPUT_VALIDATIONS = ["text", "email", "number", "phone", "regex"] as const;
export const CONDITION_SUBJECTS = ["var", "contact_field", "tag"] as const;
export const CONDITION_OPERATORS = ["equals", "contains", "present", "absent"] as const;
export const TAG_MODES = ["add", "remove"] as const;

export interface StartConfig {
  next_node_key: string;
}

export interface SendMessageConfig {
  text: string;
  next_node_key?: string;
}

export interface ReplyButton {
  reply_id: string;
  title: string;
  next_node_key: string;
}

export interface SendButtonsConfig {
  text: string;
  header_text?: string;
  footer_text?: string;
  buttons: ReplyButton[];
}

export interface ListRow {
  reply_id: string;
  title: string;
  description?: string;
  next_node_key: string;
}

export interface ListSection {
  title?: string;
  rows: ListRow[];
}

export interface SendListConfig {
  text: string;
  button_label: string;
  header_text?: string;
  footer_text?: string;
  sections: ListSection[];
}

export interface SendMediaConfig {
  media_type: (typeof MEDIA_TYPES)[number];
  media_url: string;
  caption?: string;
  filename?: string;
  next_node_key?: string;
}

/** A WhatsApp template, the only message that may go out after the 24-hour window. */
export interface SendTemplateConfig {
  template_name: string;
  language: string;
  /** As Meta takes them: `[{ type: "body", parameters: [{ type: "text", text: "{{vars.name}}" }] }]`. */
  components?: Array<{
    type: string;
    sub_type?: string;
    index?: string | number;
    parameters: Array<Record<string, unknown>>;
  }>;
  next_node_key?: string;
}

export interface CollectInputConfig {
  prompt_text: string;
  var_key: string;
  validation?: (typeof INPUT_VALIDATIONS)[number];
  /** Used when validation is `regex`. */
  regex?: string;
  next_node_key: string;
}

export interface ConditionConfig {
  subject: (typeof CONDITION_SUBJECTS)[number];
  subject_key: string;
  operator: (typeof CONDITION_OPERATORS)[number];
  value?: string;
  true_next: string;
  false_next: string;
}

export interface SetTagConfig {
  mode: (typeof TAG_MODES)[number];
  tag: string;
  next_node_key: string;
}

export interface HandoffConfig {
  note?: string;
  /** User id of the member the conversation is assigned to. */
  assign_to?: string;
}

/** A `wait` node's bounds, in minutes: 1 minute to 30 days. */
export const WAIT_MINUTES = { min: 1, max: 30 * 24 * 60 } as const;

/** Pauses the run for `minutes` (see WAIT_MINUTES), then goes on to next_node_key. */
export interface WaitConfig {
  minutes: number;
  next_node_key: string;
}

/** Goes on to open_node_key inside the account's business hours, else to closed_node_key. */
export interface BusinessHoursConfig {
  open_node_key: string;
  closed_node_key: string;
}

export type EndConfig = Record<string, never>;

export interface NodeConfigs {
  start: StartConfig;
  send_message: SendMessageConfig;
  send_buttons: SendButtonsConfig;
  send_list: SendListConfig;
  send_media: SendMediaConfig;
  send_template: SendTemplateConfig;
  collect_input: CollectInputConfig;
  condition: ConditionConfig;
  set_tag: SetTagConfig;
  handoff: HandoffConfig;
  wait: WaitConfig;
  business_hours: BusinessHoursConfig;
  end: EndConfig;
}

/** A node whose config has the shape of its type (what an activated flow holds). */
export type TypedNode = {
  [K in NodeType]: { node_key: string; node_type: K; config: NodeConfigs[K] };
}[NodeType];

/** A node as stored: drafts may hold incomplete configs, so config is loosely typed. */
export interface NodeInput {
  node_key: string;
  node_type: NodeType;
  config: Record<string, unknown>;
  position_x: number;
  position_y: number;
}

/** Shape limits checked on every write (drafts included). */
export const NODE_KEY_MAX_LENGTH = 100;
export const CONFIG_MAX_DEPTH = 20;
/** Keeps one multi-row insert well inside Postgres' 65,535 bind parameters. */
export const MAX_NODES_PER_FLOW = 1000;

/** Content limits checked on activation (WhatsApp's own limits where it has them). */
export const LIMITS = {
  bodyText: 1024,
  buttonsMin: 1,
  buttonsMax: 3,
  buttonTitle: 20,
  listRowsMax: 10,
  listRowTitle: 24,
  listRowDescription: 72,
  listButtonLabel: 20,
  listSectionTitle: 24,
  headerText: 60,
  footerText: 60,
  replyId: 256,
} as const;

export function isNodeType(value: unknown): value is NodeType {
  return typeof value === "string" && (NODE_TYPES as readonly string[]).includes(value);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

const key = (value: unknown): string[] => (typeof value === "string" && value !== "" ? [value] : []);

const items = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * The node_keys a node can move to, in config order (duplicates kept out).
 * Tolerates incomplete draft configs: fields that are missing or of the wrong
 * type contribute no edge.
 */
export function outgoingKeys(node: { node_type: string; config: unknown }): string[] {
  const config = isObject(node.config) ? node.config : {};
  let keys: string[];
  switch (node.node_type) {
    case "start":
    case "send_message":
    case "send_media":
    case "send_template":
    case "collect_input":
    case "set_tag":
    case "wait":
      keys = key(config.next_node_key);
      break;
    case "send_buttons":
      keys = items(config.buttons).flatMap((b) => (isObject(b) ? key(b.next_node_key) : []));
      break;
    case "send_list":
      keys = items(config.sections).flatMap((s) =>
        isObject(s) ? items(s.rows).flatMap((r) => (isObject(r) ? key(r.next_node_key) : [])) : [],
      );
      break;
    case "condition":
      keys = [...key(config.true_next), ...key(config.false_next)];
      break;
    case "business_hours":
      keys = [...key(config.open_node_key), ...key(config.closed_node_key)];
      break;
    default:
      keys = [];
  }
  return [...new Set(keys)];
}

/** What is wrong with a node's config for storage (see http/input.ts), nested at most CONFIG_MAX_DEPTH. */
export const configProblem = (value: unknown) => jsonValueProblem(value, CONFIG_MAX_DEPTH);

/**
 * The shape check of PUT /api/flows/{id} `nodes`: drafts may be incomplete, so
 * only what the store and the editor rely on is checked. Throws 400 naming the
 * offending node; returns the nodes with positions defaulted to 0.
 */
export function checkNodeShapes(value: unknown): NodeInput[] {
  if (!Array.isArray(value)) throw new ApiError(400, "nodes: must be an array");
  if (value.length > MAX_NODES_PER_FLOW) {
    throw new ApiError(400, `nodes: a flow holds at most ${MAX_NODES_PER_FLOW} nodes`);
  }
  const seen = new Set<string>();
  return value.map((raw, index) => {
    const fail = (message: string, nodeKey?: string): never => {
      const who = nodeKey === undefined ? `nodes[${index}]` : `nodes[${index}] (node_key "${nodeKey}")`;
      throw new ApiError(400, `${who}: ${message}`);
    };
    if (!isObject(raw)) return fail("must be an object");
    const nodeKey = raw.node_key;
    if (typeof nodeKey !== "string") return fail("node_key must be a string");
    if (nodeKey.trim() === "") return fail("node_key must not be empty");
    if (nodeKey.length > NODE_KEY_MAX_LENGTH) {
      return fail(`node_key must be at most ${NODE_KEY_MAX_LENGTH} characters`);
    }
    if (!isStorable(nodeKey)) return fail(`node_key ${UNSTORABLE_MESSAGE}`);
    if (typeof raw.node_type !== "string") return fail("node_type must be a string", nodeKey);
    if (!isNodeType(raw.node_type)) {
      return fail(`node_type "${raw.node_type}" is not one of ${NODE_TYPES.join(", ")}`, nodeKey);
    }
    if (!isObject(raw.config)) return fail("config must be an object", nodeKey);
    const problem = configProblem(raw.config);
    if (problem) return fail(`config ${problem}`, nodeKey);
    const position = (name: "position_x" | "position_y"): number => {
      const p = raw[name];
      if (p === undefined || p === null) return 0;
      if (typeof p !== "number" || !Number.isFinite(p)) return fail(`${name} must be a number`, nodeKey);
      return p;
    };
    const node: NodeInput = {
      node_key: nodeKey,
      node_type: raw.node_type,
      config: raw.config,
      position_x: position("position_x"),
      position_y: position("position_y"),
    };
    if (seen.has(nodeKey)) return fail("node_key is used by an earlier node", nodeKey);
    seen.add(nodeKey);
    return node;
  });
}
