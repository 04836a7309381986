import type { LoadedNode } from "./engine.js";

/**
 * Flows' nodes kept between advances, by flow and by the version of the
 * flow's row (its `xmin`, read with the account's active flows under the
 * contact's lock, or with the run an advance locks). Every change of a flow's
 * nodes (PUT) updates the flow's row in the same transaction, so a new version
 * is a new entry and an edit is never missed, on this instance or another.
 * Bounded by the number of nodes kept; the least recently used flow goes
 * first. Configs are frozen: a node shares them with every run of its flow.
 */
const MAX_NODES = 20_000;

interface Entry {
  version: string;
  nodes: Map<string, LoadedNode>;
}

const entries = new Map<string, Entry>();
let kept = 0;

/** The flow's nodes at this version of its row, if kept. */
export function cachedNodes(flowId: string, version: string): Map<string, LoadedNode> | undefined {
  const entry = entries.get(flowId);
  if (!entry || entry.version !== version) return undefined;
  // The most recently used goes last.
  entries.delete(flowId);
  entries.set(flowId, entry);
  return entry.nodes;
}

/** Keeps the flow's nodes read at this version of its row (replacing an older one). */
export function keepNodes(flowId: string, version: string, nodes: Map<string, LoadedNode>): void {
  if (nodes.size > MAX_NODES) return;
  forget(flowId);
  for (const node of nodes.values()) deepFreeze(node.config);
  entries.set(flowId, { version, nodes });
  kept += nodes.size;
  for (const [oldest] of entries) {
    if (kept <= MAX_NODES) break;
    forget(oldest);
  }
}

function forget(flowId: string) {
  const entry = entries.get(flowId);
  if (!entry) return;
  entries.delete(flowId);
  kept -= entry.nodes.size;
}

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}
