/**
 * The bare reply pipeline (issue 24's yardstick): a plain script on the
 * bench's database doing only the durable minimum of a bot reply. Check the
 * signature, store the inbound row (once per upstream id), answer 200, store
 * the outbound row, call the sandbox, record its answer. No flows, no jobs, no
 * accounts: what the product's pipeline is compared with, in the same run.
 *
 * Run as a child process: `node --import tsx bench/bare.ts` with PORT,
 * DATABASE_URL, APP_SECRET, GRAPH_URL (…/v25.0), PHONE_NUMBER_ID, ACCESS_TOKEN,
 * REPLY (the reply's text).
 */
import pg from "pg";
import { type DeliveryValue, graphPost, serveWebhook } from "./yardstick.js";

const env = process.env;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 20 });
pool.on("error", () => undefined);
const reply = env.REPLY ?? "Bare reply";

await pool.query(`
  create table if not exists bench_bare_messages (
    id bigserial primary key,
    upstream_id text unique,
    wa_id text not null,
    direction text not null,
    text text,
    status text not null,
    created_at timestamptz not null default now()
  )`);

async function graphSend(to: string): Promise<string> {
  const id = await graphPost(
    JSON.stringify({ messaging_product: "whatsapp", to, type: "text", text: { body: reply } }),
  );
  if (!id) throw new Error("no message id");
  return id;
}

async function answer(waId: string) {
  const { rows } = await pool.query<{ id: string }>(
    "insert into bench_bare_messages (wa_id, direction, text, status) values ($1, 'outbound', $2, 'pending') returning id",
    [waId, reply],
  );
  const id = rows[0]?.id;
  try {
    const upstreamId = await graphSend(waId);
    await pool.query("update bench_bare_messages set status = 'sent', upstream_id = $2 where id = $1", [
      id,
      upstreamId,
    ]);
  } catch {
    await pool.query("update bench_bare_messages set status = 'failed' where id = $1", [id]);
  }
}

/** The inbound row, once per upstream id; a new one is answered after the 200. */
async function store(value: DeliveryValue): Promise<(() => void) | undefined> {
  const message = value.messages[0]!;
  const stored = await pool.query(
    `insert into bench_bare_messages (upstream_id, wa_id, direction, text, status)
     values ($1, $2, 'inbound', $3, 'received') on conflict (upstream_id) do nothing returning id`,
    [message.id, message.from, message.text?.body ?? null],
  );
  return stored.rowCount === 1 ? () => void answer(message.from) : undefined;
}

serveWebhook("bare pipeline", store, () => pool.end());
