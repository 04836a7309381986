import { describe, expect } from "vitest";
import { appTest as it } from "../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp } from "../helpers/harness.js";
import { createKey } from "./helpers.js";

const createFlow = (t: TestApp, headers: Record<string, string>, name: string) =>
  t.app.inject({ method: "POST", url: "/api/flows", headers, payload: { name } });

describe("creating and listing API keys", () => {
  it("shows the key once on creation and stores only its hash", async ({ t, owner: { user: owner } }) => {
    const response = await t.app.inject({
      method: "POST",
      url: "/api/api-keys",
      headers: owner.headers,
      payload: { name: "  Zapier  ", expires_in_days: 30 },
    });
    expect(response.statusCode).toBe(201);
    const { api_key, key } = response.json();
    expect(api_key).toEqual({
      id: expect.any(String),
      name: "Zapier",
      prefix: key.slice(0, api_key.prefix.length),
      created_at: expect.any(String),
      expires_at: expect.any(String),
      last_used_at: null,
    });
    expect(key).toMatch(/^wak_[A-Za-z0-9_-]{40,}$/);
    const days = (Date.parse(api_key.expires_at) - Date.parse(api_key.created_at)) / 86_400_000;
    expect(days).toBe(30);

    const { rows } = await t.database.pool.query("select * from api_keys where id = $1", [api_key.id]);
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(JSON.stringify(rows)).not.toContain(key.slice(api_key.prefix.length));

    const list = await t.app.inject({ url: "/api/api-keys", headers: owner.headers });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(key.slice(api_key.prefix.length));
    expect(list.json().api_keys).toContainEqual(api_key);
  });

  it("creates a key without expiry when expires_in_days is left out", async ({
    t,
    owner: { user: owner },
  }) => {
    const { json } = await createKey(t.app, owner);
    expect(json.api_key).toMatchObject({ expires_at: null });
  });

  it.for([
    ["no name", { expires_in_days: 3 }],
    ["a blank name", { name: "  " }],
    ["zero days", { name: "x", expires_in_days: 0 }],
    ["a fraction of a day", { name: "x", expires_in_days: 1.5 }],
    ["days as text", { name: "x", expires_in_days: "7" }],
  ] as [string, Record<string, unknown>][])(
    "answers 400 { error } for %s and creates nothing",
    async ([_label, payload], { t, owner: { user: owner } }) => {
      const before = await t.database.pool.query("select count(*)::int as n from api_keys");
      const response = await t.app.inject({
        method: "POST",
        url: "/api/api-keys",
        headers: owner.headers,
        payload,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: expect.any(String) });
      const after = await t.database.pool.query("select count(*)::int as n from api_keys");
      expect(after.rows[0].n).toBe(before.rows[0].n);
    },
  );
});

describe("using an API key", () => {
  it("acts for its account with member rights, sent as X-API-Key or as a bearer token", async ({
    t,
    owner: { user: owner, accountId },
  }) => {
    const { key } = await createKey(t.app, owner);
    for (const headers of [{ "x-api-key": key }, { authorization: `Bearer ${key}` }] as Record<
      string,
      string
    >[]) {
      const me = await t.app.inject({ url: "/api/me", headers });
      expect(me.statusCode).toBe(200);
      expect(me.json().profile).toMatchObject({ account_id: accountId, role: "member" });
      const created = await createFlow(t, headers, "Made by a script");
      expect(created.statusCode).toBe(201);
      const listed = await t.app.inject({ url: "/api/flows", headers });
      expect(listed.json().flows.map((f: { id: string }) => f.id)).toContain(created.json().flow.id);
    }
  });

  it("records last_used_at, at most once a minute", async ({ t, owner: { user: owner } }) => {
    const { id, key } = await createKey(t.app, owner);
    await t.app.inject({ url: "/api/me", headers: { "x-api-key": key } });
    const first = await t.database.pool.query("select last_used_at from api_keys where id = $1", [id]);
    expect(first.rows[0].last_used_at).toBeInstanceOf(Date);
    await t.app.inject({ url: "/api/me", headers: { "x-api-key": key } });
    const second = await t.database.pool.query("select last_used_at from api_keys where id = $1", [id]);
    expect(second.rows[0].last_used_at).toEqual(first.rows[0].last_used_at);

    await t.database.pool.query(
      "update api_keys set last_used_at = now() - interval '2 minutes' where id = $1",
      [id],
    );
    await t.app.inject({ url: "/api/me", headers: { "x-api-key": key } });
    const third = await t.database.pool.query("select last_used_at from api_keys where id = $1", [id]);
    expect(third.rows[0].last_used_at.getTime()).toBeGreaterThan(first.rows[0].last_used_at.getTime());
    const listed = await t.app.inject({ url: "/api/api-keys", headers: owner.headers });
    const shown = listed.json().api_keys.find((k: { id: string }) => k.id === id);
    expect(Date.parse(shown.last_used_at)).toBe(third.rows[0].last_used_at.getTime());
  });

  it.for([
    ["an unknown key", { "x-api-key": "wak_unknown" }],
    ["an empty X-API-Key", { "x-api-key": "" }],
    ["a key-shaped bearer token that is no key", { authorization: "Bearer wak_nope" }],
  ] as [string, Record<string, string>][])("answers 401 for %s", async ([_label, headers], { t }) => {
    const response = await t.app.inject({ url: "/api/flows", headers });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Unauthorized" });
  });

  it("answers 401 once the key has expired", async ({ t, owner: { user: owner } }) => {
    const { id, key } = await createKey(t.app, owner, { expires_in_days: 1 });
    expect((await t.app.inject({ url: "/api/flows", headers: { "x-api-key": key } })).statusCode).toBe(200);
    await t.database.pool.query(
      "update api_keys set expires_at = now() - interval '1 second' where id = $1",
      [id],
    );
    expect((await t.app.inject({ url: "/api/flows", headers: { "x-api-key": key } })).statusCode).toBe(401);
  });
});

describe("revoking an API key", () => {
  it("kills it at once on this instance and on another one", async ({ t, owner: { user: owner } }) => {
    const other = await createTestApp({
      databaseUrl: t.config.databaseUrl,
      config: { authSecret: t.config.authSecret, encryptionKey: t.config.encryptionKey },
    });
    try {
      const { id, key } = await createKey(t.app, owner);
      const headers = { "x-api-key": key };
      expect((await t.app.inject({ url: "/api/flows", headers })).statusCode).toBe(200);
      expect((await other.app.inject({ url: "/api/flows", headers })).statusCode).toBe(200);
      const revoked = await t.app.inject({
        method: "DELETE",
        url: `/api/api-keys/${id}`,
        headers: owner.headers,
      });
      expect(revoked.statusCode).toBe(200);
      expect(revoked.json()).toEqual({ ok: true });
      expect((await t.app.inject({ url: "/api/flows", headers })).statusCode).toBe(401);
      expect((await other.app.inject({ url: "/api/flows", headers })).statusCode).toBe(401);
      const list = await t.app.inject({ url: "/api/api-keys", headers: owner.headers });
      expect(list.json().api_keys.map((k: { id: string }) => k.id)).not.toContain(id);
      const again = await t.app.inject({
        method: "DELETE",
        url: `/api/api-keys/${id}`,
        headers: owner.headers,
      });
      expect(again.statusCode).toBe(404);
    } finally {
      await other.close();
    }
  });

  it("answers 404 for a malformed id", async ({ t, owner: { user: owner } }) => {
    const response = await t.app.inject({
      method: "DELETE",
      url: "/api/api-keys/nope",
      headers: owner.headers,
    });
    expect(response.statusCode).toBe(404);
  });
});

describe("accounts stay apart", () => {
  it("gives another account's key nothing of this account", async ({ t, owner: { user: owner } }) => {
    const flow = (await createFlow(t, owner.headers, "Private flow")).json().flow;
    const { id: ownKeyId } = await createKey(t.app, owner);
    const { user: stranger } = await signUpWithAccount(t.app, "Stranger");
    const { key: strangerKey } = await createKey(t.app, stranger);
    const headers = { "x-api-key": strangerKey };

    const flows = await t.app.inject({ url: "/api/flows", headers });
    expect(flows.json().flows.map((f: { id: string }) => f.id)).not.toContain(flow.id);
    expect((await t.app.inject({ url: `/api/flows/${flow.id}`, headers })).statusCode).toBe(404);
    const keys = await t.app.inject({ url: "/api/api-keys", headers: stranger.headers });
    expect(keys.json().api_keys.map((k: { id: string }) => k.id)).not.toContain(ownKeyId);
    const deleted = await t.app.inject({
      method: "DELETE",
      url: `/api/api-keys/${ownKeyId}`,
      headers: stranger.headers,
    });
    expect(deleted.statusCode).toBe(404);
    const { rows } = await t.database.pool.query("select 1 from api_keys where id = $1", [ownKeyId]);
    expect(rows).toHaveLength(1);
  });
});
