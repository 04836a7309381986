/**
 * The plain rules of a contact's tags and attributes: limits, the key's
 * pattern and the check of a typed value. Free of zod and the database: the
 * import's parsing thread (import-worker.ts) loads these and no more; the
 * schemas built on them are in fields.ts and attributes.ts.
 */
import type { AttributeType } from "../db/schema/index.js";

export const TAG_MAX_LENGTH = 50;
export const TAGS_MAX = 50;
export const ATTRIBUTE_KEY_MAX_LENGTH = 64;
export const ATTRIBUTE_VALUE_MAX_LENGTH = 1024;
export const ATTRIBUTES_MAX = 50;

/** An attribute key: letters, digits, `_`, `.` or `-`. */
export const ATTRIBUTE_KEY = /^[A-Za-z0-9_.-]+$/;

/** Whether a string can be an attribute key (pattern and length). */
export const isAttributeKey = (key: string) =>
  key.length <= ATTRIBUTE_KEY_MAX_LENGTH && ATTRIBUTE_KEY.test(key);

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TRUE = new Set(["true", "yes", "1"]);
const FALSE = new Set(["false", "no", "0"]);

/**
 * A value in the canonical form of its definition's type, or a problem
 * (what the value must be). Numbers, booleans and strings are accepted.
 */
export function checkAttributeValue(
  definition: { type: AttributeType; options: string[] | null } | undefined,
  value: unknown,
): { value: string } | { problem: string } {
  const kind = typeof value;
  if (
    kind !== "string" &&
    !(kind === "number" && definition?.type === "number") &&
    !(kind === "boolean" && definition?.type === "boolean")
  ) {
    return { problem: "must be a string" };
  }
  const text = String(value).trim();
  if (!definition) return { value: value as string };
  switch (definition.type) {
    case "text":
      return { value: value as string };
    case "number": {
      const n = text === "" ? Number.NaN : Number(text);
      return Number.isFinite(n) ? { value: String(n) } : { problem: "must be a number" };
    }
    case "date": {
      const m = DATE.exec(text);
      if (m) {
        const d = new Date(`${text}T00:00:00Z`);
        if (!Number.isNaN(d.getTime()) && d.toISOString().startsWith(text)) return { value: text };
      }
      return { problem: "must be a date (YYYY-MM-DD)" };
    }
    case "boolean": {
      const lower = text.toLowerCase();
      if (TRUE.has(lower)) return { value: "true" };
      if (FALSE.has(lower)) return { value: "false" };
      return { problem: "must be true or false" };
    }
    case "list":
      return definition.options?.includes(text)
        ? { value: text }
        : { problem: `must be one of ${(definition.options ?? []).join(", ")}` };
  }
}
