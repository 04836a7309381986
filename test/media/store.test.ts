import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { localMediaStore, s3MediaStore } from "../../src/media/store.js";

describe("local media store", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "media-store-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes, reads back, and answers null for a missing file, leaving no temporary file", async () => {
    const store = localMediaStore(dir);
    await store.put("acc-1/msg-1", Buffer.from("bytes"), "text/plain");
    expect((await store.get("acc-1/msg-1"))?.toString()).toBe("bytes");
    expect(await store.get("acc-1/msg-2")).toBeNull();
    expect(readdirSync(path.join(dir, "acc-1"))).toEqual(["msg-1"]);
  });

  it("refuses keys that could leave its folder", async () => {
    const store = localMediaStore(dir);
    for (const key of ["../x", "a/../../x", "/etc/passwd", "a//b", "a/b.c", ""]) {
      await expect(store.put(key, Buffer.from("x"), "text/plain")).rejects.toThrow(/media keys/);
      await expect(store.get(key)).rejects.toThrow(/media keys/);
    }
  });
});

/**
 * The S3 adapter against a small S3 look-alike on loopback (path-style
 * PutObject / GetObject): the requests it builds, signed, without the secret.
 */
describe("S3 media store (MEDIA_STORE=s3)", () => {
  let server: Server;
  let endpoint: string;
  const objects = new Map<string, { body: Buffer; type: string | undefined }>();
  const seen: Array<{ method: string; url: string; headers: IncomingMessage["headers"] }> = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (c: Buffer) => chunks.push(c));
      request.on("end", () => {
        seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
        const key = (request.url ?? "").split("?")[0] ?? "";
        if (request.method === "PUT") {
          objects.set(key, { body: Buffer.concat(chunks), type: request.headers["content-type"] });
          response.writeHead(200, { etag: '"abc"' }).end();
          return;
        }
        const found = objects.get(key);
        if (!found) {
          response
            .writeHead(404, { "content-type": "application/xml" })
            .end(
              '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
            );
          return;
        }
        response
          .writeHead(200, {
            "content-type": found.type ?? "application/octet-stream",
            "content-length": found.body.length,
          })
          .end(found.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("puts and gets objects path-style in the bucket, signed with SigV4, and answers null for a missing key", async () => {
    const store = s3MediaStore({
      kind: "s3",
      bucket: "wa-media",
      region: "eu-west-1",
      endpoint,
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI-secret",
    });
    await store.put("acc-1/msg-1", Buffer.from("photo bytes"), "image/jpeg");
    expect(objects.get("/wa-media/acc-1/msg-1")).toEqual({
      body: Buffer.from("photo bytes"),
      type: "image/jpeg",
    });
    expect((await store.get("acc-1/msg-1"))?.toString()).toBe("photo bytes");
    expect(await store.get("acc-1/missing")).toBeNull();

    const put = seen.find((r) => r.method === "PUT");
    expect(put?.url).toMatch(/^\/wa-media\/acc-1\/msg-1(\?|$)/);
    expect(put?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request, SignedHeaders=.*, Signature=[0-9a-f]{64}$/,
    );
    for (const r of seen) expect(JSON.stringify(r.headers)).not.toContain("wJalrXUtnFEMI-secret");
  });
});

describe("MEDIA_STORE configuration", () => {
  const base = {
    NODE_ENV: "test",
    ENCRYPTION_KEY: "a".repeat(64),
    AUTH_SECRET: "b".repeat(40),
  };

  it("defaults to files under DATA_DIR/media", () => {
    const config = loadConfig({ ...base, DATA_DIR: "/srv/wa" });
    expect(config.mediaStore).toEqual({ kind: "local", dir: "/srv/wa/media" });
  });

  it("takes an S3 bucket with its region, endpoint and keys", () => {
    const config = loadConfig({
      ...base,
      MEDIA_STORE: "s3",
      S3_BUCKET: "media",
      S3_ENDPOINT: "http://127.0.0.1:9000",
      S3_ACCESS_KEY_ID: "id",
      S3_SECRET_ACCESS_KEY: "secret",
    });
    expect(config.mediaStore).toEqual({
      kind: "s3",
      bucket: "media",
      region: "us-east-1",
      endpoint: "http://127.0.0.1:9000",
      accessKeyId: "id",
      secretAccessKey: "secret",
    });
  });

  it("fails start-up naming the variable when the S3 settings are incomplete or wrong", () => {
    expect(() => loadConfig({ ...base, MEDIA_STORE: "s3" })).toThrow(
      new ConfigError("Missing S3_BUCKET: it is required when MEDIA_STORE=s3"),
    );
    expect(() => loadConfig({ ...base, MEDIA_STORE: "s3", S3_BUCKET: "m", S3_ACCESS_KEY_ID: "id" })).toThrow(
      /S3_ACCESS_KEY_ID/,
    );
    expect(() => loadConfig({ ...base, MEDIA_STORE: "disk" })).toThrow(/MEDIA_STORE/);
    expect(() =>
      loadConfig({ ...base, MEDIA_STORE: "s3", S3_BUCKET: "m", S3_ENDPOINT: "not a url" }),
    ).toThrow(/S3_ENDPOINT/);
  });
});
