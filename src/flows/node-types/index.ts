import { business_hours } from "./business_hours.js";
import { collect_input } from "./collect_input.js";
import { condition } from "./condition.js";
import { end } from "./end.js";
import { handoff } from "./handoff.js";
import { send_buttons } from "./send_buttons.js";
import { send_list } from "./send_list.js";
import { send_media } from "./send_media.js";
import { send_message } from "./send_message.js";
import { send_template } from "./send_template.js";
import { set_tag } from "./set_tag.js";
import { start } from "./start.js";
import type { Edge, NodeTypeModule } from "./types.js";
import { wait } from "./wait.js";

/**
 * Every node type, by name (product.md section 4): the one place a type is
 * registered. The validator, the runner and the console's editor look types
 * up here; none of them names a type. A new type is a module beside this one
 * (and a form in console/src/features/flows/editor/node-forms/), added below.
 */
export const NODE_REGISTRY = {
  start,
  send_message,
  send_buttons,
  send_list,
  send_media,
  send_template,
  collect_input,
  condition,
  set_tag,
  handoff,
  wait,
  business_hours,
  end,
} as const;

export type NodeType = keyof typeof NODE_REGISTRY;

export const NODE_TYPES = Object.keys(NODE_REGISTRY) as [NodeType, ...NodeType[]];

/** The complete config of each type. */
export type NodeConfigs = {
  [K in NodeType]: NonNullable<(typeof NODE_REGISTRY)[K]["configShape"]>;
};

export function isNodeType(value: unknown): value is NodeType {
  return typeof value === "string" && Object.hasOwn(NODE_REGISTRY, value);
}

/** The module of a node type; undefined for a name that is none. */
export function nodeModule(type: string): NodeTypeModule | undefined {
  return isNodeType(type) ? (NODE_REGISTRY[type] as NodeTypeModule) : undefined;
}

const asConfig = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** A node's outgoing connections (none for an unknown type); tolerates incomplete draft configs. */
export function edgesOf(node: { node_type: string; config: unknown }): Edge[] {
  return nodeModule(node.node_type)?.edges(asConfig(node.config)) ?? [];
}

/**
 * The node_keys a node can move to, in config order (duplicates kept out).
 * Fields that are missing or of the wrong type contribute no edge.
 */
export function outgoingKeys(node: { node_type: string; config: unknown }): string[] {
  return [...new Set(edgesOf(node).flatMap((e) => (e.target === undefined ? [] : [e.target])))];
}

/** Whether a node of this type waits for the customer's answer once its question is out. */
export const waitsForAnswer = (type: string) => nodeModule(type)?.answer !== undefined;

export { LIMITS } from "./checks.js";
export type { Config, Edge, IssueCode, NodeRuntime, NodeTypeModule } from "./types.js";
