import { describe, expect } from "vitest";
import { FLOW_TEMPLATES } from "../../src/flows/templates.js";
import { appTest as it } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestApp } from "../helpers/harness.js";
import { call, createFlow, node, storedFlow } from "./helpers.js";

const activate = (t: TestApp, user: Parameters<typeof call>[1], id: string, status: unknown = "active") =>
  call(t, user, "POST", `/api/flows/${id}/activate`, { status });

describe("GET /api/flows/templates", () => {
  it("answers 401 without a session", async ({ t }) => {
    const response = await call(t, null, "GET", "/api/flows/templates");
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("lists the templates with their node counts", async ({ t }) => {
    const user = await signUp(t.app);
    const response = await call(t, user, "GET", "/api/flows/templates");
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      templates: FLOW_TEMPLATES.map((x) => ({
        slug: x.slug,
        name: x.name,
        description: x.description,
        trigger_type: x.trigger_type,
        node_count: x.nodes.length,
      })),
    });
    expect(response.json().templates.map((x: { slug: string }) => x.slug)).toEqual([
      "welcome_menu",
      "faq_bot",
      "lead_capture",
    ]);
  });
});

describe("POST /api/flows/{id}/activate", () => {
  it("answers 401 without a session", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user, { template_slug: "faq_bot" });
    const response = await activate(t, null, id);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 404 for another account's flow, a malformed id and a caller without an account, before the body", async ({
    t,
    owner: { user },
  }) => {
    const { id } = await createFlow(t, user, { template_slug: "faq_bot" });
    const { user: stranger } = await signUpWithAccount(t.app);
    const loner = await signUp(t.app);
    for (const [caller, url] of [
      [stranger, `/api/flows/${id}/activate`],
      [stranger, "/api/flows/nope/activate"],
      [loner, `/api/flows/${id}/activate`],
    ] as const) {
      const response = await call(t, caller, "POST", url, "{bad json");
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: "Not found" });
    }
    expect((await storedFlow(t, id)).flow.status).toBe("draft");
  });

  it("answers 400 for invalid JSON and for an unknown status", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user, { template_slug: "faq_bot" });
    const bad = await call(t, user, "POST", `/api/flows/${id}/activate`, "nope");
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/^Invalid JSON/);
    for (const body of [{ status: "live" }, {}, { status: 1 }, { status: null }]) {
      const response = await call(t, user, "POST", `/api/flows/${id}/activate`, body);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toContain("status: must be one of draft, active, archived");
    }
    expect((await storedFlow(t, id)).flow.status).toBe("draft");
  });

  it.for(FLOW_TEMPLATES.map((x) => x.slug))(
    "activates a fresh %s clone with no issues",
    async (slug, { t, owner: { user } }) => {
      const { id } = await createFlow(t, user, { template_slug: slug });
      const response = await activate(t, user, id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        flow: expect.objectContaining({ id, status: "active" }),
        issues: [],
      });
      expect((await call(t, user, "GET", `/api/flows/${id}`)).json().flow.status).toBe("active");
    },
  );

  it("answers 422 listing every blocking issue and leaves the flow a draft", async ({
    t,
    owner: { user },
  }) => {
    const { id } = await createFlow(t, user, { name: "Broken" });
    await call(t, user, "PUT", `/api/flows/${id}`, {
      entry_node_id: "start",
      nodes: [
        node("start", "start", { next_node_key: "menu" }),
        node("menu", "send_buttons", { text: "Pick", buttons: [] }),
        node("orphan", "send_message", { text: "x".repeat(1025), next_node_key: "ghost" }),
      ],
    });
    const response = await activate(t, user, id);
    expect(response.statusCode).toBe(422);
    const body = response.json();
    expect(body.error).toEqual(expect.stringContaining("4 blocking issues"));
    expect(body.issues.filter((i: { severity: string }) => i.severity === "error")).toEqual([
      expect.objectContaining({ code: "no_keywords" }),
      expect.objectContaining({ code: "button_count", node_key: "menu" }),
      expect.objectContaining({ code: "text_too_long", node_key: "orphan" }),
      expect.objectContaining({ code: "missing_target", node_key: "orphan" }),
    ]);
    expect(body.issues).toContainEqual(
      expect.objectContaining({ severity: "warning", code: "unreachable_node", node_key: "orphan" }),
    );
    expect((await storedFlow(t, id)).flow.status).toBe("draft");
  });

  it("answers 422 no_entry_node for an empty flow", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user, { name: "Empty", trigger_type: "manual" });
    const response = await activate(t, user, id);
    expect(response.statusCode).toBe(422);
    expect(response.json().issues).toEqual([
      { severity: "error", code: "no_entry_node", message: expect.any(String) },
    ]);
  });

  it("activates with warnings and returns them", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user, { name: "Warn", trigger_type: "manual" });
    await call(t, user, "PUT", `/api/flows/${id}`, {
      entry_node_id: "hello",
      nodes: [node("hello", "send_message", { text: "Hi" }), node("spare")],
    });
    const response = await activate(t, user, id);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      flow: expect.objectContaining({ status: "active" }),
      issues: [
        { severity: "warning", code: "unreachable_node", node_key: "spare", message: expect.any(String) },
      ],
    });
  });

  it("moves to draft or archived without validating, for a teammate too", async ({ t, owner: { user } }) => {
    const mate = await addMember(t.app, user);
    const { id } = await createFlow(t, user, { name: "Incomplete" });
    const before = Date.parse((await storedFlow(t, id)).flow.updated_at);
    await new Promise((r) => setTimeout(r, 5));
    const archived = await activate(t, mate, id, "archived");
    expect(archived.statusCode).toBe(200);
    expect(archived.json()).toEqual({ flow: expect.objectContaining({ status: "archived" }), issues: [] });
    expect(Date.parse(archived.json().flow.updated_at)).toBeGreaterThan(before);
    const draft = await activate(t, user, id, "draft");
    expect(draft.json().flow.status).toBe("draft");
  });

  it("validates the graph stored now: a PUT breaking an active flow makes re-activation fail", async ({
    t,
    owner: { user },
  }) => {
    const { id } = await createFlow(t, user, { template_slug: "welcome_menu" });
    expect((await activate(t, user, id)).statusCode).toBe(200);
    await call(t, user, "PUT", `/api/flows/${id}`, { trigger_config: { keywords: [] } });
    const response = await activate(t, user, id);
    expect(response.statusCode).toBe(422);
    expect(response.json().issues).toEqual([expect.objectContaining({ code: "no_keywords" })]);
  });
});

describe("OpenAPI", () => {
  it("documents every flow endpoint", async ({ t }) => {
    const response = await t.app.inject({ url: "/api/openapi.json" });
    const paths = response.json().paths;
    expect(Object.keys(paths["/api/flows"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(paths["/api/flows/templates"])).toEqual(["get"]);
    expect(Object.keys(paths["/api/flows/{id}"]).sort()).toEqual(["delete", "get", "put"]);
    expect(Object.keys(paths["/api/flows/{id}/activate"])).toEqual(["post"]);
    expect(
      paths["/api/flows/{id}"].put.requestBody.content["application/json"].schema.properties,
    ).toHaveProperty("nodes");
    expect(paths["/api/flows/{id}/activate"].post.responses).toHaveProperty("422");
  });
});
