import { eq, sql } from "drizzle-orm";
import { describe, expect } from "vitest";
import {
  contacts,
  conversations,
  flowRunEvents,
  flowRuns,
  flows,
  messages,
} from "../../src/db/schema/index.js";
import { mediaKey } from "../../src/media/download.js";
import { insertContact, insertMessage, appTest as it } from "../helpers/fixtures.js";
import { addMember, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

const as = (
  t: TestApp,
  user: TestUser,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  payload?: unknown,
) =>
  t.app.inject({
    method,
    url,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

describe("POST /api/contacts", () => {
  it("adds a contact with its number normalised, and answers 409 naming it for the same number written otherwise", async ({
    t,
    owner: { user },
  }) => {
    const created = await as(t, user, "POST", "/api/contacts", {
      phone: "+55 (11) 98765-4321",
      name: "Ana",
      tags: ["vip", "vip"],
      attributes: { city: "São Paulo" },
      opt_in_source: "website form",
    });
    expect(created.statusCode).toBe(201);
    const contact = created.json().contact;
    expect(contact).toMatchObject({
      phone: "5511987654321",
      wa_id: "5511987654321",
      name: "Ana",
      tags: ["vip"],
      attributes: { city: "São Paulo" },
      opted_out: false,
      opted_out_at: null,
      opt_in_source: "website form",
      opted_in_at: expect.any(String),
      bsuid: null,
      username: null,
      conversation_id: null,
    });
    const again = await as(t, user, "POST", "/api/contacts", { phone: "0055 11 987654321" });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ error: expect.stringMatching(/exists/), contact_id: contact.id });
    const listed = await as(t, user, "GET", "/api/contacts");
    expect(listed.json().contacts).toHaveLength(1);
  });

  it("reads national numbers in the account's default country, and refuses them without one", async ({
    t,
    owner: { user },
  }) => {
    const refused = await as(t, user, "POST", "/api/contacts", { phone: "020 7946 0958" });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatch(/^phone: .*default_country/);
    expect((await as(t, user, "PATCH", "/api/settings", { default_country: "GB" })).statusCode).toBe(200);
    const created = await as(t, user, "POST", "/api/contacts", { phone: "020 7946 0958" });
    expect(created.statusCode).toBe(201);
    expect(created.json().contact.phone).toBe("442079460958");
  });

  it.for([
    ["no phone", {}, /^phone: /],
    ["letters", { phone: "call me" }, /^phone: not a valid/],
    ["too few digits", { phone: "+55 11" }, /^phone: not a valid/],
    ["a tag too long", { phone: "+14155550123", tags: ["t".repeat(51)] }, /^tags.0: /],
    [
      "an object attribute",
      { phone: "+14155550123", attributes: { a: {} } },
      /^attributes.a: must be a string/,
    ],
  ] as const)(
    "answers 400 for %s and stores nothing",
    async ([_name, body, error], { t, owner: { user, accountId } }) => {
      const response = await as(t, user, "POST", "/api/contacts", body);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(error);
      const rows = await t.database.db.select().from(contacts).where(eq(contacts.accountId, accountId));
      expect(rows).toEqual([]);
    },
  );
});

describe("GET /api/contacts", () => {
  it("writes each contact exactly as GET /api/contacts/{id} does (its SQL is read back from the same serializer), keys in order", async ({
    t,
    owner: { user, accountId },
  }) => {
    const full = await insertContact(t, { accountId, name: 'Zoë "Z" Ünal' });
    await t.database.db
      .update(contacts)
      .set({
        tags: ["vip", "b2b"],
        attributes: { plan: "gold", note: "line\nbreak 👍" },
        optedOut: true,
        optedOutAt: new Date("2025-02-01T10:00:00.123Z"),
        optedInAt: new Date("2025-01-01T10:00:00.007Z"),
        optInSource: "website",
        bsuid: "BR.123",
        username: "zoe",
      })
      .where(eq(contacts.id, full.contact.id));
    const bare = await insertContact(t, { accountId, name: null, phone: null });
    await t.database.db.delete(conversations).where(eq(conversations.id, bare.conversation.id));

    const listed = (await as(t, user, "GET", "/api/contacts")).json().contacts;
    expect(listed.map((c: { id: string }) => c.id).sort()).toEqual([full.contact.id, bare.contact.id].sort());
    expect(listed.find((c: { id: string }) => c.id === bare.contact.id).conversation_id).toBeNull();
    for (const contact of listed) {
      const one = await as(t, user, "GET", `/api/contacts/${contact.id}`);
      expect(one.statusCode).toBe(200);
      // JSON.stringify keeps key order: equal strings are equal values with their keys in the same order.
      expect(JSON.stringify(contact)).toBe(JSON.stringify(one.json().contact));
    }
  });
});

describe("typed contact attributes", () => {
  it("checks every contact write against the definitions, naming the key, and keeps canonical values", async ({
    t,
    owner: { user, accountId },
  }) => {
    const define = (body: object) => as(t, user, "POST", "/api/contact-attributes", body);
    expect((await define({ key: "age", label: "Age", type: "number" })).statusCode).toBe(201);
    expect((await define({ key: "birthday", label: "Birthday", type: "date" })).statusCode).toBe(201);
    expect((await define({ key: "vip", label: "VIP", type: "boolean" })).statusCode).toBe(201);
    expect(
      (await define({ key: "plan", label: "Plan", type: "list", options: ["free", "pro"] })).statusCode,
    ).toBe(201);
    expect((await define({ key: "plan", label: "Again", type: "text" })).statusCode).toBe(409);
    const noOptions = await define({ key: "tier", label: "Tier", type: "list" });
    expect(noOptions.statusCode).toBe(400);
    expect(noOptions.json().error).toMatch(/^options: /);
    const badType = await define({ key: "x", label: "X", type: "money" });
    expect(badType.json().error).toMatch(/^type: /);

    const listed = await as(t, user, "GET", "/api/contact-attributes");
    expect(listed.json().attributes.map((a: { key: string; type: string }) => [a.key, a.type])).toEqual([
      ["age", "number"],
      ["birthday", "date"],
      ["plan", "list"],
      ["vip", "boolean"],
    ]);

    for (const [attributes, key] of [
      [{ age: "old" }, "age"],
      [{ birthday: "2026-02-30" }, "birthday"],
      [{ vip: "maybe" }, "vip"],
      [{ plan: "enterprise" }, "plan"],
    ] as const) {
      const bad = await as(t, user, "POST", "/api/contacts", { phone: "+14155550100", attributes });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatch(new RegExp(`^attributes\\.${key}: `));
    }
    expect(await t.database.db.select().from(contacts).where(eq(contacts.accountId, accountId))).toEqual([]);

    const good = await as(t, user, "POST", "/api/contacts", {
      phone: "+14155550100",
      attributes: { age: 42, birthday: "1984-02-29", vip: true, plan: "pro", city: "Lisbon" },
    });
    expect(good.statusCode).toBe(201);
    expect(good.json().contact.attributes).toEqual({
      age: "42",
      birthday: "1984-02-29",
      vip: "true",
      plan: "pro",
      city: "Lisbon",
    });
    const id = good.json().contact.id;
    const badPatch = await as(t, user, "PATCH", `/api/contacts/${id}`, { attributes: { age: "ten" } });
    expect(badPatch.statusCode).toBe(400);
    expect(badPatch.json().error).toBe("attributes.age: must be a number");

    expect((await as(t, user, "DELETE", "/api/contact-attributes/age")).statusCode).toBe(200);
    expect((await as(t, user, "DELETE", "/api/contact-attributes/age")).statusCode).toBe(404);
    // A key no definition can have names none (PostgreSQL stores no NUL: it must not reach the query).
    for (const key of ["a%00b", "a%20b", "x".repeat(65)]) {
      const bad = await as(t, user, "DELETE", `/api/contact-attributes/${key}`);
      expect(bad.statusCode, key).toBe(404);
      expect(bad.json().error, key).toMatch(/not found/i);
    }
    expect(
      (await as(t, user, "PATCH", `/api/contacts/${id}`, { attributes: { age: "ten" } })).statusCode,
    ).toBe(200);
    const member = await addMember(t.app, user);
    expect(
      (await as(t, member, "POST", "/api/contact-attributes", { key: "k", label: "K", type: "text" }))
        .statusCode,
    ).toBe(403);
  });
});

describe("DELETE /api/contacts/{id} (erasure)", () => {
  it("leaves no row and no media file of the contact, and keeps the account's other contacts", async ({
    t,
    owner: { user, accountId },
  }) => {
    const { contact, conversation } = await insertContact(t, { accountId, name: "Erase me" });
    const other = await insertContact(t, { accountId, name: "Keep me" });
    const text = await insertMessage(t, { accountId, conversationId: conversation.id, text: "my secret" });
    const withFile = await insertMessage(t, { accountId, conversationId: conversation.id });
    await t.database.db
      .update(messages)
      .set({ type: "image", media: { id: "m1", mime_type: "image/png", status: "stored" } })
      .where(eq(messages.id, withFile.id));
    await t.app.deps.media.put(mediaKey(accountId, withFile.id), Buffer.from("png bytes"), "image/png");
    const keptMessage = await insertMessage(t, { accountId, conversationId: other.conversation.id });
    await t.app.deps.media.put(mediaKey(accountId, keptMessage.id), Buffer.from("other"), "image/png");
    const [flow] = await t.database.db
      .insert(flows)
      .values({ accountId, userId: user.id, name: "F" })
      .returning();
    const [run] = await t.database.db
      .insert(flowRuns)
      .values({ flowId: flow!.id, accountId, contactId: contact.id, conversationId: conversation.id })
      .returning();
    await t.database.db
      .insert(flowRunEvents)
      .values({ runId: run!.id, flowId: flow!.id, eventType: "started" });

    const member = await addMember(t.app, user);
    expect((await as(t, member, "DELETE", `/api/contacts/${contact.id}`)).statusCode).toBe(403);
    const erased = await as(t, user, "DELETE", `/api/contacts/${contact.id}`);
    expect(erased.statusCode).toBe(200);
    expect(erased.json()).toEqual({ ok: true });
    await t.app.deps.jobs.drain();

    const count = async (query: ReturnType<typeof sql>) =>
      Number((await t.database.db.execute<{ n: string }>(query)).rows[0]!.n);
    expect(await count(sql`select count(*) as n from contacts where id = ${contact.id}`)).toBe(0);
    expect(await count(sql`select count(*) as n from conversations where id = ${conversation.id}`)).toBe(0);
    expect(
      await count(sql`select count(*) as n from messages where id in (${text.id}, ${withFile.id})`),
    ).toBe(0);
    expect(await count(sql`select count(*) as n from flow_runs where id = ${run!.id}`)).toBe(0);
    expect(await count(sql`select count(*) as n from flow_run_events where run_id = ${run!.id}`)).toBe(0);
    // The event log carried the messages (message.received): those entries are gone too.
    expect(
      await count(
        sql`select count(*) as n from account_events where data::text like ${`%${conversation.id}%`}`,
      ),
    ).toBe(0);
    expect(
      await count(sql`select count(*) as n from account_events where data::text like '%my secret%'`),
    ).toBe(0);
    expect(await t.app.deps.media.get(mediaKey(accountId, withFile.id))).toBeNull();

    expect(await t.app.deps.media.get(mediaKey(accountId, keptMessage.id))).not.toBeNull();
    expect((await as(t, user, "GET", `/api/contacts/${other.contact.id}`)).statusCode).toBe(200);
    expect((await as(t, user, "DELETE", `/api/contacts/${contact.id}`)).statusCode).toBe(404);
  });

  it("answers 404 for another account's contact and erases nothing", async ({ t, owner: mine }) => {
    const theirs = await signUpWithAccount(t.app);
    const { contact } = await insertContact(t, { accountId: theirs.accountId });
    expect((await as(t, mine.user, "DELETE", `/api/contacts/${contact.id}`)).statusCode).toBe(404);
    expect((await as(t, theirs.user, "GET", `/api/contacts/${contact.id}`)).statusCode).toBe(200);
  });
});

describe("POST /api/contacts/{id}/merge", () => {
  it("moves the other contact's messages, tags and attributes into this one and deletes it", async ({
    t,
    owner: { user, accountId },
  }) => {
    const keep = await insertContact(t, { accountId, name: "Ana" });
    const drop = await insertContact(t, { accountId, name: "Ana (old number)" });
    await t.database.db
      .update(contacts)
      .set({ tags: ["vip"], attributes: { city: "Porto", plan: "pro" } })
      .where(eq(contacts.id, keep.contact.id));
    await t.database.db
      .update(contacts)
      .set({ tags: ["lead"], attributes: { city: "Lisbon", shoe: "42" }, optedOut: true })
      .where(eq(contacts.id, drop.contact.id));
    const a = await insertMessage(t, { accountId, conversationId: keep.conversation.id, text: "new" });
    const b = await insertMessage(t, { accountId, conversationId: drop.conversation.id, text: "old" });

    const merged = await as(t, user, "POST", `/api/contacts/${keep.contact.id}/merge`, {
      from_contact_id: drop.contact.id,
    });
    expect(merged.statusCode).toBe(200);
    expect(merged.json().contact).toMatchObject({
      id: keep.contact.id,
      name: "Ana",
      tags: ["vip", "lead"],
      attributes: { city: "Porto", plan: "pro", shoe: "42" },
      opted_out: true,
      conversation_id: keep.conversation.id,
    });
    const moved = await t.database.db
      .select()
      .from(messages)
      .where(eq(messages.conversationId, keep.conversation.id));
    expect(moved.map((m) => m.id).sort()).toEqual([a.id, b.id].sort());
    expect((await as(t, user, "GET", `/api/contacts/${drop.contact.id}`)).statusCode).toBe(404);

    expect(
      (
        await as(t, user, "POST", `/api/contacts/${keep.contact.id}/merge`, {
          from_contact_id: keep.contact.id,
        })
      ).statusCode,
    ).toBe(400);
    expect(
      (
        await as(t, user, "POST", `/api/contacts/${keep.contact.id}/merge`, {
          from_contact_id: drop.contact.id,
        })
      ).statusCode,
    ).toBe(404);
  });
});

describe("GET /api/contacts.csv", () => {
  it("streams the matching contacts with every attribute and the consent fields", async ({
    t,
    owner: { user },
  }) => {
    await as(t, user, "POST", "/api/contact-attributes", { key: "plan", label: "Plan", type: "text" });
    await as(t, user, "POST", "/api/contacts", {
      phone: "+14155550101",
      name: 'Bo "the boss", Jr.',
      tags: ["vip"],
      attributes: { city: "Oslo" },
      opt_in_source: "shop",
    });
    await as(t, user, "POST", "/api/contacts", { phone: "+14155550102", name: "=cmd()", tags: ["lead"] });
    const all = await as(t, user, "GET", "/api/contacts.csv");
    expect(all.statusCode).toBe(200);
    expect(all.headers["content-type"]).toMatch(/^text\/csv/);
    const lines = all.body.trim().split("\r\n");
    expect(lines[0]).toBe(
      "id,phone,wa_id,name,username,bsuid,tags,opted_out,opted_out_at,opted_in_at,opt_in_source,created_at,attributes.plan,attributes.city",
    );
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain(',14155550101,14155550101,"Bo ""the boss"", Jr.",,,vip,false,,');
    expect(lines[1]).toMatch(/,shop,[^,]+,,Oslo$/);
    expect(lines[2]).toContain(",'=cmd(),");
    const vip = await as(t, user, "GET", "/api/contacts.csv?tag=vip");
    expect(vip.body.trim().split("\r\n")).toHaveLength(2);
  });
});
