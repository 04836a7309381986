import { describe, expect } from "vitest";
import { appTest } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/harness.js";

interface Operation {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<
    string,
    {
      description?: string;
      content?: Record<string, { schema?: unknown }>;
      headers?: Record<string, unknown>;
    }
  >;
}
type Document = {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown>; schemas?: Record<string, unknown> };
  security: unknown[];
};

/** Swagger UI's own pages; not part of the API. */
const UNDOCUMENTED_PREFIXES = ["/docs"];
/** The web console's files (`/`, `/assets/...`, page fallbacks) are not API routes. */
const isConsoleFile = (path: string) =>
  !path.startsWith("/api/") && !path.startsWith("/docs") && path !== "/healthz" && path !== "/readyz";
/** Unsafe routes that take no body, on purpose. */
const BODYLESS = new Set([
  "post /api/auth/sign-out",
  "post /api/auth/revoke-sessions",
  "post /api/auth/revoke-other-sessions",
  "post /api/invitations/{token}/accept",
  "post /api/conversations/{id}/read",
  "post /api/webhook-endpoints/{id}/test",
  "post /api/messaging/templates/sync",
  "post /api/campaigns/{id}/start",
  "post /api/campaigns/{id}/pause",
  "post /api/campaigns/{id}/resume",
  "post /api/campaigns/{id}/cancel",
  "post /api/campaigns/{id}/retry-failed",
]);

/** Routes whose body is multipart/form-data (files). */
const MULTIPART = new Set(["post /api/conversations/{id}/media"]);

type JsonSchema = { type?: string; properties?: object; items?: JsonSchema; anyOf?: JsonSchema[] };
/** An object whose fields are not described (an array's items and each variant are looked into). */
const isOpen = (schema: JsonSchema): boolean =>
  (schema.type === "object" && !schema.properties) ||
  (schema.items !== undefined && isOpen(schema.items)) ||
  (schema.anyOf ?? []).some(isOpen);

/** The app of appTest and its OpenAPI document, read once per file. */
const it = appTest.extend<{ doc: Document }>({
  doc: [
    async ({ t }, use) => {
      await use((await t.app.inject({ url: "/api/openapi.json" })).json());
    },
    { scope: "file" },
  ],
});

/**
 * Every route the app registered, as "method /path/{param}", read from
 * Fastify's route tree (printRoutes). Each tree line's segment continues its
 * parent's path; HEAD routes are Fastify's automatic twins of GET.
 */
function registeredRoutes(app: TestApp["app"]): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const match = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? "").length / 4;
    stack.length = depth;
    stack.push(match[2] ?? "");
    const path = stack.join("").replace(/:([A-Za-z_]+)/g, "{$1}");
    if (UNDOCUMENTED_PREFIXES.some((prefix) => path.startsWith(prefix)) || isConsoleFile(path)) continue;
    for (const method of (match[3] ?? "").split(",").map((m) => m.trim())) {
      if (method && method !== "HEAD") routes.push(`${method.toLowerCase()} ${path}`);
    }
  }
  return routes.sort();
}

const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ key: `${method} ${path}`, operation })),
  );

describe("the OpenAPI document", () => {
  it("documents exactly the routes the app serves", ({ t, doc }) => {
    const served = registeredRoutes(t.app);
    expect(served.length).toBeGreaterThan(30);
    expect(served).toContain("post /api/auth/sign-in/email");
    expect(
      operations(doc)
        .map((o) => o.key)
        .sort(),
    ).toEqual(served);
  });

  it("documents the identity routes: sign-up, sign-in, sign-out, get-session", ({ doc }) => {
    for (const key of [
      "post /api/auth/sign-up/email",
      "post /api/auth/sign-in/email",
      "post /api/auth/sign-out",
      "get /api/auth/get-session",
    ]) {
      expect(operations(doc).map((o) => o.key)).toContain(key);
    }
    const signIn = doc.paths["/api/auth/sign-in/email"]?.post;
    expect(Object.keys(signIn?.responses ?? {})).toEqual(
      expect.arrayContaining(["200", "401", "403", "429"]),
    );
  });

  it("gives every operation a summary and every answer a description and a schema", ({ doc }) => {
    const missing: string[] = [];
    for (const { key, operation } of operations(doc)) {
      if (!operation.summary) missing.push(`${key}: summary`);
      const responses = Object.entries(operation.responses ?? {});
      if (responses.length === 0) missing.push(`${key}: responses`);
      for (const [status, response] of responses) {
        if (!response.description || response.description === "Default Response") {
          missing.push(`${key} ${status}: description`);
        }
        const schemas = Object.values(response.content ?? {}).filter((c) => c.schema);
        // A 204 (or a redirect) has no body, and must not claim one.
        const bodiless = status === "204" || status.startsWith("3");
        if (bodiless && response.content) missing.push(`${key} ${status}: claims a body`);
        if (!bodiless && schemas.length === 0) missing.push(`${key} ${status}: schema`);
      }
      if (!Object.keys(operation.responses ?? {}).some((s) => s.startsWith("2"))) missing.push(`${key}: 2xx`);
    }
    expect(missing).toEqual([]);
  });

  it("documents the request body of every unsafe route that takes one, JSON but for the media upload", ({
    doc,
  }) => {
    const missing = operations(doc)
      .filter(({ key }) => /^(post|put|patch) /.test(key) && !BODYLESS.has(key) && !MULTIPART.has(key))
      .filter(({ operation }) => !operation.requestBody?.content?.["application/json"]?.schema)
      .map(({ key }) => key);
    expect(missing).toEqual([]);
    for (const key of MULTIPART) {
      const [method, path] = key.split(" ") as [string, string];
      const content = doc.paths[path]?.[method]?.requestBody?.content ?? {};
      expect(Object.keys(content), key).toEqual(["multipart/form-data"]);
    }
  });

  it("names every operation with a unique operationId, as client generators need", ({ doc }) => {
    const ids = operations(doc).map(({ operation }) => operation.operationId);
    expect(ids.filter((id) => !id)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/api/flows/{id}"]?.get?.operationId).toBe("getFlowsById");
    expect(doc.paths["/api/auth/sign-in/email"]?.post?.operationId).toBe("postAuthSignInEmail");
  });

  it("names the server, and the media types of answers that are not JSON", ({ doc }) => {
    expect(doc.servers?.[0]?.url).toMatch(/^https?:\/\//);
    const answer = (path: string, method: string, status: string) =>
      doc.paths[path]?.[method]?.responses?.[status];
    expect(Object.keys(answer("/api/events/stream", "get", "200")?.content ?? {})).toEqual([
      "text/event-stream",
    ]);
    expect(Object.keys(answer("/api/messages/{id}/media", "get", "200")?.content ?? {})).toEqual(["*/*"]);
    expect(answer("/api/webhook-endpoints/{id}", "delete", "204")?.content).toBeUndefined();
    expect(Object.keys(answer("/api/messaging/react", "post", "429")?.headers ?? {})).toContain(
      "retry-after",
    );
    expect(answer("/api/messages/{id}/media", "get", "200")?.content?.["*/*"]?.schema).toEqual({
      type: "string",
      format: "binary",
    });
    expect(Object.keys(answer("/api/messages/{id}/media", "get", "200")?.headers ?? {})).toContain(
      "content-disposition",
    );
    expect(Object.keys(answer("/api/auth/sign-in/email", "post", "200")?.headers ?? {})).toContain(
      "set-auth-token",
    );
    expect(Object.keys(answer("/api/auth/verify-email", "get", "302")?.headers ?? {})).toContain("location");
  });

  it("states the rules the handlers enforce: phone digits, phone_number_id characters, absolute webhook URLs", ({
    doc,
  }) => {
    type Props = Record<string, { pattern?: string; format?: string }>;
    const bodyOf = (path: string, method: string) =>
      (
        (doc.paths[path]?.[method]?.requestBody?.content?.["application/json"]?.schema ?? {}) as {
          properties?: Props;
        }
      ).properties ?? {};
    const digits = new RegExp(bodyOf("/api/conversations", "post").phone?.pattern ?? "^$");
    expect(digits.test("+49 (170) 123-4567")).toBe(true);
    expect(digits.test("12345")).toBe(false);
    expect(digits.test("1234567890123456")).toBe(false);
    expect(bodyOf("/api/campaigns/{id}/test", "post").phone?.pattern).toBe(digits.source);
    const id = new RegExp(bodyOf("/api/messaging/config", "post").phone_number_id?.pattern ?? "^$");
    expect(id.test("106540352242922")).toBe(true);
    expect(id.test("1065/../me")).toBe(false);
    expect(bodyOf("/api/webhook-endpoints", "post").url?.format).toBe("uri");
    expect(bodyOf("/api/webhook-endpoints/{id}", "patch").url?.format).toBe("uri");
  });

  it("names each resource's schema in components, and describes no 2xx JSON body as an open object", ({
    doc,
  }) => {
    for (const name of [
      "Flow",
      "Node",
      "Conversation",
      "Message",
      "Contact",
      "ContactDetail",
      "Campaign",
      "Template",
      "Settings",
      "WebhookEndpoint",
      "WebhookDelivery",
      "Event",
      "FlowRun",
      "CannedResponse",
      "BusinessHours",
      "MessagingConfig",
    ]) {
      expect(doc.components.schemas?.[name], name).toMatchObject({ type: "object" });
    }
    const open: string[] = [];
    for (const { key, operation } of operations(doc)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const schema = response.content?.["application/json"]?.schema as JsonSchema | undefined;
        if (status.startsWith("2") && schema && isOpen(schema)) open.push(`${key} ${status}`);
      }
    }
    expect(open).toEqual([]);
    const flow = doc.paths["/api/flows/{id}"]?.get?.responses?.["200"]?.content?.["application/json"]?.schema;
    expect(flow).toMatchObject({ properties: { flow: { $ref: "#/components/schemas/Flow" } } });
  });

  it("documents the status codes the access routes answer with", ({ doc }) => {
    const statuses = (path: string, method: string) =>
      Object.keys(doc.paths[path]?.[method]?.responses ?? {});
    expect(statuses("/api/accounts", "post")).toEqual(expect.arrayContaining(["201", "400", "401", "409"]));
    expect(statuses("/api/accounts/invitations", "post")).toEqual(
      expect.arrayContaining(["201", "400", "401", "403"]),
    );
    expect(statuses("/api/api-keys", "post")).toEqual(expect.arrayContaining(["201", "400", "401", "403"]));
    expect(statuses("/api/api-keys/{id}", "delete")).toEqual(
      expect.arrayContaining(["200", "401", "403", "404"]),
    );
    expect(statuses("/readyz", "get")).toEqual(["200", "500", "503"]);
  });

  it("declares session (bearer, cookie) and API key security, and 401 on every protected operation", ({
    doc,
  }) => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["apiKey", "bearer", "cookie"]);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "X-API-Key",
    });
    const unprotected = operations(doc)
      .filter(({ operation }) => !(Array.isArray(operation.security) && operation.security.length === 0))
      .filter(({ operation }) => !operation.responses?.["401"])
      .map(({ key }) => key);
    expect(unprotected).toEqual([]);
  });
});
