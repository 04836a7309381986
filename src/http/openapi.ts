import type { RouteShorthandOptions } from "fastify";
import { z } from "zod";

interface RouteDoc {
  tags: string[];
  summary: string;
  description?: string;
  body?: z.ZodType;
  params?: z.ZodType;
  querystring?: z.ZodType;
  /** Status code -> description of the answer (bodies are `{ error }` for errors). */
  responses?: Record<number, string>;
  /** Routes open without a session (webhook, health). */
  public?: boolean;
}

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });

/**
 * Route options carrying OpenAPI documentation. Schemas here document only:
 * the app turns off Fastify's validation, because each handler parses its own
 * input after authentication to keep the spec's check order (401 before 400).
 */
export function docs(doc: RouteDoc): RouteShorthandOptions {
  const response: Record<string, { description: string }> = {};
  for (const [status, description] of Object.entries(doc.responses ?? {})) {
    response[status] = { description };
  }
  return {
    schema: {
      tags: doc.tags,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      ...(doc.body ? { body: jsonSchema(doc.body) } : {}),
      ...(doc.params ? { params: jsonSchema(doc.params) } : {}),
      ...(doc.querystring ? { querystring: jsonSchema(doc.querystring) } : {}),
      ...(Object.keys(response).length ? { response } : {}),
      ...(doc.public ? { security: [] } : {}),
    },
  };
}
