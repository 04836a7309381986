import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The parts of Meta's own OpenAPI description (v23.0) that the tests use,
 * extracted into the repository by scripts/extract-meta-openapi.mjs (source
 * and licence: test/fixtures/meta-openapi/README.md).
 */
export const META_OPENAPI_PATH = fileURLToPath(
  new URL("../../fixtures/meta-openapi/meta-openapi-subset.json", import.meta.url),
);

type Schema = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document is untyped by nature
export type OpenApiDoc = any;

let cached: OpenApiDoc | undefined;
export function metaOpenApi(): OpenApiDoc {
  cached ??= JSON.parse(readFileSync(META_OPENAPI_PATH, "utf8"));
  return cached;
}

export function requestSchema(doc: OpenApiDoc, path: string, method: string): Schema {
  return doc.paths[path][method].requestBody.content["application/json"].schema;
}

export function requestExample(doc: OpenApiDoc, path: string, method: string, name: string): unknown {
  return doc.paths[path][method].requestBody.content["application/json"].examples[name].value;
}

export function responseExample(doc: OpenApiDoc, path: string, method: string, name: string): unknown {
  return doc.paths[path][method].responses["200"].content["application/json"].examples[name].value;
}

export function webhookExample(doc: OpenApiDoc, name: string): unknown {
  return doc.paths["/whatsapp/webhooks"].post.requestBody.content["application/json"].examples[name].value;
}

function resolve(doc: OpenApiDoc, schema: Schema): Schema {
  let s = schema;
  while (typeof s.$ref === "string") {
    const parts = s.$ref.replace(/^#\//, "").split("/");
    s = parts.reduce((node, key) => node[key], doc);
  }
  return s;
}

/**
 * A small JSON-schema check (the keywords Meta's request schemas use:
 * $ref, type, required, properties, enum, pattern, lengths, items,
 * additionalProperties false). Returns the problems found, empty when valid.
 */
export function validateAgainst(doc: OpenApiDoc, schema: Schema, value: unknown, at = "$"): string[] {
  const s = resolve(doc, schema);
  const problems: string[] = [];
  const type = s.type as string | undefined;
  if (type === "object") {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [`${at}: not an object`];
    const obj = value as Record<string, unknown>;
    for (const name of (s.required as string[] | undefined) ?? []) {
      if (!(name in obj)) problems.push(`${at}.${name}: required`);
    }
    const properties = (s.properties as Record<string, Schema> | undefined) ?? {};
    for (const [name, child] of Object.entries(obj)) {
      if (properties[name]) problems.push(...validateAgainst(doc, properties[name], child, `${at}.${name}`));
      else if (s.additionalProperties === false) problems.push(`${at}.${name}: not allowed`);
    }
    return problems;
  }
  if (type === "array") {
    if (!Array.isArray(value)) return [`${at}: not an array`];
    return value.flatMap((item, i) => validateAgainst(doc, s.items as Schema, item, `${at}[${i}]`));
  }
  if (type === "string" && typeof value !== "string") return [`${at}: not a string`];
  if (type === "integer" && !Number.isInteger(value)) return [`${at}: not an integer`];
  if (type === "boolean" && typeof value !== "boolean") return [`${at}: not a boolean`];
  if (Array.isArray(s.enum) && !s.enum.includes(value))
    problems.push(`${at}: not one of ${s.enum.join(", ")}`);
  if (typeof value === "string") {
    if (typeof s.pattern === "string" && !new RegExp(s.pattern).test(value)) {
      problems.push(`${at}: does not match ${s.pattern}`);
    }
    if (typeof s.minLength === "number" && value.length < s.minLength) problems.push(`${at}: too short`);
    if (typeof s.maxLength === "number" && value.length > s.maxLength) problems.push(`${at}: too long`);
  }
  return problems;
}

/** The structure of a JSON value: object keys (sorted) and value kinds, arrays by their first item. */
export function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? [shapeOf(value[0])] : [];
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, shapeOf((value as Record<string, unknown>)[key])]),
    );
  }
  return typeof value;
}
