/** GET /api/contacts.csv: every matching contact, streamed in pages so memory stays flat. */
import { Readable } from "node:stream";
import { and, asc, sql } from "drizzle-orm";
import type { FastifyInstance } from "fastify";
import { requireAccount } from "../auth/session.js";
import type { Db } from "../db/client.js";
import { contacts } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { csvRow } from "../http/csv.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { listDefinitions } from "./attributes.js";
import { type ContactFilter, contactFilterSql } from "./contacts.js";
import { filterQuery } from "./fields.js";

const PAGE = 2_000;

const FIXED_COLUMNS = [
  "id",
  "phone",
  "wa_id",
  "name",
  "username",
  "bsuid",
  "tags",
  "opted_out",
  "opted_out_at",
  "opted_in_at",
  "opt_in_source",
  "created_at",
] as const;

/** The export's rows: a header, then the contacts oldest first, a page at a time. */
async function* exportRows(db: Db, accountId: string, filter: ContactFilter) {
  // Every attribute: the defined ones first, then any other key a matching contact has.
  const defined = (await listDefinitions(db, accountId)).map((d) => d.key);
  const { rows: others } = await db.execute<{ key: string }>(sql`
    select distinct jsonb_object_keys(${contacts.attributes}) as key from ${contacts}
     where ${contactFilterSql(accountId, filter)} order by 1`);
  const keys = [...new Set([...defined, ...others.map((r) => r.key)])];
  yield csvRow([...FIXED_COLUMNS, ...keys.map((k) => `attributes.${k}`)]);
  let after: { createdAt: Date; id: string } | null = null;
  for (;;) {
    const page: (typeof contacts.$inferSelect)[] = await db
      .select()
      .from(contacts)
      .where(
        and(
          contactFilterSql(accountId, filter),
          after
            ? sql`(${contacts.createdAt}, ${contacts.id}) > (${after.createdAt.toISOString()}::timestamptz, ${after.id}::uuid)`
            : undefined,
        ),
      )
      .orderBy(asc(contacts.createdAt), asc(contacts.id))
      .limit(PAGE);
    let chunk = "";
    for (const c of page) {
      chunk += csvRow([
        c.id,
        c.phone,
        c.waId,
        c.name,
        c.username,
        c.bsuid,
        c.tags.join(";"),
        c.optedOut,
        c.optedOutAt,
        c.optedInAt,
        c.optInSource,
        c.createdAt,
        ...keys.map((k) => c.attributes[k]),
      ]);
    }
    if (chunk) yield chunk;
    const last = page.at(-1);
    if (page.length < PAGE || !last) return;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

export function registerContactExportRoute(app: FastifyInstance, deps: AppDeps) {
  app.get(
    "/api/contacts.csv",
    docs({
      account: true,
      tags: ["contacts"],
      summary: "Export contacts as CSV",
      description:
        "Streams every contact matching the filters of GET /api/contacts (`q`, `tag`, `opted_out`, `attribute`, `value`), oldest first: id, phone, wa_id, name, username, bsuid, tags (separated by `;`), the consent fields (opted_out, opted_out_at, opted_in_at, opt_in_source), created_at, then one `attributes.<key>` column per attribute (defined ones first). Cells a spreadsheet would run as formulas are prefixed with `'`.",
      querystring: filterQuery,
      responses: {
        200: {
          description: "The rows as CSV",
          contentType: "text/csv",
          headers: { "content-disposition": 'attachment; filename="contacts-<date>.csv"' },
        },
        400: "A bad filter (named)",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await deps.sessions.require(request));
      const filter = parse(filterQuery, request.query);
      const stamp = deps.now().toISOString().slice(0, 10);
      return reply
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="contacts-${stamp}.csv"`)
        .send(Readable.from(exportRows(deps.db, accountId, filter)));
    },
  );
}
