import { Handle, type Node, type NodeProps, type NodeTypes, Position } from "@xyflow/react";
import { NODE_REGISTRY } from "../../../../../src/flows/node-types/index.js";
import type { FlowNode, Issue, NodeType } from "../../../lib/types";
import { NODE_LABELS, outputsOf } from "./graph";
import { NODE_FORMS } from "./node-forms";

export type CanvasNodeData = { node: FlowNode; issues: Issue[]; entry: boolean };
export type CanvasNode = Node<CanvasNodeData>;

function FlowNodeCard({ data, selected }: NodeProps<CanvasNode>) {
  const { node, issues, entry } = data;
  const outputs = outputsOf(node);
  const errors = issues.filter((i) => i.severity === "error");
  const summary = NODE_FORMS[node.node_type].summary(node.config);
  return (
    <div
      className={`flow-node type-${node.node_type}${selected ? " selected" : ""}${errors.length ? " has-error" : issues.length ? " has-warning" : ""}`}
      data-node-key={node.node_key}
    >
      {!NODE_REGISTRY[node.node_type].begins ? (
        <Handle type="target" position={Position.Left} aria-label={`Into ${node.node_key}`} />
      ) : null}
      <div className="flow-node-head">
        <span className="flow-node-type">{NODE_LABELS[node.node_type]}</span>
        {entry ? <span className="flow-node-entry">entry</span> : null}
      </div>
      <div className="flow-node-key">{node.node_key}</div>
      {summary ? <div className="flow-node-summary">{summary}</div> : null}
      {issues.length ? (
        <ul className="flow-node-issues" aria-label="Issues">
          {issues.map((i) => (
            <li key={`${i.code}-${i.message}`} className={i.severity}>
              {i.message}
            </li>
          ))}
        </ul>
      ) : null}
      {outputs.length ? (
        <ul className="flow-node-outputs">
          {outputs.map((o) => (
            <li key={o.handle}>
              <span>{o.label}</span>
              <Handle
                type="source"
                position={Position.Right}
                id={o.handle}
                aria-label={`${o.label} of ${node.node_key}`}
              />
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** One component per node type, registered in one map (React Flow's custom nodes). */
export const nodeTypes: NodeTypes = Object.fromEntries(
  (Object.keys(NODE_LABELS) as NodeType[]).map((type) => [type, FlowNodeCard]),
);
