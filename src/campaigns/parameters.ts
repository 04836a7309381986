/**
 * A campaign's template parameters: which placeholders the template has
 * (positional `{{1}}` or named `{{first_name}}`, in the header, body and URL
 * buttons; a media header takes one link), whether the campaign fills them
 * all, and each recipient's values from contact fields
 * (`{{contact.name}}`, `{{contact.phone}}`, `{{contact.attributes.KEY}}`,
 * each with an optional `|fallback`). Pure.
 */

import type { TemplateComponentParameters } from "../upstream/graph.js";

/** What the API takes: values (with contact expressions) for each placeholder. */
export interface CampaignParameters {
  header?: string[] | Record<string, string>;
  body?: string[] | Record<string, string>;
  buttons?: Array<{ index: number; parameters: string[] }>;
}

/** The fields of a contact a parameter may name. */
export interface ParameterContact {
  name: string | null;
  phone: string | null;
  attributes: Record<string, unknown>;
}

type TextSlot = { keys: string[]; named: boolean };
export interface TemplateShape {
  header: ({ format: "TEXT" } & TextSlot) | { format: "IMAGE" | "VIDEO" | "DOCUMENT" | "LOCATION" } | null;
  body: TextSlot | null;
  /** URL buttons with a placeholder, by their index in the template's buttons. */
  buttons: Array<{ index: number; keys: string[] }>;
  bodyText: string | null;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;
const MEDIA_FORMATS = new Set(["IMAGE", "VIDEO", "DOCUMENT"]);

function textSlot(text: unknown): TextSlot | null {
  if (typeof text !== "string") return null;
  const keys = [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
  if (keys.length === 0) return null;
  const named = keys.some((k) => !/^\d+$/.test(k));
  // Positional placeholders are filled in their number's order.
  if (!named) keys.sort((a, b) => Number(a) - Number(b));
  return { keys, named };
}

/** The placeholders of a stored template's components. */
export function templateShape(components: Array<Record<string, unknown>>): TemplateShape {
  const shape: TemplateShape = { header: null, body: null, buttons: [], bodyText: null };
  for (const component of components) {
    const type = String(component.type ?? "").toUpperCase();
    if (type === "HEADER") {
      const format = String(component.format ?? "TEXT").toUpperCase();
      if (format === "TEXT") {
        const slot = textSlot(component.text);
        if (slot) shape.header = { format: "TEXT", ...slot };
      } else if (MEDIA_FORMATS.has(format) || format === "LOCATION") {
        shape.header = { format: format as "IMAGE" | "VIDEO" | "DOCUMENT" | "LOCATION" };
      }
    } else if (type === "BODY") {
      shape.bodyText = typeof component.text === "string" ? component.text : null;
      shape.body = textSlot(component.text);
    } else if (type === "BUTTONS" && Array.isArray(component.buttons)) {
      component.buttons.forEach((button, index) => {
        const b = (button ?? {}) as Record<string, unknown>;
        if (String(b.type).toUpperCase() !== "URL") return;
        const slot = textSlot(b.url);
        if (slot) shape.buttons.push({ index, keys: slot.keys });
      });
    }
  }
  return shape;
}

/** `{{contact.name}}`, `{{contact.phone}}`, `{{contact.attributes.KEY}}`, each with `|fallback`. */
const EXPRESSION = /\{\{([^{}]*)\}\}/g;
const FIELD = /^contact\.(name|phone|attributes\.[A-Za-z0-9_.-]{1,64})$/;

/** What is wrong with a parameter value's expressions, or null. */
export function expressionProblem(value: string): string | null {
  for (const match of value.matchAll(EXPRESSION)) {
    const [field] = (match[1] ?? "").split("|");
    if (!FIELD.test((field ?? "").trim())) {
      return `unknown field ${match[0]}: use {{contact.name}}, {{contact.phone}} or {{contact.attributes.KEY}}, with an optional |fallback`;
    }
  }
  return null;
}

/** The value with each expression replaced by the contact's field, or its fallback (empty when neither). */
export function renderValue(value: string, contact: ParameterContact): string {
  return value.replace(EXPRESSION, (_whole, inner: string) => {
    const bar = inner.indexOf("|");
    const field = (bar === -1 ? inner : inner.slice(0, bar)).trim();
    const fallback = bar === -1 ? "" : inner.slice(bar + 1);
    let found: unknown;
    if (field === "contact.name") found = contact.name;
    else if (field === "contact.phone") found = contact.phone ? `+${contact.phone}` : null;
    else if (field.startsWith("contact.attributes.")) {
      found = contact.attributes[field.slice("contact.attributes.".length)];
    }
    const text = found === null || found === undefined ? "" : String(found).trim();
    return text === "" ? fallback : text;
  });
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The values given for a text slot, keyed like the slot; or what is wrong. */
function slotValues(
  label: string,
  slot: TextSlot | null,
  given: string[] | Record<string, string> | undefined,
): string | Map<string, string> {
  const values = new Map<string, string>();
  if (!slot) {
    const count = given === undefined ? 0 : Array.isArray(given) ? given.length : Object.keys(given).length;
    return count > 0 ? `parameters.${label}: the template's ${label} has no placeholders` : values;
  }
  if (given === undefined) {
    return `parameters.${label}: the template's ${label} has ${plural(slot.keys.length, "placeholder")} (${slot.keys.map((k) => `{{${k}}}`).join(", ")}); give a value for each`;
  }
  if (Array.isArray(given)) {
    if (given.length !== slot.keys.length) {
      return `parameters.${label}: the template's ${label} expects ${plural(slot.keys.length, "value")}, got ${given.length}`;
    }
    for (const [i, key] of slot.keys.entries()) values.set(key, given[i] as string);
  } else {
    const missing = slot.keys.filter((k) => !(k in given));
    const extra = Object.keys(given).filter((k) => !slot.keys.includes(k));
    if (missing.length) return `parameters.${label}: no value for {{${missing.join("}}, {{")}}}`;
    if (extra.length)
      return `parameters.${label}: the template has no placeholder {{${extra.join("}}, {{")}}}`;
    for (const key of slot.keys) values.set(key, given[key] as string);
  }
  for (const [key, value] of values) {
    if (value.trim() === "") return `parameters.${label}: the value for {{${key}}} is empty`;
    const problem = expressionProblem(value);
    if (problem) return `parameters.${label}: ${problem}`;
  }
  return values;
}

/** Every placeholder's value, checked against the template; throws nothing, answers the problem. */
export interface FilledParameters {
  header: Map<string, string> | { media: string } | null;
  body: Map<string, string>;
  buttons: Array<{ index: number; values: Map<string, string> }>;
}

export function fillParameters(
  shape: TemplateShape,
  parameters: CampaignParameters,
): { ok: true; filled: FilledParameters } | { ok: false; problem: string } {
  let header: FilledParameters["header"] = null;
  if (shape.header && shape.header.format !== "TEXT") {
    if (shape.header.format === "LOCATION") {
      return { ok: false, problem: "The template's header is a location, which campaigns cannot fill" };
    }
    const given = parameters.header;
    const values = given === undefined ? [] : Array.isArray(given) ? given : Object.values(given);
    if (values.length !== 1) {
      return {
        ok: false,
        problem: `parameters.header: the template's header is ${shape.header.format.toLowerCase()}: give one value, its https link or media id`,
      };
    }
    const media = (values[0] ?? "").trim();
    if (!/^https:\/\/\S+$/.test(media) && !/^\d{1,30}$/.test(media)) {
      return { ok: false, problem: "parameters.header: must be an https link or a media id" };
    }
    header = { media };
  } else {
    const values = slotValues(
      "header",
      shape.header?.format === "TEXT" ? shape.header : null,
      parameters.header,
    );
    if (typeof values === "string") return { ok: false, problem: values };
    header = values.size ? values : null;
  }
  const body = slotValues("body", shape.body, parameters.body);
  if (typeof body === "string") return { ok: false, problem: body };
  const buttons: FilledParameters["buttons"] = [];
  const given = parameters.buttons ?? [];
  for (const button of shape.buttons) {
    const entry = given.find((g) => g.index === button.index);
    const values = slotValues(
      `buttons[${button.index}]`,
      { keys: button.keys, named: false },
      entry?.parameters,
    );
    if (typeof values === "string") return { ok: false, problem: values };
    buttons.push({ index: button.index, values });
  }
  const extra = given.find((g) => !shape.buttons.some((b) => b.index === g.index));
  if (extra) {
    return {
      ok: false,
      problem: `parameters.buttons: the template has no URL button with a placeholder at index ${extra.index}`,
    };
  }
  return { ok: true, filled: { header, body, buttons } };
}

/** One recipient's send: the template's components and the body as the customer reads it. */
export interface RenderedTemplate {
  components: TemplateComponentParameters[];
  text: string;
  /** A placeholder whose value came out empty (no field and no fallback): Meta refuses those. */
  missing: string | null;
}

export function renderForContact(
  shape: TemplateShape,
  filled: FilledParameters,
  contact: ParameterContact,
): RenderedTemplate {
  let missing: string | null = null;
  const textParameters = (label: string, values: Map<string, string>, named: boolean) =>
    [...values].map(([key, value]) => {
      const text = renderValue(value, contact);
      if (text.trim() === "" && !missing) missing = `${label} {{${key}}}`;
      return named ? { type: "text", parameter_name: key, text } : { type: "text", text };
    });
  const components: TemplateComponentParameters[] = [];
  if (filled.header && "media" in filled.header && shape.header && shape.header.format !== "TEXT") {
    const kind = shape.header.format.toLowerCase();
    const ref = /^\d+$/.test(filled.header.media)
      ? { id: filled.header.media }
      : { link: filled.header.media };
    components.push({ type: "header", parameters: [{ type: kind, [kind]: ref }] });
  } else if (filled.header instanceof Map && shape.header?.format === "TEXT") {
    components.push({
      type: "header",
      parameters: textParameters("header", filled.header, shape.header.named),
    });
  }
  let text = shape.bodyText ?? "";
  if (filled.body.size && shape.body) {
    const parameters = textParameters("body", filled.body, shape.body.named);
    components.push({ type: "body", parameters });
    const byKey = new Map([...filled.body.keys()].map((k, i) => [k, String(parameters[i]?.text ?? "")]));
    text = text.replace(PLACEHOLDER, (whole, key: string) => byKey.get(key) ?? whole);
  }
  for (const button of filled.buttons) {
    components.push({
      type: "button",
      sub_type: "url",
      index: String(button.index),
      parameters: textParameters(`buttons[${button.index}]`, button.values, false),
    });
  }
  return { components, text, missing };
}
