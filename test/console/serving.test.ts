import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness.js";

/** A stand-in for console/dist: the serving rules do not depend on what Vite built. */
function fakeBuild() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "wa-console-"));
  mkdirSync(path.join(dir, "assets"));
  writeFileSync(
    path.join(dir, "index.html"),
    '<!doctype html><div id="root"></div><script src="/assets/index-abc123.js"></script>',
  );
  writeFileSync(path.join(dir, "assets", "index-abc123.js"), "console.log('console');");
  return dir;
}

const html = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

describe("the web console served at /", () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = fakeBuild();
    t = await createTestApp({ consoleDir: dir });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers / with index.html that browsers must revalidate", async () => {
    const r = await t.app.inject({ method: "GET", url: "/", headers: html });
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^text\/html/);
    expect(r.headers["cache-control"]).toBe("no-cache");
    expect(r.body).toContain('<div id="root">');
  });

  it("serves hashed assets with a year of immutable caching", async () => {
    const r = await t.app.inject({ method: "GET", url: "/assets/index-abc123.js" });
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toMatch(/javascript/);
    expect(r.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(r.body).toBe("console.log('console');");
  });

  it("answers a console route the browser opens directly with index.html", async () => {
    for (const url of [
      "/inbox",
      "/inbox/0d9e9f1c-5a0e-4b55-9c1d-2f1f0d1f7a11",
      "/flows/x/runs?y=1",
      "/settings/api-keys",
    ]) {
      const r = await t.app.inject({ method: "GET", url, headers: html });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers["cache-control"]).toBe("no-cache");
      expect(r.body).toContain('<div id="root">');
    }
  });

  it("keeps the API's JSON 404 for unknown API paths, even when HTML is accepted", async () => {
    for (const url of ["/api/nope", "/api", "/api/flows/x/nothing-here"]) {
      const r = await t.app.inject({ method: "GET", url, headers: html });
      expect(r.statusCode, url).toBe(404);
      expect(r.json()).toEqual({ error: "Not found" });
    }
  });

  it("answers JSON 404 to clients that do not ask for HTML and to other methods", async () => {
    const json = await t.app.inject({
      method: "GET",
      url: "/inbox",
      headers: { accept: "application/json" },
    });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toEqual({ error: "Not found" });
    const post = await t.app.inject({ method: "POST", url: "/inbox", headers: html, payload: "{}" });
    expect(post.statusCode).toBe(404);
    expect(post.json()).toEqual({ error: "Not found" });
    const asset = await t.app.inject({ method: "GET", url: "/assets/missing-123.js", headers: html });
    expect(asset.statusCode).toBe(404);
  });

  it("keeps the API, the docs and the webhook working beside it", async () => {
    expect((await t.app.inject({ method: "GET", url: "/healthz" })).json()).toEqual({ ok: true });
    expect((await t.app.inject({ method: "GET", url: "/api/me" })).statusCode).toBe(401);
    const docs = await t.app.inject({ method: "GET", url: "/docs/", headers: html });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).not.toContain('<div id="root">');
    const webhook = await t.app.inject({ method: "GET", url: "/api/messaging/webhook?hub.mode=subscribe" });
    expect([400, 403]).toContain(webhook.statusCode);
  });
});

describe("a service whose console is not built", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ consoleDir: path.join(os.tmpdir(), "wa-console-missing-dir") });
  });
  afterAll(() => t.close());

  it("says how to build it instead of a blank page, and the API works", async () => {
    const r = await t.app.inject({ method: "GET", url: "/", headers: html });
    expect(r.statusCode).toBe(503);
    expect(r.body).toContain("npm run build");
    expect((await t.app.inject({ method: "GET", url: "/api/me" })).statusCode).toBe(401);
  });
});
