import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SENDABLE_TYPES } from "../../src/media/kinds.js";
import { DEMO_IMAGE } from "../../src/upstream/sandbox/demo-media.js";
import { activeTemplate, createWorld, type Json, type World } from "../flows/runner/helpers.js";
import { insertContact, insertMessage } from "../helpers/fixtures.js";
import { signUp, type TestUser } from "../helpers/harness.js";
import { multipart } from "../media/multipart.js";

/**
 * Generated cases for every operation of the served OpenAPI document, signed
 * in as an account owner: bodies built from each operation's JSON schema with
 * values of the declared types, values of wrong types, strings PostgreSQL or
 * headers cannot hold, numbers out of range, and missing or extra fields; path
 * parameters that are real ids, other UUIDs or junk; query values of every
 * kind. No answer is a 5xx but the upstream failures an operation documents
 * (502 when WhatsApp refuses). FUZZ_SEED replays a run, FUZZ_RUNS sets the
 * cases per operation.
 */

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.FUZZ_RUNS ?? 20);

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
interface Operation {
  method: Method;
  path: string;
  body?: Json;
  query: Array<{ name: string; schema: Json }>;
  pathParams: string[];
  /** Status codes the operation documents. */
  documented: Set<number>;
}
interface Case {
  params: Record<string, string>;
  query: Array<[string, string]>;
  /** The JSON body, or undefined for none. */
  body?: { value: unknown };
}

let w: World;
let operations: Operation[];
const ids: Record<string, string> = {};

/** Strings a careless or hostile client sends. */
const NASTY = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00y",
  "\u202eexe.pdf",
  "😀",
  "%00",
  "%zz",
  "../../etc/passwd",
  "' or 1=1 --",
  "<script>alert(1)</script>",
  "9".repeat(40),
  "-1",
  "0",
  "1e400",
  "NaN",
  "null",
  "true",
  "[]",
  "{}",
  "00000000-0000-4000-8000-000000000000",
  "x".repeat(5000),
  "\r\nX-Injected: 1",
  "+15550001111",
  "me",
  "none",
];
const nastyString = fc.constantFrom(...NASTY);
const anyString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  { weight: 3, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.uuid() },
);
const anyNumber = fc.oneof(
  fc.integer(),
  fc.integer({ min: -2, max: 600 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 2 ** 31, 2 ** 53 + 2, 1e308, -1e308, 0.5),
);

/** Values for a JSON schema: mostly of its type (and shape), sometimes anything at all. */
function valuesFor(schema: Json | undefined, depth = 0): fc.Arbitrary<unknown> {
  const anything = fc.jsonValue({ maxDepth: 2 });
  if (!schema || depth > 5) return anything;
  const alternatives = schema.anyOf ?? schema.oneOf;
  let typed: fc.Arbitrary<unknown>;
  if (alternatives) {
    typed = fc.oneof(...alternatives.map((s: Json) => valuesFor(s, depth + 1)));
  } else if (schema.enum) {
    typed = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...schema.enum) },
      { weight: 1, arbitrary: anyString },
    );
  } else {
    const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
    const parts: fc.Arbitrary<unknown>[] = types.map((type) => {
      switch (type) {
        case "string":
          return schema.format === "email"
            ? fc.oneof(fc.emailAddress(), anyString)
            : schema.format === "uri"
              ? fc.oneof(fc.webUrl(), anyString)
              : schema.format === "date-time"
                ? fc.oneof(
                    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
                    anyString,
                  )
                : anyString;
        case "integer":
        case "number":
          return anyNumber;
        case "boolean":
          return fc.boolean();
        case "null":
          return fc.constant(null);
        case "array":
          return fc.array(valuesFor(schema.items, depth + 1), { maxLength: 4 });
        case "object":
          return objectOf(schema, depth);
        default:
          return anything;
      }
    });
    typed = parts.length === 0 ? anything : fc.oneof(...parts);
  }
  return fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: anything });
}

function objectOf(schema: Json, depth: number): fc.Arbitrary<unknown> {
  const properties: Record<string, Json> = schema.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties)) model[name] = valuesFor(property, depth + 1);
  if (Object.keys(model).length === 0)
    return fc.dictionary(anyString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
  const required = (schema.required ?? []) as string[];
  return fc.oneof(
    { weight: 3, arbitrary: fc.record(model, { requiredKeys: required }) },
    { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.record(model, { requiredKeys: required }),
          fc.dictionary(anyString, fc.jsonValue(), { maxKeys: 2 }),
        )
        .map(([known, extra]) => ({ ...extra, ...known })),
    },
  );
}

/** A component of a URL: percent-encoded, or raw bytes for strings encodeURIComponent refuses. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return Buffer.from(value).toString("hex").replace(/(..)/g, "%$1");
  }
}

function caseOf(op: Operation): fc.Arbitrary<Case> {
  const params: Record<string, fc.Arbitrary<string>> = {};
  for (const name of op.pathParams) {
    const real = realId(op.path, name);
    params[name] = fc.oneof(
      { weight: 4, arbitrary: fc.constant(real) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: anyString.filter((s) => s !== "" && s !== "." && s !== "..") },
    );
  }
  const query = op.query.map(({ name, schema }) =>
    fc.option(
      fc
        .oneof(
          valuesFor(schema).map((v) => (typeof v === "string" ? v : (JSON.stringify(v) ?? ""))),
          anyString,
        )
        .map((v): [string, string] => [name, v]),
      { nil: undefined },
    ),
  );
  return fc.record({
    params: fc.record(params),
    query: fc.tuple(...query).map((pairs) => pairs.filter((p): p is [string, string] => p !== undefined)),
    ...(op.body
      ? {
          body: fc.option(
            valuesFor(op.body).map((value) => ({ value })),
            { nil: undefined, freq: 8 },
          ),
        }
      : {}),
  }) as fc.Arbitrary<Case>;
}

function realId(path: string, name: string): string {
  if (name === "token") return ids.invitation!;
  if (name === "run_id") return ids.run!;
  if (path.startsWith("/api/flows/")) return ids.flow!;
  if (path.startsWith("/api/contacts/")) return ids.contact!;
  if (path.startsWith("/api/canned-responses/")) return ids.canned!;
  if (path.startsWith("/api/api-keys/")) return ids.apiKey!;
  if (path.startsWith("/api/webhook-endpoints/")) return ids.endpoint!;
  if (path.startsWith("/api/messages/")) return ids.message!;
  return ids.conversation!;
}

/**
 * The 500s the interface specification mandates: an unparsable body (a
 * missing one included) on the channel configuration and on reactions.
 */
function specMandated(op: Operation, kase: Case, status: number, body: string): boolean {
  if (status !== 500 || kase.body !== undefined) return false;
  if (op.method === "POST" && op.path === "/api/messaging/config") {
    return body === JSON.stringify({ error: "Internal server error" });
  }
  if (op.method === "POST" && op.path === "/api/messaging/react") {
    return body === JSON.stringify({ error: "Failed to react to message" });
  }
  return false;
}

/** Operations that end the caller's sessions run as a fresh throwaway user each time. */
const ENDS_SESSIONS =
  /\/api\/auth\/(sign-out|revoke-sessions|revoke-other-sessions|revoke-session|change-password)$/;

beforeAll(async () => {
  console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} replays it), ${RUNS} cases per operation`);
  w = await createWorld();
  ids.flow = await activeTemplate(w, "faq_bot");
  const { contact, conversation } = await insertContact(w.t, { accountId: w.accountId, name: "Fuzzed" });
  ids.contact = contact.id;
  ids.conversation = conversation.id;
  ids.message = (await insertMessage(w.t, { accountId: w.accountId, conversationId: conversation.id })).id;
  const post = (url: string, payload: Json) =>
    w.t.app.inject({ method: "POST", url, headers: w.owner.headers, payload }).then((r) => r.json());
  ids.canned = (await post("/api/canned-responses", { shortcut: "fuzz", text: "Fuzz" })).canned_response.id;
  ids.apiKey = (await post("/api/api-keys", { name: "fuzz" })).api_key.id;
  ids.invitation = (
    await post("/api/accounts/invitations", { email: "invited-fuzz@example.com" })
  ).invitation.token;
  ids.endpoint = "00000000-0000-4000-8000-000000000001";
  ids.run = "00000000-0000-4000-8000-000000000002";

  const spec = (await w.t.app.inject({ url: "/api/openapi.json" })).json();
  operations = [];
  for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item as Record<string, Json>)) {
      // Signed by Meta (test/http/fuzz.test.ts covers it); a stream stays open by design.
      if (path === "/api/messaging/webhook" && method === "post") continue;
      if (path === "/api/events/stream") continue;
      const parameters = (operation.parameters ?? []) as Json[];
      operations.push({
        method: method.toUpperCase() as Method,
        path,
        body: operation.requestBody?.content?.["application/json"]?.schema,
        query: parameters
          .filter((p) => p.in === "query")
          .map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        pathParams: parameters.filter((p) => p.in === "path").map((p) => p.name),
        documented: new Set(Object.keys(operation.responses ?? {}).map(Number)),
      });
    }
  }
  // What removes things the others use runs last.
  const late = (op: Operation) => (op.method === "DELETE" ? 1 : 0);
  operations.sort((a, b) => late(a) - late(b));
}, 120_000);
afterAll(() => w?.close());

describe("what the fuzzing found", () => {
  const call = (method: Method, url: string, payload: Json) =>
    w.t.app.inject({ method, url, headers: w.owner.headers, payload });

  it("refuses update-user with a null name (it answered 500)", async () => {
    const response = await call("POST", "/api/auth/update-user", { name: null });
    expect(response.statusCode).toBe(400);
    const me = await w.t.app.inject({ url: "/api/auth/get-session", headers: w.owner.headers });
    expect(me.json().user.name).toEqual(expect.any(String));
  });

  it.each([
    [{ name: "!", language: "\u0000" }, /template\.language must not contain NUL/],
    [{ name: "hello\u0000", language: "en" }, /template\.name must not contain NUL/],
    [
      {
        name: "hello",
        language: "en",
        components: [{ type: "body", parameters: [{ type: "text", text: "\ud800" }] }],
      },
      /template\.components contains a string that must not contain NUL/,
    ],
  ])(
    "refuses a template send with %j before anything is stored or sent (it answered 500)",
    async (template, error) => {
      const upstream = w.sandbox.requests().length;
      const { rows: before } = await w.t.database.pool.query("select count(*)::int as n from messages");
      for (const id of [ids.conversation]) {
        const response = await call("POST", `/api/conversations/${id}/messages`, { template });
        expect(response.statusCode).toBe(400);
        expect(response.json().error).toMatch(error);
      }
      const start = await call("POST", "/api/conversations", { phone: "+15550001111", template });
      expect(start.statusCode).toBe(400);
      expect(start.json().error).toMatch(error);
      const { rows: after } = await w.t.database.pool.query("select count(*)::int as n from messages");
      expect(after[0].n).toBe(before[0].n);
      expect(w.sandbox.requests().length).toBe(upstream);
    },
  );
});

describe("media uploads, fuzzed", () => {
  it("answer no 5xx to any file, caption or filename, and upload nothing to Meta they then refuse", async () => {
    const uploads = () =>
      w.sandbox.requests().filter((r) => r.method === "POST" && r.path.endsWith("/media"));
    const upload = fc.record({
      filename: fc.oneof(fc.constantFrom("menu.pdf", "photo.png", "a\u202Egnp.exe"), anyString),
      caption: fc.option(fc.oneof(anyString, fc.constantFrom("a\u0000b", "\ud800", "Table for two")), {
        nil: undefined,
      }),
      type: fc.constantFrom(...SENDABLE_TYPES, "image/gif", "text/html", "application/octet-stream", ""),
      bytes: fc.oneof(
        fc.constant(DEMO_IMAGE),
        fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)),
        fc.constantFrom(
          Buffer.from("<html><script>alert(1)</script></html>"),
          Buffer.from("7f454c4602010100000000000000000003003e00", "hex"),
          Buffer.from("%PDF-1.4\n% tiny\n"),
          Buffer.from("Opening hours: 9 to 5\n"),
        ),
      ),
    });
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(upload, async (file) => {
        const before = uploads().length;
        const form = multipart([
          ...(file.caption === undefined ? [] : [{ name: "caption", value: file.caption }]),
          { name: "file", filename: file.filename, type: file.type, bytes: file.bytes },
        ]);
        const response = await w.t.app.inject({
          method: "POST",
          url: `/api/conversations/${ids.conversation}/media`,
          headers: { ...w.owner.headers, ...form.headers },
          payload: form.payload,
        });
        const status = response.statusCode;
        if (status >= 500) throw new Error(`${status} ${response.body.slice(0, 300)}`);
        if (status >= 400 && uploads().length !== before)
          throw new Error(`${status} after an upload to Meta`);
        if (status === 201) sent += 1;
      }),
      {
        seed: SEED,
        numRuns: RUNS * 3,
        // A good upload is always among the cases (random ones rarely match a
        // type to its bytes), so the property sees both sides on every seed.
        examples: [
          [{ filename: "photo.png", caption: "Table for two", type: "image/png", bytes: DEMO_IMAGE }],
        ],
      },
    );
    // The good case was sent: the property saw both sides.
    expect(sent).toBeGreaterThan(0);
  }, 300_000);
});

describe("every operation of the OpenAPI document, fuzzed", () => {
  it("answers no 5xx but the upstream failures an operation documents", async () => {
    expect(operations.length).toBeGreaterThan(50);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (const op of operations) {
      const send = async (kase: Case, caller: TestUser) => {
        let url = op.path;
        for (const [name, value] of Object.entries(kase.params))
          url = url.replace(`{${name}}`, encode(value));
        if (kase.query.length) url += `?${kase.query.map(([n, v]) => `${encode(n)}=${encode(v)}`).join("&")}`;
        const response = await w.t.app.inject({
          method: op.method,
          url,
          headers: {
            ...caller.headers,
            ...(kase.body ? { "content-type": "application/json" } : {}),
          },
          ...(kase.body ? { payload: JSON.stringify(kase.body.value) ?? "null" } : {}),
        });
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        return response;
      };
      const result = await fc.check(
        fc.asyncProperty(caseOf(op), async (kase) => {
          const caller = ENDS_SESSIONS.test(op.path) ? await signUp(w.t.app) : w.owner;
          const response = await send(kase, caller);
          const status = response.statusCode;
          const allowed =
            status < 500 ||
            (status !== 500 && op.documented.has(status)) ||
            specMandated(op, kase, status, response.body);
          if (!allowed) throw new Error(`${status} ${response.body.slice(0, 300)}`);
        }),
        { seed: SEED, numRuns: ENDS_SESSIONS.test(op.path) ? Math.min(RUNS, 5) : RUNS, endOnFailure: false },
      );
      if (result.failed) {
        failures.push(
          `${op.method} ${op.path}: ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}\n` +
            `    case: ${JSON.stringify(result.counterexample?.[0]).slice(0, 600)}\n` +
            `    replay: FUZZ_SEED=${result.seed} (path ${result.counterexample ? result.counterexamplePath : "-"})`,
        );
      }
    }
    console.log(`answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    expect(failures).toEqual([]);
    // The service is still serving afterwards.
    expect((await w.t.app.inject({ url: "/healthz" })).statusCode).toBe(200);
  }, 600_000);
});
