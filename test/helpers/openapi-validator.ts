import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { FastifyInstance } from "fastify";
import type { InjectOptions, Response } from "light-my-request";

/**
 * Every answer the tests see through `app.inject` is checked against the
 * app's own OpenAPI document: its status must be documented for the
 * operation, a JSON body must match the documented schema, a 204 has no body,
 * and a non-JSON answer has the documented media type. A mismatch throws at
 * the inject call, naming the request, the status and what differs.
 */

interface ResponseObject {
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: { schemas?: Record<string, unknown> };
}

interface Operation {
  pattern: RegExp;
  params: number;
  responses: Record<string, ResponseObject>;
}

export interface ResponseValidator {
  /** The mismatch, described for a human, or null when the answer is what the document says. */
  check(request: { method: string; url: string }, response: Response): string | null;
}

const DOCUMENT_ID = "https://wa-inbox.invalid/openapi.json";

/** `{id}` segments match one path segment; literal paths win over templated ones. */
function operationsOf(document: OpenApiDocument): Map<string, Operation[]> {
  const byMethod = new Map<string, Operation[]>();
  for (const [path, methods] of Object.entries(document.paths)) {
    const source = path
      .split(/(\{[^}]+\})/)
      .map((part) => (/^\{[^}]+\}$/.test(part) ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("");
    for (const [method, operation] of Object.entries(methods)) {
      const list = byMethod.get(method) ?? [];
      list.push({
        pattern: new RegExp(`^${source}$`),
        params: (path.match(/\{/g) ?? []).length,
        responses: operation.responses ?? {},
      });
      byMethod.set(method, list);
    }
  }
  for (const list of byMethod.values()) list.sort((a, b) => a.params - b.params);
  return byMethod;
}

/** Refs to `#/components/...` resolve inside the document, which ajv holds under DOCUMENT_ID. */
function anchored(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(anchored);
  if (!schema || typeof schema !== "object") return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === "$ref" && typeof value === "string" && value.startsWith("#/")
        ? `${DOCUMENT_ID}${value}`
        : anchored(value),
    ]),
  );
}

export function createResponseValidator(document: OpenApiDocument): ResponseValidator {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: document.components ?? {} });
  const operations = operationsOf(document);
  const compiled = new Map<unknown, ValidateFunction>();
  const validatorOf = (schema: unknown) => {
    let validate = compiled.get(schema);
    if (!validate) {
      validate = ajv.compile(anchored(schema) as object);
      compiled.set(schema, validate);
    }
    return validate;
  };

  return {
    check(request, response) {
      const method = request.method.toLowerCase();
      const path = request.url.split("?")[0] ?? "";
      // Fastify's automatic HEAD and OPTIONS answers, and paths that are no route (404 of the
      // not-found handler, console files) are not operations of the document.
      if (method === "head" || method === "options") return null;
      const operation = operations.get(method)?.find((o) => o.pattern.test(path));
      if (!operation) return null;
      const where = `${request.method.toUpperCase()} ${request.url} answered ${response.statusCode}`;
      const documented = operation.responses[String(response.statusCode)];
      if (!documented) {
        return `${where}, a status the OpenAPI document does not list for this operation (it lists ${Object.keys(operation.responses).join(", ")})`;
      }
      const contentType = String(response.headers["content-type"] ?? "").split(";")[0] ?? "";
      const content = documented.content;
      if (!content) {
        return response.body === "" ? null : `${where} with a body, where the document says none`;
      }
      const json = content["application/json"];
      if (json) {
        if (contentType !== "application/json") {
          return `${where} with Content-Type "${contentType}", where the document says application/json`;
        }
        let body: unknown;
        try {
          body = JSON.parse(response.body);
        } catch {
          return `${where} with a body that is not JSON: ${response.body.slice(0, 200)}`;
        }
        const validate = validatorOf(json.schema ?? {});
        if (validate(body)) return null;
        const problems = (validate.errors ?? [])
          .slice(0, 8)
          .map((e) => `  ${e.instancePath || "(body)"} ${e.message ?? ""} ${JSON.stringify(e.params)}`)
          .join("\n");
        return `${where} with a body that does not match the OpenAPI document:\n${problems}\nbody: ${response.body.slice(0, 1000)}`;
      }
      const types = Object.keys(content);
      if (types.includes("*/*") || types.includes(contentType)) return null;
      return `${where} with Content-Type "${contentType}", where the document says ${types.join(" or ")}`;
    },
  };
}

let shared: Promise<ResponseValidator> | undefined;

/**
 * Checks every `app.inject` answer of this app against the document (read
 * once per test file from the first app: every app serves the same one).
 * A test that must see an undocumented answer opts out with `skipOpenApiCheck`.
 */
export function validateInjectedResponses(app: FastifyInstance) {
  const inject = app.inject.bind(app) as (options?: unknown, callback?: unknown) => unknown;
  shared ??= Promise.resolve(createResponseValidator(app.swagger() as unknown as OpenApiDocument));
  const validator = shared;
  const checked = async (options: InjectOptions | string) => {
    const response = (await inject(options)) as Response;
    const request =
      typeof options === "string"
        ? { method: "GET", url: options }
        : {
            method: options.method ?? "GET",
            url: typeof options.url === "string" ? options.url : String(options.path ?? options.url ?? "/"),
          };
    if (typeof options === "object" && (options as { skipOpenApiCheck?: boolean }).skipOpenApiCheck) {
      return response;
    }
    const problem = (await validator).check(request, response);
    if (problem) throw new Error(`OpenAPI contract: ${problem}`);
    return response;
  };
  (app as { inject: unknown }).inject = (options?: InjectOptions | string, callback?: unknown) =>
    options === undefined || callback !== undefined ? inject(options, callback) : checked(options);
}
