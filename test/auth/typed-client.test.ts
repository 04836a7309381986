import createClient from "openapi-fetch";
import { describe, expect } from "vitest";
import type { paths } from "../../console/src/lib/api-types.gen.js";
import { DEMO_IMAGE } from "../../src/upstream/sandbox/demo-media.js";
import { sandboxTest as it } from "../helpers/fixtures.js";

/**
 * A client generated from the OpenAPI document (openapi-typescript's types,
 * openapi-fetch's calls) used as an integrator would: over HTTP, typed by the
 * document alone. Wrong paths, bodies or answers fail to compile or to run.
 */

describe("a client generated from the OpenAPI document", () => {
  it("signs in, builds a flow, answers a conversation, uploads a photo and reads the event stream", async ({
    s,
    biz: b,
    customer,
  }) => {
    const baseUrl = new URL(s.webhookUrl).origin;
    const anonymous = createClient<paths>({ baseUrl });

    const signIn = await anonymous.POST("/api/auth/sign-in/email", {
      body: { email: b.user.email, password: "correct horse battery" },
    });
    expect(signIn.response.status).toBe(200);
    const token = signIn.response.headers.get("set-auth-token");
    expect(token).toBeTruthy();
    const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });

    const created = await api.POST("/api/flows", { body: { name: "Welcome" } });
    expect(created.response.status).toBe(201);
    const flowId = created.data?.flow.id ?? "";
    const read = await api.GET("/api/flows/{id}", { params: { path: { id: flowId } } });
    expect(read.data?.flow.name).toBe("Welcome");
    expect(read.data?.nodes).toEqual([]);

    await customer.text("Hello, is the shop open?");
    const listed = await api.GET("/api/conversations", {});
    const conversation = listed.data?.conversations[0];
    expect(conversation?.last_message?.text).toBe("Hello, is the shop open?");
    const conversationId = conversation?.id ?? "";
    const sent = await api.POST("/api/conversations/{id}/messages", {
      params: { path: { id: conversationId } },
      body: { text: "Yes, until six" },
    });
    expect(sent.response.status).toBe(201);
    expect(sent.data?.message).toMatchObject({
      direction: "outbound",
      text: "Yes, until six",
      status: "sent",
    });

    const form = new FormData();
    form.set("file", new Blob([DEMO_IMAGE], { type: "image/png" }), "shop.png");
    form.set("caption", "Our window");
    const uploaded = await api.POST("/api/conversations/{id}/media", {
      params: { path: { id: conversationId } },
      // The document describes the parts; openapi-fetch sends a FormData as it is.
      body: form as unknown as { file: string; caption?: string },
      bodySerializer: (body) => body as unknown as FormData,
    });
    expect(uploaded.response.status, JSON.stringify(uploaded.error)).toBe(201);
    expect(uploaded.data?.message).toMatchObject({ type: "image", text: "Our window", status: "sent" });

    const controller = new AbortController();
    const stream = await api.GET("/api/events/stream", { parseAs: "stream", signal: controller.signal });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = (stream.data as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    controller.abort();
    await reader.cancel().catch(() => undefined);
  });
});
