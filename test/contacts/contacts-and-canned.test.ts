import { eq } from "drizzle-orm";
import { describe, expect } from "vitest";
import { cannedResponses, contacts } from "../../src/db/schema/index.js";
import { insertContact, appTest as it } from "../helpers/fixtures.js";
import { addMember, signUp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

const as = (
  t: TestApp,
  user: TestUser,
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  url: string,
  payload?: unknown,
) =>
  t.app.inject({
    method,
    url,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

describe("contacts", () => {
  it("lists the account's contacts newest first, with their conversation, and pages them", async ({
    t,
    owner: { user, accountId },
  }) => {
    const teammate = await addMember(t.app, user);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await insertContact(t, { accountId, name: `Person ${i}` }));
    const stranger = await signUpWithAccount(t.app);
    await insertContact(t, { accountId: stranger.accountId, name: "Not yours" });

    const first = await as(t, teammate, "GET", "/api/contacts?limit=2");
    expect(first.statusCode).toBe(200);
    const second = await as(t, teammate, "GET", `/api/contacts?limit=2&cursor=${first.json().next_cursor}`);
    expect(second.json().next_cursor).toBeNull();
    const all = [...first.json().contacts, ...second.json().contacts];
    expect(all.map((c: { id: string }) => c.id)).toEqual(made.map((m) => m.contact.id).reverse());
    expect(all[0]).toEqual({
      id: made[2]!.contact.id,
      wa_id: made[2]!.contact.waId,
      name: "Person 2",
      phone: made[2]!.contact.phone,
      tags: [],
      attributes: {},
      opted_out: false,
      opted_out_at: null,
      opted_in_at: null,
      opt_in_source: null,
      bsuid: null,
      username: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      conversation_id: made[2]!.conversation.id,
    });
  });

  it("finds contacts by name or phone, and by tag", async ({ t, owner: { user, accountId } }) => {
    const ana = await insertContact(t, { accountId, name: "Ana Beatriz", phone: "5511987654321" });
    const bo = await insertContact(t, { accountId, name: "Bo" });
    await t.database.db
      .update(contacts)
      .set({ tags: ["vip"] })
      .where(eq(contacts.id, bo.contact.id));
    const ids = async (query: string) =>
      (await as(t, user, "GET", `/api/contacts?${query}`)).json().contacts.map((c: { id: string }) => c.id);
    expect(await ids("q=beatriz")).toEqual([ana.contact.id]);
    expect(await ids(`q=${encodeURIComponent("+55 11 9876")}`)).toEqual([ana.contact.id]);
    expect(await ids("tag=vip")).toEqual([bo.contact.id]);
    expect(await ids("q=nobody")).toEqual([]);
  });

  it("reads one contact, and answers 404 for another account's or an unknown one", async ({
    t,
    owner: { user, accountId },
  }) => {
    const mine = await insertContact(t, { accountId, name: "Mine" });
    const other = await signUpWithAccount(t.app);
    const theirs = await insertContact(t, { accountId: other.accountId, name: "Theirs" });
    const read = await as(t, user, "GET", `/api/contacts/${mine.contact.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().contact).toMatchObject({ id: mine.contact.id, conversation_id: mine.conversation.id });
    for (const id of [theirs.contact.id, "00000000-0000-4000-8000-000000000000", "nope"]) {
      const response = await as(t, user, "GET", `/api/contacts/${id}`);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: "Not found" });
      expect((await as(t, user, "PATCH", `/api/contacts/${id}`, { name: "Mine now" })).statusCode).toBe(404);
    }
    const [row] = await t.database.db.select().from(contacts).where(eq(contacts.id, theirs.contact.id));
    expect(row?.name).toBe("Theirs");
  });

  it("changes name, tags, attributes and opt-out; each supplied field replaces the stored one", async ({
    t,
    owner: { user, accountId },
  }) => {
    const { contact } = await insertContact(t, { accountId, name: "Old" });
    const response = await as(t, user, "PATCH", `/api/contacts/${contact.id}`, {
      name: "  New Name ",
      tags: [" vip ", "late", "vip"],
      attributes: { plan: "gold", "order.id": "A-1" },
      opted_out: true,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().contact).toMatchObject({
      name: "New Name",
      tags: ["vip", "late"],
      attributes: { plan: "gold", "order.id": "A-1" },
      opted_out: true,
    });
    const again = await as(t, user, "PATCH", `/api/contacts/${contact.id}`, {
      attributes: { plan: "silver" },
      name: null,
    });
    expect(again.json().contact).toMatchObject({
      name: null,
      tags: ["vip", "late"],
      attributes: { plan: "silver" },
      opted_out: true,
    });
  });

  it.for([
    ["nothing to change", {}, /Nothing to change/],
    ["tags not an array", { tags: "vip" }, /tags: must be an array/],
    ["an empty tag", { tags: [""] }, /tags.0: must not be empty/],
    ["a tag over 50 characters", { tags: ["t".repeat(51)] }, /tags.0: must be at most 50/],
    ["51 tags", { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, /tags: must hold at most 50/],
    ["nested attributes", { attributes: { a: { b: "c" } } }, /attributes.a: must be a string/],
    ["an attribute that is a number", { attributes: { a: 1 } }, /attributes.a: must be a string/],
    ["attributes an array", { attributes: ["a"] }, /attributes/],
    ["an attribute key with a space", { attributes: { "a b": "c" } }, /attributes/],
    ["opted_out a string", { opted_out: "yes" }, /opted_out: must be true or false/],
    ["a NUL in the name", { name: "a\u0000" }, /name: must not contain NUL/],
    ["a name over 200 characters", { name: "n".repeat(201) }, /name: must be at most 200/],
  ] as const)(
    "answers 400 for %s and changes nothing",
    async ([_name, payload, error], { t, owner: { user, accountId } }) => {
      const { contact } = await insertContact(t, { accountId, name: "Same" });
      const response = await as(t, user, "PATCH", `/api/contacts/${contact.id}`, payload);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(error);
      const [row] = await t.database.db.select().from(contacts).where(eq(contacts.id, contact.id));
      expect(row).toEqual(contact);
    },
  );

  it("answers 401 without a session and 403 without an account", async ({ t }) => {
    const loner = await signUp(t.app);
    for (const url of ["/api/contacts", "/api/contacts/00000000-0000-4000-8000-000000000000"]) {
      expect((await t.app.inject({ url })).statusCode).toBe(401);
      expect((await as(t, loner, "GET", url)).statusCode).toBe(403);
    }
  });
});

describe("canned responses", () => {
  it("creates, lists by shortcut, changes and deletes them, shared by the team", async ({
    t,
    owner: { user },
  }) => {
    const teammate = await addMember(t.app, user);
    const created = await as(t, user, "POST", "/api/canned-responses", {
      shortcut: "thanks",
      text: " Thank you! ",
    });
    expect(created.statusCode).toBe(201);
    const thanks = created.json().canned_response;
    expect(thanks).toEqual({
      id: expect.any(String),
      shortcut: "thanks",
      text: "Thank you!",
      created_by: user.id,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    await as(t, user, "POST", "/api/canned-responses", { shortcut: "address", text: "Main St 1" });
    const listed = await as(t, teammate, "GET", "/api/canned-responses");
    expect(listed.json().canned_responses.map((c: { shortcut: string }) => c.shortcut)).toEqual([
      "address",
      "thanks",
    ]);

    const changed = await as(t, teammate, "PUT", `/api/canned-responses/${thanks.id}`, {
      text: "Many thanks",
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().canned_response).toMatchObject({ shortcut: "thanks", text: "Many thanks" });

    const deleted = await as(t, teammate, "DELETE", `/api/canned-responses/${thanks.id}`);
    expect(deleted.json()).toEqual({ ok: true });
    expect((await as(t, user, "DELETE", `/api/canned-responses/${thanks.id}`)).statusCode).toBe(404);
  });

  it("answers 409 for a shortcut the account already uses, in another account it is free", async ({
    t,
    owner: { user },
  }) => {
    const other = await signUpWithAccount(t.app);
    await as(t, user, "POST", "/api/canned-responses", { shortcut: "hi", text: "Hello" });
    const bye = (await as(t, user, "POST", "/api/canned-responses", { shortcut: "bye", text: "Bye" })).json();
    const duplicate = await as(t, user, "POST", "/api/canned-responses", { shortcut: "hi", text: "Hey" });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error).toMatch(/"hi" is already used/);
    const renamed = await as(t, user, "PUT", `/api/canned-responses/${bye.canned_response.id}`, {
      shortcut: "hi",
    });
    expect(renamed.statusCode).toBe(409);
    expect(
      (await as(t, other.user, "POST", "/api/canned-responses", { shortcut: "hi", text: "Hey" })).statusCode,
    ).toBe(201);
  });

  it.for([
    ["an upper-case shortcut", { shortcut: "Hi", text: "x" }, /shortcut: must be 1-32 characters/],
    ["a shortcut over 32 characters", { shortcut: "s".repeat(33), text: "x" }, /shortcut/],
    ["no text", { shortcut: "ok" }, /text: must be a string/],
    ["blank text", { shortcut: "ok", text: " " }, /text: must not be empty/],
    ["text over 4096 characters", { shortcut: "ok", text: "x".repeat(4097) }, /text: must be at most 4096/],
    ["an unpaired surrogate", { shortcut: "ok", text: "\ud800" }, /text: must not contain/],
  ] as const)(
    "answers 400 for %s and saves nothing",
    async ([_name, payload, error], { t, owner: { user, accountId } }) => {
      const response = await as(t, user, "POST", "/api/canned-responses", payload);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(error);
      const rows = await t.database.db
        .select()
        .from(cannedResponses)
        .where(eq(cannedResponses.accountId, accountId));
      expect(rows).toEqual([]);
    },
  );

  it("answers 404 for another account's canned response and leaves it alone", async ({
    t,
    owner: { user },
  }) => {
    const other = await signUpWithAccount(t.app);
    const theirs = (
      await as(t, other.user, "POST", "/api/canned-responses", { shortcut: "x", text: "Theirs" })
    ).json();
    const id = theirs.canned_response.id;
    expect((await as(t, user, "PUT", `/api/canned-responses/${id}`, { text: "Mine" })).statusCode).toBe(404);
    expect((await as(t, user, "DELETE", `/api/canned-responses/${id}`)).statusCode).toBe(404);
    expect((await as(t, user, "GET", "/api/canned-responses")).json()).toEqual({ canned_responses: [] });
    const [row] = await t.database.db.select().from(cannedResponses).where(eq(cannedResponses.id, id));
    expect(row?.text).toBe("Theirs");
  });
});
