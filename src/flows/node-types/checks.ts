import type { Config, Edge, Report } from "./types.js";

/** Helpers the node type modules share: reading loose configs, checking fields, building edges. */

/** Content limits checked on activation (WhatsApp's own limits where it has them). */
export const LIMITS = {
  bodyText: 1024,
  buttonsMin: 1,
  buttonsMax: 3,
  buttonTitle: 20,
  listRowsMax: 10,
  listRowTitle: 24,
  listRowDescription: 72,
  listButtonLabel: 20,
  listSectionTitle: 24,
  headerText: 60,
  footerText: 60,
  replyId: 256,
} as const;

export const isObject = (value: unknown): value is Config =>
  value !== null && typeof value === "object" && !Array.isArray(value);

export const nonBlank = (value: unknown): value is string => typeof value === "string" && value.trim() !== "";

export const items = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The objects of an array field (anything else in it read as an empty object). */
export const objects = (value: unknown): Config[] => items(value).map((v) => (isObject(v) ? v : {}));

const target = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);

/** An edge held in one config field (`next_node_key`, `true_next` …). */
export function fieldEdge(config: Config, field: string, label: string): Edge {
  return {
    handle: field,
    label,
    target: target(config[field]),
    set: (current, to) => {
      const next = { ...current };
      if (to) next[field] = to;
      else delete next[field];
      return next;
    },
  };
}

/** A text to fill in, as the runner sends it; undefined when blank. */
export const optionalFilled = (value: unknown, render: (text: string) => string) =>
  nonBlank(value) ? render(value) : undefined;

export function requireText(config: Config, field: string, max: number, report: Report, label = field) {
  const value = config[field];
  if (!nonBlank(value)) return report("missing_field", `${label} is required`);
  if (value.length > max)
    report("text_too_long", `${label} is ${value.length} characters; the limit is ${max}`);
}

export function optionalText(config: Config, field: string, max: number, report: Report, label = field) {
  const value = config[field];
  if (value === undefined || value === null) return;
  if (typeof value !== "string") return report("invalid_value", `${label} must be a string`);
  if (value.length > max)
    report("text_too_long", `${label} is ${value.length} characters; the limit is ${max}`);
}

export function requireKey(config: Config, field: string, report: Report, label = field) {
  if (!nonBlank(config[field])) report("missing_field", `${label} is required`);
}

export function optionalKey(config: Config, field: string, report: Report) {
  const value = config[field];
  if (value !== undefined && value !== null && typeof value !== "string") {
    report("invalid_value", `${field} must be a node key`);
  }
}

export function requireOneOf(config: Config, field: string, allowed: readonly string[], report: Report) {
  const value = config[field];
  if (value === undefined || value === null || value === "")
    return report("missing_field", `${field} is required`);
  if (!allowed.includes(value as string))
    report("invalid_value", `${field} must be one of ${allowed.join(", ")}`);
}

export function checkReplyIds(replies: Config[], label: string, report: Report) {
  const seen = new Set<string>();
  replies.forEach((reply, i) => {
    requireText(reply, "reply_id", LIMITS.replyId, report, `${label}[${i}].reply_id`);
    const id = reply.reply_id;
    if (typeof id !== "string") return;
    if (seen.has(id))
      report("duplicate_reply_id", `reply_id "${id}" is used twice; replies must be told apart`);
    seen.add(id);
  });
}

/** The string fields of a config that hold texts (for `texts`). */
export const stringFields = (config: Config, fields: string[]) =>
  fields.map((f) => config[f]).filter((v): v is string => typeof v === "string");

/** The reply_id -> next_node_key choices of tappable options (first of a reply_id wins). */
export function optionChoices(options: unknown[]): Map<string, unknown> {
  const choices = new Map<string, unknown>();
  for (const option of options) {
    if (isObject(option) && typeof option.reply_id === "string" && !choices.has(option.reply_id)) {
      choices.set(option.reply_id, option.next_node_key);
    }
  }
  return choices;
}

/** The answer a tap gives a node offering `choices`, null when it taps none of them. */
export function tapAnswer(choices: Map<string, unknown>, interactive: Config | null) {
  const replyId = interactive?.id;
  if (typeof replyId !== "string" || !choices.has(replyId)) return null;
  return { next: choices.get(replyId), payload: { reply_id: replyId } };
}

export const header = (text: string | undefined) => (text ? { header: { type: "text" as const, text } } : {});
export const footer = (text: string | undefined) => (text ? { footer: { text } } : {});

/** A text message. */
export const textMessage = (body: string) => ({
  ok: true as const,
  message: { outbound: { type: "text" as const, text: { body } }, text: body },
});

export const problem = (message: string) => ({ ok: false as const, problem: message });
