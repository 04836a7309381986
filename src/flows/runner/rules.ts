/**
 * The runner's pure decisions: which keyword flow a text triggers, how a
 * template text is filled in, whether an answer passes validation, which way a
 * condition goes. No database, no clock: unit-tested on their own.
 */

export interface ContactFacts {
  name: string | null;
  phone: string | null;
  waId: string;
  tags: string[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

const asText = (value: unknown): string => {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
};

/**
 * Fills `{{vars.x}}`, `{{contact.name}}` and `{{contact.phone}}` (spaces inside
 * the braces allowed). A known placeholder without a value becomes empty; any
 * other `{{...}}` is left as written.
 */
export function renderText(template: string, vars: Record<string, unknown>, contact: ContactFacts): string {
  return template.replace(/\{\{\s*([a-zA-Z]+)\.([^{}\s]+)\s*\}\}/g, (whole, scope: string, key: string) => {
    if (scope === "vars") return Object.hasOwn(vars, key) ? asText(vars[key]) : "";
    if (scope === "contact" && key === "name") return contact.name ?? "";
    if (scope === "contact" && key === "phone") return contact.phone ?? "";
    return whole;
  });
}

export interface KeywordTrigger {
  keywords: string[];
  matchType: "exact" | "contains";
  caseSensitive: boolean;
}

/** The keyword trigger_config with its defaults; null when it names no usable keyword. */
export function readKeywordTrigger(config: unknown): KeywordTrigger | null {
  if (!isObject(config) || !Array.isArray(config.keywords)) return null;
  const keywords = config.keywords
    .filter((k): k is string => typeof k === "string")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  if (keywords.length === 0) return null;
  return {
    keywords,
    matchType: config.match_type === "exact" ? "exact" : "contains",
    caseSensitive: config.case_sensitive === true,
  };
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * exact: the whole message (trimmed) is the keyword. contains: the keyword
 * appears as a whole word or phrase, so "hi" matches "Hi there!" but not
 * "this" (a customer writing "which" should not get the welcome menu).
 */
export function matchesKeyword(text: string, trigger: KeywordTrigger): boolean {
  const flags = trigger.caseSensitive ? "u" : "iu";
  const subject = text.trim();
  return trigger.keywords.some((keyword) => {
    if (trigger.matchType === "exact") {
      return trigger.caseSensitive
        ? subject === keyword
        : subject.toLocaleLowerCase() === keyword.toLocaleLowerCase();
    }
    return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegex(keyword)}(?![\\p{L}\\p{N}])`, flags).test(subject);
  });
}

/** Longest answer collect_input looks at: keeps a regex check cheap, and a var is not a document. */
export const MAX_INPUT_LENGTH = 1024;

export type InputCheck = { ok: true; value: string } | { ok: false } | { invalidConfig: string };

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const NUMBER = /^[-+]?\d+([.,]\d+)?$/;
const PHONE_CHARS = /^\+?[\d\s().-]+$/;

/** collect_input: the trimmed answer when it passes the node's validation. */
export function checkInput(raw: string, validation: unknown, regex: unknown): InputCheck {
  const value = raw.trim();
  if (value === "" || value.length > MAX_INPUT_LENGTH) return { ok: false };
  switch (validation ?? "text") {
    case "text":
      return { ok: true, value };
    case "email":
      return EMAIL.test(value) ? { ok: true, value } : { ok: false };
    case "number":
      return NUMBER.test(value) ? { ok: true, value } : { ok: false };
    case "phone": {
      const digits = value.replace(/\D/g, "").length;
      return PHONE_CHARS.test(value) && digits >= 7 && digits <= 15 ? { ok: true, value } : { ok: false };
    }
    case "regex": {
      if (typeof regex !== "string" || regex === "")
        return { invalidConfig: "regex validation without a regex" };
      let pattern: RegExp;
      try {
        pattern = new RegExp(regex, "u");
      } catch {
        return { invalidConfig: "regex is not a valid regular expression" };
      }
      return pattern.test(value) ? { ok: true, value } : { ok: false };
    }
    default:
      return { invalidConfig: `unknown validation "${asText(validation)}"` };
  }
}

const fold = (s: string) => s.trim().toLocaleLowerCase();

/**
 * condition: var and contact_field compare one value, trimmed and case-folded;
 * tag looks at the contact's tags for the tag named by `value` (or by
 * subject_key when value is absent): present/equals = the contact has it,
 * contains = some tag contains it, absent = the contact does not have it.
 * Returns null when the config cannot be evaluated.
 */
export function evaluateCondition(
  config: Record<string, unknown>,
  vars: Record<string, unknown>,
  contact: ContactFacts,
): boolean | null {
  const { subject, subject_key: key, operator } = config;
  const expected = typeof config.value === "string" ? config.value : undefined;
  if (typeof key !== "string") return null;
  if (subject === "tag") {
    const tag = fold(expected ?? key);
    const tags = contact.tags.map(fold);
    switch (operator) {
      case "present":
      case "equals":
        return tags.includes(tag);
      case "absent":
        return !tags.includes(tag);
      case "contains":
        return tags.some((t) => t.includes(tag));
      default:
        return null;
    }
  }
  let actual: string | null;
  if (subject === "var") {
    actual = Object.hasOwn(vars, key) && vars[key] !== null ? asText(vars[key]) : null;
  } else if (subject === "contact_field") {
    const fields: Record<string, string | null> = {
      name: contact.name,
      phone: contact.phone,
      wa_id: contact.waId,
    };
    if (!Object.hasOwn(fields, key)) return null;
    actual = fields[key] ?? null;
  } else {
    return null;
  }
  const present = actual !== null && actual.trim() !== "";
  switch (operator) {
    case "present":
      return present;
    case "absent":
      return !present;
    case "equals":
      return expected !== undefined && present && fold(actual as string) === fold(expected);
    case "contains":
      return expected !== undefined && present && fold(actual as string).includes(fold(expected));
    default:
      return null;
  }
}
