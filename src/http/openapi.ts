import type { SwaggerTransform } from "@fastify/swagger";
import type { FastifySchema, RouteShorthandOptions } from "fastify";
import { z } from "zod";
import { timestamp } from "../contracts/common.js";

/** One documented answer: a description, and the body's schema unless it is the `{ error }` shape. */
export type ResponseDoc =
  | string
  | {
      description: string;
      /** The JSON body; omitted for an error (`{ error }`) or for a 2xx documented only as an object. */
      body?: z.ZodType;
      /** A non-JSON answer (the webhook handshake's text/plain, a file, an event stream). */
      contentType?: string;
      /** Response headers a client reads: name -> what it holds. */
      headers?: Record<string, string>;
    };

interface RouteDoc {
  tags: string[];
  summary: string;
  description?: string;
  body?: z.ZodType;
  /** The body's media type when it is not JSON (the media upload's multipart/form-data). */
  bodyContentType?: "multipart/form-data";
  params?: z.ZodType;
  querystring?: z.ZodType;
  /** Status code -> the answer. Bodies of 4xx/5xx are `{ error }` unless a schema is given. */
  responses?: Record<number, ResponseDoc>;
  /** Routes open without a session (webhook, health). */
  public?: boolean;
  /** Routes that need the caller's profile to link an account: 403 when it does not. */
  account?: boolean;
}

/** Schemas named with `.meta({ id })` (the resource contracts): filled as routes are documented. */
const namedSchemas: Record<string, unknown> = {};

/** `#/$defs/X` (zod's place for named schemas) becomes `#/components/schemas/X`. */
function toComponentRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toComponentRefs);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string") {
      out[key] = value.replace(/^#\/\$defs\//, "#/components/schemas/");
    } else out[key] = toComponentRefs(value);
  }
  return out;
}

const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input") => {
  const converted = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: (ctx) => {
      if ((ctx.zodSchema as unknown) === timestamp) {
        ctx.jsonSchema.type = "string";
        ctx.jsonSchema.format = "date-time";
      }
    },
  }) as Record<string, unknown>;
  const { $schema: _, $defs, ...rest } = converted;
  for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) {
    namedSchemas[name] = toComponentRefs(def);
  }
  return toComponentRefs(rest) as Record<string, unknown>;
};

/** The document's `components.schemas`: every named resource schema a route refers to. */
export const componentSchemas = () =>
  Object.fromEntries(Object.entries(namedSchemas).sort(([a], [b]) => a.localeCompare(b)));

/** Every error answer: `{ error }`, sometimes with more fields beside it (a code, a retry delay). */
export const errorBody = z
  .object({ error: z.string().describe("What went wrong, for a human") })
  .catchall(z.unknown());

/** The health routes' answer. */
export const healthAnswer = z.object({ ok: z.literal(true) });

/** Every 429 of the service says when to try again. */
const RETRY_AFTER = { "retry-after": "Seconds to wait before trying again" };

function responseSchema(status: number, doc: ResponseDoc): Record<string, unknown> {
  const {
    description,
    body,
    contentType,
    headers = status === 429 ? RETRY_AFTER : undefined,
  } = typeof doc === "string" ? { description: doc } : doc;
  const head = headers
    ? {
        headers: Object.fromEntries(
          Object.entries(headers).map(([name, about]) => [name, { type: "string", description: about }]),
        ),
      }
    : {};
  // 204 and 304 carry no body at all, nor does a redirect that documents none.
  if (status === 204 || status === 304 || (status >= 300 && status < 400 && !body && !contentType))
    return { description, type: "null", ...head };
  if (contentType) {
    // A file of any type is bytes; text answers (CSV, an event stream) are strings.
    const schema = contentType.startsWith("text/")
      ? { type: "string" }
      : { type: "string", format: "binary" };
    return { description, content: { [contentType]: { schema } }, ...head };
  }
  if (body) return { description, ...jsonSchema(body, "output"), ...head };
  if (status >= 400) return { description, ...jsonSchema(errorBody, "output"), ...head };
  return { description, type: "object", additionalProperties: true, ...head };
}

/**
 * The operation id a generated client names its function after: the method,
 * then each path segment but `/api` in PascalCase, a parameter as `By<Name>`
 * (`GET /api/flows/:id` -> `getFlowsById`, `GET /api/contacts.csv` -> `getContactsCsv`).
 */
export function operationIdFor(method: string, url: string): string {
  const words = url
    .split("/")
    .filter((segment, i) => segment !== "" && !(i === 1 && segment === "api"))
    .flatMap((segment) => {
      const param = /^:(.+)$/.exec(segment) ?? /^\{(.+)\}$/.exec(segment);
      const parts = (param ? param[1]! : segment).split(/[^A-Za-z0-9]+/).filter(Boolean);
      const pascal = parts.map((p) => p[0]!.toUpperCase() + p.slice(1)).join("");
      return param ? [`By${pascal}`] : [pascal];
    });
  return method.toLowerCase() + words.join("");
}

/** @fastify/swagger's per-route transform: every operation gets its operation id. */
export const withOperationId: SwaggerTransform = ({ schema, url, route }) => {
  const method = Array.isArray(route.method) ? route.method[0]! : route.method;
  if (!schema || "operationId" in schema) return { schema, url };
  return { schema: { ...schema, operationId: operationIdFor(method, url) } as FastifySchema, url };
};

/**
 * Route options carrying OpenAPI documentation. Schemas here document only:
 * the app turns off Fastify's validation, because each handler parses its own
 * input after authentication to keep the spec's check order (401 before 400).
 * Routes behind a session document 401 even when they do not say so, and
 * routes of an account (`account: true`) their 403 for a caller without one.
 */
export function docs(doc: RouteDoc): RouteShorthandOptions {
  const responses: Record<number, ResponseDoc> = { ...doc.responses };
  if (!doc.public && !responses[401]) responses[401] = "Not signed in (no valid session or API key)";
  // A path parameter over the router's length limit, or a query parameter given twice or malformed.
  if ((doc.params || doc.querystring) && !responses[400])
    responses[400] = doc.params
      ? "A path parameter too long or malformed"
      : "A query parameter repeated or malformed";
  if (doc.account && !responses[403]) responses[403] = "The caller's profile has no account";
  // Any body may be larger than BODY_LIMIT (files: than the upload limits), and any route may fail.
  if ((doc.body || doc.bodyContentType) && !responses[413])
    responses[413] = "The body is larger than allowed";
  if (!responses[500]) responses[500] = "Unexpected failure (logged with the request id)";
  const response: Record<string, Record<string, unknown>> = {};
  for (const [status, answer] of Object.entries(responses)) {
    response[status] = responseSchema(Number(status), answer);
  }
  return {
    schema: {
      tags: doc.tags,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      ...(doc.body ? { body: jsonSchema(doc.body) } : {}),
      ...(doc.bodyContentType ? { consumes: [doc.bodyContentType] } : {}),
      ...(doc.params ? { params: jsonSchema(doc.params) } : {}),
      ...(doc.querystring ? { querystring: jsonSchema(doc.querystring) } : {}),
      response,
      ...(doc.public ? { security: [] } : {}),
    },
  };
}
