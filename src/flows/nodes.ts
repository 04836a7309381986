import { ApiError } from "../http/errors.js";
import { jsonValueProblem } from "../http/input.js";
import { isStorable, UNSTORABLE_MESSAGE } from "../http/storable.js";
import { isNodeType, NODE_TYPES, type NodeConfigs, type NodeType } from "./node-types/index.js";

/**
 * The node model of a flow (product.md section 4). Edges live inside each
 * node's config as node_key strings, so a graph can be written in one request
 * before any node id exists. Each node type is a module of node-types/.
 */

export type { BusinessHoursConfig } from "./node-types/business_hours.js";
export { type CollectInputConfig, INPUT_VALIDATIONS } from "./node-types/collect_input.js";
export { CONDITION_OPERATORS, CONDITION_SUBJECTS, type ConditionConfig } from "./node-types/condition.js";
export type { EndConfig } from "./node-types/end.js";
export type { HandoffConfig } from "./node-types/handoff.js";
export {
  isNodeType,
  LIMITS,
  NODE_TYPES,
  type NodeConfigs,
  type NodeType,
  outgoingKeys,
} from "./node-types/index.js";
export type { ReplyButton, SendButtonsConfig } from "./node-types/send_buttons.js";
export type { ListRow, ListSection, SendListConfig } from "./node-types/send_list.js";
export { MEDIA_TYPES, type SendMediaConfig } from "./node-types/send_media.js";
export type { SendMessageConfig } from "./node-types/send_message.js";
export type { SendTemplateConfig } from "./node-types/send_template.js";
export { type SetTagConfig, TAG_MODES } from "./node-types/set_tag.js";
export type { StartConfig } from "./node-types/start.js";
export { WAIT_MINUTES, type WaitConfig } from "./node-types/wait.js";

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
/** Keeps a flow's node document (flow_graphs) and every read of it small enough to answer at once. */
export const MAX_NODES_PER_FLOW = 1000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** What is wrong with a node's config for storage (see http/input.ts), nested at most CONFIG_MAX_DEPTH. */
export const configProblem = (value: unknown) => jsonValueProblem(value, CONFIG_MAX_DEPTH);

/** The 400 of checkNodeShapes, naming the node by its index and, once known, its key. */
function nodeFailure(index: number, message: string, nodeKey?: string): ApiError {
  const who = nodeKey === undefined ? `nodes[${index}]` : `nodes[${index}] (node_key "${nodeKey}")`;
  return new ApiError(400, `${who}: ${message}`);
}

/** A node's position: 0 when absent, otherwise a finite number (or the message saying why not). */
function positionOf(raw: Record<string, unknown>, name: "position_x" | "position_y"): number | string {
  const p = raw[name];
  if (p === undefined || p === null) return 0;
  if (typeof p !== "number" || !Number.isFinite(p)) return `${name} must be a number`;
  return p;
}

/**
 * The shape check of PUT /api/flows/{id} `nodes`: drafts may be incomplete, so
 * only what the store and the editor rely on is checked. Throws 400 naming the
 * offending node; returns the nodes with positions defaulted to 0. A plain
 * loop with no closure per node: a 500-node PUT runs it on every save.
 */
export function checkNodeShapes(value: unknown): NodeInput[] {
  if (!Array.isArray(value)) throw new ApiError(400, "nodes: must be an array");
  if (value.length > MAX_NODES_PER_FLOW) {
    throw new ApiError(400, `nodes: a flow holds at most ${MAX_NODES_PER_FLOW} nodes`);
  }
  const seen = new Set<string>();
  const nodes: NodeInput[] = [];
  for (let index = 0; index < value.length; index++) {
    const raw: unknown = value[index];
    if (!isObject(raw)) throw nodeFailure(index, "must be an object");
    const nodeKey = raw.node_key;
    if (typeof nodeKey !== "string") throw nodeFailure(index, "node_key must be a string");
    if (nodeKey.trim() === "") throw nodeFailure(index, "node_key must not be empty");
    if (nodeKey.length > NODE_KEY_MAX_LENGTH) {
      throw nodeFailure(index, `node_key must be at most ${NODE_KEY_MAX_LENGTH} characters`);
    }
    if (!isStorable(nodeKey)) throw nodeFailure(index, `node_key ${UNSTORABLE_MESSAGE}`);
    const nodeType = raw.node_type;
    if (typeof nodeType !== "string") throw nodeFailure(index, "node_type must be a string", nodeKey);
    if (!isNodeType(nodeType)) {
      throw nodeFailure(index, `node_type "${nodeType}" is not one of ${NODE_TYPES.join(", ")}`, nodeKey);
    }
    if (!isObject(raw.config)) throw nodeFailure(index, "config must be an object", nodeKey);
    const problem = configProblem(raw.config);
    if (problem) throw nodeFailure(index, `config ${problem}`, nodeKey);
    const positionX = positionOf(raw, "position_x");
    if (typeof positionX === "string") throw nodeFailure(index, positionX, nodeKey);
    const positionY = positionOf(raw, "position_y");
    if (typeof positionY === "string") throw nodeFailure(index, positionY, nodeKey);
    if (seen.has(nodeKey)) throw nodeFailure(index, "node_key is used by an earlier node", nodeKey);
    seen.add(nodeKey);
    nodes.push({
      node_key: nodeKey,
      node_type: nodeType,
      config: raw.config,
      position_x: positionX,
      position_y: positionY,
    });
  }
  return nodes;
}
