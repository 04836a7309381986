import { useState } from "react";
import type { FlowNode, Issue, Member } from "../../../lib/types";
import { NODE_LABELS } from "./graph";
import { NODE_FORMS } from "./node-forms";

type Rec = Record<string, unknown>;
type Change = (config: Rec, coalesceKey?: string) => void;

export function Inspector(props: {
  node: FlowNode;
  keys: string[];
  members: Member[];
  issues: Issue[];
  isEntry: boolean;
  onConfig: Change;
  onRename: (key: string) => string | null;
  onMakeEntry: () => void;
  onDelete: () => void;
}) {
  const { node } = props;
  const c = node.config;
  const others = props.keys.filter((k) => k !== node.node_key);
  const set = (key: string) => (value: unknown) => {
    const next = { ...c };
    if (value === "" || value === undefined) delete next[key];
    else next[key] = value;
    props.onConfig(next, `${node.node_key}.${key}`);
  };
  const [keyDraft, setKeyDraft] = useState(node.node_key);
  const [keyError, setKeyError] = useState<string | null>(null);

  const { Fields } = NODE_FORMS[node.node_type];

  return (
    <form
      className="inspector"
      aria-label={`Inspector: ${node.node_key}`}
      onSubmit={(e) => e.preventDefault()}
    >
      <h2>{NODE_LABELS[node.node_type]}</h2>
      {props.issues.length ? (
        <ul className="issue-list" aria-label="Issues of this node">
          {props.issues.map((i) => (
            <li key={`${i.code}-${i.message}`} className={i.severity}>
              {i.message}
            </li>
          ))}
        </ul>
      ) : null}
      <div className="field">
        <label htmlFor="insp-node-key">Node key</label>
        <input
          id="insp-node-key"
          value={keyDraft}
          onChange={(e) => setKeyDraft(e.target.value)}
          onBlur={() => {
            if (keyDraft === node.node_key) return;
            const problem = props.onRename(keyDraft.trim());
            setKeyError(problem);
            if (problem) setKeyDraft(node.node_key);
          }}
          aria-invalid={Boolean(keyError)}
          aria-describedby={keyError ? "insp-node-key-error" : undefined}
        />
        {keyError ? (
          <p className="field-error" id="insp-node-key-error" role="alert">
            {keyError}
          </p>
        ) : null}
      </div>
      <Fields
        node={node}
        config={c}
        others={others}
        members={props.members}
        set={set}
        onConfig={(config, key) => props.onConfig(config, `${node.node_key}.${key}`)}
      />
      <div className="inspector-actions">
        {!props.isEntry ? (
          <button type="button" className="btn btn-small" onClick={props.onMakeEntry}>
            Make entry node
          </button>
        ) : (
          <span className="muted">This is the entry node.</span>
        )}
        <button type="button" className="btn btn-danger btn-small" onClick={props.onDelete}>
          Delete node
        </button>
      </div>
    </form>
  );
}
