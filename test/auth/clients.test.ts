import { describe, expect } from "vitest";
import { appTest, insertChannelConfig } from "../helpers/fixtures.js";
import type { TestUser } from "../helpers/harness.js";
import {
  browserHeaders,
  createKey,
  FOREIGN_ORIGIN,
  listen,
  OWN_ORIGIN,
  sessionCookie,
  TWIN_ORIGIN,
} from "./helpers.js";

/** The app of appTest listening on loopback, and its base URL. */
const it = appTest.extend<{ base: string }>({
  base: [
    async ({ t }, use) => {
      await use(await listen(t));
    },
    { scope: "file" },
  ],
});

const password = "a long enough password";
let counter = 0;
const freshEmail = () => `client${++counter}-${Date.now()}@example.com`;

/** A plain Node.js script: the built-in fetch, no Origin (it sends Sec-Fetch-Mode on its own). */
const script = (
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
) =>
  fetch(`${base}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: init.headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

describe("sign-in from server-side clients", () => {
  it("signs up, signs in and calls the API from a Node fetch script without Origin", async ({ base }) => {
    const email = freshEmail();
    const signUp = await script(base, "/api/auth/sign-up/email", {
      body: { email, password, name: "Script" },
    });
    expect(signUp.status).toBe(200);
    const signIn = await script(base, "/api/auth/sign-in/email", { body: { email, password } });
    expect(signIn.status).toBe(200);
    const token = signIn.headers.get("set-auth-token");
    expect(token).toEqual(expect.any(String));
    const me = await script(base, "/api/me", { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect((await me.json()).user.email).toBe(email);
  });

  it("lets a script that keeps the session cookie use it and sign out with it", async ({ base }) => {
    const email = freshEmail();
    await script(base, "/api/auth/sign-up/email", { body: { email, password, name: "Jar" } });
    const signIn = await script(base, "/api/auth/sign-in/email", { body: { email, password } });
    const cookie = (signIn.headers.getSetCookie()[0] ?? "").split(";")[0] ?? "";
    expect((await script(base, "/api/me", { headers: { cookie } })).status).toBe(200);
    const out = await script(base, "/api/auth/sign-out", { headers: { cookie }, body: {} });
    expect(out.status).toBe(200);
    expect((await script(base, "/api/me", { headers: { cookie } })).status).toBe(401);
  });
});

describe("sign-in from browsers", () => {
  it.for([
    ["the service's own origin", OWN_ORIGIN],
    ["its localhost twin", TWIN_ORIGIN],
  ] as const)("signs up and in from %s", async ([_label, origin], { base }) => {
    const email = freshEmail();
    const headers = browserHeaders(origin);
    const signUp = await script(base, "/api/auth/sign-up/email", {
      headers,
      body: { email, password, name: "Web" },
    });
    expect(signUp.status).toBe(200);
    const signIn = await script(base, "/api/auth/sign-in/email", { headers, body: { email, password } });
    expect(signIn.status).toBe(200);
    expect(signIn.headers.getSetCookie().join(";")).toContain("session_token=");
  });

  it("refuses sign-up and sign-in from a foreign origin with 403", async ({ base }) => {
    const email = freshEmail();
    await script(base, "/api/auth/sign-up/email", { body: { email, password, name: "Victim" } });
    const headers = browserHeaders(FOREIGN_ORIGIN);
    const signUp = await script(base, "/api/auth/sign-up/email", {
      headers,
      body: { email: freshEmail(), password, name: "X" },
    });
    expect(signUp.status).toBe(403);
    const signIn = await script(base, "/api/auth/sign-in/email", { headers, body: { email, password } });
    expect(signIn.status).toBe(403);
    expect(await signIn.json()).toEqual({ error: expect.any(String), code: "INVALID_ORIGIN" });
  });

  it("refuses a browser request with Fetch Metadata but no Origin", async ({ base }) => {
    const email = freshEmail();
    await script(base, "/api/auth/sign-up/email", { body: { email, password, name: "NoOrigin" } });
    const signIn = await script(base, "/api/auth/sign-in/email", {
      headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors" },
      body: { email, password },
    });
    expect(signIn.status).toBe(403);
  });
});

describe("cross-site request forgery", () => {
  const credentials = (owner: TestUser, cookie: string, apiKey: string) =>
    ({
      cookie: { cookie },
      bearer: { authorization: `Bearer ${owner.token}` },
      "API key (X-API-Key)": { "x-api-key": apiKey },
      "API key (Bearer)": { authorization: `Bearer ${apiKey}` },
    }) as Record<string, Record<string, string>>;
  const origins: Record<string, Record<string, string>> = {
    own: browserHeaders(OWN_ORIGIN),
    twin: browserHeaders(TWIN_ORIGIN),
    foreign: browserHeaders(FOREIGN_ORIGIN),
    null: { origin: "null", "sec-fetch-site": "cross-site" },
    "missing (a script)": {},
    "missing, cross-site Fetch Metadata": { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" },
    "missing, foreign Referer": { referer: `${FOREIGN_ORIGIN}/page` },
    "missing, own Referer": { referer: `${OWN_ORIGIN}/inbox` },
  };
  const refusedOrigins = new Set([
    "foreign",
    "null",
    "missing, cross-site Fetch Metadata",
    "missing, foreign Referer",
  ]);

  it("refuses only cookie-authenticated unsafe requests from a foreign origin", async ({
    t,
    base,
    owner: { user: owner },
  }) => {
    const cookie = await sessionCookie(t.app, owner);
    const apiKey = (await createKey(t.app, owner)).key;
    const results: string[] = [];
    const expected: string[] = [];
    for (const [credential, credentialHeaders] of Object.entries(credentials(owner, cookie, apiKey))) {
      for (const [origin, originHeaders] of Object.entries(origins)) {
        const headers = { ...credentialHeaders, ...originHeaders };
        const read = await fetch(`${base}/api/flows`, { headers });
        const write = await fetch(`${base}/api/flows`, {
          method: "POST",
          headers: { ...headers, "content-type": "text/plain" },
          body: JSON.stringify({ name: `${credential} from ${origin}` }),
        });
        results.push(`${credential} / ${origin}: GET ${read.status}, POST ${write.status}`);
        const refused = credential === "cookie" && refusedOrigins.has(origin);
        expected.push(`${credential} / ${origin}: GET 200, POST ${refused ? 403 : 201}`);
      }
    }
    expect(results).toEqual(expected);
    const { rows } = await t.database.pool.query<{ name: string }>(
      "select name from flows where name like 'cookie%'",
    );
    expect(rows.map((r) => r.name).sort()).toEqual(
      [
        "cookie from missing (a script)",
        "cookie from missing, own Referer",
        "cookie from own",
        "cookie from twin",
      ].sort(),
    );
  });

  it("answers 403 { error } and keeps the channel when a foreign page deletes it with the cookie", async ({
    t,
    base,
    owner: { user, accountId },
  }) => {
    await insertChannelConfig(t, { accountId, userId: user.id });
    const userCookie = await sessionCookie(t.app, user);
    const response = await fetch(`${base}/api/messaging/config`, {
      method: "DELETE",
      headers: { cookie: userCookie, ...browserHeaders(FOREIGN_ORIGIN) },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: "Cross-origin request refused" });
    const { rows } = await t.database.pool.query("select 1 from messaging_configs where account_id = $1", [
      accountId,
    ]);
    expect(rows).toHaveLength(1);
  });
});
