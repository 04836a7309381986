import { createHash, randomBytes } from "node:crypto";
import { describe, expect } from "vitest";
import { downloadMessageMedia } from "../../src/media/download.js";
import { DEMO_IMAGE } from "../../src/upstream/sandbox/demo-media.js";
import { insertContact, sandboxTest as it } from "../helpers/fixtures.js";
import { signUp } from "../helpers/harness.js";
import {
  type Business,
  business,
  customerOf,
  messagesOf,
  type SandboxedApp,
  upstreamCalls,
} from "../helpers/sandbox-app.js";
import { multipart } from "./multipart.js";

const b64 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("base64");

/** A customer of a new business sends a file; answers the stored message once its jobs are done. */
async function customerSends(
  s: SandboxedApp,
  b: Business,
  file: {
    bytes: Buffer;
    mimeType: string;
    type?: "image" | "document" | "audio";
    filename?: string;
    caption?: string;
  },
  announce: { sha256?: string; fileSize?: number } = {},
) {
  const customer = customerOf(s, b);
  const mediaId = s.sandbox.addMedia({
    bytes: file.bytes,
    mimeType: file.mimeType,
    phoneNumberId: b.phoneNumberId,
    ...announce,
  });
  const delivery = await customer.media({
    type: file.type ?? "image",
    mediaId,
    mimeType: file.mimeType,
    sha256: b64(file.bytes),
    filename: file.filename,
    caption: file.caption,
  });
  expect(delivery.status).toBe(200);
  const [message] = await s.t.database.pool
    .query("select * from messages where account_id = $1 and message_id = $2", [
      b.accountId,
      delivery.messageId,
    ])
    .then((r) => r.rows);
  return { message, mediaId, customer };
}

const getMedia = (
  s: SandboxedApp,
  b: Business | { user: { headers: Record<string, string> } } | null,
  id: string,
) => s.t.app.inject({ url: `/api/messages/${id}/media`, headers: b?.user.headers ?? {} });

describe("media from customers", () => {
  it("is downloaded at once, checked and stored, then served to members with safe headers", async ({
    s,
    biz: b,
  }) => {
    const { message, mediaId } = await customerSends(s, b, {
      bytes: DEMO_IMAGE,
      mimeType: "image/png",
      caption: "Our table",
    });
    expect(message.media).toEqual({
      id: mediaId,
      mime_type: "image/png",
      sha256: b64(DEMO_IMAGE),
      caption: "Our table",
      size: DEMO_IMAGE.length,
      status: "stored",
      url: `/api/messages/${message.id}/media`,
    });
    const [info] = upstreamCalls(s, "GET", `/${mediaId}`);
    expect(info?.query).toEqual({ phone_number_id: b.phoneNumberId });
    const [download] = upstreamCalls(s, "GET", "/whatsapp_business/attachments/");
    expect(download?.headers.authorization).toBe("Bearer [masked]");

    const served = await getMedia(s, b, message.id);
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(DEMO_IMAGE)).toBe(true);
    expect(served.headers).toMatchObject({
      "content-type": "image/png",
      "content-length": String(DEMO_IMAGE.length),
      "cache-control": expect.stringMatching(/^private/),
      "x-content-type-options": "nosniff",
    });
    expect(served.headers["content-disposition"]).toBeUndefined();

    const listed = await messagesOf(s, b, message.conversation_id);
    expect(listed[0].media).toMatchObject({ status: "stored", url: `/api/messages/${message.id}/media` });
  });

  it("serves a document as an attachment with a safe filename", async ({ s, biz: b }) => {
    const bytes = Buffer.from("%PDF-1.4\n% a tiny document\n");
    const { message } = await customerSends(s, b, {
      bytes,
      mimeType: "application/pdf",
      type: "document",
      filename: 'Menü "spring".pdf',
    });
    const served = await getMedia(s, b, message.id);
    expect(served.statusCode).toBe(200);
    expect(served.headers["content-type"]).toBe("application/pdf");
    expect(served.headers["content-disposition"]).toBe(
      `attachment; filename="Men_ _spring_.pdf"; filename*=UTF-8''${encodeURIComponent('Menü "spring".pdf')}`,
    );
  });

  it("serves a customer's filename without its right-to-left override or control characters", async ({
    s,
    biz: b,
  }) => {
    const { message } = await customerSends(s, b, {
      bytes: Buffer.from("%PDF-1.4\n% invoice\n"),
      mimeType: "application/pdf",
      type: "document",
      filename: "invoice\u202Efdp.exe\u0007",
    });
    const served = await getMedia(s, b, message.id);
    expect(served.statusCode).toBe(200);
    const disposition = String(served.headers["content-disposition"]);
    expect(disposition).toBe(`attachment; filename="invoicefdp.exe"; filename*=UTF-8''invoicefdp.exe`);
    expect(disposition).not.toMatch(/%E2%80%AE|\u202e/i);
  });

  it("answers 404 to other accounts, 403 without an account, 401 without a session", async ({
    s,
    biz: b,
  }) => {
    const { message } = await customerSends(s, b, { bytes: DEMO_IMAGE, mimeType: "image/png" });
    const other = await business(s);
    expect((await getMedia(s, other, message.id)).statusCode).toBe(404);
    expect((await getMedia(s, other, "not-a-uuid")).statusCode).toBe(404);
    expect((await getMedia(s, { user: await signUp(s.t.app) }, message.id)).statusCode).toBe(403);
    expect((await getMedia(s, null, message.id)).statusCode).toBe(401);
  });

  it("is never stored when its sha256 or size differs from what Meta announced", async ({ s, biz: b }) => {
    const wrongHash = await customerSends(
      s,
      b,
      { bytes: DEMO_IMAGE, mimeType: "image/png" },
      { sha256: createHash("sha256").update("something else").digest("hex") },
    );
    expect(wrongHash.message.media).toMatchObject({
      status: "failed",
      error: "The file's sha256 does not match the one Meta announced",
    });
    expect(wrongHash.message.media.url).toBeUndefined();
    expect((await getMedia(s, b, wrongHash.message.id)).statusCode).toBe(404);
    expect(await s.t.app.deps.media.get(`${b.accountId}/${wrongHash.message.id}`)).toBeNull();

    const longer = await customerSends(
      s,
      b,
      { bytes: DEMO_IMAGE, mimeType: "image/png" },
      { fileSize: DEMO_IMAGE.length - 10 },
    );
    expect(longer.message.media).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/larger than the \d+ bytes Meta announced/),
    });
    const shorter = await customerSends(
      s,
      b,
      { bytes: DEMO_IMAGE, mimeType: "image/png" },
      { fileSize: DEMO_IMAGE.length + 10 },
    );
    expect(shorter.message.media).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/Meta announced/),
    });
    expect((await getMedia(s, b, shorter.message.id)).statusCode).toBe(404);
  });

  it("is tried again after a failure, and marked failed with the reason on the last attempt", async ({
    s,
    biz: b,
  }) => {
    // Meta is down while the message arrives: the job's first attempt fails.
    s.sandbox.inject({ method: "GET", path: /^\/v\d+\.\d+\/\d+$/ }, { status: 500, times: 1 });
    const { message } = await customerSends(s, b, { bytes: DEMO_IMAGE, mimeType: "image/png" });
    expect(message.media.status).toBe("pending");
    const deps = s.t.app.deps;
    // graphile-worker's next attempt (here run directly, without its backoff) finds Meta back.
    expect(await downloadMessageMedia(deps, { messageId: message.id }, { attempt: 2, maxAttempts: 8 })).toBe(
      "stored",
    );
    // Twice does what once does.
    expect(await downloadMessageMedia(deps, { messageId: message.id }, { attempt: 3, maxAttempts: 8 })).toBe(
      "skipped",
    );

    s.sandbox.inject({ method: "GET", path: /^\/v\d+\.\d+\/\d+$/ }, { status: 500, times: 3 });
    const second = await customerSends(s, b, { bytes: DEMO_IMAGE, mimeType: "image/png" });
    await expect(
      downloadMessageMedia(deps, { messageId: second.message.id }, { attempt: 7, maxAttempts: 8 }),
    ).rejects.toThrow();
    expect(
      await downloadMessageMedia(deps, { messageId: second.message.id }, { attempt: 8, maxAttempts: 8 }),
    ).toBe("failed");
    const [row] = (
      await s.t.database.pool.query("select media from messages where id = $1", [second.message.id])
    ).rows;
    expect(row.media).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/^Download failed after 8 attempts/),
    });
  });

  it("fails an attempt whose download URL expired, and a later attempt asks for a fresh one", async ({
    s,
    biz: b,
  }) => {
    s.sandbox.inject({ method: "GET", path: /^\/v\d+\.\d+\/\d+$/ }, { status: 503, times: 1 });
    const { message } = await customerSends(s, b, { bytes: DEMO_IMAGE, mimeType: "image/png" });
    const deps = s.t.app.deps;
    // The job gets the URL, then more than 5 minutes pass before it downloads.
    const slow = {
      ...deps.graph,
      getMediaInfo: async (...args: Parameters<typeof deps.graph.getMediaInfo>) => {
        const info = await deps.graph.getMediaInfo(...args);
        s.sandbox.advanceTime(5 * 60 * 1000 + 1000);
        return info;
      },
    };
    await expect(
      downloadMessageMedia(
        { ...deps, graph: slow },
        { messageId: message.id },
        { attempt: 2, maxAttempts: 8 },
      ),
    ).rejects.toThrow(/HTTP 404/);
    expect(await downloadMessageMedia(deps, { messageId: message.id }, { attempt: 3, maxAttempts: 8 })).toBe(
      "stored",
    );
  });
});

describe("POST /api/conversations/{id}/media", () => {
  const upload = (
    s: SandboxedApp,
    b: Business,
    conversationId: string,
    body: ReturnType<typeof multipart> | { payload: string; headers: Record<string, string> },
  ) =>
    s.t.app.inject({
      method: "POST",
      url: `/api/conversations/${conversationId}/media`,
      headers: { ...b.user.headers, ...body.headers },
      payload: body.payload,
    });
  const png = (filename = "table.png", bytes = DEMO_IMAGE) => ({
    name: "file",
    filename,
    type: "image/png",
    bytes,
  });

  it("uploads the photo to Meta, sends it by id, and keeps our copy", async ({ s, biz: b }) => {
    const { conversation, contact } = await insertContact(s.t, { accountId: b.accountId });
    const response = await upload(
      s,
      b,
      conversation.id,
      multipart([{ name: "caption", value: "Table for two" }, png()]),
    );
    expect(response.statusCode, response.body).toBe(201);
    const { message } = response.json();
    expect(message).toMatchObject({
      type: "image",
      text: "Table for two",
      status: "sent",
      media: {
        mime_type: "image/png",
        caption: "Table for two",
        filename: "table.png",
        size: DEMO_IMAGE.length,
        sha256: b64(DEMO_IMAGE),
        status: "stored",
        url: `/api/messages/${message.id}/media`,
      },
    });
    const [uploaded] = upstreamCalls(s, "POST", `/${b.phoneNumberId}/media`);
    expect(uploaded?.body).toEqual({
      messaging_product: "whatsapp",
      type: "image/png",
      file: { filename: "table.png", content_type: "image/png", size: DEMO_IMAGE.length },
    });
    expect(uploaded?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    const mediaId = message.media.id;
    expect(s.sandbox.media(mediaId)?.bytes.equals(DEMO_IMAGE)).toBe(true);
    const [sent] = upstreamCalls(s, "POST", "/messages");
    expect(sent?.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: contact.phone,
      type: "image",
      image: { id: mediaId, caption: "Table for two" },
      biz_opaque_callback_data: message.id,
    });
    const copy = await getMedia(s, b, message.id);
    expect(copy.statusCode).toBe(200);
    expect(copy.rawPayload.equals(DEMO_IMAGE)).toBe(true);
  });

  it("sends a text file, and a filename without its control and bidi characters", async ({ s, biz: b }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    const response = await upload(
      s,
      b,
      conversation.id,
      multipart([
        {
          name: "file",
          filename: "notes\u202Etxt.exe\u0007",
          type: "text/plain",
          bytes: Buffer.from("Opening hours: 9 to 5\n"),
        },
      ]),
    );
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().message.media.filename).toBe("notestxt.exe");
    expect(upstreamCalls(s, "POST", "/messages")[0]?.body).toMatchObject({
      document: { filename: "notestxt.exe" },
    });
    const served = await getMedia(s, b, response.json().message.id);
    expect(String(served.headers["content-disposition"])).not.toMatch(/%E2%80%AE/i);
  });

  it("sends a document with its filename", async ({ s, biz: b }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    const bytes = Buffer.from("%PDF-1.4 menu");
    const response = await upload(
      s,
      b,
      conversation.id,
      multipart([{ name: "file", filename: "menu.pdf", type: "application/pdf", bytes }]),
    );
    expect(response.statusCode).toBe(201);
    expect(upstreamCalls(s, "POST", "/messages")[0]?.body).toMatchObject({
      type: "document",
      document: { id: response.json().message.media.id, filename: "menu.pdf" },
    });
  });

  it("refuses bad uploads with a clear error, before calling Meta and writing anything", async ({
    s,
    biz: b,
  }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    const cases: Array<
      [ReturnType<typeof multipart> | { payload: string; headers: Record<string, string> }, number, RegExp]
    > = [
      [
        { payload: JSON.stringify({ file: "x" }), headers: { "content-type": "application/json" } },
        400,
        /multipart/,
      ],
      [multipart([{ name: "caption", value: "no file" }]), 400, /file is required/],
      [multipart([png("../../etc/passwd")]), 400, /path separator/],
      [multipart([png("a\\b.png")]), 400, /path separator/],
      [multipart([png("\u0007\u202e")]), 400, /filename is empty/],
      [multipart([png("")]), 400, /filename/],
      [
        multipart([{ name: "file", filename: "a.gif", type: "image/gif", bytes: Buffer.from("GIF89a") }]),
        415,
        /image\/gif/,
      ],
      [
        multipart([
          { name: "file", filename: "a.exe", type: "application/x-msdownload", bytes: Buffer.from("MZ") },
        ]),
        415,
        /does not take/,
      ],
      [multipart([png("big.png", randomBytes(5 * 1024 * 1024 + 1))]), 413, /5 MB/],
      [
        multipart([
          { name: "file", filename: "a.ogg", type: "audio/ogg", bytes: randomBytes(16 * 1024 * 1024 + 1) },
        ]),
        413,
        /16 MB/,
      ],
      [multipart([png(), png("second.png")]), 400, /one file/i],
      [multipart([png("empty.png", Buffer.alloc(0))]), 400, /empty/],
      [multipart([{ name: "caption", value: "x".repeat(1025) }, png()]), 400, /caption/],
      [multipart([{ name: "caption", value: "a\u0000b" }, png()]), 400, /caption must not contain NUL/],
      [
        multipart([png("page.png", Buffer.from("<html><script>alert(1)</script></html>"))]),
        415,
        /not image\/png/,
      ],
      [multipart([png("tool.png", Buffer.from("7f454c46020101000000000000000000", "hex"))]), 415, /x-elf/],
      [
        multipart([{ name: "file", filename: "a.pdf", type: "application/pdf", bytes: DEMO_IMAGE }]),
        415,
        /image\/png, not application\/pdf/,
      ],
      [
        multipart([
          { name: "file", filename: "a.txt", type: "text/plain", bytes: Buffer.from("MZ\u0090\u0000binary") },
        ]),
        415,
        /not text\/plain/,
      ],
    ];
    for (const [body, status, error] of cases) {
      const response = await upload(s, b, conversation.id, body);
      expect(response.statusCode, `${status} ${error}`).toBe(status);
      expect(response.json().error).toMatch(error);
    }
    expect(s.sandbox.requests()).toEqual([]);
    expect(await messagesOf(s, b, conversation.id)).toEqual([]);
  });

  it("answers 422 window_closed outside the 24-hour window, and 404 for another account's conversation", async ({
    s,
    biz: b,
  }) => {
    const { conversation } = await insertContact(s.t, {
      accountId: b.accountId,
      customerWroteAt: new Date(Date.now() - 25 * 60 * 60 * 1000),
    });
    const response = await upload(s, b, conversation.id, multipart([png()]));
    expect(response.statusCode).toBe(422);
    expect(response.json()).toEqual({ error: expect.stringMatching(/24-hour/), code: "window_closed" });
    const other = await business(s);
    expect((await upload(s, other, conversation.id, multipart([png()]))).statusCode).toBe(404);
    expect(s.sandbox.requests()).toEqual([]);
    expect(await messagesOf(s, b, conversation.id)).toEqual([]);
  });

  it("answers 502 and writes nothing when Meta refuses the upload", async ({ s, biz: b }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    s.sandbox.inject(
      { method: "POST", path: "/media" },
      { status: 400, error: { code: 131053, message: "Media upload error" } },
    );
    const response = await upload(s, b, conversation.id, multipart([png()]));
    expect(response.statusCode).toBe(502);
    expect(response.json()).toEqual({ error: "Media upload error" });
    expect(await messagesOf(s, b, conversation.id)).toEqual([]);
  });

  it("keeps the JSON body limit at 1 MiB beside the multipart limits", async ({ s, biz: b }) => {
    const { conversation } = await insertContact(s.t, { accountId: b.accountId });
    const response = await s.t.app.inject({
      method: "POST",
      url: `/api/conversations/${conversation.id}/messages`,
      headers: { ...b.user.headers, "content-type": "application/json" },
      payload: JSON.stringify({ text: "x".repeat(1024 * 1024 + 10) }),
    });
    expect(response.statusCode).toBe(413);
  });
});
