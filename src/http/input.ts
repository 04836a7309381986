/**
 * The one input policy of every route (and of the webhook): what a string,
 * an id, a token, a cursor or a JSON document must be before it reaches
 * PostgreSQL, an HTTP header or an upstream URL. Routes build their zod
 * schemas from these pieces, so a bad value is a 400 naming its field.
 */
import { z } from "zod";
import { isStorable, UNSTORABLE_MESSAGE } from "./storable.js";

/** Deepest nesting of any JSON document a route accepts (Meta's own payloads nest about 10 levels). */
export const MAX_JSON_DEPTH = 64;

/**
 * How deeply `value` nests (a scalar 0, an empty object or array 1), stopping
 * as soon as `limit` is passed: the answer is then `limit + 1`. It recurses
 * only below the limit, so a hostile document cannot take it deeper than
 * `limit + 1` calls.
 */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  return depthFrom(value, 1, limit);
}

function depthFrom(value: unknown, depth: number, limit: number): number {
  if (value === null || typeof value !== "object") return 0;
  if (depth > limit) return depth;
  let deepest = depth;
  if (Array.isArray(value)) {
    for (const child of value) {
      deepest = Math.max(deepest, depthFrom(child, depth + 1, limit));
      if (deepest > limit) return deepest;
    }
    return deepest;
  }
  const object = value as Record<string, unknown>;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    deepest = Math.max(deepest, depthFrom(object[key], depth + 1, limit));
    if (deepest > limit) return deepest;
  }
  return deepest;
}

/**
 * What is wrong with a JSON value for PostgreSQL's jsonb (a string or key it
 * cannot store, a non-finite number, nesting deeper than `maxDepth`), or null:
 * the first problem in document order. It recurses only after the depth is
 * checked, so a hostile document cannot take it deeper than `maxDepth` calls.
 */
export function jsonValueProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  return problemAt(value, maxDepth, 1);
}

function problemAt(value: unknown, maxDepth: number, depth: number): string | null {
  if (typeof value === "string") {
    return isStorable(value) ? null : `contains a string that ${UNSTORABLE_MESSAGE}`;
  }
  if (typeof value === "number") return Number.isFinite(value) ? null : "contains a number out of range";
  if (value === null || typeof value !== "object") return null;
  if (depth > maxDepth) return `is nested deeper than ${maxDepth} levels`;
  if (Array.isArray(value)) {
    for (const child of value) {
      const problem = problemAt(child, maxDepth, depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  const object = value as Record<string, unknown>;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    if (!isStorable(key)) return `contains a key that ${UNSTORABLE_MESSAGE}`;
    const problem = problemAt(object[key], maxDepth, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/**
 * A string PostgreSQL can store, at most `max` characters. `trim` stores it
 * trimmed; `min` counts after trimming.
 */
export function storableString(options: { max: number; min?: number; trim?: boolean }) {
  const base = z.string({ error: "must be a string" });
  const trimmed = options.trim ? base.trim() : base;
  return trimmed
    .min(
      options.min ?? 0,
      options.min === 1 ? "must not be empty" : `must be at least ${options.min} characters`,
    )
    .max(options.max, `must be at most ${options.max} characters`)
    .refine(isStorable, UNSTORABLE_MESSAGE);
}

/** Why a string cannot be stored as text of at most `max` characters, or null. */
export function storableProblem(value: string, max: number): string | null {
  if (value.length > max) return `must be at most ${max} characters`;
  return isStorable(value) ? null : UNSTORABLE_MESSAGE;
}

/**
 * Why a value cannot travel in an HTTP header (an access token), or null:
 * visible ASCII only, since Node refuses anything else in header content.
 */
export function headerTokenProblem(value: string, max: number): string | null {
  if (value.length > max) return `must be at most ${max} characters`;
  return /^[\x21-\x7E]+$/.test(value) ? null : "must contain only visible ASCII characters (no spaces)";
}

/** An upstream object id that is placed in a URL path (phone number id, business account id). */
const UPSTREAM_ID_MAX_LENGTH = 64;
const UPSTREAM_ID = /^[A-Za-z0-9._-]+$/;
export const upstreamIdProblem = (value: string): string | null =>
  value.length > UPSTREAM_ID_MAX_LENGTH
    ? `must be at most ${UPSTREAM_ID_MAX_LENGTH} characters`
    : UPSTREAM_ID.test(value)
      ? null
      : "must contain only letters, digits, '.', '_' or '-'";
