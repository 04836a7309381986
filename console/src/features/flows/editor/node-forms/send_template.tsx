import { templateComponent } from "../../../../lib/format";
import type { WaTemplate } from "../../../../lib/types";
import { useTemplates } from "../../../inbox/api";
import { arr, Next, type NodeForm, type NodeFormProps, type Rec, Select, s, TextInput } from "./fields";

/** The highest `{{n}}` in a template's body: how many body parameters a send must give. */
function bodyPlaceholders(template: WaTemplate | undefined) {
  const body = templateComponent(template, "BODY")?.text ?? "";
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
function TemplateFields(props: NodeFormProps) {
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
  const body = templateComponent(chosen, "BODY")?.text;
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

export const send_template: NodeForm = {
  Fields: (props) => (
    <>
      <TemplateFields {...props} />
      <Next {...props} />
    </>
  ),
  summary: (c) => (c.template_name ? `${s(c.template_name)} (${s(c.language)})` : ""),
};
