import { type SQL, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { contacts } from "../db/schema/index.js";

/** Who a campaign goes to: every condition given must hold (none: every contact). */
export interface Audience {
  tags_any?: string[];
  tags_none?: string[];
  attributes?: Record<string, string>;
  contact_ids?: string[];
}

/** The account's contacts the audience selects, as a condition on `contacts` (alias `c`). */
export function audienceWhere(accountId: string, audience: Audience): SQL {
  const parts: SQL[] = [sql`c.account_id = ${accountId}::uuid`];
  if (audience.tags_any?.length) parts.push(sql`c.tags && ${sql.param(audience.tags_any)}::text[]`);
  if (audience.tags_none?.length) parts.push(sql`not (c.tags && ${sql.param(audience.tags_none)}::text[])`);
  if (audience.attributes && Object.keys(audience.attributes).length) {
    parts.push(sql`c.attributes @> ${JSON.stringify(audience.attributes)}::jsonb`);
  }
  if (audience.contact_ids?.length) parts.push(sql`c.id = any(${sql.param(audience.contact_ids)}::uuid[])`);
  return sql.join(parts, sql` and `);
}

/**
 * The recipients of an audience: opted-out contacts and contacts without a
 * number left out, and one contact per number (the oldest), so that nobody
 * gets the message twice through two contacts. Ordered by contact id.
 */
export const recipientsSql = (accountId: string, audience: Audience) => sql`
  select distinct on (c.phone) c.id, c.name, c.phone, c.attributes
    from ${contacts} c
   where ${audienceWhere(accountId, audience)} and not c.opted_out and c.phone is not null
   order by c.phone, c.created_at, c.id`;

/**
 * The same recipients' contact ids only (the start's snapshot): the sort that
 * keeps one contact per number then carries 16-byte ids instead of names and
 * attributes.
 */
export const recipientIdsSql = (accountId: string, audience: Audience) => sql`
  select distinct on (c.phone) c.id
    from ${contacts} c
   where ${audienceWhere(accountId, audience)} and not c.opted_out and c.phone is not null
   order by c.phone, c.created_at, c.id`;

export interface AudienceCounts {
  recipients: number;
  excluded: { opted_out: number; no_address: number; duplicate: number };
}

/** How many contacts the audience reaches, and how many it leaves out and why. */
export async function countAudience(
  db: DbOrTx,
  accountId: string,
  audience: Audience,
): Promise<AudienceCounts> {
  const { rows } = await db.execute<{
    opted_out: number;
    no_address: number;
    reachable: number;
    numbers: number;
  }>(sql`
    select count(*) filter (where c.opted_out)::int as opted_out,
           count(*) filter (where not c.opted_out and c.phone is null)::int as no_address,
           count(*) filter (where not c.opted_out and c.phone is not null)::int as reachable,
           count(distinct c.phone) filter (where not c.opted_out)::int as numbers
      from ${contacts} c
     where ${audienceWhere(accountId, audience)}`);
  const row = rows[0] ?? { opted_out: 0, no_address: 0, reachable: 0, numbers: 0 };
  return {
    recipients: row.numbers,
    excluded: {
      opted_out: row.opted_out,
      no_address: row.no_address,
      duplicate: row.reachable - row.numbers,
    },
  };
}
