import { describe, expect } from "vitest";
import { DEMO_TEMPLATES, type SandboxTemplate } from "../../src/upstream/sandbox/templates.js";
import { templateStatusPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import { insertContact, sandboxTest as it } from "../helpers/fixtures.js";
import { signUpWithAccount } from "../helpers/harness.js";
import {
  type Business,
  business,
  conversationsOf,
  messagesOf,
  type SandboxedApp,
  upstreamCalls,
} from "../helpers/sandbox-app.js";
import { postWebhook } from "../messaging/webhook/meta.js";

const api = (
  s: SandboxedApp,
  b: Business | null,
  method: "GET" | "POST" | "PUT",
  url: string,
  payload?: unknown,
) =>
  s.t.app.inject({
    method,
    url,
    headers: { ...(b?.user.headers ?? {}), "content-type": "application/json" },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

const sync = (s: SandboxedApp, b: Business) => api(s, b, "POST", "/api/messaging/templates/sync");
const list = async (s: SandboxedApp, b: Business, query = "") =>
  (await api(s, b, "GET", `/api/messaging/templates${query}`)).json();

const many = (count: number): SandboxTemplate[] =>
  Array.from({ length: count }, (_, i) => ({
    id: String(900_000_000 + i),
    name: `notice_${String(i).padStart(3, "0")}`,
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    components: [{ type: "BODY", text: `Notice ${i}` }],
  }));

const orderUpdate = (parameters: string[]) => ({
  name: "order_update",
  language: "en_US",
  components: [{ type: "body", parameters: parameters.map((text) => ({ type: "text", text })) }],
});

async function syncedBusiness(s: SandboxedApp) {
  const b = await business(s);
  expect((await sync(s, b)).statusCode).toBe(200);
  return b;
}

describe("POST /api/messaging/templates/sync", () => {
  it("answers 401 without a session", async ({ s }) => {
    expect((await api(s, null, "POST", "/api/messaging/templates/sync")).statusCode).toBe(401);
  });

  it("stores the business account's templates with Meta's fields", async ({ s, biz: b }) => {
    const response = await sync(s, b);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.synced).toBe(DEMO_TEMPLATES.length);
    expect(body.templates).toHaveLength(DEMO_TEMPLATES.length);
    const order = body.templates.find((t: { name: string }) => t.name === "order_update");
    expect(order).toEqual({
      id: expect.any(String),
      upstream_id: "920070352646140",
      name: "order_update",
      language: "en_US",
      status: "APPROVED",
      category: "UTILITY",
      components: DEMO_TEMPLATES.find((t) => t.name === "order_update")?.components,
      updated_at: expect.any(String),
    });
    const [call] = upstreamCalls(s, "GET", `/${b.businessAccountId}/message_templates`);
    expect(call?.query).toMatchObject({
      fields: "id,name,language,status,category,components",
      limit: "100",
    });
    expect(response.body).not.toContain(b.accessToken);
  });

  it("follows Meta's pages to the end", async ({ s, biz: b }) => {
    s.sandbox.setTemplates(b.businessAccountId, many(250));
    const response = await sync(s, b);
    expect(response.json().synced).toBe(250);
    const calls = upstreamCalls(s, "GET", `/${b.businessAccountId}/message_templates`);
    expect(calls).toHaveLength(3);
    expect(calls[0]?.query.after).toBeUndefined();
    expect(calls[1]?.query.after).toEqual(expect.any(String));
    expect((await list(s, b)).templates).toHaveLength(250);
  });

  it("updates changed templates and removes those gone upstream", async ({ s }) => {
    const b = await syncedBusiness(s);
    const [first, ...rest] = many(3);
    s.sandbox.setTemplates(b.businessAccountId, [{ ...first!, status: "PAUSED" }, ...rest]);
    await sync(s, b);
    s.sandbox.setTemplates(b.businessAccountId, [{ ...first!, status: "APPROVED", category: "MARKETING" }]);
    const response = await sync(s, b);
    expect(response.json().synced).toBe(1);
    expect(
      (await list(s, b)).templates.map((t: Record<string, unknown>) => [t.name, t.status, t.category]),
    ).toEqual([["notice_000", "APPROVED", "MARKETING"]]);
  });

  it("keeps the stored list whole when a page fails half-way", async ({ s }) => {
    const b = await syncedBusiness(s);
    const before = (await list(s, b)).templates;
    // The second page holds a template without a name: the answer is unusable.
    const broken = many(150);
    broken[120] = { ...broken[120]!, name: undefined as unknown as string };
    s.sandbox.setTemplates(b.businessAccountId, broken);
    const response = await sync(s, b);
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/template/i);
    expect((await list(s, b)).templates).toEqual(before);

    s.sandbox.inject(
      { path: /message_templates$/ },
      { status: 500, error: { code: 2, message: "Service down" } },
    );
    const failed = await sync(s, b);
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toEqual({ error: "Service down" });
    expect((await list(s, b)).templates).toEqual(before);
  });

  it("answers 400 without a business_account_id or without a channel, calling nothing upstream", async ({
    s,
  }) => {
    const noWaba = await business(s, { businessAccountId: null });
    const response = await sync(s, noWaba);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/business_account_id/);

    const { user } = await signUpWithAccount(s.t.app);
    const bare = await s.t.app.inject({
      method: "POST",
      url: "/api/messaging/templates/sync",
      headers: user.headers,
    });
    expect(bare.statusCode).toBe(400);
    expect(bare.json().error).toMatch(/not configured/);
    expect(upstreamCalls(s, "GET", /message_templates/)).toHaveLength(0);
  });
});

describe("GET /api/messaging/templates", () => {
  it("filters by status and by part of the name, and shows only the account's own", async ({ s }) => {
    const b = await syncedBusiness(s);
    const other = await business(s);
    expect((await list(s, other)).templates).toEqual([]);
    expect((await list(s, b, "?status=pending")).templates.map((t: { name: string }) => t.name)).toEqual([
      "fall_sale",
    ]);
    expect(
      (await list(s, b, "?q=HELLO")).templates.map(
        (t: { name: string; language: string }) => `${t.name}/${t.language}`,
      ),
    ).toEqual(["hello_world/en_US", "hello_world/es"]);
    expect((await list(s, b, "?q=%25")).templates).toEqual([]);
    expect((await api(s, b, "GET", "/api/messaging/templates?status=no%20way")).statusCode).toBe(400);
  });
});

describe("template status webhooks", () => {
  it("move a stored template's status (message_template_status_update)", async ({ s }) => {
    const b = await syncedBusiness(s);
    const { payload } = templateStatusPayload({
      businessAccountId: b.businessAccountId,
      templateId: "731503812290114",
      name: "fall_sale",
      language: "en_US",
      event: "APPROVED",
    });
    expect((await postWebhook(s.t.app, payload)).statusCode).toBe(200);
    expect((await list(s, b, "?q=fall_sale")).templates[0].status).toBe("APPROVED");

    const rejected = templateStatusPayload({
      businessAccountId: b.businessAccountId,
      templateId: "0",
      name: "order_update",
      language: "en_US",
      event: "REJECTED",
      reason: "INCORRECT_CATEGORY",
    });
    await postWebhook(s.t.app, rejected.payload);
    expect((await list(s, b, "?q=order_update")).templates[0].status).toBe("APPROVED");
  });
});

describe("sending a template in a conversation", () => {
  const send = (s: SandboxedApp, b: Business, conversationId: string, payload: unknown) =>
    api(s, b, "POST", `/api/conversations/${conversationId}/messages`, payload);

  it("sends an approved template with its parameters, also outside the 24-hour window", async ({ s }) => {
    const b = await syncedBusiness(s);
    const { conversation, contact } = await insertContact(s.t, {
      accountId: b.accountId,
      customerWroteAt: null,
    });
    const response = await send(s, b, conversation.id, { template: orderUpdate(["Ada", "#1042"]) });
    expect(response.statusCode).toBe(201);
    expect(response.json().message).toMatchObject({
      type: "template",
      text: "Hi Ada, your order #1042 is on its way.",
      status: "sent",
      direction: "outbound",
    });
    const [call] = upstreamCalls(s, "POST", "/messages");
    expect(call?.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: contact.phone,
      // Our message id, which Meta echoes in the message's status webhooks.
      biz_opaque_callback_data: response.json().message.id,
      type: "template",
      template: {
        name: "order_update",
        language: { code: "en_US" },
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "Ada" },
              { type: "text", text: "#1042" },
            ],
          },
        ],
      },
    });
  });

  it("answers 400 for an unknown or unapproved template and wrong parameter counts, sending nothing", async ({
    s,
  }) => {
    const b = await syncedBusiness(s);
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    const cases: Array<[unknown, RegExp]> = [
      [{ name: "nope", language: "en_US" }, /"nope" \(en_US\) is not among the synced templates/],
      [{ name: "hello_world", language: "fr" }, /"hello_world" \(fr\) is not among/],
      [{ name: "fall_sale", language: "en_US" }, /is PENDING, not APPROVED/],
      [orderUpdate(["Ada"]), /component body expects 2 parameters, got 1/],
      [orderUpdate(["Ada", "#1", "extra"]), /component body expects 2 parameters, got 3/],
      [{ ...orderUpdate([]), components: undefined }, /component body expects 2 parameters, got 0/],
      [
        {
          name: "hello_world",
          language: "en_US",
          components: [{ type: "body", parameters: [{ type: "text", text: "x" }] }],
        },
        /component body expects 0 parameters, got 1/,
      ],
      [{ name: "", language: "en_US" }, /template.name is required|name/],
      ["just a name", /template must be an object/],
    ];
    for (const [template, error] of cases) {
      const response = await send(s, b, conversation.id, { template });
      expect(response.statusCode, JSON.stringify(template)).toBe(400);
      expect(response.json().error).toMatch(error);
    }
    const both = await send(s, b, conversation.id, { text: "hi", template: orderUpdate(["a", "b"]) });
    expect(both.statusCode).toBe(400);
    expect(upstreamCalls(s, "POST", "/messages")).toHaveLength(0);
    expect(await messagesOf(s, b, conversation.id)).toEqual([]);
  });
});

describe("POST /api/conversations", () => {
  const start = (s: SandboxedApp, b: Business, payload: unknown) =>
    api(s, b, "POST", "/api/conversations", payload);

  it("starts a conversation with a new number by a template, and finds it again the next time", async ({
    s,
  }) => {
    const b = await syncedBusiness(s);
    const response = await start(s, b, {
      phone: "+1 (650) 555-0199",
      name: "Grace",
      template: { name: "hello_world", language: "en_US" },
    });
    expect(response.statusCode).toBe(201);
    const { conversation, message } = response.json();
    expect(conversation).toMatchObject({
      status: "open",
      window_expires_at: null,
      unread_count: 0,
      contact: { wa_id: "16505550199", phone: "16505550199", name: "Grace" },
      last_message: { id: message.id, type: "template" },
    });
    expect(message).toMatchObject({ type: "template", status: "sent", conversation_id: conversation.id });
    expect(message.text).toMatch(/^Welcome and congratulations/);
    expect(upstreamCalls(s, "POST", "/messages")[0]?.body).toMatchObject({
      to: "16505550199",
      type: "template",
    });

    const again = await start(s, b, { phone: "16505550199", template: orderUpdate(["Grace", "#7"]) });
    expect(again.statusCode).toBe(201);
    expect(again.json().conversation.id).toBe(conversation.id);
    expect(again.json().conversation.contact.name).toBe("Grace");
    expect(await conversationsOf(s, b)).toHaveLength(1);
  });

  it("answers 400 for text, a bad phone, a bad template or no channel, and writes nothing", async ({ s }) => {
    const b = await syncedBusiness(s);
    const cases: Array<[unknown, RegExp]> = [
      [{ phone: "16505550100", text: "hi" }, /Only a template can start a conversation/],
      [{ phone: "16505550100" }, /template/],
      [
        { phone: "call me", template: { name: "hello_world", language: "en_US" } },
        /phone must be a phone number/,
      ],
      [{ phone: "12345", template: { name: "hello_world", language: "en_US" } }, /6 to 15 digits/],
      [{ phone: "16505550100", template: { name: "fall_sale", language: "en_US" } }, /PENDING/],
      [{ phone: "16505550100", template: orderUpdate(["only one"]) }, /expects 2 parameters/],
    ];
    for (const [payload, error] of cases) {
      const response = await start(s, b, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().error).toMatch(error);
    }
    const { user, accountId } = await signUpWithAccount(s.t.app);
    const noChannel = await s.t.app.inject({
      method: "POST",
      url: "/api/conversations",
      headers: user.headers,
      payload: { phone: "16505550100", template: { name: "hello_world", language: "en_US" } },
    });
    expect(noChannel.statusCode).toBe(400);
    expect(noChannel.json().error).toMatch(/not configured/);
    expect(await conversationsOf(s, b)).toEqual([]);
    const { rows } = await s.t.database.pool.query(
      "select count(*)::int as n from contacts where account_id = $1",
      [accountId],
    );
    expect(rows[0].n).toBe(0);
    expect(upstreamCalls(s, "POST", "/messages")).toHaveLength(0);
  });

  it("answers 502 when Meta refuses the template, keeping the message failed", async ({ s }) => {
    const b = await syncedBusiness(s);
    // Meta's list changed since the sync: it no longer knows the template.
    s.sandbox.setTemplates(b.businessAccountId, []);
    const response = await start(s, b, {
      phone: "16505550123",
      template: { name: "hello_world", language: "en_US" },
    });
    expect(response.statusCode).toBe(502);
    expect(response.json().error).toMatch(/132001|does not exist/);
    expect(response.json().message).toMatchObject({ status: "failed", type: "template", message_id: null });
  });
});

describe("the send_template flow node on activation", () => {
  async function flowWith(s: SandboxedApp, b: Business, config: Record<string, unknown>) {
    const created = await api(s, b, "POST", "/api/flows", { name: "Re-engage" });
    const id = created.json().flow.id;
    const put = await api(s, b, "PUT", `/api/flows/${id}`, {
      name: "Re-engage",
      trigger_type: "manual",
      entry_node_id: "start",
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "tpl" } },
        { node_key: "tpl", node_type: "send_template", config: { ...config, next_node_key: "end" } },
        { node_key: "end", node_type: "end", config: {} },
      ],
    });
    expect(put.statusCode, put.body).toBe(200);
    return id as string;
  }
  const activate = (s: SandboxedApp, b: Business, id: string) =>
    api(s, b, "POST", `/api/flows/${id}/activate`, { status: "active" });

  it("activates with an approved template and the right parameters, else answers 422 naming the problem", async ({
    s,
  }) => {
    const b = await syncedBusiness(s);
    const good = await flowWith(s, b, {
      template_name: "order_update",
      language: "en_US",
      components: [
        {
          type: "body",
          parameters: [
            { type: "text", text: "{{contact.name}}" },
            { type: "text", text: "{{vars.order}}" },
          ],
        },
      ],
    });
    expect((await activate(s, b, good)).statusCode).toBe(200);

    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ template_name: "missing", language: "en_US" }, /not among the synced templates/],
      [{ template_name: "fall_sale", language: "en_US" }, /PENDING, not APPROVED/],
      [{ template_name: "order_update", language: "en_US" }, /body expects 2 parameters, got 0/],
      [{ template_name: "order_update" }, /language is required/],
      [{ language: "en_US" }, /template_name is required/],
    ];
    for (const [config, message] of cases) {
      const id = await flowWith(s, b, config);
      const response = await activate(s, b, id);
      expect(response.statusCode, JSON.stringify(config)).toBe(422);
      const issues = response.json().issues as Array<{ message: string; node_key?: string }>;
      expect(
        issues.some((i) => message.test(i.message) && i.node_key === "tpl"),
        JSON.stringify(issues),
      ).toBe(true);
    }
  });

  it("checks against the account's own templates", async ({ s, biz: b }) => {
    const id = await flowWith(s, b, { template_name: "hello_world", language: "en_US" });
    const response = await activate(s, b, id);
    expect(response.statusCode).toBe(422);
    expect(JSON.stringify(response.json().issues)).toMatch(/sync templates first/);
  });
});
