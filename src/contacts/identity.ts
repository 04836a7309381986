/**
 * A contact's WhatsApp identity. Meta answers a send with the WhatsApp id it
 * delivered to (`contacts[0].wa_id`), which differs from the number we sent
 * to when Meta rewrites it (Brazil's and Mexico's mobile prefixes): adopting
 * it makes the customer's replies, which come from that id, thread into the
 * same contact.
 */
import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";

/**
 * Makes `waId` the WhatsApp id of the conversation's contact, unless it has
 * it already or another contact of the account has it (two contacts then
 * remain: POST /api/contacts/{id}/merge joins them). The phone stays as given.
 */
export async function adoptWhatsAppId(
  db: DbOrTx,
  input: ({ conversationId: string } | { contactId: string }) & { waId: string | undefined },
) {
  if (!input.waId || !/^\d{1,20}$/.test(input.waId)) return;
  const contact =
    "contactId" in input
      ? sql`${input.contactId}::uuid`
      : sql`(select contact_id from conversations where id = ${input.conversationId})`;
  await db.execute(sql`
    update contacts k set wa_id = ${input.waId}, updated_at = now()
     where k.id = ${contact} and k.wa_id <> ${input.waId}
       and not exists (select 1 from contacts o where o.account_id = k.account_id and o.wa_id = ${input.waId})`);
}

/** (Defined with the Graph client, which addresses BSUIDs with `recipient`.) */
export { isBsuid } from "../upstream/graph.js";
