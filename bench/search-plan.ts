/**
 * The search scenarios' proof that they are served by the account-scoped
 * trigram indexes: EXPLAIN of the very statements the service runs
 * (conversationPageQuery, contactPageQuery), and the indexes each plan reads.
 */

import { contactPageQuery } from "../src/contacts/contacts.js";
import { searchProbes } from "../src/contacts/search.js";
import { connectDatabase } from "../src/db/client.js";
import { conversationPageQuery } from "../src/inbox/conversations.js";

export interface SearchPlan {
  key: string;
  /** The indexes the plan reads. */
  indexes: string[];
  /** The indexes it must read, and whether it does. */
  expected: string[];
  ok: boolean;
  /** A full scan of the searched table (what the index is there to avoid). */
  seqScan: boolean;
}

const indexesOf = (plan: unknown): string[] =>
  [...JSON.stringify(plan).matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]!);

export async function searchPlans(
  url: string,
  searches: Array<{ key: string; accountId: string; q: string; kind: "conversations" | "contacts" }>,
): Promise<SearchPlan[]> {
  const database = connectDatabase(url, { max: 1 });
  try {
    const plans: SearchPlan[] = [];
    for (const s of searches) {
      // As the service builds them: probed with the search's rare part (searchProbes).
      const probes = await searchProbes(database.db, s.q);
      const query =
        s.kind === "conversations"
          ? conversationPageQuery(database.db, { accountId: s.accountId, limit: 50, q: s.q, probes }).toSQL()
          : contactPageQuery(database.db, {
              accountId: s.accountId,
              limit: 50,
              q: s.q,
              probe: probes.name,
            }).toSQL();
      const { rows } = await database.pool.query(`explain (format json) ${query.sql}`, query.params);
      const plan = rows[0]["QUERY PLAN"];
      const indexes = [...new Set(indexesOf(plan))];
      const expected =
        s.kind === "conversations" ? ["contacts_search_idx", "messages_search_idx"] : ["contacts_search_idx"];
      const seqScan = /"Node Type":"Seq Scan"[^{}]*"Relation Name":"(messages|contacts)"/.test(
        JSON.stringify(plan),
      );
      const ok = expected.every((index) => indexes.includes(index)) && !seqScan;
      plans.push({ key: s.key, indexes, expected, ok, seqScan });
    }
    return plans;
  } finally {
    await database.close();
  }
}
