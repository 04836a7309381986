import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contactPageQuery } from "../../src/contacts/contacts.js";
import { searchProbes } from "../../src/contacts/search.js";
import { conversationPageQuery } from "../../src/inbox/conversations.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

/**
 * Search at 10,000 conversations (30,000 messages) in one account, beside
 * another account of the same size: it finds by name, phone and message text,
 * and its plan reads the account-scoped trigram indexes (account_id and the
 * trigrams in one GIN index), never every message.
 */
const CONVERSATIONS = 10_000;

let t: TestApp;
let owner: TestUser;
let accountId: string;

beforeAll(async () => {
  t = await createTestApp();
  const a = await signUpWithAccount(t.app);
  const b = await signUpWithAccount(t.app);
  owner = a.user;
  accountId = a.accountId;
  for (const [account, prefix] of [
    [a.accountId, "1"],
    [b.accountId, "2"],
  ] as const) {
    await t.database.pool.query(
      `insert into contacts (account_id, wa_id, name, phone)
       select $1, $2 || lpad(i::text, 9, '0'), 'Customer ' || i || ' ' || md5($2 || i::text),
              $2 || lpad(i::text, 9, '0')
       from generate_series(1, $3) i`,
      [account, prefix, CONVERSATIONS],
    );
    await t.database.pool.query(
      `insert into conversations (account_id, contact_id, last_message_at)
       select account_id, id, now() - (random() * interval '30 days') from contacts where account_id = $1`,
      [account],
    );
    await t.database.pool.query(
      `insert into messages (account_id, conversation_id, direction, sender_type, type, text, status, created_at)
       select c.account_id, c.id, 'inbound', 'customer', 'text',
              'Order ' || k || ' about ' || md5(c.id::text || k), 'received', c.last_message_at
       from conversations c cross join generate_series(1, 3) k where c.account_id = $1`,
      [account],
    );
  }
  // What autovacuum does to a table that grew: statistics, and GIN pending lists merged.
  for (const table of ["contacts", "conversations", "messages"])
    await t.database.pool.query(`vacuum analyze ${table}`);
}, 300_000);
afterAll(() => t.close());

const search = async (q: string) => {
  const response = await t.app.inject({
    url: `/api/conversations?q=${encodeURIComponent(q)}`,
    headers: owner.headers,
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().conversations as Array<{ id: string; contact: { name: string; phone: string } }>;
};

/** The plan of the service's very statement, probes included. */
async function planOf(q: string): Promise<string> {
  const probes = await searchProbes(t.database.db, q);
  const query = conversationPageQuery(t.database.db, { accountId, limit: 50, q, probes }).toSQL();
  const { rows } = await t.database.pool.query(`explain (format json) ${query.sql}`, query.params);
  return JSON.stringify(rows[0]["QUERY PLAN"]);
}

describe("inbox search at 10,000 conversations", () => {
  it("finds a conversation by its contact's name, phone, or a message's words, only in the account", async () => {
    const [{ rows: contactRows }, { rows: messageRows }] = await Promise.all([
      t.database.pool.query(
        "select c.name, c.phone, v.id from contacts c join conversations v on v.contact_id = c.id where c.account_id = $1 and c.wa_id = '1000004321'",
        [accountId],
      ),
      t.database.pool.query(
        "select m.text, m.conversation_id from messages m where m.account_id = $1 order by m.id limit 1",
        [accountId],
      ),
    ]);
    const contact = contactRows[0];
    const hash = contact.name.split(" ")[2];
    expect((await search(hash.slice(0, 12))).map((c) => c.id)).toEqual([contact.id]);
    expect((await search("1000004321")).map((c) => c.id)).toEqual([contact.id]);
    const words = messageRows[0].text.split(" about ")[1].slice(0, 16);
    expect((await search(words)).map((c) => c.id)).toEqual([messageRows[0].conversation_id]);
    // The other account has "Customer 4321" too: only this account's one is found.
    expect((await search("Customer 4321 ")).map((c) => c.id)).toEqual([contact.id]);
  });

  it("answers a broad search with a full first page", async () => {
    const found = await search("Order 2");
    expect(found).toHaveLength(50);
  });

  it("reads the trigram indexes of names, phones and message texts, never every message", async () => {
    const plan = await planOf("a1b2c3d4");
    expect(plan).toContain("messages_search_idx");
    expect(plan).toContain("contacts_search_idx");
    expect(plan).not.toMatch(
      /"Node Type":"Seq Scan","Parent Relationship":"[^"]*","Parallel Aware":(true|false),"Async Capable":(true|false),"Relation Name":"messages"/,
    );
    expect(plan).not.toMatch(/Seq Scan[^}]*"Relation Name":"messages"/);
    const byPhone = await planOf("1000004321");
    expect(byPhone).toContain("contacts_search_idx");
    expect(byPhone).toContain("messages_search_idx");
  });

  it("matches inside the account in the index itself: each trigram condition comes with the account", async () => {
    const plan = await planOf("Customer 4321 ");
    const conditions = [...plan.matchAll(/"Index Cond":"([^"]*~~\*[^"]*)"/g)].map((m) => m[1]);
    expect(conditions.length).toBeGreaterThanOrEqual(2);
    for (const condition of conditions) expect(condition).toContain("account_id = ");
    const probe = (await searchProbes(t.database.db, "Customer 4321 ")).name;
    const query = contactPageQuery(t.database.db, {
      accountId,
      limit: 50,
      q: "Customer 4321 ",
      probe,
    }).toSQL();
    const { rows } = await t.database.pool.query(`explain (format json) ${query.sql}`, query.params);
    const contactPlan = JSON.stringify(rows[0]["QUERY PLAN"]);
    expect(contactPlan).toContain("contacts_search_idx");
    expect(contactPlan).not.toMatch(/Seq Scan[^}]*"Relation Name":"contacts"/);
  });

  it("probes the index with a search's rare word when its other words are in most rows, and checks the whole text on what it finds", async () => {
    // Every name holds "Customer", every message "Order" and "about": in names, only the rare word is
    // looked up; no message holds "Customer", so the messages' index takes the whole text.
    const plan = await planOf("Customer 4321");
    const conditions = [...plan.matchAll(/"Index Cond":"([^"]*~~\*[^"]*)"/g)].map((m) => m[1]);
    expect(conditions.filter((c) => c?.includes("(name ~~*"))).toEqual([
      expect.stringContaining("name ~~* '%4321%'"),
    ]);
    expect(conditions.filter((c) => c?.includes("(text ~~*"))).toEqual([
      expect.stringContaining("text ~~* '%Customer 4321%'"),
    ]);
    expect(plan).toContain("strpos(lower(name), 'customer 4321'::text) > 0");
    // What the rare word finds but the whole text does not (another Customer's hash, a message's) is left out.
    const { rows } = await t.database.pool.query(
      `select count(*)::int as n from contacts where account_id = $1 and (name ilike '%4321%')`,
      [accountId],
    );
    expect(rows[0].n).toBeGreaterThan(1);
    const found = await search("Customer 4321");
    expect(found.map((c) => c.contact.name.split(" ").slice(0, 2).join(" "))).toEqual(["Customer 4321"]);
    // A message's words: "about" is in every message, its hash is not.
    const { rows: messageRows } = await t.database.pool.query(
      "select m.text, m.conversation_id from messages m where m.account_id = $1 order by m.id desc limit 1",
      [accountId],
    );
    const hash = (messageRows[0].text as string).split(" about ")[1]!.slice(0, 10);
    const byWords = await planOf(`about ${hash}`);
    expect(byWords).toContain(`text ~~* '%${hash}%'`);
    expect(byWords).not.toContain("text ~~* '%about ");
    expect((await search(`about ${hash}`)).map((c) => c.id)).toEqual([messageRows[0].conversation_id]);
    // Words all common: the whole text is the probe.
    expect(await planOf("Order 2 about")).toContain("'%Order 2 about%'");
  });
});
