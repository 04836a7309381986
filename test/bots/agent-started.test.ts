import { describe, expect } from "vitest";
import { sandboxTest as it } from "../helpers/fixtures.js";
import { conversationsOf, customerOf, upstreamCalls } from "../helpers/sandbox-app.js";

describe("a conversation an agent starts", () => {
  it("begins paused, so the customer's keyword reaches the agent; closing re-arms it", async ({
    s,
    biz: b,
  }) => {
    const call = (method: "POST" | "PATCH", url: string, payload: object) =>
      s.t.app.inject({ method, url, headers: b.user.headers, payload });
    expect((await call("POST", "/api/messaging/templates/sync", {})).statusCode).toBe(200);
    const flow = await call("POST", "/api/flows", { template_slug: "welcome_menu" });
    const flowId = flow.json().flow.id;
    expect((await call("POST", `/api/flows/${flowId}/activate`, { status: "active" })).statusCode).toBe(200);

    const phone = "16505550142";
    const started = await call("POST", "/api/conversations", {
      phone,
      template: { name: "hello_world", language: "en_US" },
    });
    expect(started.statusCode, started.body).toBe(201);
    const { id, automation } = started.json().conversation;
    expect(automation).toEqual({ state: "paused", until: null, reason: "agent_started" });

    const customer = customerOf(s, b, phone);
    await customer.text("help");
    const interactive = () =>
      upstreamCalls(s, "POST", "/messages").filter(
        (c) => (c.body as { type?: string }).type === "interactive",
      );
    expect(interactive()).toHaveLength(0);

    const closed = await call("PATCH", `/api/conversations/${id}`, { status: "closed" });
    expect(closed.json().conversation.automation.state).toBe("active");
    await customer.text("help");
    expect(interactive()).toHaveLength(1);
    expect((await conversationsOf(s, b))[0].automation.state).toBe("active");
  });
});
