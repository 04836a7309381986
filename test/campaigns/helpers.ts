import { sql } from "drizzle-orm";
import { expect } from "vitest";
import type { SandboxTemplate } from "../../src/upstream/sandbox/templates.js";
import { uniqueDigits } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/harness.js";
import { type Business, business, type SandboxedApp } from "../helpers/sandbox-app.js";

/** JSON read back from the API, accessed loosely in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test access into parsed JSON
export type Json = any;

/** Templates with every kind of placeholder a campaign fills. */
export const CAMPAIGN_TEMPLATES: SandboxTemplate[] = [
  {
    id: "800000000000001",
    name: "restock",
    language: "en_US",
    status: "APPROVED",
    category: "MARKETING",
    components: [
      { type: "HEADER", format: "TEXT", text: "Back in stock" },
      { type: "BODY", text: "Hi {{1}}, the {{2}} you wanted is back." },
      { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "Stop promotions" }] },
    ],
  },
  {
    id: "800000000000002",
    name: "named_offer",
    language: "en_US",
    status: "APPROVED",
    category: "MARKETING",
    components: [{ type: "BODY", text: "Hello {{first_name}}, {{city}} store opens soon." }],
  },
  {
    id: "800000000000003",
    name: "photo_offer",
    language: "en_US",
    status: "APPROVED",
    category: "MARKETING",
    components: [
      { type: "HEADER", format: "IMAGE" },
      { type: "BODY", text: "New arrivals for you." },
      { type: "BUTTONS", buttons: [{ type: "URL", text: "Shop", url: "https://shop.test/{{1}}" }] },
    ],
  },
  {
    id: "800000000000004",
    name: "draft_offer",
    language: "en_US",
    status: "PENDING",
    category: "MARKETING",
    components: [{ type: "BODY", text: "Soon." }],
  },
  {
    id: "800000000000005",
    name: "plain_notice",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    components: [{ type: "BODY", text: "Our hours change next week." }],
  },
];

/** `count` contacts of the account in one statement; answers their ids in phone order. */
export async function addContacts(
  t: TestApp,
  accountId: string,
  count: number,
  options: { tags?: string[]; attributes?: Record<string, string>; optedOut?: boolean; prefix?: string } = {},
): Promise<Array<{ id: string; phone: string }>> {
  const prefix = options.prefix ?? `1${uniqueDigits(5)}`;
  const { rows } = await t.database.db.execute<{ id: string; phone: string }>(sql`
    insert into contacts (account_id, wa_id, name, phone, tags, attributes, opted_out)
    select ${accountId}::uuid, ${prefix} || lpad(n::text, 6, '0'), 'Customer ' || n, ${prefix} || lpad(n::text, 6, '0'),
           ${sql.param(options.tags ?? [])}::text[], ${JSON.stringify(options.attributes ?? {})}::jsonb, ${options.optedOut ?? false}
      from generate_series(1, ${count}) as n
    returning id, phone`);
  return rows.sort((a, b) => a.phone.localeCompare(b.phone));
}

/** A business whose sandbox number has the campaign templates, synced into the app. */
export async function ready(s: SandboxedApp): Promise<Business> {
  const b = await business(s);
  s.sandbox.setTemplates(b.businessAccountId, CAMPAIGN_TEMPLATES);
  const sync = await s.t.app.inject({
    method: "POST",
    url: "/api/messaging/templates/sync",
    headers: b.user.headers,
  });
  expect(sync.statusCode).toBe(200);
  return b;
}
