import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookEndpoints } from "../../src/db/schema/index.js";
import { MAX_ENDPOINTS_PER_ACCOUNT } from "../../src/events/endpoints.js";
import {
  addMember,
  createTestApp,
  signUp,
  signUpWithAccount,
  type TestApp,
  type TestUser,
} from "../helpers/harness.js";
import { api, type Json } from "./helpers.js";
import { startReceiver } from "./receiver.js";

// `strict` refuses private addresses (the default); `open` runs with WEBHOOK_ALLOW_PRIVATE=true and
// delivers to receivers on loopback.
let strict: TestApp;
let open: TestApp;
beforeAll(async () => {
  strict = await createTestApp();
  open = await createTestApp({ config: { webhookAllowPrivate: true } });
});
afterAll(async () => {
  await strict.close();
  await open.close();
});

const create = (t: TestApp, user: TestUser, body: unknown) =>
  t.app.inject({
    method: "POST",
    url: "/api/webhook-endpoints",
    headers: user.headers,
    payload: typeof body === "string" ? body : JSON.stringify(body),
  });

async function endpointFor(t: TestApp, user: TestUser, url = "http://127.0.0.1:9/hooks") {
  const response = await create(t, user, { url, events: ["*"] });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { endpoint: Json; secret: string };
}

const routes = (id: string) => [
  {
    method: "POST" as const,
    url: "/api/webhook-endpoints",
    payload: { url: "https://a.example", events: ["*"] },
  },
  { method: "GET" as const, url: "/api/webhook-endpoints" },
  { method: "GET" as const, url: `/api/webhook-endpoints/${id}` },
  { method: "PATCH" as const, url: `/api/webhook-endpoints/${id}`, payload: { enabled: false } },
  { method: "DELETE" as const, url: `/api/webhook-endpoints/${id}` },
  { method: "GET" as const, url: `/api/webhook-endpoints/${id}/deliveries` },
  { method: "POST" as const, url: `/api/webhook-endpoints/${id}/test` },
];

describe("who may manage webhook endpoints", () => {
  it("answers 401 without a session, 403 without an account, 403 for a member", async () => {
    const owner = await signUpWithAccount(open.app);
    const { endpoint } = await endpointFor(open, owner.user);
    const member = await addMember(open.app, owner.user);
    const loner = await signUp(open.app);
    for (const route of routes(endpoint.id)) {
      expect((await open.app.inject(route)).statusCode).toBe(401);
      expect((await open.app.inject({ ...route, headers: loner.headers })).statusCode).toBe(403);
      const asMember = await open.app.inject({ ...route, headers: member.headers });
      expect(asMember.statusCode).toBe(403);
      expect(asMember.json().error).toMatch(/owner/);
    }
    const still = await api(open, owner.user, "GET", `/api/webhook-endpoints/${endpoint.id}`);
    expect(still.json().endpoint.enabled).toBe(true);
  });

  it("answers 404 for another account's endpoint, an unknown id and a malformed id", async () => {
    const me = await signUpWithAccount(open.app);
    const other = await signUpWithAccount(open.app);
    const { endpoint } = await endpointFor(open, other.user);
    for (const id of [endpoint.id, "00000000-0000-4000-8000-000000000000", "nope"]) {
      for (const route of routes(id).slice(2)) {
        const response = await open.app.inject({ ...route, headers: me.user.headers });
        expect(response.statusCode, `${route.method} ${route.url}`).toBe(404);
      }
    }
    expect((await api(open, me.user, "GET", "/api/webhook-endpoints")).json()).toEqual({ endpoints: [] });
    const theirs = await api(open, other.user, "GET", `/api/webhook-endpoints/${endpoint.id}`);
    expect(theirs.json().endpoint).toMatchObject({ id: endpoint.id, enabled: true });
  });
});

describe("POST /api/webhook-endpoints", () => {
  it("creates an endpoint and shows its secret once", async () => {
    const { user } = await signUpWithAccount(strict.app);
    const response = await create(strict, user, {
      url: "https://93.184.215.14/wa-hooks",
      events: ["message.received", "message.status", "message.received"],
      description: "CRM sync",
    });
    expect(response.statusCode).toBe(201);
    const { endpoint, secret } = response.json();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(endpoint).toEqual({
      id: expect.any(String),
      url: "https://93.184.215.14/wa-hooks",
      description: "CRM sync",
      events: ["message.received", "message.status"],
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const listed = await api(strict, user, "GET", "/api/webhook-endpoints");
    expect(listed.json()).toEqual({ endpoints: [endpoint] });
    const one = await api(strict, user, "GET", `/api/webhook-endpoints/${endpoint.id}`);
    const patched = await api(strict, user, "PATCH", `/api/webhook-endpoints/${endpoint.id}`, {
      description: "x",
    });
    for (const body of [listed.body, one.body, patched.body]) expect(body).not.toContain(secret.slice(6));
    const [row] = await strict.database.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, endpoint.id));
    expect(row?.secret).not.toContain(secret.slice(6));
  });

  it.each([
    ["not JSON", "{", /Invalid JSON/],
    ["no url", { events: ["*"] }, /^url: is required/],
    ["a url that is not a string", { url: 5, events: ["*"] }, /^url: must be a string/],
    ["no events", { url: "https://93.184.215.14/" }, /^events:/],
    ["an empty event list", { url: "https://93.184.215.14/", events: [] }, /^events: must name at least one/],
    [
      "an unknown event type",
      { url: "https://93.184.215.14/", events: ["message.deleted"] },
      /^events\.0: must be one of/,
    ],
    [
      "* with other types",
      { url: "https://93.184.215.14/", events: ["*", "message.sent"] },
      /"\*" stands alone/,
    ],
    [
      "a long description",
      { url: "https://93.184.215.14/", events: ["*"], description: "x".repeat(501) },
      /^description:/,
    ],
    ["an http url", { url: "http://93.184.215.14/", events: ["*"] }, /^url: must be an https URL/],
    [
      "a url with credentials",
      { url: "https://u:p@93.184.215.14/", events: ["*"] },
      /^url: must not contain credentials/,
    ],
  ])("answers 400 for %s and stores nothing", async (_name, body, message) => {
    const { user } = await signUpWithAccount(strict.app);
    const response = await create(strict, user, body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(message);
    expect((await api(strict, user, "GET", "/api/webhook-endpoints")).json().endpoints).toEqual([]);
  });

  it.each([
    "https://127.0.0.1/hooks",
    "https://10.1.2.3/hooks",
    "https://172.16.0.1/hooks",
    "https://172.31.255.1/hooks",
    "https://192.168.1.20/hooks",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hooks",
    "https://[fc00::1]/hooks",
    "https://[fd00::7]/hooks",
    "https://[fe80::1]/hooks",
    "https://[::ffff:127.0.0.1]/hooks",
    "https://[::ffff:192.168.0.1]/hooks",
    "https://localhost/hooks",
    "https://[::127.0.0.1]/hooks",
    "https://[::7f00:1]/hooks",
    "https://[64:ff9b::7f00:1]/hooks",
    "https://[64:ff9b:1::a00:1]/hooks",
    "https://[2002:7f00:1::]/hooks",
    "https://[2001::1]/hooks",
    "https://[fec0::1]/hooks",
    "https://[::]/hooks",
    "https://[ff02::1]/hooks",
    "https://100.64.0.1/hooks",
    "https://0.0.0.0/hooks",
    "https://255.255.255.255/hooks",
    "https://240.0.0.1/hooks",
  ])("refuses %s (private or reserved address)", async (url) => {
    const { user } = await signUpWithAccount(strict.app);
    const response = await create(strict, user, { url, events: ["*"] });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/^url: .*private or reserved address/);
    expect((await api(strict, user, "GET", "/api/webhook-endpoints")).json().endpoints).toEqual([]);
  });

  it("accepts loopback and http with WEBHOOK_ALLOW_PRIVATE=true", async () => {
    const { user } = await signUpWithAccount(open.app);
    expect((await create(open, user, { url: "http://localhost:8080/x", events: ["*"] })).statusCode).toBe(
      201,
    );
  });

  it(`allows at most ${MAX_ENDPOINTS_PER_ACCOUNT} endpoints per account`, async () => {
    const { user } = await signUpWithAccount(open.app);
    for (let i = 0; i < MAX_ENDPOINTS_PER_ACCOUNT; i++)
      await endpointFor(open, user, `http://127.0.0.1:9/${i}`);
    const response = await create(open, user, { url: "http://127.0.0.1:9/extra", events: ["*"] });
    expect(response.statusCode).toBe(409);
    expect((await api(open, user, "GET", "/api/webhook-endpoints")).json().endpoints).toHaveLength(
      MAX_ENDPOINTS_PER_ACCOUNT,
    );
  });
});

describe("PATCH and DELETE /api/webhook-endpoints/:id", () => {
  it("changes url, events and description, and turns the endpoint off and on", async () => {
    const { user } = await signUpWithAccount(strict.app);
    const { endpoint } = await endpointFor(strict, user, "https://93.184.215.14/a");
    const url = `/api/webhook-endpoints/${endpoint.id}`;
    const changed = await api(strict, user, "PATCH", url, {
      url: "https://93.184.215.14/b",
      events: ["flow_run.updated"],
      description: null,
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().endpoint).toMatchObject({
      url: "https://93.184.215.14/b",
      events: ["flow_run.updated"],
      description: null,
      enabled: true,
    });
    const off = await api(strict, user, "PATCH", url, { enabled: false });
    expect(off.json().endpoint).toMatchObject({ enabled: false, disabled_reason: "Disabled by the owner" });
    const on = await api(strict, user, "PATCH", url, { enabled: true });
    expect(on.json().endpoint).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
  });

  it.each([
    [{ url: "https://10.0.0.1/" }, /^url: .*private or reserved/],
    [{ events: ["nope"] }, /^events\.0:/],
    [{ enabled: "yes" }, /^enabled: must be true or false/],
  ])("answers 400 for %j and changes nothing", async (patch, message) => {
    const { user } = await signUpWithAccount(strict.app);
    const { endpoint } = await endpointFor(strict, user, "https://93.184.215.14/a");
    const response = await api(strict, user, "PATCH", `/api/webhook-endpoints/${endpoint.id}`, patch);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(message);
    const after = await api(strict, user, "GET", `/api/webhook-endpoints/${endpoint.id}`);
    expect(after.json().endpoint).toEqual(endpoint);
  });

  it("deletes an endpoint", async () => {
    const { user } = await signUpWithAccount(open.app);
    const { endpoint } = await endpointFor(open, user);
    const removed = await api(open, user, "DELETE", `/api/webhook-endpoints/${endpoint.id}`);
    expect(removed.statusCode).toBe(204);
    expect((await api(open, user, "GET", `/api/webhook-endpoints/${endpoint.id}`)).statusCode).toBe(404);
    expect((await api(open, user, "DELETE", `/api/webhook-endpoints/${endpoint.id}`)).statusCode).toBe(404);
  });
});

describe("POST /api/webhook-endpoints/:id/test and the delivery log", () => {
  it("sends a signed test event that a Standard Webhooks verifier accepts, and logs the attempt", async () => {
    const receiver = await startReceiver([200]);
    try {
      const { user } = await signUpWithAccount(open.app);
      const { endpoint, secret } = await endpointFor(open, user, receiver.url);
      const response = await api(open, user, "POST", `/api/webhook-endpoints/${endpoint.id}/test`);
      expect(response.statusCode).toBe(200);
      const { delivery } = response.json();
      expect(delivery).toEqual({
        id: expect.any(String),
        endpoint_id: endpoint.id,
        event_id: expect.any(String),
        event_type: "webhook.test",
        attempt: 1,
        status: "delivered",
        response_status: 200,
        response_body: "thanks",
        duration_ms: expect.any(Number),
        error: null,
        next_attempt_at: null,
        created_at: expect.any(String),
      });

      expect(receiver.received).toHaveLength(1);
      const [request] = receiver.received;
      expect(request!.headers["content-type"]).toBe("application/json");
      expect(request!.headers["webhook-id"]).toBe(delivery.event_id);
      const payload = receiver.verify(secret, request!);
      expect(payload).toEqual({
        id: delivery.event_id,
        type: "webhook.test",
        created_at: expect.any(String),
        data: { endpoint_id: endpoint.id, message: expect.any(String) },
      });
      expect(() => receiver.verify(`whsec_${Buffer.alloc(32, 1).toString("base64")}`, request!)).toThrow();

      const log = await api(open, user, "GET", `/api/webhook-endpoints/${endpoint.id}/deliveries`);
      expect(log.json()).toEqual({ deliveries: [delivery], next_cursor: null });
    } finally {
      await receiver.close();
    }
  });

  it("reports a failing receiver without counting it against the endpoint", async () => {
    const receiver = await startReceiver([500]);
    try {
      const { user } = await signUpWithAccount(open.app);
      const { endpoint } = await endpointFor(open, user, receiver.url);
      const { delivery } = (
        await api(open, user, "POST", `/api/webhook-endpoints/${endpoint.id}/test`)
      ).json();
      expect(delivery).toMatchObject({ status: "failed", response_status: 500, error: "HTTP 500" });
      const after = await api(open, user, "GET", `/api/webhook-endpoints/${endpoint.id}`);
      expect(after.json().endpoint).toMatchObject({ enabled: true, failing_since: null });
    } finally {
      await receiver.close();
    }
  });

  it("pages the delivery log newest first", async () => {
    const receiver = await startReceiver([200]);
    try {
      const { user } = await signUpWithAccount(open.app);
      const { endpoint } = await endpointFor(open, user, receiver.url);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (await api(open, user, "POST", `/api/webhook-endpoints/${endpoint.id}/test`)).json().delivery.id,
        );
      }
      const base = `/api/webhook-endpoints/${endpoint.id}/deliveries`;
      const first = (await api(open, user, "GET", `${base}?limit=2`)).json();
      expect(first.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
      const rest = (await api(open, user, "GET", `${base}?limit=2&cursor=${first.next_cursor}`)).json();
      expect(rest).toEqual({ deliveries: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
      expect((await api(open, user, "GET", `${base}?cursor=garbage`)).statusCode).toBe(400);
    } finally {
      await receiver.close();
    }
  });
});
