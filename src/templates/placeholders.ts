/**
 * The placeholders of a WhatsApp template, positional `{{1}}` or named
 * `{{first_name}}`, and the parameters a send gives them (named ones with
 * Meta's `parameter_name`). Pure; shared by the product's checks and the
 * sandbox, which checks sends the way Meta does.
 */

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;

const isPositional = (key: string) => /^\d+$/.test(key);

/** The distinct placeholders of a text, in order of first appearance. */
export function placeholderKeys(text: unknown): string[] {
  if (typeof text !== "string") return [];
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
}

/** How many distinct placeholders (`{{n}}` or named) a text holds. */
export function placeholderCount(text: unknown): number {
  return placeholderKeys(text).length;
}

/** The names of a text's named placeholders (none for a positional text). */
function namedKeys(text: unknown): string[] {
  const keys = placeholderKeys(text);
  return keys.some((k) => !isPositional(k)) ? keys : [];
}

/** The named placeholders of each component of a template, keyed as in expectedParameters. */
export function expectedNames(components: Array<Record<string, unknown>>): Map<string, string[]> {
  const names = new Map<string, string[]>();
  for (const component of components) {
    const type = String(component.type ?? "").toUpperCase();
    const format = String(component.format ?? "TEXT").toUpperCase();
    const keys = type === "BODY" || (type === "HEADER" && format === "TEXT") ? namedKeys(component.text) : [];
    if (keys.length) names.set(type.toLowerCase(), keys);
  }
  return names;
}

/**
 * What is wrong with the `parameter_name`s a send gives a template's named
 * placeholders: each parameter of a named component names one of them, once.
 */
export function nameMismatch(expected: Map<string, string[]>, components: unknown): string | null {
  if (!Array.isArray(components)) return null;
  for (const raw of components) {
    const c = (raw ?? {}) as Record<string, unknown>;
    const key = String(c.type ?? "").toLowerCase();
    const names = expected.get(key);
    if (!names || !Array.isArray(c.parameters)) continue;
    const seen = new Set<string>();
    for (const p of c.parameters as Array<Record<string, unknown>>) {
      const name = p?.parameter_name;
      if (typeof name !== "string" || name === "") {
        return `${key} has named placeholders: each parameter needs parameter_name (one of ${names.join(", ")})`;
      }
      if (!names.includes(name)) return `${key} has no placeholder named "${name}"`;
      if (seen.has(name)) return `${key} parameter_name "${name}" is given twice`;
      seen.add(name);
    }
  }
  return null;
}

/**
 * The parameter count each component of a template expects, keyed like a
 * send's components: `header`, `body`, `button:<index>` (URL buttons with a
 * placeholder).
 */
export function expectedParameters(components: Array<Record<string, unknown>>): Map<string, number> {
  const expected = new Map<string, number>();
  for (const component of components) {
    const type = String(component.type ?? "").toUpperCase();
    if (type === "HEADER") {
      const format = String(component.format ?? "TEXT").toUpperCase();
      const count = format === "TEXT" ? placeholderCount(component.text) : 1;
      if (count > 0) expected.set("header", count);
    } else if (type === "BODY") {
      const count = placeholderCount(component.text);
      if (count > 0) expected.set("body", count);
    } else if (type === "BUTTONS" && Array.isArray(component.buttons)) {
      component.buttons.forEach((button, index) => {
        const b = (button ?? {}) as Record<string, unknown>;
        const count = String(b.type).toUpperCase() === "URL" ? placeholderCount(b.url) : 0;
        if (count > 0) expected.set(`button:${index}`, count);
      });
    }
  }
  return expected;
}

/** The parameters a send gives each component, keyed as in expectedParameters. */
export function givenParameters(components: unknown): Map<string, number> | string {
  const given = new Map<string, number>();
  if (components === undefined) return given;
  if (!Array.isArray(components)) return "template.components must be an array";
  for (const raw of components) {
    const c = (raw ?? {}) as Record<string, unknown>;
    const type = String(c.type ?? "").toLowerCase();
    if (!Array.isArray(c.parameters)) return `template.components[].parameters must be an array (${type})`;
    const key = type === "button" ? `button:${String(c.index ?? "")}` : type;
    given.set(key, (given.get(key) ?? 0) + c.parameters.length);
  }
  return given;
}

/** The first component whose parameter count differs, or null when they all match. */
export function parameterMismatch(expected: Map<string, number>, given: Map<string, number>): string | null {
  for (const key of new Set([...expected.keys(), ...given.keys()])) {
    const want = expected.get(key) ?? 0;
    const got = given.get(key) ?? 0;
    if (want !== got) return `${key} expects ${want} parameter${want === 1 ? "" : "s"}, got ${got}`;
  }
  return null;
}

/**
 * The body text with the parameters filled in, as the customer reads it:
 * `{{n}}` from `parameters` in order, a named placeholder from `named`.
 */
export function renderTemplateBody(
  components: Array<Record<string, unknown>>,
  parameters: string[],
  named: Record<string, string> = {},
): string | null {
  const body = components.find((c) => String(c.type ?? "").toUpperCase() === "BODY");
  if (!body || typeof body.text !== "string") return null;
  return body.text.replace(PLACEHOLDER, (whole, key: string) =>
    isPositional(key) ? parameters[Number(key) - 1] || whole : named[key] || whole,
  );
}

/** Templates are keyed by name and language together, as Meta keys them. */
export const templateKey = (name: string, language: string) => `${name}\u0000${language}`;

/** What the checks need of a stored template. */
export interface StoredTemplate {
  status: string;
  components: Array<Record<string, unknown>>;
}

/** What is wrong with sending a template with these components, or null. */
export function templateProblem(
  template: StoredTemplate | undefined,
  request: { name: string; language: string; components?: unknown },
): string | null {
  const label = `Template "${request.name}" (${request.language})`;
  if (!template) return `${label} is not among the synced templates: sync templates first`;
  if (template.status !== "APPROVED") return `${label} is ${template.status}, not APPROVED`;
  const given = givenParameters(request.components);
  if (typeof given === "string") return `${label}: ${given}`;
  const mismatch =
    parameterMismatch(expectedParameters(template.components), given) ??
    nameMismatch(expectedNames(template.components), request.components);
  return mismatch ? `${label}: component ${mismatch}` : null;
}

/** What a send parameter shows the customer: its text, or a currency's or date's fallback value. */
export function parameterText(parameter: Record<string, unknown>): string | undefined {
  if (typeof parameter.text === "string") return parameter.text;
  for (const key of ["currency", "date_time"]) {
    const value = parameter[key] as { fallback_value?: unknown } | undefined;
    if (typeof value?.fallback_value === "string") return value.fallback_value;
  }
  return undefined;
}

/** The body parameters of a send's components, as the customer reads them (in order). */
export function bodyParameterTexts(
  components: Array<{ type: string; parameters: Array<Record<string, unknown>> }>,
) {
  return components
    .filter((c) => c.type.toLowerCase() === "body")
    .flatMap((c) => c.parameters.map((p) => parameterText(p) ?? ""));
}

/** The named body parameters of a send's components (`parameter_name` to what the customer reads). */
export function bodyParameterNames(
  components: Array<{ type: string; parameters: Array<Record<string, unknown>> }>,
): Record<string, string> {
  const named: Record<string, string> = {};
  for (const c of components) {
    if (c.type.toLowerCase() !== "body") continue;
    for (const p of c.parameters) {
      if (typeof p.parameter_name === "string") named[p.parameter_name] = parameterText(p) ?? "";
    }
  }
  return named;
}
