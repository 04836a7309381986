import { describe, expect } from "vitest";
import { DEFAULT_FALLBACK_POLICY } from "../../src/db/schema/flows.js";
import { FLOW_TEMPLATES } from "../../src/flows/templates.js";
import { appTest as it } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestApp } from "../helpers/harness.js";
import { call, createFlow } from "./helpers.js";

const countFlows = async (t: TestApp, accountId: string) =>
  Number(
    (await t.database.pool.query("select count(*) from flows where account_id = $1", [accountId])).rows[0]
      .count,
  );

describe("POST /api/flows check order", () => {
  it("answers 401 Unauthorized before looking at the body", async ({ t }) => {
    const response = await call(t, null, "POST", "/api/flows", "{not json");
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 403 to a caller without an account, before parsing the body", async ({ t }) => {
    const user = await signUp(t.app);
    for (const payload of ["{not json", { name: "Flow" }]) {
      const response = await call(t, user, "POST", "/api/flows", payload);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ error: expect.stringContaining("account") });
    }
  });

  it.for([
    ["text that is not JSON", "{name: flow"],
    ["an empty body", ""],
    ["a JSON array", "[]"],
    ["a JSON string", '"flow"'],
    ["a JSON number", "42"],
    ["JSON null", "null"],
  ] as const)(
    "answers 400 Invalid JSON for %s and creates nothing",
    async ([_label, payload], { t, owner: { user, accountId } }) => {
      const response = await call(t, user, "POST", "/api/flows", payload);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: expect.stringMatching(/^Invalid JSON/) });
      expect(await countFlows(t, accountId)).toBe(0);
    },
  );
});

describe("POST /api/flows plain path", () => {
  it("creates a draft with the trimmed name and the documented defaults", async ({
    t,
    owner: { user, accountId },
  }) => {
    const response = await call(t, user, "POST", "/api/flows", { name: "  Greeting  " });
    expect(response.statusCode).toBe(201);
    const { flow } = response.json();
    expect(flow).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      account_id: accountId,
      user_id: user.id,
      name: "Greeting",
      description: null,
      status: "draft",
      trigger_type: "keyword",
      trigger_config: {},
      entry_node_id: null,
      fallback_policy: DEFAULT_FALLBACK_POLICY,
      execution_count: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const read = await call(t, user, "GET", `/api/flows/${flow.id}`);
    expect(read.json()).toEqual({ flow, nodes: [] });
  });

  it("keeps a supplied description, trigger_type and trigger_config", async ({ t, owner: { user } }) => {
    const flow = await createFlow(t, user, {
      name: "Manual",
      description: "Started by agents",
      trigger_type: "manual",
      trigger_config: { note: "x" },
    });
    expect(flow).toMatchObject({
      description: "Started by agents",
      trigger_type: "manual",
      trigger_config: { note: "x" },
      status: "draft",
    });
  });

  it.for([
    ["name missing", {}, "name is required"],
    ["name null", { name: null }, "name is required"],
    ["name blank", { name: "   " }, "name is required"],
    ["template_slug empty (so the plain path) without a name", { template_slug: "" }, "name is required"],
    ["name a number", { name: 7 }, "name: must be a string"],
    ["name over 200 characters", { name: "n".repeat(201) }, "name: must be at most 200 characters"],
    ["description a number", { name: "F", description: 3 }, "description: must be a string"],
    ["trigger_type unknown", { name: "F", trigger_type: "cron" }, "trigger_type: must be one of"],
    ["trigger_config an array", { name: "F", trigger_config: ["hi"] }, "trigger_config: must be an object"],
    ["trigger_config null", { name: "F", trigger_config: null }, "trigger_config: must be an object"],
    ["a NUL character in the name", { name: "a\u0000b" }, "name: must not contain NUL characters"],
  ] as const)(
    "answers 400 when %s and creates nothing",
    async ([_label, body, message], { t, owner: { user, accountId } }) => {
      const response = await call(t, user, "POST", "/api/flows", body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: expect.stringContaining(message) });
      expect(await countFlows(t, accountId)).toBe(0);
    },
  );

  it("answers 400 for a trigger_config nested deeper than 20 levels", async ({ t, owner: { user } }) => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 25; i++) deep = { a: deep };
    const response = await call(t, user, "POST", "/api/flows", { name: "Deep", trigger_config: deep });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toContain("trigger_config: is nested deeper than 20 levels");
  });
});

describe("POST /api/flows template path", () => {
  it("clones a template's description, trigger, entry node and nodes into a draft", async ({
    t,
    owner: { user, accountId },
  }) => {
    const template = FLOW_TEMPLATES.find((x) => x.slug === "faq_bot")!;
    const response = await call(t, user, "POST", "/api/flows", {
      template_slug: "faq_bot",
      description: "ignored",
      trigger_type: "manual",
      trigger_config: { ignored: true },
    });
    expect(response.statusCode).toBe(201);
    const { flow } = response.json();
    expect(flow).toMatchObject({
      account_id: accountId,
      user_id: user.id,
      name: template.name,
      description: template.description,
      status: "draft",
      trigger_type: "keyword",
      trigger_config: template.trigger_config,
      entry_node_id: template.entry_node_id,
    });
    const read = await call(t, user, "GET", `/api/flows/${flow.id}`);
    const nodes = read.json().nodes as Record<string, unknown>[];
    expect(nodes.map((n) => [n.node_key, n.node_type, n.config, n.position_x, n.position_y])).toEqual(
      template.nodes.map((n) => [n.node_key, n.node_type, n.config, n.position_x, n.position_y]),
    );
  });

  it("names the clone from the trimmed body name, or the template's name when blank", async ({
    t,
    owner: { user },
  }) => {
    expect((await createFlow(t, user, { template_slug: "lead_capture", name: "  Sales leads " })).name).toBe(
      "Sales leads",
    );
    expect((await createFlow(t, user, { template_slug: "lead_capture", name: "  " })).name).toBe(
      "Lead capture",
    );
    expect((await createFlow(t, user, { template_slug: "welcome_menu", name: null })).name).toBe(
      "Welcome menu",
    );
  });

  it("answers 400 naming an unknown slug and creates nothing", async ({ t, owner: { user, accountId } }) => {
    const response = await call(t, user, "POST", "/api/flows", { template_slug: "pizza_order", name: "X" });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.stringContaining("pizza_order") });
    expect(await countFlows(t, accountId)).toBe(0);
  });

  it("answers 400 for a template_slug or name of the wrong type", async ({
    t,
    owner: { user, accountId },
  }) => {
    const slug = await call(t, user, "POST", "/api/flows", { template_slug: 12 });
    expect(slug.statusCode).toBe(400);
    expect(slug.json().error).toContain("template_slug: must be a string");
    const name = await call(t, user, "POST", "/api/flows", { template_slug: "faq_bot", name: ["x"] });
    expect(name.statusCode).toBe(400);
    expect(name.json().error).toContain("name: must be a string");
    expect(await countFlows(t, accountId)).toBe(0);
  });
});

describe("GET /api/flows", () => {
  it("answers 401 without a session", async ({ t }) => {
    const response = await call(t, null, "GET", "/api/flows");
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers an empty list to a caller without an account", async ({ t }) => {
    const user = await signUp(t.app);
    const response = await call(t, user, "GET", "/api/flows");
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ flows: [], next_cursor: null });
  });

  it("lists the account's flows newest first, to every member and nobody else", async ({
    t,
    owner: { user: owner },
  }) => {
    const mate = await addMember(t.app, owner);
    const first = await createFlow(t, owner, { name: "First" });
    const second = await createFlow(t, mate, { name: "Second" });
    const { user: stranger } = await signUpWithAccount(t.app);
    await createFlow(t, stranger, { name: "Theirs" });

    for (const user of [owner, mate]) {
      const response = await call(t, user, "GET", "/api/flows");
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ flows: [second, first], next_cursor: null });
    }
    const theirs = await call(t, stranger, "GET", "/api/flows");
    expect(theirs.json().flows.map((f: { name: string }) => f.name)).toEqual(["Theirs"]);
  });

  it("pages with limit and cursor through flows sharing one created_at, without gaps or repeats", async ({
    t,
    owner: { user, accountId },
  }) => {
    await t.database.pool.query(
      `insert into flows (account_id, user_id, name, created_at)
       select $1, $2, 'Flow ' || i, timestamptz '2026-01-01T00:00:00Z' + (i / 3) * interval '1 second'
       from generate_series(1, 7) i`,
      [accountId, user.id],
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/api/flows?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const response = await call(t, user, "GET", url);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.flows.length).toBeLessThanOrEqual(3);
      seen.push(...body.flows.map((f: { name: string }) => f.name));
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    const all = (await call(t, user, "GET", "/api/flows")).json().flows.map((f: { name: string }) => f.name);
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(7);
  });

  it("answers at most 1000 flows without a limit, with a cursor to the rest", async ({
    t,
    owner: { user, accountId },
  }) => {
    await t.database.pool.query(
      `insert into flows (account_id, user_id, name, created_at)
       select $1, $2, 'Flow ' || i, now() - i * interval '1 second' from generate_series(1, 1001) i`,
      [accountId, user.id],
    );
    const response = await call(t, user, "GET", "/api/flows");
    const body = response.json();
    expect(body.flows).toHaveLength(1000);
    expect(body.flows[0].name).toBe("Flow 1");
    expect(body.next_cursor).toEqual(expect.any(String));
    const rest = await call(t, user, "GET", `/api/flows?cursor=${encodeURIComponent(body.next_cursor)}`);
    expect(rest.json()).toEqual({
      flows: [expect.objectContaining({ name: "Flow 1001" })],
      next_cursor: null,
    });
  });

  it.for([
    ["limit=0", "limit"],
    ["limit=201", "limit"],
    ["limit=abc", "limit"],
    ["limit=1.5", "limit"],
    ["limit=-1", "limit"],
    ["limit=", "limit"],
    ["limit=2&limit=3", "limit"],
    ["cursor=garbage", "cursor"],
    [`cursor=${Buffer.from("2026-01-01T00:00:00.000Z|not-a-uuid").toString("base64url")}`, "cursor"],
  ] as const)("answers 400 for %s", async ([query, field], { t, owner: { user } }) => {
    const response = await call(t, user, "GET", `/api/flows?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.stringContaining(field) });
  });

  it("accepts the limits 1 and 200", async ({ t, owner: { user } }) => {
    await createFlow(t, user);
    await createFlow(t, user);
    const one = await call(t, user, "GET", "/api/flows?limit=1");
    expect(one.json().flows).toHaveLength(1);
    expect(one.json().next_cursor).toEqual(expect.any(String));
    const many = await call(t, user, "GET", "/api/flows?limit=200");
    expect(many.json().flows).toHaveLength(2);
    expect(many.json().next_cursor).toBeNull();
  });
});
