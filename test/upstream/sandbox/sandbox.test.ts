import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createGraphClient, GraphApiError } from "../../../src/upstream/graph.js";
import { type Sandbox, startSandbox } from "../../../src/upstream/sandbox/server.js";
import { metaOpenApi, requestSchema, validateAgainst } from "./meta-openapi.js";

const NUMBER = {
  phoneNumberId: "106540352242922",
  accessToken: "EAAG-sandbox-token-1",
  displayPhoneNumber: "+1 555-078-3881",
  verifiedName: "Sheena's Shop",
  businessAccountId: "419561257915477",
};

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.close());
beforeEach(() => {
  sandbox.reset();
  sandbox.addNumber(NUMBER);
});

async function call(method: string, path: string, options: { token?: string | null; body?: unknown } = {}) {
  const token = options.token === undefined ? NUMBER.accessToken : options.token;
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) };
}

const expectMetaError = (body: unknown, code: number) =>
  expect(body).toEqual({
    error: expect.objectContaining({
      message: expect.any(String),
      type: expect.any(String),
      code,
      fbtrace_id: expect.any(String),
    }),
  });

describe("verify (GET /{phone_number_id})", () => {
  it("answers the requested fields under any version prefix", async () => {
    for (const version of ["v23.0", "v25.0"]) {
      const r = await call(
        "GET",
        `/${version}/${NUMBER.phoneNumberId}?fields=id,display_phone_number,verified_name,quality_rating`,
      );
      expect(r.status).toBe(200);
      expect(r.json()).toEqual({
        id: NUMBER.phoneNumberId,
        display_phone_number: NUMBER.displayPhoneNumber,
        verified_name: NUMBER.verifiedName,
        quality_rating: "GREEN",
      });
    }
  });

  it("answers only the id and the fields asked for", async () => {
    const r = await call("GET", `/v25.0/${NUMBER.phoneNumberId}?fields=verified_name`);
    expect(r.json()).toEqual({ id: NUMBER.phoneNumberId, verified_name: NUMBER.verifiedName });
  });

  it("rejects a wrong or missing token with OAuthException 190", async () => {
    for (const token of ["not-the-token", null]) {
      const r = await call("GET", `/v25.0/${NUMBER.phoneNumberId}`, { token });
      expect(r.status).toBe(401);
      expectMetaError(r.json(), 190);
      expect(r.json().error.type).toBe("OAuthException");
    }
  });

  it("answers error 100 for an unknown id or another number's id", async () => {
    sandbox.addNumber({ phoneNumberId: "222", accessToken: "other-token" });
    for (const id of ["999999", "222"]) {
      const r = await call("GET", `/v25.0/${id}`);
      expect(r.status).toBe(400);
      expectMetaError(r.json(), 100);
      expect(r.json().error.message).toContain(`'${id}'`);
    }
  });

  it("answers error 100 for a path without a version or an unknown edge", async () => {
    expectMetaError((await call("GET", `/${NUMBER.phoneNumberId}`)).json(), 100);
    expectMetaError(
      (await call("POST", `/v25.0/${NUMBER.phoneNumberId}/unknown_edge`, { body: {} })).json(),
      100,
    );
  });
});

describe("register (POST /{phone_number_id}/register)", () => {
  const register = (pin: unknown, token?: string) =>
    call("POST", `/v25.0/${NUMBER.phoneNumberId}/register`, {
      token,
      body: { messaging_product: "whatsapp", pin },
    });

  it("sets the two-step PIN on the first registration, then requires it", async () => {
    expect((await register("123456")).json()).toEqual({ success: true });
    const mismatch = await register("654321");
    expect(mismatch.status).toBe(400);
    expectMetaError(mismatch.json(), 133005);
    expect((await register("123456")).json()).toEqual({ success: true });
  });

  it("answers 133005 when the number already has another PIN", async () => {
    sandbox.addNumber({ ...NUMBER, pin: "111111" });
    const r = await register("222222");
    expectMetaError(r.json(), 133005);
    expect(r.json().error.message).toBe("Two step verification PIN Mismatch");
    expect((await register("111111")).json()).toEqual({ success: true });
  });

  it("rejects a malformed PIN or product with error 100 and details", async () => {
    for (const pin of ["12345", "1234567", 123456, "12a456", undefined]) {
      const r = await register(pin);
      expect(r.status).toBe(400);
      expectMetaError(r.json(), 100);
      expect(r.json().error.error_data.details).toContain("pin");
    }
    const r = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/register`, {
      body: { messaging_product: "sms", pin: "123456" },
    });
    expectMetaError(r.json(), 100);
  });

  it("checks the token before anything else", async () => {
    expectMetaError((await register("123456", "wrong")).json(), 190);
  });
});

describe("subscribed_apps (POST /{waba_id}/subscribed_apps)", () => {
  it("subscribes a business account reachable with the token", async () => {
    const r = await call("POST", `/v25.0/${NUMBER.businessAccountId}/subscribed_apps`);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ success: true });
  });

  it("answers 100 for an unknown business account and 190 for a bad token", async () => {
    expectMetaError((await call("POST", "/v25.0/123123/subscribed_apps")).json(), 100);
    expectMetaError(
      (await call("POST", `/v25.0/${NUMBER.businessAccountId}/subscribed_apps`, { token: "bad" })).json(),
      190,
    );
  });
});

describe("messages (POST /{phone_number_id}/messages)", () => {
  const base = { messaging_product: "whatsapp", recipient_type: "individual", to: "+1 (650) 555-1234" };
  const bodies: Record<string, object> = {
    text: { type: "text", text: { body: "Hello" } },
    buttons: {
      type: "interactive",
      interactive: {
        type: "button",
        body: { text: "Pick one" },
        action: { buttons: [{ type: "reply", reply: { id: "a", title: "A" } }] },
      },
    },
    list: {
      type: "interactive",
      interactive: {
        type: "list",
        body: { text: "Choose" },
        action: { button: "Options", sections: [{ title: "S", rows: [{ id: "r1", title: "Row" }] }] },
      },
    },
    image: { type: "image", image: { link: "https://example.com/a.jpg", caption: "A" } },
    video: { type: "video", video: { link: "https://example.com/a.mp4" } },
    document: { type: "document", document: { link: "https://example.com/a.pdf", filename: "a.pdf" } },
    reaction: { type: "reaction", reaction: { message_id: "wamid.abc", emoji: "👍" } },
    reaction_removal: { type: "reaction", reaction: { message_id: "wamid.abc", emoji: "" } },
  };

  for (const [name, body] of Object.entries(bodies)) {
    it(`accepts a ${name} message and answers a wamid`, async () => {
      const r = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/messages`, { body: { ...base, ...body } });
      expect(r.status).toBe(200);
      expect(r.json()).toEqual({
        messaging_product: "whatsapp",
        contacts: [{ input: base.to, wa_id: "16505551234" }],
        messages: [{ id: expect.stringMatching(/^wamid\.[A-Za-z0-9_-]{16,}$/) }],
      });
    });
  }

  it("gives every message its own id", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const r = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/messages`, {
        body: { ...base, ...bodies.text },
      });
      ids.add(r.json().messages[0].id);
    }
    expect(ids.size).toBe(5);
  });

  it("rejects a body missing messaging_product, to, type or the type's object with error 100", async () => {
    const bad = [
      { to: base.to, ...bodies.text },
      { messaging_product: "whatsapp", ...bodies.text },
      { ...base, text: { body: "x" } },
      { ...base, type: "text" },
      {
        ...base,
        type: "interactive",
        interactive: { type: "button", body: { text: "x" }, action: { buttons: [] } },
      },
      { ...base, type: "image", image: {} },
      { ...base, type: "reaction", reaction: { emoji: "👍" } },
      { ...base, type: "hologram", hologram: {} },
    ];
    for (const body of bad) {
      const r = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/messages`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expectMetaError(r.json(), 100);
    }
  });
});

describe("fault injection", () => {
  const path = `/v25.0/${NUMBER.phoneNumberId}`;

  it("answers an injected status and Meta error, for the given number of times", async () => {
    sandbox.inject(
      { method: "GET", path: `/${NUMBER.phoneNumberId}` },
      { status: 429, error: { code: 130429, message: "Rate limit hit", error_subcode: 2494055 }, times: 2 },
    );
    for (let i = 0; i < 2; i++) {
      const r = await call("GET", path);
      expect(r.status).toBe(429);
      expect(r.json().error).toMatchObject({
        code: 130429,
        message: "Rate limit hit",
        error_subcode: 2494055,
      });
    }
    expect((await call("GET", path)).status).toBe(200);
  });

  it("matches by method and by a regular expression on the path", async () => {
    sandbox.inject({ method: "POST", path: /\/register$/ }, { status: 503 });
    expect((await call("GET", path)).status).toBe(200);
    const r = await call("POST", `${path}/register`, {
      body: { messaging_product: "whatsapp", pin: "123456" },
    });
    expect(r.status).toBe(503);
    expectMetaError(r.json(), 2);
  });

  it("answers a raw non-JSON body", async () => {
    sandbox.inject({ path: /.*/ }, { status: 502, rawBody: "<html><body>Bad Gateway</body></html>" });
    const r = await call("GET", path);
    expect(r.status).toBe(502);
    expect(r.text).toBe("<html><body>Bad Gateway</body></html>");
  });

  it("delays the answer", async () => {
    sandbox.inject({ path }, { delayMs: 300 });
    const started = Date.now();
    const r = await call("GET", path);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(r.status).toBe(200);
  });

  it("drops the connection without an answer", async () => {
    sandbox.inject({ path }, { drop: true });
    await expect(call("GET", path)).rejects.toThrow();
    expect((await call("GET", path)).status).toBe(200);
  });

  it("forgets injected faults on reset", async () => {
    sandbox.inject({}, { status: 500, times: 10 });
    sandbox.reset();
    sandbox.addNumber(NUMBER);
    expect((await call("GET", path)).status).toBe(200);
  });
});

describe("request log", () => {
  it("records method, path, query, parsed body and masks the authorization value", async () => {
    await call("POST", `/v25.0/${NUMBER.phoneNumberId}/register?debug=all`, {
      body: { messaging_product: "whatsapp", pin: "123456" },
    });
    const [recorded] = sandbox.requests();
    expect(recorded).toMatchObject({
      method: "POST",
      path: `/v25.0/${NUMBER.phoneNumberId}/register`,
      query: { debug: "all" },
      body: { messaging_product: "whatsapp", pin: "123456" },
    });
    expect(recorded?.at).toBeInstanceOf(Date);
    expect(recorded?.headers.authorization).toBe("Bearer [masked]");
    expect(JSON.stringify(sandbox.requests())).not.toContain(NUMBER.accessToken);
  });

  it("is emptied by clearRequests", async () => {
    await call("GET", `/v25.0/${NUMBER.phoneNumberId}`);
    expect(sandbox.requests()).toHaveLength(1);
    sandbox.clearRequests();
    expect(sandbox.requests()).toEqual([]);
  });
});

describe("the product's Graph client against the sandbox", () => {
  const client = () => createGraphClient({ baseUrl: sandbox.url, version: "v25.0", timeoutMs: 300 });

  it("sends register and subscribed_apps requests that Meta's OpenAPI schemas accept", async () => {
    const doc = metaOpenApi();
    await client().registerPhoneNumber(NUMBER.accessToken, NUMBER.phoneNumberId, "123456");
    await client().subscribeApp(NUMBER.accessToken, NUMBER.businessAccountId);
    const [register, subscribe] = sandbox.requests();

    const registerSchema = requestSchema(doc, "/{Version}/{Phone-Number-ID}/register", "post");
    expect(validateAgainst(doc, registerSchema, register?.body)).toEqual([]);
    expect(register?.path).toMatch(/^\/v\d+\.\d+\/[0-9]+\/register$/);

    // The subscription body is optional in Meta's description; ours sends none.
    const operation = doc.paths["/{Version}/{WABA-ID}/subscribed_apps"].post;
    expect(operation.requestBody.required).toBe(false);
    expect(subscribe?.body).toBeUndefined();
    expect(validateAgainst(doc, operation.requestBody.content["application/json"].schema, {})).toEqual([]);
    expect(subscribe?.path).toMatch(/^\/v\d+\.\d+\/[0-9]+\/subscribed_apps$/);
    for (const r of [register, subscribe]) expect(r?.headers.authorization).toBe("Bearer [masked]");
  });

  it("is checked by a schema check that does catch a bad register body", () => {
    const doc = metaOpenApi();
    const schema = requestSchema(doc, "/{Version}/{Phone-Number-ID}/register", "post");
    expect(validateAgainst(doc, schema, { pin: "123456" })).toEqual(["$.messaging_product: required"]);
    expect(
      validateAgainst(doc, schema, { messaging_product: "whatsapp", pin: "12345" }).length,
    ).toBeGreaterThan(0);
  });

  it("turns each failure into a GraphApiError of the right kind, without the token", async () => {
    const expectFailure = async (kind: string, message: RegExp) => {
      const error = await client()
        .getPhoneNumber(NUMBER.accessToken, NUMBER.phoneNumberId)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GraphApiError);
      expect((error as GraphApiError).kind).toBe(kind);
      expect((error as GraphApiError).message).toMatch(message);
      expect((error as GraphApiError).message).not.toContain(NUMBER.accessToken);
      return error as GraphApiError;
    };
    sandbox.inject({}, { status: 400, error: { code: 100, message: "Bad parameter here" } });
    const api = await expectFailure("api", /^Bad parameter here$/);
    expect(api.code).toBe(100);
    expect(api.fbtraceId).toEqual(expect.any(String));

    sandbox.inject({}, { status: 502, rawBody: "<html>oops</html>" });
    await expectFailure("invalid_response", /HTTP 502/);
    sandbox.inject({}, { status: 200, rawBody: "<html>fine?</html>" });
    await expectFailure("invalid_response", /not JSON/);
    sandbox.inject({}, { delayMs: 600 });
    await expectFailure("timeout", /did not answer/);
    sandbox.inject({}, { drop: true });
    await expectFailure("network", /reach|closed/);
  });

  it("sends a message and reads the wamid and wa_id", async () => {
    const sent = await client().sendMessage(NUMBER.accessToken, NUMBER.phoneNumberId, "16505551234", {
      type: "text",
      text: { body: "Hi" },
    });
    expect(sent.messageId).toMatch(/^wamid\./);
    expect(sent.waId).toBe("16505551234");
  });
});

describe("latency", () => {
  it("waits before each Graph API answer, and reset() puts back the wait it started with", async () => {
    const slow = await startSandbox({ latencyMs: 300 });
    try {
      const started = performance.now();
      const response = await fetch(`${slow.url}/v25.0/unknown-number`);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      slow.setLatency(0);
      expect(slow.latency()).toBe(0);
      slow.reset();
      expect(slow.latency()).toBe(300);
    } finally {
      await slow.close();
    }
  });
});
