import { describe, expect } from "vitest";
import { insertContact, appTest as it } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { call, createFlow, node, storedFlow } from "./helpers.js";

const NOT_FOUND = { error: "Not found" };
const missingId = "3f1c2b7e-0000-4000-8000-000000000000";
const malformedIds = ["not-a-uuid", "123", "3f1c2b7e-0000-4000-8000-00000000000Z", "%27%20or%201%3D1--"];

/** A flow with two nodes, owned by a fresh account. */
async function flowWithNodes(t: TestApp): Promise<{ owner: TestUser; accountId: string; id: string }> {
  const { user: owner, accountId } = await signUpWithAccount(t.app);
  const { id } = await createFlow(t, owner, { name: "Original" });
  const put = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: [node("one"), node("two")] });
  expect(put.statusCode).toBe(200);
  return { owner, accountId, id };
}

describe("GET /api/flows/{id}", () => {
  it("answers 401 without a session", async ({ t }) => {
    const { id } = await flowWithNodes(t);
    const response = await call(t, null, "GET", `/api/flows/${id}`);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers the flow and its nodes to the owner and to a teammate", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const mate = await addMember(t.app, owner);
    for (const user of [owner, mate]) {
      const response = await call(t, user, "GET", `/api/flows/${id}`);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.flow).toMatchObject({ id, name: "Original" });
      expect(body.nodes).toEqual([
        {
          id: expect.any(String),
          flow_id: id,
          node_key: "one",
          node_type: "end",
          config: {},
          position_x: 0,
          position_y: 0,
          created_at: expect.any(String),
        },
        expect.objectContaining({ node_key: "two" }),
      ]);
    }
  });

  it("writes the flow exactly as the list does (its SQL is read back from the same serializer), keys in order", async ({
    t,
  }) => {
    const { owner, id } = await flowWithNodes(t);
    const read = await call(t, owner, "GET", `/api/flows/${id}`);
    const list = await call(t, owner, "GET", "/api/flows");
    const listed = list.json().flows.find((f: { id: string }) => f.id === id);
    expect(read.json().flow).toEqual(listed);
    expect(Object.keys(read.json().flow)).toEqual(Object.keys(listed));
  });

  it("answers 404 Not found for a missing id, another account's flow and a caller without an account", async ({
    t,
  }) => {
    const { id } = await flowWithNodes(t);
    const { user: stranger } = await signUpWithAccount(t.app);
    const loner = await signUp(t.app);
    for (const [user, url] of [
      [stranger, `/api/flows/${missingId}`],
      [stranger, `/api/flows/${id}`],
      [loner, `/api/flows/${id}`],
    ] as const) {
      const response = await call(t, user, "GET", url);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual(NOT_FOUND);
    }
  });

  it.for(malformedIds)("answers 404 Not found for the malformed id %s", async (badId, { t }) => {
    const { owner } = await flowWithNodes(t);
    const response = await call(t, owner, "GET", `/api/flows/${badId}`);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual(NOT_FOUND);
  });

  it("returns nodes in the order they were written, not by key or id", async ({
    t,
    owner: { user: owner },
  }) => {
    const { id } = await createFlow(t, owner);
    const keys = ["zeta", "alpha", "mid", "beta", "omega", "a1", "a10", "a2"];
    await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: keys.map((k) => node(k)) });
    const response = await call(t, owner, "GET", `/api/flows/${id}`);
    const nodes = response.json().nodes as { node_key: string; created_at: string }[];
    expect(nodes.map((n) => n.node_key)).toEqual(keys);
    expect(new Set(nodes.map((n) => n.created_at)).size).toBe(1);
  });

  it("answers exactly what the last PUT answered: same fields, timestamps, numbers and nested config", async ({
    t,
    owner: { user: owner },
  }) => {
    const { id } = await createFlow(t, owner, { name: "Same" });
    const put = await call(t, owner, "PUT", `/api/flows/${id}`, {
      description: 'ünïcode "quoted" text',
      trigger_config: { keywords: ["hi"], case_sensitive: false },
      fallback_policy: { on_unknown_reply: "ignore" },
      entry_node_id: "a",
      nodes: [
        { ...node("a"), position_x: 12.5, position_y: -0.1 },
        {
          node_key: "b",
          node_type: "send_message",
          config: { text: 'héllo 👋 "quoted" \\ back', nested: { list: [1, 2.25, null, true] } },
        },
      ],
    });
    expect(put.statusCode).toBe(200);
    expect(put.headers["content-type"]).toBe("application/json; charset=utf-8");
    // The nodes are written and answered as UTF-8 bytes: characters outside ASCII come back whole.
    expect(put.json().nodes[1].config.text).toBe('héllo 👋 "quoted" \\ back');
    const read = await call(t, owner, "GET", `/api/flows/${id}`);
    expect(read.statusCode).toBe(200);
    expect(read.headers["content-type"]).toMatch(/^application\/json/);
    expect(read.json()).toEqual(put.json());
    expect(read.json().flow.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe("PUT /api/flows/{id}", () => {
  it("answers 401 without a session", async ({ t }) => {
    const { id } = await flowWithNodes(t);
    const response = await call(t, null, "PUT", `/api/flows/${id}`, { name: "Hacked" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("checks ownership before the body: 404 even for invalid JSON", async ({ t }) => {
    const { id } = await flowWithNodes(t);
    const { user: stranger } = await signUpWithAccount(t.app);
    const loner = await signUp(t.app);
    for (const [user, url] of [
      [stranger, `/api/flows/${id}`],
      [stranger, `/api/flows/${missingId}`],
      [stranger, "/api/flows/not-a-uuid"],
      [loner, `/api/flows/${id}`],
    ] as const) {
      const response = await call(t, user, "PUT", url, "{not json");
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual(NOT_FOUND);
    }
  });

  it("does not let another account change the flow", async ({ t }) => {
    const { id } = await flowWithNodes(t);
    const { user: stranger } = await signUpWithAccount(t.app);
    const before = await storedFlow(t, id);
    const response = await call(t, stranger, "PUT", `/api/flows/${id}`, { name: "Mine now", nodes: [] });
    expect(response.statusCode).toBe(404);
    expect(await storedFlow(t, id)).toEqual(before);
  });

  it.for([
    ["text that is not JSON", "{nope"],
    ["an empty body", ""],
    ["JSON null", "null"],
    ["a JSON array", "[]"],
    ["a JSON string", '"name"'],
    ["a JSON number", "1"],
  ] as const)("answers 400 Invalid JSON for %s and changes nothing", async ([_label, payload], { t }) => {
    const { owner, id } = await flowWithNodes(t);
    const before = await storedFlow(t, id);
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.stringMatching(/^Invalid JSON/) });
    expect(await storedFlow(t, id)).toEqual(before);
  });

  it("changes only the supplied fields, stores the name trimmed and moves updated_at", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const before = (await call(t, owner, "GET", `/api/flows/${id}`)).json();
    await new Promise((r) => setTimeout(r, 5));
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, { name: "  Renamed  " });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.flow).toEqual({ ...before.flow, name: "Renamed", updated_at: expect.any(String) });
    expect(Date.parse(body.flow.updated_at)).toBeGreaterThan(Date.parse(before.flow.updated_at));
    expect(body.nodes).toEqual(before.nodes);
  });

  it("moves updated_at even when the body changes nothing", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const before = (await call(t, owner, "GET", `/api/flows/${id}`)).json();
    await new Promise((r) => setTimeout(r, 5));
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, {});
    expect(response.statusCode).toBe(200);
    expect(Date.parse(response.json().flow.updated_at)).toBeGreaterThan(Date.parse(before.flow.updated_at));
    expect(response.json().nodes).toEqual(before.nodes);
  });

  it("sets every updatable field and returns the new state", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, {
      description: "Greets people",
      trigger_type: "first_inbound_message",
      trigger_config: {},
      entry_node_id: "hello",
      fallback_policy: { on_unknown_reply: "handoff" },
      nodes: [
        {
          node_key: "hello",
          node_type: "send_message",
          config: { text: "Hi" },
          position_x: 10,
          position_y: 20.5,
        },
        node("bye"),
      ],
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.flow).toMatchObject({
      name: "Original",
      description: "Greets people",
      trigger_type: "first_inbound_message",
      trigger_config: {},
      entry_node_id: "hello",
      fallback_policy: { on_unknown_reply: "handoff" },
    });
    expect(
      body.nodes.map((n: Record<string, unknown>) => [n.node_key, n.config, n.position_x, n.position_y]),
    ).toEqual([
      ["hello", { text: "Hi" }, 10, 20.5],
      ["bye", {}, 0, 0],
    ]);
    expect(await call(t, owner, "GET", `/api/flows/${id}`).then((r) => r.json())).toEqual(body);
  });

  it("clears description and entry_node_id with null", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    await call(t, owner, "PUT", `/api/flows/${id}`, { description: "d", entry_node_id: "one" });
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, {
      description: null,
      entry_node_id: null,
    });
    expect(response.json().flow).toMatchObject({ description: null, entry_node_id: null });
  });

  it("replaces all nodes when nodes is given, clears them with [], and keeps them when absent", async ({
    t,
  }) => {
    const { owner, id } = await flowWithNodes(t);
    const replaced = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: [node("three")] });
    expect(replaced.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(["three"]);
    const untouched = await call(t, owner, "PUT", `/api/flows/${id}`, { name: "Still" });
    expect(untouched.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(["three"]);
    const cleared = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: [] });
    expect(cleared.json().nodes).toEqual([]);
    expect((await storedFlow(t, id)).keys).toEqual([]);
  });

  it("lets a teammate edit the flow", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const mate = await addMember(t.app, owner);
    const response = await call(t, mate, "PUT", `/api/flows/${id}`, {
      name: "Team edit",
      nodes: [node("x")],
    });
    expect(response.statusCode).toBe(200);
    const read = await call(t, owner, "GET", `/api/flows/${id}`);
    expect(read.json().flow.name).toBe("Team edit");
    expect(read.json().flow.user_id).toBe(owner.id);
    expect(read.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(["x"]);
  });

  it.for([
    ["name blank", { name: "  " }, "name cannot be empty"],
    ["name empty", { name: "" }, "name cannot be empty"],
    ["name null", { name: null }, "name cannot be empty"],
    ["name a number", { name: 5 }, "name: must be a string"],
    ["description a number", { description: 1 }, "description: must be a string"],
    ["trigger_type unknown", { trigger_type: "webhook" }, "trigger_type: must be one of"],
    ["trigger_config an array", { trigger_config: [] }, "trigger_config: must be an object"],
    ["trigger_config a string", { trigger_config: "x" }, "trigger_config: must be an object"],
    ["entry_node_id a number", { entry_node_id: 3 }, "entry_node_id: must be a string"],
    ["fallback_policy an array", { fallback_policy: [] }, "fallback_policy: must be an object"],
    ["nodes an object", { nodes: { node_key: "a" } }, "nodes: must be an array"],
    ["nodes null", { nodes: null }, "nodes: must be an array"],
    ["a node that is not an object", { nodes: [node("a"), 5] }, "nodes[1]: must be an object"],
    ["node_key empty", { nodes: [node("")] }, "nodes[0]: node_key must not be empty"],
    ["node_key a number", { nodes: [{ ...node("a"), node_key: 1 }] }, "nodes[0]: node_key must be a string"],
    [
      "node_key over 100 characters",
      { nodes: [node("k".repeat(101))] },
      "node_key must be at most 100 characters",
    ],
    ["node_type unknown", { nodes: [node("a", "jump")] }, 'nodes[0] (node_key "a"): node_type "jump"'],
    [
      "node_type a number",
      { nodes: [{ ...node("a"), node_type: 3 }] },
      'nodes[0] (node_key "a"): node_type must',
    ],
    [
      "config an array",
      { nodes: [{ ...node("a"), config: [] }] },
      'nodes[0] (node_key "a"): config must be an object',
    ],
    ["config missing", { nodes: [{ node_key: "a", node_type: "end" }] }, "config must be an object"],
    ["node_keys repeated", { nodes: [node("a"), node("b"), node("a")] }, 'nodes[2] (node_key "a")'],
    ["position_y a string", { nodes: [{ ...node("a"), position_y: "3" }] }, "position_y must be a number"],
  ] as const)("answers 400 when %s and changes nothing", async ([_label, body, message], { t }) => {
    const { owner, id } = await flowWithNodes(t);
    const before = await storedFlow(t, id);
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, { name: "Changed?", ...body });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: expect.stringContaining(message) });
    expect(await storedFlow(t, id)).toEqual(before);
  });

  it("accepts config nested 20 levels and refuses 21, naming the node", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const nested = (depth: number) => {
      let value: Record<string, unknown> = {};
      for (let i = 1; i < depth; i++) value = { deeper: value };
      return value;
    };
    const ok = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: [node("deep", "end", nested(20))] });
    expect(ok.statusCode).toBe(200);
    const tooDeep = await call(t, owner, "PUT", `/api/flows/${id}`, {
      nodes: [node("deeper", "end", nested(21))],
    });
    expect(tooDeep.statusCode).toBe(400);
    expect(tooDeep.json().error).toBe('nodes[0] (node_key "deeper"): config is nested deeper than 20 levels');
    expect((await storedFlow(t, id)).keys).toEqual(["deep"]);
  });

  it("accepts a 100-character node_key", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: [node("k".repeat(100))] });
    expect(response.statusCode).toBe(200);
  });

  it("answers 413 for a 10,000-node body past the 1 MiB limit and changes nothing", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const before = await storedFlow(t, id);
    const nodes = Array.from({ length: 10_000 }, (_, i) =>
      node(`node-${i}`, "send_message", { text: `Message number ${i} with some padding text` }),
    );
    const payload = JSON.stringify({ nodes });
    expect(payload.length).toBeGreaterThan(1024 * 1024);
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, payload);
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ error: expect.stringContaining("1 MiB") });
    expect(await storedFlow(t, id)).toEqual(before);
  });

  it("answers 400 for more than 1000 nodes that fit in 1 MiB", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const nodes = Array.from({ length: 1001 }, (_, i) => node(`n${i}`));
    const response = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toContain("at most 1000 nodes");
    const fits = await call(t, owner, "PUT", `/api/flows/${id}`, { nodes: nodes.slice(1) });
    expect(fits.statusCode).toBe(200);
    expect(fits.json().nodes).toHaveLength(1000);
  });
});

describe("DELETE /api/flows/{id}", () => {
  it("answers 401 without a session and keeps the flow", async ({ t }) => {
    const { id } = await flowWithNodes(t);
    const response = await call(t, null, "DELETE", `/api/flows/${id}`);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
    expect((await storedFlow(t, id)).flow).toBeDefined();
  });

  it("answers 404 for a missing id, a malformed id, another account's flow and a caller without an account", async ({
    t,
  }) => {
    const { id } = await flowWithNodes(t);
    const { user: stranger } = await signUpWithAccount(t.app);
    const loner = await signUp(t.app);
    for (const [user, url] of [
      [stranger, `/api/flows/${missingId}`],
      [stranger, "/api/flows/not-a-uuid"],
      [stranger, `/api/flows/${id}`],
      [loner, `/api/flows/${id}`],
    ] as const) {
      const response = await call(t, user, "DELETE", url);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual(NOT_FOUND);
    }
    expect((await storedFlow(t, id)).keys).toEqual(["one", "two"]);
  });

  it("deletes the flow for a teammate, then answers 404 to a second delete", async ({ t }) => {
    const { owner, id } = await flowWithNodes(t);
    const mate = await addMember(t.app, owner);
    const response = await call(t, mate, "DELETE", `/api/flows/${id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ ok: true });
    expect((await call(t, owner, "GET", `/api/flows/${id}`)).statusCode).toBe(404);
    expect((await call(t, owner, "DELETE", `/api/flows/${id}`)).statusCode).toBe(404);
  });

  it("removes nodes, runs and run events, and frees the contact for a new active run", async ({ t }) => {
    const { owner, accountId, id } = await flowWithNodes(t);
    const { id: otherFlowId } = await createFlow(t, owner, { name: "Other" });
    const { contact, conversation } = await insertContact(t, { accountId });
    const pool = t.database.pool;
    const {
      rows: [run],
    } = await pool.query(
      `insert into flow_runs (flow_id, account_id, contact_id, conversation_id, status, current_node_key)
       values ($1, $2, $3, $4, 'active', 'one') returning id`,
      [id, accountId, contact.id, conversation.id],
    );
    await pool.query(
      `insert into flow_run_events (run_id, flow_id, event_type, node_key) values ($1, $2, 'started', null), ($1, $2, 'node_entered', 'one')`,
      [run.id, id],
    );
    const startOther = () =>
      pool.query(
        `insert into flow_runs (flow_id, account_id, contact_id, conversation_id, status) values ($1, $2, $3, $4, 'active')`,
        [otherFlowId, accountId, contact.id, conversation.id],
      );
    // While the run is active the contact cannot enter another flow.
    await expect(startOther()).rejects.toThrow(/flow_runs_one_active_per_contact_uq/);

    const response = await call(t, owner, "DELETE", `/api/flows/${id}`);
    expect(response.json()).toEqual({ ok: true });
    const count = async (table: string) =>
      Number((await pool.query(`select count(*) from ${table} where flow_id = $1`, [id])).rows[0].count);
    expect(await count("flow_graphs")).toBe(0);
    expect(await count("flow_runs")).toBe(0);
    expect(await count("flow_run_events")).toBe(0);
    await expect(startOther()).resolves.toMatchObject({ rowCount: 1 });
  });
});
