import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { redactConsole, redactText, redactValue } from "../../src/logging.js";
import { createKey, listen, sessionCookie } from "../auth/helpers.js";
import { createWorld, type Json, type World } from "../flows/runner/helpers.js";
import { insertContact } from "../helpers/fixtures.js";
import { addMember } from "../helpers/harness.js";
import { multipart } from "../media/multipart.js";

/**
 * Every route of the served OpenAPI document, called at LOG_LEVEL=trace with
 * real credentials in every place a client puts them (bearer header, session
 * cookie, API key header, token query parameters, JSON bodies, a multipart
 * upload): none of them appears in the log output.
 */

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d49444154789c6300010000000500010d0a2db40000000049454e44ae426082",
  "hex",
);
const secret = (label: string) => `${label}${randomBytes(12).toString("hex")}`;

let w: World;
let secrets: Record<string, string>;
let headerSets: Array<Record<string, string>>;
const ids: Record<string, string> = {};

beforeAll(async () => {
  w = await createWorld({ captureLogs: true });
  const cookie = await sessionCookie(w.t.app, w.owner);
  const { key } = await createKey(w.t.app, w.owner);
  const member = await addMember(w.t.app, w.owner);
  const invite = await w.t.app.inject({
    method: "POST",
    url: "/api/accounts/invitations",
    headers: w.owner.headers,
    payload: { email: `invited-${randomBytes(4).toString("hex")}@example.com` },
  });
  const { contact, conversation } = await insertContact(w.t, { accountId: w.accountId, name: "Logged" });
  ids.conversation = conversation.id;
  ids.contact = contact.id;
  const cookieValue = decodeURIComponent(cookie.slice(cookie.indexOf("=") + 1));
  secrets = {
    bearer: w.owner.token,
    "bearer (unsigned half)": w.owner.token.split(".")[0]!,
    "member bearer": member.token,
    cookie: cookieValue,
    "cookie (unsigned half)": cookieValue.split(".")[0]!,
    "API key": key,
    "invitation token": invite.json().invitation.token,
    "channel access token": w.accessToken,
    "channel verify token": w.verifyToken,
    "?access_token=": secret("qat"),
    "?hub.verify_token=": secret("qvt"),
    "?token=": secret("qtk"),
    "?api_key=": secret("qak"),
    "body access_token": secret("bat"),
    "body password": secret("bpw"),
    "body token": secret("btk"),
  };
  headerSets = [
    { authorization: `Bearer ${w.owner.token}` },
    { cookie },
    { "x-api-key": key },
    { authorization: `Bearer ${member.token}`, "x-api-key": key, cookie },
  ];
}, 120_000);
afterAll(() => w?.close());

describe("the redaction list", () => {
  it("masks secret fields at any depth and credentials in texts, without changing what was logged", () => {
    const headers = { authorization: "Bearer abc.def", "X-Api-Key": "wak_1", accept: "json" };
    const logged = { busboyOptions: { headers, limits: { files: 1 } }, list: [{ Set_Cookie: "s=1" }] };
    expect(redactValue(logged)).toEqual({
      busboyOptions: {
        headers: { authorization: "[redacted]", "X-Api-Key": "[redacted]", accept: "json" },
        limits: { files: 1 },
      },
      list: [{ Set_Cookie: "[redacted]" }],
    });
    expect(headers.authorization).toBe("Bearer abc.def");
    expect(redactText("GET https://graph.example/v23.0/me?access_token=EAAG123&fields=id failed")).toBe(
      "GET https://graph.example/v23.0/me?access_token=[redacted]&fields=id failed",
    );
    expect(redactText("/hook?hub.mode=subscribe&hub.verify_token=abc&hub.challenge=1")).toBe(
      "/hook?hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=1",
    );
    expect(redactText("sent Authorization: Bearer abc.def to x")).toBe(
      "sent Authorization: Bearer [redacted] to x",
    );
    expect(redactText("/api/invitations/tok123/accept")).toBe("/api/invitations/[redacted]/accept");
  });
});

describe("LOG_LEVEL=trace", () => {
  it("logs no secret, whatever route and whichever place carries it", async () => {
    // Libraries that print to the console instead (better-auth does for some errors) get the
    // list as the service installs it (src/main.ts); what they print is captured here.
    let printed = "";
    const capture = {} as Console;
    for (const name of ["log", "info", "warn", "error", "debug", "trace"] as const) {
      capture[name] = (...args: unknown[]) => {
        printed += `${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`;
      };
    }
    redactConsole(capture);
    const spies = (["log", "info", "warn", "error", "debug", "trace"] as const).map((name) =>
      vi.spyOn(console, name).mockImplementation(capture[name]),
    );
    const spec = (await w.t.app.inject({ url: "/api/openapi.json" })).json();
    const query =
      `access_token=${secrets["?access_token="]}&hub.verify_token=${secrets["?hub.verify_token="]}` +
      `&token=${secrets["?token="]}&api_key=${secrets["?api_key="]}`;
    const body = JSON.stringify({
      access_token: secrets["body access_token"],
      password: secrets["body password"],
      token: secrets["body token"],
      phone_number_id: "123456",
    });
    const operations: Array<{ method: string; url: string }> = [];
    for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
      for (const method of Object.keys(item as Json)) {
        const url = path
          .replace("{token}", secrets["invitation token"]!)
          .replace(
            /\{(id|conversation_id)\}/g,
            path.startsWith("/api/contacts") ? ids.contact! : ids.conversation!,
          )
          .replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000");
        operations.push({ method: method.toUpperCase(), url });
      }
    }
    // Whatever ends sessions or removes the account comes last, so the others run signed in.
    const ending = (op: { method: string; url: string }) =>
      op.method === "DELETE" || /sign-out|revoke|delete-user/.test(op.url) ? 1 : 0;
    operations.sort((a, b) => ending(a) - ending(b));
    expect(operations.length).toBeGreaterThan(40);

    // A multipart upload logs its parser's options, request headers included.
    const form = multipart([
      { name: "caption", value: "a photo" },
      { name: "file", filename: "dot.png", type: "image/png", bytes: PNG },
    ]);
    for (const headers of headerSets.slice(0, 3)) {
      await w.t.app.inject({
        method: "POST",
        url: `/api/conversations/${ids.conversation}/media?${query}`,
        headers: { ...headers, ...form.headers },
        payload: form.payload,
      });
    }
    // The webhook handshake with the real verify token.
    const handshake = await w.t.app.inject({
      url: `/api/messaging/webhook?hub.mode=subscribe&hub.verify_token=${w.verifyToken}&hub.challenge=7`,
    });
    expect(handshake.statusCode).toBe(200);
    const base = await listen(w.t);
    for (const op of operations) {
      for (const headers of headerSets) {
        const url = `${op.url}?${query}`;
        if (op.url === "/api/events/stream") {
          // A live stream: read its first bytes, then hang up.
          const controller = new AbortController();
          const response = await fetch(`${base}${url}`, { headers, signal: controller.signal });
          if (response.body) await response.body.getReader().read();
          controller.abort();
          continue;
        }
        const hasBody = op.method !== "GET" && op.method !== "DELETE";
        await w.t.app.inject({
          method: op.method as "GET",
          url,
          headers: { ...headers, ...(hasBody ? { "content-type": "application/json" } : {}) },
          ...(hasBody ? { payload: body } : {}),
        });
      }
    }
    // A sign-in that answers new credentials.
    const signIn = await w.t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email: w.owner.email, password: "correct horse battery" },
    });
    expect(signIn.statusCode).toBe(200);
    secrets["set-auth-token"] = String(signIn.headers["set-auth-token"]);
    secrets.password = "correct horse battery";
    await w.t.app.deps.jobs.drain();

    for (const spy of spies) spy.mockRestore();
    const logs = w.t.logs() + printed;
    // The output is the trace-level one: the upload's parser options and every request were logged.
    expect(logs).toContain("Providing options to busboy");
    expect(logs).toContain("incoming request");
    // ...and most calls got through (signed in, and with the ids of real rows).
    expect(logs.match(/"statusCode":2\d\d/g)?.length ?? 0).toBeGreaterThan(operations.length);
    const leaked = Object.entries(secrets)
      .filter(([, value]) => logs.includes(value))
      .map(([name]) => name);
    expect(leaked).toEqual([]);
  }, 300_000);
});
