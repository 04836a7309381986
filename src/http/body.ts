import type { FastifyRequest } from "fastify";
import secureJson from "secure-json-parse";
import { ApiError } from "./errors.js";
import { jsonDepth, MAX_JSON_DEPTH } from "./input.js";

/** Parsed body, or the raw text is not JSON. */
export type ParsedBody = { ok: true; value: unknown } | { ok: false };

/**
 * Bodies arrive as raw text (see app.ts) so that each route chooses when to
 * parse and can keep the spec's check order. Prototype-polluting keys are
 * removed, never honoured.
 */
export function tryParseJson(request: FastifyRequest): ParsedBody {
  const raw = request.body;
  if (typeof raw !== "string" || raw.trim() === "") return { ok: false };
  try {
    return {
      ok: true,
      value: secureJson.parse(raw, undefined, { protoAction: "remove", constructorAction: "remove" }),
    };
  } catch {
    return { ok: false };
  }
}

/**
 * Parses the body or throws 400 `Invalid JSON`; a document nested deeper than
 * any route takes is refused before anything walks it.
 */
export function readJson(request: FastifyRequest): unknown {
  const parsed = tryParseJson(request);
  if (!parsed.ok) throw new ApiError(400, "Invalid JSON");
  if (jsonDepth(parsed.value) > MAX_JSON_DEPTH) {
    throw new ApiError(400, `Invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return parsed.value;
}

/** Parses the body and requires a JSON object (not null, an array or a scalar). */
export function readJsonObject(request: FastifyRequest): Record<string, unknown> {
  const value = readJson(request);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError(400, "Invalid JSON: the body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
