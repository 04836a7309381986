import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createGraphClient, GraphApiError } from "../../../src/upstream/graph.js";
import { DEMO_IMAGE } from "../../../src/upstream/sandbox/demo-media.js";
import { type Sandbox, startSandbox } from "../../../src/upstream/sandbox/server.js";
import { DEMO_TEMPLATES } from "../../../src/upstream/sandbox/templates.js";
import { inboundMediaPayload } from "../../../src/upstream/sandbox/webhook-payloads.js";
import { metaOpenApi, requestExample, responseExample, shapeOf, webhookExample } from "./meta-openapi.js";

const NUMBER = {
  phoneNumberId: "106540352242922",
  accessToken: "EAAG-sandbox-token-1",
  businessAccountId: "419561257915477",
};
const OTHER = {
  phoneNumberId: "106540352242999",
  accessToken: "EAAG-other-token",
  businessAccountId: "4195612579",
};

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.close());
beforeEach(() => {
  sandbox.reset();
  sandbox.addNumber(NUMBER);
  sandbox.addNumber(OTHER);
});

const client = () => createGraphClient({ baseUrl: sandbox.url, version: "v25.0", timeoutMs: 1000 });
const MESSAGES = "/{Version}/{Phone-Number-ID}/messages";

async function call(method: string, path: string, options: { token?: string | null; body?: unknown } = {}) {
  const token = options.token === undefined ? NUMBER.accessToken : options.token;
  const response = await fetch(path.startsWith("http") ? path : `${sandbox.url}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, bytes, json: () => JSON.parse(bytes.toString()) };
}

describe("message_templates (GET /{waba_id}/message_templates)", () => {
  it("answers Meta's template objects with cursor paging, next only while there are more", async () => {
    const first = await call("GET", `/v25.0/${NUMBER.businessAccountId}/message_templates?limit=3`);
    expect(first.status).toBe(200);
    const page = first.json();
    expect(page.data).toHaveLength(3);
    const example = responseExample(
      metaOpenApi(),
      "/{Version}/{WABA-ID}/message_templates",
      "get",
      "Example response",
    ) as {
      data: Array<Record<string, unknown>>;
      paging: unknown;
    };
    // The same fields as Meta's example objects (which also show previous_category).
    for (const template of page.data) {
      for (const key of Object.keys(template)) expect(Object.keys(example.data[0]!)).toContain(key);
    }
    const { previous_category: _shownByMetaOnly, ...exampleTemplate } = example.data[0]!;
    expect(shapeOf(page.data[0])).toEqual(shapeOf(exampleTemplate));
    expect(Object.keys(page.paging.cursors).sort()).toEqual(
      Object.keys((example.paging as { cursors: object }).cursors).sort(),
    );
    expect(page.paging.next).toMatch(/after=/);

    const rest = await call("GET", page.paging.next.replace(sandbox.url, ""));
    expect(rest.json().data.map((t: { name: string }) => t.name)).toEqual(
      DEMO_TEMPLATES.slice(3).map((t) => t.name),
    );
    expect(rest.json().paging.next).toBeUndefined();
  });

  it("answers only the fields asked for, and 100 or 190 for someone else's business account", async () => {
    const page = (
      await call("GET", `/v25.0/${NUMBER.businessAccountId}/message_templates?fields=name,status`)
    ).json();
    expect(Object.keys(page.data[0]).sort()).toEqual(["id", "name", "status"]);
    const theirs = await call("GET", `/v25.0/${OTHER.businessAccountId}/message_templates`);
    expect(theirs.status).toBe(400);
    expect(theirs.json().error.code).toBe(100);
    const noToken = await call("GET", `/v25.0/${NUMBER.businessAccountId}/message_templates`, {
      token: null,
    });
    expect(noToken.json().error.code).toBe(190);
  });

  it("is read whole by the Graph client across pages", async () => {
    const many = Array.from({ length: 205 }, (_, i) => ({
      ...DEMO_TEMPLATES[0]!,
      id: String(i + 1),
      name: `t_${i}`,
    }));
    sandbox.setTemplates(NUMBER.businessAccountId, many);
    const templates = await client().listTemplates(NUMBER.accessToken, NUMBER.businessAccountId);
    expect(templates.map((t) => t.name)).toEqual(many.map((t) => t.name));
    expect(sandbox.requests().map((r) => r.query.limit)).toEqual(["100", "100", "100"]);
  });
});

describe("template sends (POST /{phone_number_id}/messages, type template)", () => {
  const send = (template: unknown) =>
    call("POST", `/v25.0/${NUMBER.phoneNumberId}/messages`, {
      body: { messaging_product: "whatsapp", to: "16505551234", type: "template", template },
    });
  const body = (...texts: string[]) => [
    { type: "body", parameters: texts.map((text) => ({ type: "text", text })) },
  ];

  it("accepts an approved template with the right parameters", async () => {
    const sent = await send({
      name: "order_update",
      language: { code: "en_US" },
      components: body("Ada", "#1"),
    });
    expect(sent.status).toBe(200);
    expect(sent.json().messages[0].id).toMatch(/^wamid\./);
    expect((await send({ name: "hello_world", language: { code: "es" } })).status).toBe(200);
  });

  it("answers 132001 for an unknown or unapproved template and 132000 for a parameter count mismatch", async () => {
    for (const template of [
      { name: "nope", language: { code: "en_US" } },
      { name: "hello_world", language: { code: "fr" } },
      { name: "fall_sale", language: { code: "en_US" }, components: body("a", "b") },
    ]) {
      const answer = await send(template);
      expect(answer.status).toBe(404);
      expect(answer.json().error).toMatchObject({
        code: 132001,
        message: expect.stringContaining("does not exist"),
      });
    }
    for (const components of [undefined, body("Ada"), body("Ada", "#1", "more")]) {
      const answer = await send({ name: "order_update", language: { code: "en_US" }, components });
      expect(answer.status).toBe(400);
      expect(answer.json().error).toMatchObject({
        code: 132000,
        message: "(#132000) Number of parameters does not match the expected number of params",
        error_data: { details: expect.stringContaining("body expects 2") },
      });
    }
  });

  it("takes named placeholders by parameter_name and answers 132000 for a parameter without or with a wrong name", async () => {
    sandbox.setTemplates(NUMBER.businessAccountId, [
      {
        id: "77",
        name: "named_offer",
        language: "en_US",
        status: "APPROVED",
        category: "MARKETING",
        components: [{ type: "BODY", text: "Hello {{first_name}}, {{city}} store opens soon." }],
      },
    ]);
    const named = (...pairs: Array<[string | undefined, string]>) => ({
      name: "named_offer",
      language: { code: "en_US" },
      components: [
        {
          type: "body",
          parameters: pairs.map(([name, text]) => ({
            type: "text",
            ...(name ? { parameter_name: name } : {}),
            text,
          })),
        },
      ],
    });
    const ok = await send(named(["city", "Porto"], ["first_name", "Ada"]));
    expect(ok.status, JSON.stringify(ok.json())).toBe(200);
    for (const [template, details] of [
      [named([undefined, "Ada"], [undefined, "Porto"]), /needs parameter_name/],
      [named(["first_name", "Ada"], ["town", "Porto"]), /no placeholder named "town"/],
      [named(["first_name", "Ada"]), /body expects 2 parameters, got 1/],
    ] as const) {
      const answer = await send(template);
      expect(answer.status).toBe(400);
      expect(answer.json().error).toMatchObject({
        code: 132000,
        error_data: { details: expect.stringMatching(details) },
      });
    }
  });

  it("is sent by the Graph client in the shape of Meta's 'Send Message Template Text' example", async () => {
    await client().sendMessage(NUMBER.accessToken, NUMBER.phoneNumberId, "16505551234", {
      type: "template",
      template: { name: "order_update", language: { code: "en_US" }, components: body("Ada", "#1") },
    });
    const example = requestExample(metaOpenApi(), MESSAGES, "post", "Send Message Template Text");
    expect(shapeOf(sandbox.requests()[0]?.body)).toEqual(shapeOf(example));
  });
});

describe("media (GET /{media_id}, the download URL, POST /{phone_number_id}/media)", () => {
  const addImage = (announce: { sha256?: string } = {}) =>
    sandbox.addMedia({
      bytes: DEMO_IMAGE,
      mimeType: "image/png",
      phoneNumberId: NUMBER.phoneNumberId,
      ...announce,
    });

  it("answers a media object like Meta's 'Retrieve Media URL' example", async () => {
    const id = addImage();
    const info = await call("GET", `/v25.0/${id}?phone_number_id=${NUMBER.phoneNumberId}`);
    expect(info.status).toBe(200);
    const example = responseExample(metaOpenApi(), "/{Version}/{Media-ID}", "get", "Retrieve Media URL");
    expect(shapeOf(info.json())).toEqual(shapeOf(example));
    expect(info.json()).toMatchObject({
      id,
      mime_type: "image/png",
      file_size: String(DEMO_IMAGE.length),
      sha256: createHash("sha256").update(DEMO_IMAGE).digest("hex"),
    });
    expect((await call("GET", `/v25.0/${id}`, { token: OTHER.accessToken })).json().error.code).toBe(100);
    expect((await call("GET", `/v25.0/${id}?phone_number_id=${OTHER.phoneNumberId}`)).json().error.code).toBe(
      100,
    );
  });

  it("serves the bytes only with the number's bearer token, and only for 5 minutes", async () => {
    const id = addImage();
    const { url } = (await call("GET", `/v25.0/${id}`)).json();
    expect(url.startsWith(sandbox.url)).toBe(true);
    expect((await call("GET", url, { token: null })).status).toBe(401);
    expect((await call("GET", url, { token: OTHER.accessToken })).status).toBe(401);
    expect((await call("GET", url.replace(/hash=[^&]+/, "hash=forged"))).status).toBe(404);
    const ok = await call("GET", url);
    expect(ok.status).toBe(200);
    expect(ok.bytes.equals(DEMO_IMAGE)).toBe(true);

    sandbox.advanceTime(4 * 60 * 1000);
    expect((await call("GET", url)).status).toBe(200);
    sandbox.advanceTime(61 * 1000);
    expect((await call("GET", url)).status).toBe(404);
    const fresh = (await call("GET", `/v25.0/${id}`)).json().url;
    expect((await call("GET", fresh)).status).toBe(200);
  });

  it("is fetched by the Graph client with the bearer token, within a size limit", async () => {
    const id = addImage();
    const info = await client().getMediaInfo(NUMBER.accessToken, id, NUMBER.phoneNumberId);
    expect(info).toMatchObject({ id, mimeType: "image/png", fileSize: DEMO_IMAGE.length });
    const bytes = await client().downloadMedia(NUMBER.accessToken, info.url, DEMO_IMAGE.length);
    expect(bytes.equals(DEMO_IMAGE)).toBe(true);
    const tooLarge = await client()
      .downloadMedia(NUMBER.accessToken, info.url, DEMO_IMAGE.length - 1)
      .catch((e: unknown) => e);
    expect(tooLarge).toBeInstanceOf(GraphApiError);
    expect((tooLarge as GraphApiError).kind).toBe("too_large");
  });

  it("takes uploads as multipart with Meta's types and limits, answering { id }", async () => {
    const id = await client().uploadMedia(NUMBER.accessToken, NUMBER.phoneNumberId, {
      bytes: DEMO_IMAGE,
      mimeType: "image/png",
      filename: 'photo "1".png',
    });
    const example = responseExample(
      metaOpenApi(),
      "/{Version}/{Phone-Number-ID}/media",
      "post",
      "Upload Image JSON",
    );
    expect(shapeOf({ id })).toEqual(shapeOf(example));
    expect(sandbox.media(id)).toEqual({
      bytes: DEMO_IMAGE,
      mimeType: "image/png",
      filename: "photo _1_.png",
    });
    const [upload] = sandbox.requests();
    expect(Object.keys(upload?.body as object).sort()).toEqual(
      Object.keys(
        metaOpenApi().paths["/{Version}/{Phone-Number-ID}/media"].post.requestBody.content[
          "multipart/form-data"
        ].schema.properties,
      )
        .concat("type")
        .sort(),
    );

    const gif = await client()
      .uploadMedia(NUMBER.accessToken, NUMBER.phoneNumberId, {
        bytes: Buffer.from("GIF89a"),
        mimeType: "image/gif",
        filename: "a.gif",
      })
      .catch((e: unknown) => e as GraphApiError);
    expect(gif).toMatchObject({ code: 131053, details: "Unsupported file type image/gif" });
    const big = await client()
      .uploadMedia(NUMBER.accessToken, NUMBER.phoneNumberId, {
        bytes: Buffer.alloc(5 * 1024 * 1024 + 1),
        mimeType: "image/jpeg",
        filename: "a.jpg",
      })
      .catch((e: unknown) => e as GraphApiError);
    expect(big).toMatchObject({ code: 131053 });
    const json = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/media`, {
      body: { messaging_product: "whatsapp" },
    });
    expect(json.json().error.code).toBe(100);
  });

  it("reads uploads as @fastify/multipart does: a standard FormData, and refuses what it cannot read with Meta's envelope", async () => {
    const upload = (body: BodyInit, headers: Record<string, string> = {}) =>
      fetch(`${sandbox.url}/v25.0/${NUMBER.phoneNumberId}/media`, {
        method: "POST",
        headers: { authorization: `Bearer ${NUMBER.accessToken}`, ...headers },
        body,
      });
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("file", new Blob([DEMO_IMAGE], { type: "image/png" }), "shop.png");
    const taken = await upload(form);
    expect(taken.status).toBe(200);
    const { id } = (await taken.json()) as { id: string };
    expect(sandbox.media(id)).toEqual({ bytes: DEMO_IMAGE, mimeType: "image/png", filename: "shop.png" });
    expect(sandbox.requests().at(-1)?.body).toEqual({
      messaging_product: "whatsapp",
      file: { filename: "shop.png", content_type: "image/png", size: DEMO_IMAGE.length },
    });

    const noFile = new FormData();
    noFile.set("messaging_product", "whatsapp");
    const missing = await upload(noFile);
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { error_data: { details: string } } }).error).toMatchObject({
      code: 100,
      error_data: { details: "file is required" },
    });

    // A body cut off before its closing boundary.
    const cut = await upload(
      '--xyz\r\ncontent-disposition: form-data; name="messaging_product"\r\n\r\nwhats',
      {
        "content-type": "multipart/form-data; boundary=xyz",
      },
    );
    expect(cut.status).toBe(400);
    expect(((await cut.json()) as { error: { code: number; fbtrace_id: string } }).error).toMatchObject({
      code: 100,
      fbtrace_id: expect.any(String),
    });
  });

  it("sends media by an uploaded id (Meta's 'Send Image Message by ID'), refusing unknown ids", async () => {
    const id = addImage();
    await client().sendMessage(NUMBER.accessToken, NUMBER.phoneNumberId, "16505551234", {
      type: "image",
      image: { id },
    });
    expect(shapeOf(sandbox.requests()[0]?.body)).toEqual(
      shapeOf(requestExample(metaOpenApi(), MESSAGES, "post", "Send Image Message by ID")),
    );
    const unknown = await call("POST", `/v25.0/${NUMBER.phoneNumberId}/messages`, {
      body: { messaging_product: "whatsapp", to: "1650", type: "image", image: { id: "999" } },
    });
    expect(unknown.json().error.code).toBe(100);
  });
});

describe("read receipts (POST /{phone_number_id}/messages, status read)", () => {
  it("are sent by the Graph client like Meta's 'Send typing indicator and read receipt' example", async () => {
    await client().markRead(NUMBER.accessToken, NUMBER.phoneNumberId, "wamid.abc", { typing: true });
    await client().markRead(NUMBER.accessToken, NUMBER.phoneNumberId, "wamid.def");
    const [withTyping, plain] = sandbox.requests();
    const example = requestExample(metaOpenApi(), MESSAGES, "post", "Send typing indicator and read receipt");
    expect(shapeOf(withTyping?.body)).toEqual(shapeOf(example));
    expect(withTyping?.body).toEqual({
      messaging_product: "whatsapp",
      status: "read",
      message_id: "wamid.abc",
      typing_indicator: { type: "text" },
    });
    expect(plain?.body).toEqual({ messaging_product: "whatsapp", status: "read", message_id: "wamid.def" });
  });

  it("are refused without a message_id or with an unknown typing indicator", async () => {
    const path = `/v25.0/${NUMBER.phoneNumberId}/messages`;
    expect(
      (await call("POST", path, { body: { messaging_product: "whatsapp", status: "read" } })).json().error
        .code,
    ).toBe(100);
    const badTyping = await call("POST", path, {
      body: {
        messaging_product: "whatsapp",
        status: "read",
        message_id: "wamid.x",
        typing_indicator: { type: "audio" },
      },
    });
    expect(badTyping.json().error.code).toBe(100);
  });
});

describe("customer media webhooks", () => {
  it("are shaped like Meta's 'Image Message' example", () => {
    const { payload } = inboundMediaPayload({
      phoneNumberId: NUMBER.phoneNumberId,
      from: "16505551234",
      name: "Sheena",
      type: "image",
      mediaId: "1003383421387256",
      mimeType: "image/jpeg",
      sha256: "SfInY0gGKTsJlUWbwxC1k+FAD0FZHvzwfpvO0zX0GUI=",
      caption: "Taj Mahal",
    });
    expect(shapeOf(payload)).toEqual(shapeOf(webhookExample(metaOpenApi(), "Image Message")));
  });
});
