import { useState } from "react";
import type { FlowNode, Issue, Member, WaTemplate } from "../../../lib/types";
import { useTemplates } from "../../inbox/api";
import { NODE_LABELS } from "./graph";

type Rec = Record<string, unknown>;
type Change = (config: Rec, coalesceKey?: string) => void;

const s = (v: unknown) => (typeof v === "string" ? v : "");
const arr = (v: unknown): Rec[] => (Array.isArray(v) ? (v as Rec[]) : []);

function TextInput(props: {
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

function Select(props: {
  label: string;
  value: unknown;
  options: readonly (string | [string, string])[];
  onChange: (v: string) => void;
}) {
  const id = `insp-${props.label.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={s(props.value)} onChange={(e) => props.onChange(e.target.value)}>
        {props.options.map((o) => {
          const [value, label] = Array.isArray(o) ? o : [o, o];
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

function NextSelect(props: { label: string; value: unknown; keys: string[]; onChange: (v: string) => void }) {
  return (
    <Select
      label={props.label}
      value={props.value ?? ""}
      options={[["", "— not connected —"], ...props.keys.map((k) => [k, k] as [string, string])]}
      onChange={props.onChange}
    />
  );
}

/** The highest `{{n}}` in a template's body: how many body parameters a send must give. */
function bodyPlaceholders(template: WaTemplate | undefined) {
  const body = template?.components.find((x) => x.type.toLowerCase() === "body")?.text ?? "";
  return Math.max(0, ...[...body.matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => Number(m[1])));
}

/** The text parameters of the config's body component. */
function bodyParameters(config: Rec): string[] {
  const body = arr(config.components).find((x) => s(x.type).toLowerCase() === "body");
  return arr(body?.parameters).map((p) => s(p.text));
}

/** The config with its body parameters replaced (other components kept; none when empty). */
function withBodyParameters(config: Rec, texts: string[]): Rec {
  const others = arr(config.components).filter((x) => s(x.type).toLowerCase() !== "body");
  const components = texts.length
    ? [...others, { type: "body", parameters: texts.map((text) => ({ type: "text", text })) }]
    : others;
  const next = { ...config };
  if (components.length) next.components = components;
  else delete next.components;
  return next;
}

/**
 * A send_template node: the template (picked from the synced approved ones, or typed), its
 * language and the body's `{{1}}…` parameters, which may use `{{contact.name}}` and `{{vars.x}}`.
 */
function TemplateFields(props: { config: Rec; onConfig: (config: Rec, key: string) => void }) {
  const c = props.config;
  const templates = useTemplates("APPROVED");
  const list = templates.data ?? [];
  const chosen = list.find((t) => t.name === c.template_name && t.language === c.language);
  const params = bodyParameters(c);
  // A synced template says how many parameters its body takes; otherwise those given are kept.
  const count = chosen ? bodyPlaceholders(chosen) : params.length;
  const shown = Array.from({ length: count }, (_, i) => params[i] ?? "");
  const setText = (key: "template_name" | "language") => (value: string) =>
    props.onConfig({ ...c, [key]: value }, key);
  const setParam = (i: number, value: string) =>
    props.onConfig(
      withBodyParameters(
        c,
        shown.map((p, j) => (j === i ? value : p)),
      ),
      `param-${i}`,
    );
  const pick = (value: string) => {
    const template = list.find((t) => `${t.name}|${t.language}` === value);
    if (!template) return;
    const next = { ...c, template_name: template.name, language: template.language };
    const slots = Array.from({ length: bodyPlaceholders(template) }, (_, i) => params[i] ?? "");
    props.onConfig(withBodyParameters(next, slots), "template");
  };
  const body = chosen?.components.find((x) => x.type.toLowerCase() === "body")?.text;
  return (
    <>
      {list.length ? (
        <Select
          label="Approved template"
          value={chosen ? `${chosen.name}|${chosen.language}` : ""}
          options={[
            ...(chosen ? [] : [["", "— choose or type below —"] as [string, string]]),
            ...list.map((t) => [`${t.name}|${t.language}`, `${t.name} (${t.language})`] as [string, string]),
          ]}
          onChange={pick}
        />
      ) : (
        <p className="hint">
          {templates.isPending
            ? "Loading templates…"
            : "No approved templates synced yet (Settings → Templates): type the name and language."}
        </p>
      )}
      <TextInput
        label="Template name"
        value={c.template_name}
        onChange={setText("template_name")}
        max={512}
      />
      <TextInput
        label="Language"
        value={c.language}
        onChange={setText("language")}
        max={20}
        placeholder="en_US"
      />
      {body ? <p className="hint template-body">{body}</p> : null}
      {shown.map((value, i) => (
        <TextInput
          // biome-ignore lint/suspicious/noArrayIndexKey: parameters are positional ({{1}}, {{2}} …)
          key={i}
          label={`Body parameter {{${i + 1}}}`}
          value={value}
          onChange={(v) => setParam(i, v)}
          placeholder="{{contact.name}}"
        />
      ))}
      {chosen ? null : (
        // A template not synced here: its parameters cannot be counted, so they are added by hand.
        <div className="inspector-row">
          <button
            type="button"
            className="btn btn-small"
            onClick={() => props.onConfig(withBodyParameters(c, [...shown, ""]), "params")}
          >
            Add body parameter
          </button>
          {shown.length ? (
            <button
              type="button"
              className="btn btn-small"
              onClick={() => props.onConfig(withBodyParameters(c, shown.slice(0, -1)), "params")}
            >
              Remove last parameter
            </button>
          ) : null}
        </div>
      )}
    </>
  );
}

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

  const fields = (() => {
    switch (node.node_type) {
      case "start":
        return (
          <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
        );
      case "send_message":
        return (
          <>
            <TextInput
              label="Message text"
              value={c.text}
              onChange={set("text")}
              multiline
              max={1024}
              placeholder="Hello {{contact.name}}!"
            />
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "send_buttons": {
        const buttons = arr(c.buttons);
        const setButtons = (b: Rec[]) => props.onConfig({ ...c, buttons: b }, `${node.node_key}.buttons`);
        return (
          <>
            <TextInput label="Message text" value={c.text} onChange={set("text")} multiline max={1024} />
            <TextInput label="Header" value={c.header_text} onChange={set("header_text")} max={60} />
            <TextInput label="Footer" value={c.footer_text} onChange={set("footer_text")} max={60} />
            <fieldset className="sub-items">
              <legend>Buttons (1 to 3)</legend>
              {buttons.map((b, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: buttons have no identity but their place
                <div key={i} className="sub-item">
                  <TextInput
                    label={`Button ${i + 1} title`}
                    value={b.title}
                    max={20}
                    onChange={(v) => setButtons(buttons.map((x, j) => (j === i ? { ...x, title: v } : x)))}
                  />
                  <TextInput
                    label={`Button ${i + 1} reply id`}
                    value={b.reply_id}
                    onChange={(v) => setButtons(buttons.map((x, j) => (j === i ? { ...x, reply_id: v } : x)))}
                  />
                  <NextSelect
                    label={`Button ${i + 1} next`}
                    value={b.next_node_key}
                    keys={others}
                    onChange={(v) =>
                      setButtons(buttons.map((x, j) => (j === i ? { ...x, next_node_key: v } : x)))
                    }
                  />
                  <button
                    type="button"
                    className="btn btn-ghost btn-small"
                    onClick={() => setButtons(buttons.filter((_, j) => j !== i))}
                    aria-label={`Remove button ${i + 1}`}
                  >
                    Remove
                  </button>
                </div>
              ))}
              {buttons.length < 3 ? (
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() =>
                    setButtons([
                      ...buttons,
                      {
                        reply_id: `option_${buttons.length + 1}`,
                        title: `Option ${buttons.length + 1}`,
                        next_node_key: "",
                      },
                    ])
                  }
                >
                  Add button
                </button>
              ) : null}
            </fieldset>
          </>
        );
      }
      case "send_list": {
        const sections = arr(c.sections);
        const setSections = (x: Rec[]) => props.onConfig({ ...c, sections: x }, `${node.node_key}.sections`);
        const setRow = (si: number, ri: number, patch: Rec) =>
          setSections(
            sections.map((sec, i) =>
              i === si
                ? { ...sec, rows: arr(sec.rows).map((r, j) => (j === ri ? { ...r, ...patch } : r)) }
                : sec,
            ),
          );
        return (
          <>
            <TextInput label="Message text" value={c.text} onChange={set("text")} multiline max={1024} />
            <TextInput label="Button label" value={c.button_label} onChange={set("button_label")} max={20} />
            <TextInput label="Header" value={c.header_text} onChange={set("header_text")} max={60} />
            <TextInput label="Footer" value={c.footer_text} onChange={set("footer_text")} max={60} />
            {sections.map((sec, si) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: sections have no identity but their place
              <fieldset key={si} className="sub-items">
                <legend>Section {si + 1}</legend>
                <TextInput
                  label={`Section ${si + 1} title`}
                  value={sec.title}
                  max={24}
                  onChange={(v) => setSections(sections.map((x, i) => (i === si ? { ...x, title: v } : x)))}
                />
                {arr(sec.rows).map((r, ri) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
                  <div key={ri} className="sub-item">
                    <TextInput
                      label={`Row ${ri + 1} title`}
                      value={r.title}
                      max={24}
                      onChange={(v) => setRow(si, ri, { title: v })}
                    />
                    <TextInput
                      label={`Row ${ri + 1} description`}
                      value={r.description}
                      max={72}
                      onChange={(v) => setRow(si, ri, { description: v })}
                    />
                    <TextInput
                      label={`Row ${ri + 1} reply id`}
                      value={r.reply_id}
                      onChange={(v) => setRow(si, ri, { reply_id: v })}
                    />
                    <NextSelect
                      label={`Row ${ri + 1} next`}
                      value={r.next_node_key}
                      keys={others}
                      onChange={(v) => setRow(si, ri, { next_node_key: v })}
                    />
                    <button
                      type="button"
                      className="btn btn-ghost btn-small"
                      aria-label={`Remove row ${ri + 1}`}
                      onClick={() =>
                        setSections(
                          sections.map((x, i) =>
                            i === si ? { ...x, rows: arr(x.rows).filter((_, j) => j !== ri) } : x,
                          ),
                        )
                      }
                    >
                      Remove
                    </button>
                  </div>
                ))}
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() =>
                    setSections(
                      sections.map((x, i) =>
                        i === si
                          ? {
                              ...x,
                              rows: [
                                ...arr(x.rows),
                                {
                                  reply_id: `row_${arr(x.rows).length + 1}`,
                                  title: `Row ${arr(x.rows).length + 1}`,
                                  next_node_key: "",
                                },
                              ],
                            }
                          : x,
                      ),
                    )
                  }
                >
                  Add row
                </button>
              </fieldset>
            ))}
          </>
        );
      }
      case "send_media":
        return (
          <>
            <Select
              label="Media type"
              value={c.media_type}
              options={["image", "video", "document"]}
              onChange={set("media_type")}
            />
            <TextInput
              label="Media URL"
              value={c.media_url}
              onChange={set("media_url")}
              placeholder="https://…"
            />
            <TextInput label="Caption" value={c.caption} onChange={set("caption")} multiline max={1024} />
            <TextInput label="File name" value={c.filename} onChange={set("filename")} />
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "send_template":
        return (
          <>
            <TemplateFields
              config={c}
              onConfig={(next, key) => props.onConfig(next, `${node.node_key}.${key}`)}
            />
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "collect_input":
        return (
          <>
            <TextInput
              label="Question"
              value={c.prompt_text}
              onChange={set("prompt_text")}
              multiline
              max={1024}
            />
            <TextInput label="Store answer as variable" value={c.var_key} onChange={set("var_key")} />
            <Select
              label="Validation"
              value={c.validation ?? "text"}
              options={["text", "email", "number", "phone", "regex"]}
              onChange={set("validation")}
            />
            {c.validation === "regex" ? (
              <TextInput label="Regular expression" value={c.regex} onChange={set("regex")} />
            ) : null}
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "condition":
        return (
          <>
            <Select
              label="Subject"
              value={c.subject}
              options={[
                ["var", "Variable"],
                ["contact_field", "Contact field"],
                ["tag", "Tag"],
              ]}
              onChange={set("subject")}
            />
            <TextInput label="Subject key" value={c.subject_key} onChange={set("subject_key")} />
            <Select
              label="Operator"
              value={c.operator}
              options={["equals", "contains", "present", "absent"]}
              onChange={set("operator")}
            />
            {c.operator === "present" || c.operator === "absent" ? null : (
              <TextInput label="Value" value={c.value} onChange={set("value")} />
            )}
            <NextSelect label="When true" value={c.true_next} keys={others} onChange={set("true_next")} />
            <NextSelect label="When false" value={c.false_next} keys={others} onChange={set("false_next")} />
          </>
        );
      case "set_tag":
        return (
          <>
            <Select
              label="Mode"
              value={c.mode}
              options={[
                ["add", "Add tag"],
                ["remove", "Remove tag"],
              ]}
              onChange={set("mode")}
            />
            <TextInput label="Tag" value={c.tag} onChange={set("tag")} />
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "wait":
        return (
          <>
            <div className="field">
              <label htmlFor="insp-minutes">Minutes to wait</label>
              <input
                id="insp-minutes"
                type="number"
                min={1}
                max={43200}
                value={typeof c.minutes === "number" ? c.minutes : ""}
                onChange={(e) => set("minutes")(e.target.value === "" ? "" : Number(e.target.value))}
              />
              <p className="hint">From 1 minute to 30 days (43,200 minutes).</p>
            </div>
            <NextSelect label="Next" value={c.next_node_key} keys={others} onChange={set("next_node_key")} />
          </>
        );
      case "business_hours":
        return (
          <>
            <p className="hint">
              Set the hours in Settings → Automation; without them the business is always open.
            </p>
            <NextSelect
              label="When open"
              value={c.open_node_key}
              keys={others}
              onChange={set("open_node_key")}
            />
            <NextSelect
              label="When closed"
              value={c.closed_node_key}
              keys={others}
              onChange={set("closed_node_key")}
            />
          </>
        );
      case "handoff":
        return (
          <>
            <TextInput label="Note for the agent" value={c.note} onChange={set("note")} multiline />
            <Select
              label="Assign to"
              value={c.assign_to ?? ""}
              options={[
                ["", "Nobody in particular"],
                ...props.members.map((m) => [m.user_id, m.name] as [string, string]),
              ]}
              onChange={set("assign_to")}
            />
          </>
        );
      default:
        return <p className="muted">This node has no settings.</p>;
    }
  })();

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
      {fields}
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
