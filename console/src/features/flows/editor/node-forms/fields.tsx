import { LIMITS } from "../../../../../../src/flows/node-types/index.js";
import type { FlowNode, Member } from "../../../../lib/types";

export type Rec = Record<string, unknown>;

export const s = (v: unknown) => (typeof v === "string" ? v : "");
export const arr = (v: unknown): Rec[] => (Array.isArray(v) ? (v as Rec[]) : []);

/** What the inspector hands a node type's form. */
export interface NodeFormProps {
  node: FlowNode;
  config: Rec;
  /** The keys of the flow's other nodes (where an edge may lead). */
  others: string[];
  members: Member[];
  /** Sets one config field (removed when empty). */
  set: (key: string) => (value: unknown) => void;
  /** Replaces the config; edits under the same key (per node) are one undo step. */
  onConfig: (config: Rec, key: string) => void;
}

/** A node type on the console's side: its inspector form and what its card says. */
export interface NodeForm {
  Fields: (props: NodeFormProps) => React.ReactNode;
  summary: (config: Rec) => string;
}

export function TextInput(props: {
  label: string;
  value: unknown;
  onChange: (v: string) => void;
  multiline?: boolean;
  max?: number;
  placeholder?: string;
}) {
  const id = `insp-${props.label.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.multiline ? (
        <textarea
          id={id}
          rows={3}
          value={s(props.value)}
          maxLength={props.max}
          placeholder={props.placeholder}
          onChange={(e) => props.onChange(e.target.value)}
        />
      ) : (
        <input
          id={id}
          value={s(props.value)}
          maxLength={props.max}
          placeholder={props.placeholder}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </div>
  );
}

export function Select(props: {
  label: string;
  value: unknown;
  options: readonly (string | readonly [string, string])[];
  onChange: (v: string) => void;
}) {
  const id = `insp-${props.label.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={s(props.value)} onChange={(e) => props.onChange(e.target.value)}>
        {props.options.map((o) => {
          const [value, label] = typeof o === "string" ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </div>
  );
}

export function NextSelect(props: {
  label: string;
  value: unknown;
  keys: string[];
  onChange: (v: string) => void;
}) {
  return (
    <Select
      label={props.label}
      value={props.value ?? ""}
      options={[["", "— not connected —"], ...props.keys.map((k) => [k, k] as [string, string])]}
      onChange={props.onChange}
    />
  );
}

/** The single "Next" edge most node types have. */
export function Next({ config, others, set }: NodeFormProps) {
  return (
    <NextSelect label="Next" value={config.next_node_key} keys={others} onChange={set("next_node_key")} />
  );
}

/** The optional header and footer of an interactive message (buttons, list). */
export function HeaderFooter({ config, set }: Pick<NodeFormProps, "config" | "set">) {
  return (
    <>
      <TextInput
        label="Header"
        value={config.header_text}
        onChange={set("header_text")}
        max={LIMITS.headerText}
      />
      <TextInput
        label="Footer"
        value={config.footer_text}
        onChange={set("footer_text")}
        max={LIMITS.footerText}
      />
    </>
  );
}
