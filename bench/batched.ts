/**
 * The batched bound (a diagnostic: `npm run bench -- --only=durable --bound`).
 * What a runner that advances many customers in one transaction could reach
 * at best, measured beside the bare pipeline (bench/bare.ts) in the same run.
 *
 * Like the bare pipeline it is a plain script: node:http, pg, no framework, no
 * ORM, no flow to evaluate. Unlike it, it writes for each trigger the rows the
 * service writes (counted from `--pg-stats`): the delivery's job (the 200 waits
 * for it, as the service's does), the contact and its conversation (updated
 * again for the reply), the inbound message, the run and its five events, the
 * reply with its receipt and its settle job, the flow's sharded run count, and
 * seven account events, each carrying its row's JSON built by PostgreSQL; it
 * takes the number's send slots on one row, as the rate limiter does; and it
 * makes both of the service's Graph API calls, the read receipt and the reply.
 * The claim and every write of up to BATCH customers are one transaction; the
 * records of Meta's answers are batched likewise.
 *
 * It leaves out what only makes the service slower (looking up the account,
 * the flow and consent, the account events' webhook look-ups, retries and
 * recovery), so it is a bound, not a product.
 *
 * Run as a child process: `node --import tsx bench/batched.ts` with PORT,
 * DATABASE_URL, APP_SECRET, GRAPH_URL (…/v25.0), PHONE_NUMBER_ID, ACCESS_TOKEN,
 * REPLY, and optionally BOUND_BATCH (customers a transaction, 64), BOUND_LOOPS
 * (transactions at once, 4) and BOUND_QUEUE=graphile (below).
 */
import { Logger, run } from "graphile-worker";
import pg from "pg";
import { type DeliveryValue, graphPost, serveWebhook } from "./yardstick.js";

const env = process.env;
const BATCH = Number(env.BOUND_BATCH) || 64;
const LOOPS = Number(env.BOUND_LOOPS) || 4;
/**
 * `BOUND_QUEUE=graphile`: each delivery is a graphile-worker job on a queue named for its customer
 * (as the service's are), run by LOOPS workers, one customer a transaction: the same rows, with the
 * service's job machinery. BOUND_BATCH is then 1.
 */
const GRAPHILE = env.BOUND_QUEUE === "graphile";
// The graphile mode's workers hold connections of their own, beside the 20 the requests share.
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: GRAPHILE ? 20 + LOOPS : 20 });
pool.on("error", () => undefined);
const reply = env.REPLY ?? "Batched reply";

await pool.query(`
  create table if not exists bench_bound_jobs (
    id bigserial primary key,
    payload jsonb not null,
    run_at timestamptz not null default now()
  );
  create table if not exists bench_bound_contacts (
    id bigserial primary key,
    wa_id text not null unique,
    name text,
    created_at timestamptz not null default now(),
    last_inbound_at timestamptz
  );
  create table if not exists bench_bound_conversations (
    id bigserial primary key,
    contact_id bigint not null unique references bench_bound_contacts,
    status text not null,
    last_message_at timestamptz not null
  );
  create table if not exists bench_bound_messages (
    id bigserial primary key,
    upstream_id text unique,
    contact_id bigint not null references bench_bound_contacts,
    conversation_id bigint not null references bench_bound_conversations,
    direction text not null,
    text text,
    status text not null,
    created_at timestamptz not null default now()
  );
  create index if not exists bench_bound_messages_conversation on bench_bound_messages (conversation_id, id);
  create table if not exists bench_bound_runs (
    id bigserial primary key,
    contact_id bigint not null references bench_bound_contacts,
    status text not null,
    node text not null,
    created_at timestamptz not null default now()
  );
  create index if not exists bench_bound_runs_active on bench_bound_runs (contact_id) where status = 'active';
  create table if not exists bench_bound_sends (
    id bigserial primary key,
    message_id bigint not null references bench_bound_messages,
    run_at timestamptz not null default now()
  );
  create table if not exists bench_bound_run_events (
    id bigserial primary key,
    run_id bigint not null references bench_bound_runs,
    kind text not null,
    node text not null,
    created_at timestamptz not null default now()
  );
  create index if not exists bench_bound_run_events_run on bench_bound_run_events (run_id, id);
  create table if not exists bench_bound_receipts (
    message_id bigint primary key references bench_bound_messages,
    run_id bigint not null references bench_bound_runs,
    status text not null
  );
  create table if not exists bench_bound_counts (
    shard int primary key,
    count bigint not null
  );
  insert into bench_bound_counts select g, 0 from generate_series(0, 15) g on conflict do nothing;
  create table if not exists bench_bound_rates (
    phone text primary key,
    next_at timestamptz not null
  );
  create table if not exists bench_bound_events (
    id bigserial primary key,
    kind text not null,
    subject bigint not null,
    payload jsonb not null,
    created_at timestamptz not null default now()
  )`);

interface Inbound {
  waId: string;
  name: string | null;
  upstreamId: string;
  text: string | null;
}

/** Runs `work` in one transaction on one pooled connection. */
async function transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (error) {
    await client.query("rollback").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * One account event of `kind` for each row of `table` in `ids`, its payload the row's JSON built
 * by PostgreSQL (as the service's triggers build theirs from the row): one insert for all of them.
 */
async function events(client: pg.PoolClient, kind: string, table: string, ids: string[]) {
  await client.query(
    `insert into bench_bound_events (kind, subject, payload)
     select $1, t.id, to_jsonb(t) from ${table} t where t.id = any($2::bigint[])`,
    [kind, ids],
  );
}

type Reply = { messageId: string; to: string; readId: string };

/** Claims up to BATCH deliveries and writes everything their replies need; gives the replies to send. */
async function advance(): Promise<Reply[]> {
  return transaction(async (client) => {
    const claimed = await client.query<{ payload: Inbound }>(
      `delete from bench_bound_jobs where id in (
         select id from bench_bound_jobs order by id limit $1 for update skip locked
       ) returning payload`,
      [BATCH],
    );
    // One message a customer a batch: the later ones are re-added at the queue's end (enough for a
    // flood of one message a customer; a product must keep them where they are, in order).
    const seen = new Set<string>();
    const batch: Inbound[] = [];
    const later: Inbound[] = [];
    for (const { payload } of claimed.rows) {
      if (seen.has(payload.waId)) {
        later.push(payload);
      } else {
        seen.add(payload.waId);
        batch.push(payload);
      }
    }
    if (later.length > 0) {
      await client.query("insert into bench_bound_jobs (payload) select * from unnest($1::jsonb[])", [
        later.map((l) => JSON.stringify(l)),
      ]);
    }
    return write(client, batch);
  });
}

/** Everything the replies to `batch` (one message a customer) need, in the caller's transaction. */
async function write(client: pg.PoolClient, batch: Inbound[]): Promise<Reply[]> {
  if (batch.length === 0) return [];
  const contacts = await client.query<{ id: string; wa_id: string }>(
    `insert into bench_bound_contacts (wa_id, name, last_inbound_at)
       select w, n, now() from unnest($1::text[], $2::text[]) as t(w, n)
       on conflict (wa_id) do update set last_inbound_at = now(), name = coalesce(excluded.name, bench_bound_contacts.name)
       returning id, wa_id`,
    [batch.map((b) => b.waId), batch.map((b) => b.name)],
  );
  const contactOf = new Map(contacts.rows.map((r) => [r.wa_id, r.id]));
  const contactIds = batch.map((b) => contactOf.get(b.waId)!);
  const conversations = await client.query<{ id: string; contact_id: string }>(
    `insert into bench_bound_conversations (contact_id, status, last_message_at)
       select c, 'open', now() from unnest($1::bigint[]) as t(c)
       on conflict (contact_id) do update set last_message_at = now(), status = 'open'
       returning id, contact_id`,
    [contactIds],
  );
  const conversationOf = new Map(conversations.rows.map((r) => [r.contact_id, r.id]));
  const conversationIds = contactIds.map((c) => conversationOf.get(c)!);
  const inbound = await client.query<{ id: string; contact_id: string; upstream_id: string }>(
    `insert into bench_bound_messages (upstream_id, contact_id, conversation_id, direction, text, status)
       select u, c, v, 'inbound', t, 'received' from unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[]) as x(u, c, v, t)
       on conflict (upstream_id) do nothing
       returning id, contact_id, upstream_id`,
    [batch.map((b) => b.upstreamId), contactIds, conversationIds, batch.map((b) => b.text)],
  );
  // A redelivery stored nothing new: it gets no reply.
  const fresh = new Set(inbound.rows.map((r) => r.contact_id));
  const replyTo = contactIds.filter((c) => fresh.has(c));
  if (replyTo.length === 0) return [];
  const repliedConversations = replyTo.map((c) => conversationOf.get(c)!);
  const runs = await client.query<{ id: string }>(
    `insert into bench_bound_runs (contact_id, status, node)
       select c, 'completed', 'reply' from unnest($1::bigint[]) as t(c) returning id`,
    [replyTo],
  );
  const outbound = await client.query<{ id: string; contact_id: string }>(
    `insert into bench_bound_messages (contact_id, conversation_id, direction, text, status)
       select c, v, 'outbound', $3, 'pending' from unnest($1::bigint[], $2::bigint[]) as x(c, v)
       returning id, contact_id`,
    [replyTo, repliedConversations, reply],
  );
  await client.query("insert into bench_bound_sends (message_id) select * from unnest($1::bigint[])", [
    outbound.rows.map((r) => r.id),
  ]);
  const runIds = runs.rows.map((r) => r.id);
  // The run's events as the service's walk writes them: five a trigger that is answered at once.
  await client.query(
    `insert into bench_bound_run_events (run_id, kind, node)
     select r, k, 'reply' from unnest($1::bigint[]) as r
       cross join unnest(array['started', 'entered', 'sent', 'left', 'completed']) as k`,
    [runIds],
  );
  await client.query(
    `insert into bench_bound_receipts (message_id, run_id, status)
     select m, r, 'pending' from unnest($1::bigint[], $2::bigint[]) as x(m, r)`,
    [outbound.rows.map((r) => r.id), runIds],
  );
  await client.query("update bench_bound_counts set count = count + $2 where shard = $1", [
    Math.floor(Math.random() * 16),
    runIds.length,
  ]);
  await client.query(
    `update bench_bound_conversations set last_message_at = now() where id = any($1::bigint[])`,
    [repliedConversations],
  );
  // The service's seven account events a reply (the record adds the last), each a row's snapshot.
  await events(client, "conversation.updated", "bench_bound_conversations", repliedConversations);
  await events(client, "conversation.updated", "bench_bound_conversations", repliedConversations);
  await events(
    client,
    "message.received",
    "bench_bound_messages",
    inbound.rows.map((r) => r.id),
  );
  await events(
    client,
    "message.sent",
    "bench_bound_messages",
    outbound.rows.map((r) => r.id),
  );
  await events(client, "flow_run.updated", "bench_bound_runs", runIds);
  await events(client, "flow_run.updated", "bench_bound_runs", runIds);
  await client.query("select pg_notify('bench_bound', $1)", [String(outbound.rows.length)]);
  const waIdOf = new Map(batch.map((b) => [contactOf.get(b.waId)!, b]));
  return outbound.rows.map((r) => {
    const inboundOf = waIdOf.get(r.contact_id)!;
    return { messageId: r.id, to: inboundOf.waId, readId: inboundOf.upstreamId };
  });
}

// Meta's answers, recorded in batches: the message sent (or failed), its settle job gone, its event.
const answers: Array<{ messageId: string; upstreamId: string | null }> = [];
let recording = false;
async function record(): Promise<void> {
  if (recording || answers.length === 0) return;
  recording = true;
  const done = answers.splice(0, 256);
  try {
    await transaction(async (client) => {
      await client.query(
        `update bench_bound_messages m set status = case when v.u is null then 'failed' else 'sent' end, upstream_id = v.u
         from unnest($1::bigint[], $2::text[]) as v(id, u) where m.id = v.id`,
        [done.map((d) => d.messageId), done.map((d) => d.upstreamId)],
      );
      await client.query("delete from bench_bound_sends where message_id = any($1::bigint[])", [
        done.map((d) => d.messageId),
      ]);
      await client.query(
        "update bench_bound_receipts set status = 'sent' where message_id = any($1::bigint[])",
        [done.map((d) => d.messageId)],
      );
      await events(
        client,
        "message.status",
        "bench_bound_messages",
        done.map((d) => d.messageId),
      );
    });
  } catch (error) {
    // A bound, not a product: these answers stay unrecorded (the flood counts what the sandbox got).
    console.error(error);
  } finally {
    recording = false;
    void record();
  }
}

/** The number's send slots for `n` replies, one statement on one row, as the service's rate limiter takes them. */
async function reserve(n: number) {
  if (n === 0) return;
  await pool.query(
    `insert into bench_bound_rates (phone, next_at) values ('bench', now())
     on conflict (phone) do update set next_at = greatest(bench_bound_rates.next_at, now()) + $1 * interval '1 ms'`,
    [n],
  );
}

function send(r: Reply) {
  void graphPost(
    JSON.stringify({
      messaging_product: "whatsapp",
      status: "read",
      message_id: r.readId,
      typing_indicator: { type: "text" },
    }),
  ).catch(() => undefined);
  graphPost(JSON.stringify({ messaging_product: "whatsapp", to: r.to, type: "text", text: { body: reply } }))
    .catch(() => undefined)
    .then((upstreamId) => {
      answers.push({ messageId: r.messageId, upstreamId: upstreamId ?? null });
      void record();
    });
}

// Up to LOOPS batches at once; each loop runs while it finds deliveries.
let loops = 0;
let wanted = false;
function pump() {
  wanted = true;
  while (loops < LOOPS) {
    loops += 1;
    wanted = false;
    void (async () => {
      try {
        for (;;) {
          const replies = await advance();
          await reserve(replies.length);
          for (const r of replies) send(r);
          if (replies.length === 0 && !wanted) break;
          wanted = false;
        }
      } catch (error) {
        console.error(error);
      } finally {
        loops -= 1;
      }
    })();
  }
}

const workers = GRAPHILE
  ? await run({
      pgPool: pool,
      concurrency: LOOPS,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: new Logger(() => () => undefined),
      taskList: {
        "bound-deliver": async (payload) => {
          const replies = await transaction((client) => write(client, [payload as Inbound]));
          await reserve(replies.length);
          for (const r of replies) send(r);
        },
      },
    })
  : undefined;

/** The delivery's job, committed before the 200; the loops (or graphile-worker's workers) take it. */
async function store(value: DeliveryValue): Promise<(() => void) | undefined> {
  const message = value.messages[0]!;
  const inbound: Inbound = {
    waId: message.from,
    name: value.contacts?.[0]?.profile?.name ?? null,
    upstreamId: message.id,
    text: message.text?.body ?? null,
  };
  if (GRAPHILE) {
    await pool.query("select graphile_worker.add_job('bound-deliver', $1::json, queue_name := $2)", [
      JSON.stringify(inbound),
      `bound:${inbound.waId}`,
    ]);
    return undefined;
  }
  await pool.query("insert into bench_bound_jobs (payload) values ($1)", [JSON.stringify(inbound)]);
  return pump;
}

serveWebhook("batched bound", store, async () => {
  await workers?.stop();
  await pool.end();
});
