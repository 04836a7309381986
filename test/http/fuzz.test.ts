import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messages } from "../../src/db/schema/index.js";
import { inboundTextPayload, signPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import {
  APP_SECRET,
  activeTemplate,
  api,
  createWorld,
  type Json,
  type World,
} from "../flows/runner/helpers.js";
import { insertContact, insertMessage, uniqueDigits } from "../helpers/fixtures.js";
import { signUp, type TestUser } from "../helpers/harness.js";

/**
 * Every documented route, sent what a careless or hostile client sends: no
 * JSON, JSON that is no object, wrong types per field, strings PostgreSQL or
 * HTTP headers cannot hold, huge strings, hostile nesting, prototype keys and
 * cursors PostgreSQL cannot read. Each answer is a 4xx `{ error }` (or the
 * spec's documented answer), nothing changes in the database or upstream, and
 * the service still answers afterwards.
 */

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

interface Route {
  method: Method;
  path: string;
  url: string;
  caller: TestUser;
  /** Top-level body fields and their JSON schema, for body routes. */
  fields?: Record<string, Json>;
  /** Query parameters and their JSON schema. */
  query: Record<string, Json>;
}

interface Case {
  name: string;
  /** Raw body text (sent as application/json) or a query string. */
  body?: string;
  query?: string;
}

let w: World;
let loner: TestUser;
let routes: Route[];
const ids: Record<string, string> = {};

const HUGE = "x".repeat(900_000);
const LONE = "\ud800";
const deepArray = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
const deepObject = `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`;
const cursorOf = (at: string) =>
  Buffer.from(JSON.stringify([at, "00000000-0000-4000-8000-000000000000"])).toString("base64url");
const BAD_CURSORS = [
  cursorOf("+275760-09-13T00:00:00.000Z"),
  cursorOf("-271821-04-20T00:00:00.000Z"),
  cursorOf("0000-01-01T00:00:00.000Z"),
  cursorOf("+010000-01-01T00:00:00.000Z"),
  "x".repeat(5000),
];

/** Answers the spec documents for a case, other than 4xx `{ error }`. */
function documented(route: Route, kase: Case): { status: number; body: Json } | null {
  const key = `${route.method} ${route.path}`;
  const unparsable = kase.name === "not JSON";
  // Spec: "Any unexpected error (including an unparsable body): 500 { error: 'Internal server error' }".
  if (key === "POST /api/messaging/config" && unparsable) {
    return { status: 500, body: { error: "Internal server error" } };
  }
  // Spec: "Any other unexpected error (for example ... invalid JSON): 500 { error: 'Failed to react to message' }".
  if (key === "POST /api/messaging/react" && unparsable) {
    return { status: 500, body: { error: "Failed to react to message" } };
  }
  return null;
}

/**
 * Wrong values for a field, by the type its schema declares. A schema without
 * a type documents a JSON object checked in code (trigger_config...).
 */
function wrongValues(schema: Json): unknown[] {
  const declared = (schema.anyOf ?? schema.oneOf ?? [schema]).flatMap((s: Json) =>
    Array.isArray(s.type) ? s.type : [s.type],
  );
  const types = new Set<string>(declared.map((t: string | undefined) => t ?? "object"));
  const values: unknown[] = [];
  if (!types.has("string")) values.push("text");
  if (!types.has("number") && !types.has("integer")) values.push(12345);
  if (!types.has("boolean")) values.push(true);
  if (!types.has("object")) values.push({ nested: "object" });
  if (!types.has("array")) values.push(["array"]);
  if (types.has("string")) values.push("a\u0000b", `a${LONE}b`, `b\udc00`, HUGE);
  if (types.has("array")) values.push(["a\u0000"], [HUGE]);
  if (types.has("object")) values.push({ [`k${LONE}`]: "v" }, { k: `v${LONE}` }, { k: "a\u0000" });
  return values;
}

function casesFor(route: Route): Case[] {
  const cases: Case[] = [];
  if (route.fields) {
    cases.push(
      { name: "not JSON", body: "{not json" },
      { name: "a JSON array", body: "[]" },
      { name: "a JSON number", body: "1" },
      { name: "JSON null", body: "null" },
      { name: "a JSON string", body: '"text"' },
      { name: "arrays nested 10,000 deep", body: deepArray },
      { name: "objects nested 10,000 deep", body: deepObject },
    );
    for (const [field, schema] of Object.entries(route.fields)) {
      for (const value of wrongValues(schema)) {
        const shown =
          typeof value === "string" && value.length > 40
            ? `${value.length} characters`
            : JSON.stringify(value);
        cases.push({ name: `${field} = ${shown}`, body: JSON.stringify({ [field]: value }) });
      }
      cases.push({ name: `${field} nested 10,000 deep`, body: `{"${field}":${deepObject}}` });
    }
    if (route.path === "/api/messaging/config") {
      for (const token of ["tok\u0000en", "tok😀en", `tok${LONE}en`, "tok\u200fen", "tok en"]) {
        cases.push({
          name: `access_token ${JSON.stringify(token)}`,
          body: JSON.stringify({ phone_number_id: "123456", access_token: token }),
        });
      }
      for (const field of ["phone_number_id", "business_account_id"]) {
        cases.push({
          name: `${field} with a lone surrogate`,
          body: JSON.stringify({ phone_number_id: "123456", access_token: "EAAGtoken", [field]: `1${LONE}` }),
        });
        cases.push({
          name: `${field} with a NUL`,
          body: JSON.stringify({ phone_number_id: "123456", access_token: "EAAGtoken", [field]: "1\u0000" }),
        });
      }
    }
    if (route.path === "/api/flows/{id}" && route.method === "PUT") {
      const node = (patch: Json) => ({ node_key: "a", node_type: "start", config: {}, ...patch });
      for (const [name, value] of [
        ["node_key with a lone surrogate", node({ node_key: `k${LONE}` })],
        ["node config with a lone surrogate", node({ config: { next_node_key: LONE } })],
        ["node config key with a NUL", node({ config: { "a\u0000": 1 } })],
        ["node_key over 100 characters", node({ node_key: "k".repeat(101) })],
      ] as const) {
        cases.push({ name: `nodes[0] ${name}`, body: JSON.stringify({ nodes: [value] }) });
      }
      cases.push({
        name: "nodes[0] config nested 10,000 deep",
        body: `{"nodes":[{"node_key":"a","node_type":"start","config":${deepObject}}]}`,
      });
      cases.push({
        name: "trigger_config with a lone surrogate",
        body: JSON.stringify({ trigger_config: { k: LONE } }),
      });
    }
  }
  for (const [param, schema] of Object.entries(route.query)) {
    cases.push(
      { name: `?${param} given twice`, query: `${param}=1&${param}=2` },
      { name: `?${param} with a NUL`, query: `${param}=a%00bc` },
      { name: `?${param} of 5,000 characters`, query: `${param}=${"q".repeat(5000)}` },
    );
    if (param === "cursor") {
      for (const cursor of BAD_CURSORS)
        cases.push({ name: `?cursor=${cursor.slice(0, 30)}`, query: `cursor=${cursor}` });
    }
    if (schema.type === "integer" || schema.type === "number") {
      cases.push(
        { name: `?${param}=-1`, query: `${param}=-1` },
        { name: `?${param}=1e400`, query: `${param}=1e400` },
      );
    }
  }
  return cases;
}

/** A fingerprint of every row of every table (what "nothing changed" means). */
/** What every request may change: the throttles' counters (each mail request counts, refused or not). */
const BOOKKEEPING = ["sign_in_attempts"];

async function databaseFingerprint(): Promise<string> {
  const { rows: tables } = await w.t.database.pool.query<{ name: string }>(
    "select quote_ident(tablename) as name from pg_tables where schemaname = 'public' and not (tablename = any($1)) order by tablename",
    [BOOKKEEPING],
  );
  const parts = tables.map(
    (t) =>
      `select '${t.name}' as t, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${t.name} x`,
  );
  const { rows } = await w.t.database.pool.query(parts.join(" union all "));
  return JSON.stringify(rows);
}

beforeAll(async () => {
  w = await createWorld();
  loner = await signUp(w.t.app);
  ids.flow = await activeTemplate(w, "faq_bot");
  const { contact, conversation } = await insertContact(w.t, { accountId: w.accountId, name: "Fuzzed" });
  ids.contact = contact.id;
  ids.conversation = conversation.id;
  const canned = await w.t.app.inject({
    method: "POST",
    url: "/api/canned-responses",
    headers: w.owner.headers,
    payload: { shortcut: "fuzz", text: "Fuzz" },
  });
  ids.canned = canned.json().canned_response.id;
  await insertMessage(w.t, { accountId: w.accountId, conversationId: conversation.id });

  const spec = (await w.t.app.inject({ url: "/api/openapi.json" })).json();
  routes = [];
  for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item as Record<string, Json>)) {
      if (path === "/api/messaging/webhook") continue; // signed by Meta: its own cases below
      // A live stream stays open by design (its query is checked in test/events/stream.test.ts).
      if (path === "/api/events/stream") continue;
      const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
      const query: Record<string, Json> = {};
      for (const p of operation.parameters ?? []) if (p.in === "query") query[p.name] = p.schema ?? {};
      const id = path.startsWith("/api/flows/{id}")
        ? ids.flow
        : path.startsWith("/api/contacts/")
          ? ids.contact
          : path.startsWith("/api/canned-responses/")
            ? ids.canned
            : ids.conversation;
      // Creating an account and accepting an invitation are for callers without one.
      const caller = path === "/api/accounts" || path.startsWith("/api/invitations/") ? loner : w.owner;
      routes.push({
        method: method.toUpperCase() as Method,
        path,
        url: path.replace("{id}", id!).replace("{token}", "not-a-token"),
        caller,
        ...(bodySchema ? { fields: bodySchema.properties ?? {} } : {}),
        query,
      });
    }
  }
}, 120_000);
afterAll(() => w?.close());

describe("every route refuses bad input with a 4xx and changes nothing", () => {
  it("covers the routes of the team inbox, contacts, canned responses, flows, channel and accounts", () => {
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(keys).toEqual(
      expect.arrayContaining([
        "PATCH /api/conversations/{id}",
        "POST /api/conversations/{id}/notes",
        "GET /api/conversations",
        "GET /api/contacts",
        "PATCH /api/contacts/{id}",
        "POST /api/canned-responses",
        "PUT /api/canned-responses/{id}",
        "POST /api/flows",
        "PUT /api/flows/{id}",
        "POST /api/messaging/config",
        "POST /api/messaging/react",
        "POST /api/accounts",
      ]),
    );
  });

  it("answers each bad request with 4xx { error } or the spec's documented answer", async () => {
    const failures: string[] = [];
    const before = await databaseFingerprint();
    const upstreamBefore = w.sandbox.requests().length;
    let sent = 0;
    for (const route of routes) {
      for (const kase of casesFor(route)) {
        const response = await w.t.app.inject({
          method: route.method,
          url: kase.query ? `${route.url}?${kase.query}` : route.url,
          headers: { ...route.caller.headers, "content-type": "application/json" },
          ...(kase.body === undefined ? {} : { payload: kase.body }),
        });
        sent += 1;
        const where = `${route.method} ${route.path} [${kase.name}] -> ${response.statusCode} ${response.body.slice(0, 200)}`;
        const expected = documented(route, kase);
        let body: Json;
        try {
          body = response.json();
        } catch {
          failures.push(`${where}: not JSON`);
          continue;
        }
        if (expected) {
          if (
            response.statusCode !== expected.status ||
            JSON.stringify(body) !== JSON.stringify(expected.body)
          ) {
            failures.push(`${where}: expected ${expected.status} ${JSON.stringify(expected.body)}`);
          }
        } else if (
          response.statusCode < 400 ||
          response.statusCode >= 500 ||
          typeof body?.error !== "string" ||
          body.error === ""
        ) {
          // Routes without inputs of their own (GET /api/me...) have no cases; a query a route
          // ignores is no error, so a 200 is fine only for query cases of routes without them.
          failures.push(where);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(400);
    expect(await databaseFingerprint()).toBe(before);
    expect(w.sandbox.requests().length).toBe(upstreamBefore);
    expect(({} as Json).nested).toBeUndefined();
  }, 600_000);

  it("never answers 500 to __proto__ and constructor keys, and never honours them", async () => {
    const hostile = '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}';
    for (const route of routes.filter((r) => r.fields && r.method !== "DELETE")) {
      const send = (payload: string) =>
        w.t.app.inject({
          method: route.method,
          url: route.url,
          headers: { ...route.caller.headers, "content-type": "application/json" },
          payload,
        });
      const withKeys = await send(hostile);
      expect(withKeys.statusCode, `${route.method} ${route.path}`).toBeLessThan(500);
      expect(({} as Json).polluted).toBeUndefined();
    }
  }, 300_000);

  it("is still alive and serving afterwards", async () => {
    expect((await w.t.app.inject({ url: "/healthz" })).json()).toEqual({ ok: true });
    const flows = await api(w, "GET", "/api/flows");
    expect(flows.statusCode).toBe(200);
    expect(flows.json().flows.map((f: Json) => f.id)).toContain(ids.flow);
  });
});

describe("sign-up and account names", () => {
  it.each([
    ["a 900 KB name", { name: HUGE }, /name: must be at most 200 characters/],
    ["a NUL in the name", { name: "a\u0000b" }, /name: must not contain NUL/],
    ["a lone surrogate in the name", { name: `a${LONE}` }, /name: must not contain/],
    ["a NUL in the email", { email: "a\u0000@example.com" }, /email/],
  ])("refuses a sign-up with %s and creates no user", async (_name, patch, error) => {
    const before = await databaseFingerprint();
    const response = await w.t.app.inject({
      method: "POST",
      url: "/api/auth/sign-up/email",
      payload: {
        email: `fuzz-${Math.random()}@example.com`,
        password: "correct horse battery",
        name: "Ok",
        ...patch,
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(error);
    expect(await databaseFingerprint()).toBe(before);
  });
});

describe("the webhook", () => {
  /** Posts a signed delivery and waits until its job has stored it. */
  const post = async (raw: string) => {
    const response = await w.t.app.inject({
      method: "POST",
      url: "/api/messaging/webhook",
      headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, APP_SECRET) },
      payload: raw,
    });
    await w.t.app.deps.jobs.drain();
    return response;
  };
  /** A signed batch of these messages from one customer of the world's number. */
  const batch = (...items: Json[]) => {
    const { payload } = inboundTextPayload({
      phoneNumberId: w.phoneNumberId,
      from: uniqueDigits(11),
      text: "x",
    });
    const body = payload as Json;
    body.entry[0].changes[0].value.messages = items;
    return body;
  };
  const stored = async (upstreamId: string) =>
    w.t.database.db.select().from(messages).where(eq(messages.messageId, upstreamId));
  const text = (id: string, from: string, body = "hello") => ({
    id,
    from,
    timestamp: "1700000000",
    type: "text",
    text: { body },
  });

  it("acknowledges a signed body nested 10,000 levels deep and stores nothing", async () => {
    const before = await databaseFingerprint();
    for (const raw of [deepArray, deepObject, `{"entry":${deepArray}}`]) {
      const response = await post(raw);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ received: true });
    }
    expect(await databaseFingerprint()).toBe(before);
  });

  it("stores a message with a part nested too deeply, without that part", async () => {
    const id = `wamid.deep-${uniqueDigits(8)}`;
    const deep = JSON.parse(`${'{"a":'.repeat(100)}1${"}".repeat(100)}`);
    const response = await post(
      JSON.stringify(
        batch({
          id,
          from: uniqueDigits(11),
          timestamp: "1700000000",
          type: "sticker_pack",
          sticker_pack: deep,
        }),
      ),
    );
    expect(response.statusCode).toBe(200);
    const [row] = await stored(id);
    expect(row).toMatchObject({ type: "unsupported", direction: "inbound" });
  });

  it("skips a message whose id or sender is longer than any index row holds, and stores the rest", async () => {
    const good = `wamid.good-${uniqueDigits(8)}`;
    // Random, so that no compression brings the index row under PostgreSQL's limit.
    const longId = `wamid.${randomBytes(2400).toString("base64url")}`;
    const longFrom = Array.from(randomBytes(3000), (b) => String(b % 10)).join("");
    const response = await post(
      JSON.stringify(
        batch(
          text(longId, uniqueDigits(11)),
          text(`wamid.from-${uniqueDigits(6)}`, longFrom),
          text(good, uniqueDigits(11)),
        ),
      ),
    );
    expect(response.statusCode).toBe(200);
    expect(await stored(good)).toHaveLength(1);
    expect(await stored(longId)).toHaveLength(0);
    const { rows } = await w.t.database.pool.query(
      "select count(*)::int as n from contacts where wa_id = $1",
      [longFrom],
    );
    expect(rows[0].n).toBe(0);
  });

  it("replaces NUL characters and lone surrogates in ids and names instead of failing", async () => {
    const id = `wamid.nul-\u0000-${uniqueDigits(6)}`;
    const body = batch(text(id, uniqueDigits(11), `bad \ud800 text`));
    body.entry[0].changes[0].value.contacts = [{ wa_id: "1", profile: { name: "N\u0000ame" } }];
    const response = await post(JSON.stringify(body));
    expect(response.statusCode).toBe(200);
    const [row] = await stored(id.replace("\u0000", "\ufffd"));
    expect(row?.text).toBe("bad \ufffd text");
  });
});
