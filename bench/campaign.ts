/**
 * Starting a campaign of 100,000 recipients (issue 26): the audience snapshot (one set-based
 * `INSERT ... SELECT` of a recipient row per contact, the status change and the send jobs, in one
 * transaction) against a bare `INSERT ... SELECT` of 100,000 rows on the same database, measured
 * in the same run. Target: at most 3 x the bare insert.
 *
 * `npm run bench -- --only=campaign` runs it from bench/run.ts; `node --import tsx bench/campaign.ts`
 * alone starts its own embedded PostgreSQL (or uses `--database-url=<superuser URL>`). `--quick`:
 * one measurement of each instead of the best of three. No worker runs: only the start is timed.
 */

import { randomBytes } from "node:crypto";
import { startCampaign } from "../src/campaigns/service.js";
import { connectDatabase } from "../src/db/client.js";
import { createTokenCipher } from "../src/messaging/crypto.js";
import { benchDatabase } from "./database.js";

const RECIPIENTS = 100_000;
const TARGET = 3;
const rounds = process.argv.includes("--quick") ? 1 : 3;
const log = (m: string) => console.log(`campaign bench: ${m}`);
const cleanups: Array<() => Promise<unknown>> = [];

const database = () => benchDatabase("campaign", log, cleanups);

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main() {
  const url = await database();
  const database_ = connectDatabase(url);
  cleanups.unshift(() => database_.close());
  const { pool } = database_;
  const cipher = createTokenCipher(randomBytes(32).toString("hex"));

  log(`seeding ${RECIPIENTS.toLocaleString("en")} contacts`);
  const account = (
    await pool.query<{ id: string }>("insert into accounts (name) values ('Bench') returning id")
  ).rows[0]?.id as string;
  const user = (
    await pool.query<{ id: string }>(
      "insert into users (name, email) values ('Bench', 'bench@example.com') returning id",
    )
  ).rows[0]?.id as string;
  await pool.query(
    `insert into messaging_configs (account_id, user_id, phone_number_id, access_token, status)
     values ($1, $2, '100000000000001', $3, 'connected')`,
    [account, user, cipher.encrypt("bench-token")],
  );
  await pool.query(
    `insert into message_templates (account_id, upstream_id, name, language, status, components)
     values ($1, '1', 'restock', 'en_US', 'APPROVED', '[{"type":"BODY","text":"Hi {{1}}"}]')`,
    [account],
  );
  await pool.query(
    `insert into contacts (account_id, wa_id, name, phone, tags)
     select $1, (15550000000 + n)::text, 'Customer ' || n, (15550000000 + n)::text, '{vip}'
       from generate_series(1, $2::int) as n`,
    [account, RECIPIENTS],
  );
  await pool.query("create table bench_bare (campaign_id uuid not null, contact_id uuid not null)");
  await pool.query("vacuum analyze");
  await pool.query("checkpoint");

  const deps = { db: database_.db, cipher, now: () => new Date() };
  let bare = Number.POSITIVE_INFINITY;
  let start = Number.POSITIVE_INFINITY;
  for (let round = 1; round <= rounds; round++) {
    await pool.query("truncate bench_bare");
    let t0 = performance.now();
    await pool.query(
      "insert into bench_bare (campaign_id, contact_id) select gen_random_uuid(), id from contacts where account_id = $1",
      [account],
    );
    bare = Math.min(bare, performance.now() - t0);

    const campaign = (
      await pool.query<{ id: string }>(
        `insert into campaigns (account_id, name, template_name, template_language, parameters, audience)
         values ($1, 'Bench ' || $2, 'restock', 'en_US', '{"body":["{{contact.name|there}}"]}', '{"tags_any":["vip"]}')
         returning id`,
        [account, round],
      )
    ).rows[0]?.id as string;
    t0 = performance.now();
    const started = await startCampaign(deps, account, campaign);
    start = Math.min(start, performance.now() - t0);
    if (started.counts.total !== RECIPIENTS)
      throw new Error(`snapshot of ${started.counts.total} recipients`);
  }
  const ratio = start / bare;
  const ok = ratio <= TARGET;
  log(
    `start of a ${RECIPIENTS.toLocaleString("en")}-recipient campaign ${seconds(start)}; bare INSERT ... SELECT ${seconds(bare)}; ratio ${ratio.toFixed(2)} (target <= ${TARGET}) ${ok ? "PASS" : "FAIL"}`,
  );
  console.log(
    JSON.stringify({ campaign_start_ms: Math.round(start), bare_insert_ms: Math.round(bare), ratio }),
  );
  if (!ok) process.exitCode = 1;
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  });
