import { type Edge, edgesOf, NODE_REGISTRY, NODE_TYPES } from "../../../../../src/flows/node-types/index.js";
import type { FlowNode, Issue, NodeType } from "../../../lib/types";

/** One outgoing connection point of a node and the config field it writes (the service's own edges). */
export type Output = Edge;

/** Edges live in each node's config (product.md section 4): these are the places they can go. */
export const outputsOf = (node: FlowNode): Output[] => edgesOf(node);

const byType = <V>(pick: (type: NodeType) => V) =>
  Object.fromEntries(NODE_TYPES.map((type) => [type, pick(type)])) as Record<NodeType, V>;

export const NODE_LABELS = byType((type) => NODE_REGISTRY[type].label);

export const DEFAULT_CONFIGS = byType((type) => NODE_REGISTRY[type].defaultConfig);

/** A key not used yet, from the node type (send_message_2 …). */
export function freshKey(type: NodeType, nodes: FlowNode[]) {
  const taken = new Set(nodes.map((n) => n.node_key));
  for (let i = 1; ; i++) {
    const key = `${type}_${i}`;
    if (!taken.has(key)) return key;
  }
}

/** Renames a node and every edge that points to it. */
export function renameNode(nodes: FlowNode[], from: string, to: string): FlowNode[] {
  return nodes.map((n) => {
    let config = n.config;
    for (const out of outputsOf({ ...n, config })) {
      if (out.target === from) config = out.set(config, to);
    }
    return { ...n, node_key: n.node_key === from ? to : n.node_key, config };
  });
}

/** Removes a node and clears the edges that pointed to it. */
export function removeNode(nodes: FlowNode[], key: string): FlowNode[] {
  return nodes
    .filter((n) => n.node_key !== key)
    .map((n) => {
      let config = n.config;
      for (const out of outputsOf({ ...n, config }))
        if (out.target === key) config = out.set(config, undefined);
      return { ...n, config };
    });
}

export function issuesByNode(issues: Issue[]) {
  const map = new Map<string, Issue[]>();
  for (const issue of issues) {
    if (!issue.node_key) continue;
    map.set(issue.node_key, [...(map.get(issue.node_key) ?? []), issue]);
  }
  return map;
}
