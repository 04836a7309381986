import type { RouteShorthandOptions } from "fastify";
import { z } from "zod";

/** One documented answer: a description, and the body's schema unless it is the `{ error }` shape. */
export type ResponseDoc =
  | string
  | {
      description: string;
      /** The JSON body; omitted for an error (`{ error }`) or for a 2xx documented only as an object. */
      body?: z.ZodType;
      /** A non-JSON answer (the webhook handshake's text/plain). */
      contentType?: string;
    };

interface RouteDoc {
  tags: string[];
  summary: string;
  description?: string;
  body?: z.ZodType;
  params?: z.ZodType;
  querystring?: z.ZodType;
  /** Status code -> the answer. Bodies of 4xx/5xx are `{ error }` unless a schema is given. */
  responses?: Record<number, ResponseDoc>;
  /** Routes open without a session (webhook, health). */
  public?: boolean;
}

const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;

/** Every error answer: `{ error }`, sometimes with more fields beside it (a code, a retry delay). */
export const errorBody = z
  .object({ error: z.string().describe("What went wrong, for a human") })
  .catchall(z.unknown());

/** The health routes' answer. */
export const healthAnswer = z.object({ ok: z.literal(true) });

function responseSchema(status: number, doc: ResponseDoc): Record<string, unknown> {
  const { description, body, contentType } = typeof doc === "string" ? { description: doc } : doc;
  if (contentType) return { description, content: { [contentType]: { schema: { type: "string" } } } };
  if (body) return { description, ...jsonSchema(body, "output") };
  if (status >= 400) return { description, ...jsonSchema(errorBody, "output") };
  return { description, type: "object", additionalProperties: true };
}

/**
 * Route options carrying OpenAPI documentation. Schemas here document only:
 * the app turns off Fastify's validation, because each handler parses its own
 * input after authentication to keep the spec's check order (401 before 400).
 * Routes behind a session document 401 even when they do not say so.
 */
export function docs(doc: RouteDoc): RouteShorthandOptions {
  const responses: Record<number, ResponseDoc> = { ...doc.responses };
  if (!doc.public && !responses[401]) responses[401] = "Not signed in (no valid session or API key)";
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
      ...(doc.params ? { params: jsonSchema(doc.params) } : {}),
      ...(doc.querystring ? { querystring: jsonSchema(doc.querystring) } : {}),
      response,
      ...(doc.public ? { security: [] } : {}),
    },
  };
}
