import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

/** A thread read from its latest message back (`order=newest`), as the console's thread reads it. */
let t: TestApp;
let owner: TestUser;
let conversationId: string;

beforeAll(async () => {
  t = await createTestApp();
  const a = await signUpWithAccount(t.app);
  owner = a.user;
  const { rows } = await t.database.pool.query<{ id: string }>(
    `with c as (
       insert into contacts (account_id, wa_id, name, phone) values ($1, '15550001234', 'Long', '15550001234')
       returning id, account_id)
     insert into conversations (account_id, contact_id, last_message_at) select account_id, id, now() from c
     returning id`,
    [a.accountId],
  );
  conversationId = rows[0]!.id;
  await t.database.pool.query(
    `insert into messages (account_id, conversation_id, direction, sender_type, type, text, status, created_at)
     select $1, $2, 'inbound', 'customer', 'text', 'Message ' || k, 'received', now() - (251 - k) * interval '1 second'
     from generate_series(1, 250) k`,
    [a.accountId, conversationId],
  );
}, 120_000);
afterAll(() => t.close());

const page = async (query: string) => {
  const response = await t.app.inject({
    url: `/api/conversations/${conversationId}/messages?${query}`,
    headers: owner.headers,
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { messages: Array<{ text: string }>; next_cursor: string | null };
};

describe("a thread from its latest message back", () => {
  it("gives the latest messages first, each page oldest first, then the ones before, to the first", async () => {
    const first = await page("order=newest&limit=100");
    expect(first.messages.map((m) => m.text)).toEqual(
      Array.from({ length: 100 }, (_, i) => `Message ${151 + i}`),
    );
    const second = await page(`order=newest&limit=100&cursor=${first.next_cursor}`);
    expect(second.messages[0]?.text).toBe("Message 51");
    expect(second.messages.at(-1)?.text).toBe("Message 150");
    const third = await page(`order=newest&limit=100&cursor=${second.next_cursor}`);
    expect(third.messages.map((m) => m.text)).toEqual(
      Array.from({ length: 50 }, (_, i) => `Message ${1 + i}`),
    );
    expect(third.next_cursor).toBeNull();
  });

  it("keeps the oldest-first walk by default, and refuses an unknown order", async () => {
    const first = await page("limit=2");
    expect(first.messages.map((m) => m.text)).toEqual(["Message 1", "Message 2"]);
    const response = await t.app.inject({
      url: `/api/conversations/${conversationId}/messages?order=sideways`,
      headers: owner.headers,
    });
    expect(response.statusCode).toBe(400);
    expect(response.body).toContain("order");
  });
});
