import { DEFAULT_FALLBACK_POLICY } from "../db/schema/flows.js";

/** Flow-level settings around the node graph: trigger, fallback policy, status. */

export const TRIGGER_TYPES = ["keyword", "first_inbound_message", "manual"] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

export const FLOW_STATUSES = ["draft", "active", "archived"] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

export const KEYWORD_MATCH_TYPES = ["exact", "contains"] as const;

/** trigger_config of a keyword flow; other triggers use `{}`. */
export interface KeywordTriggerConfig {
  keywords: string[];
  /** Default `contains`. */
  match_type?: (typeof KEYWORD_MATCH_TYPES)[number];
  /** Default false. */
  case_sensitive?: boolean;
}

/** Any trigger may add: start only outside the account's business hours (default false). */
export interface BusinessHoursTriggerOption {
  outside_business_hours_only?: boolean;
}

export const UNKNOWN_REPLY_ACTIONS = ["reprompt", "handoff", "ignore"] as const;
export const EXHAUST_ACTIONS = ["handoff", "end"] as const;

export interface FallbackPolicy {
  on_unknown_reply: (typeof UNKNOWN_REPLY_ACTIONS)[number];
  max_reprompts: number;
  on_timeout_hours: number;
  on_exhaust: (typeof EXHAUST_ACTIONS)[number];
}

export const MAX_REPROMPTS = 10;
/** Thirty days: a run waiting longer than that is forgotten anyway. */
export const MAX_TIMEOUT_HOURS = 720;

/** Per-field problems of a stored fallback_policy (empty when every present field is valid). */
export function fallbackPolicyProblems(value: unknown): string[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return ["fallback_policy must be an object"];
  }
  const p = value as Record<string, unknown>;
  const problems: string[] = [];
  if (p.on_unknown_reply !== undefined && !UNKNOWN_REPLY_ACTIONS.includes(p.on_unknown_reply as never)) {
    problems.push(`fallback_policy.on_unknown_reply must be one of ${UNKNOWN_REPLY_ACTIONS.join(", ")}`);
  }
  if (
    p.max_reprompts !== undefined &&
    !(
      Number.isInteger(p.max_reprompts) &&
      (p.max_reprompts as number) >= 0 &&
      (p.max_reprompts as number) <= MAX_REPROMPTS
    )
  ) {
    problems.push(`fallback_policy.max_reprompts must be a whole number from 0 to ${MAX_REPROMPTS}`);
  }
  if (
    p.on_timeout_hours !== undefined &&
    !(
      typeof p.on_timeout_hours === "number" &&
      p.on_timeout_hours > 0 &&
      p.on_timeout_hours <= MAX_TIMEOUT_HOURS
    )
  ) {
    problems.push(
      `fallback_policy.on_timeout_hours must be a number above 0 and at most ${MAX_TIMEOUT_HOURS}`,
    );
  }
  if (p.on_exhaust !== undefined && !EXHAUST_ACTIONS.includes(p.on_exhaust as never)) {
    problems.push(`fallback_policy.on_exhaust must be one of ${EXHAUST_ACTIONS.join(", ")}`);
  }
  return problems;
}

/** The effective policy: stored fields that are valid, defaults for the rest. */
export function resolveFallbackPolicy(value: unknown): FallbackPolicy {
  const p =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  const pick = <K extends keyof FallbackPolicy>(name: K): FallbackPolicy[K] =>
    fallbackPolicyProblems({ [name]: p[name] }).length === 0 && p[name] !== undefined
      ? (p[name] as FallbackPolicy[K])
      : DEFAULT_FALLBACK_POLICY[name];
  return {
    on_unknown_reply: pick("on_unknown_reply"),
    max_reprompts: pick("max_reprompts"),
    on_timeout_hours: pick("on_timeout_hours"),
    on_exhaust: pick("on_exhaust"),
  };
}
