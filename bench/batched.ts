/**
 * The batched bound (a diagnostic: `npm run bench -- --only=durable --bound`).
 * What a runner that advances many customers in one transaction could reach
 * at best, measured beside the bare pipeline (bench/bare.ts) in the same run.
 *
 * Like the bare pipeline it is a plain script: node:http, pg, no framework, no
 * ORM, no flow to evaluate. Unlike it, it writes for each trigger the rows the
 * service must keep: the delivery's job (the 200 waits for it, as the
 * service's does), the contact and its conversation, the inbound message, the
 * run, the reply and its settle job, and the account events; and it makes both
 * of the service's Graph API calls, the read receipt and the reply. The claim
 * and every write of up to BATCH customers are one transaction; the records of
 * Meta's answers are batched likewise.
 *
 * It leaves out what only makes the service slower (the rate limiter's slot,
 * the flow's nodes, retries and recovery), so it is a bound, not a product.
 *
 * Run as a child process: `node --import tsx bench/batched.ts` with PORT,
 * DATABASE_URL, APP_SECRET, GRAPH_URL (…/v25.0), PHONE_NUMBER_ID, ACCESS_TOKEN,
 * REPLY, and optionally BOUND_BATCH (customers a transaction, 64) and BOUND_LOOPS
 * (transactions at once, 4).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import pg from "pg";

const env = process.env;
const BATCH = Number(env.BOUND_BATCH) || 64;
const LOOPS = Number(env.BOUND_LOOPS) || 4;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 20 });
pool.on("error", () => undefined);
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const secret = env.APP_SECRET ?? "";
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

function graphPost(body: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${env.GRAPH_URL}/${env.PHONE_NUMBER_ID}/messages`,
      {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${env.ACCESS_TOKEN}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          try {
            const json = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
              messages?: Array<{ id: string }>;
            };
            resolve(json.messages?.[0]?.id);
          } catch (error) {
            reject(error);
          }
        });
        response.on("error", reject);
      },
    );
    request.setTimeout(10_000, () => request.destroy(new Error("timeout")));
    request.on("error", reject);
    request.end(body);
  });
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

/** The events a batch records: `kinds` for each subject, one multi-row insert. */
async function events(client: pg.PoolClient, kinds: string[], subjects: string[]) {
  const k: string[] = [];
  const s: string[] = [];
  const p: string[] = [];
  for (const subject of subjects) {
    for (const kind of kinds) {
      k.push(kind);
      s.push(subject);
      p.push(JSON.stringify({ kind, id: subject }));
    }
  }
  await client.query(
    `insert into bench_bound_events (kind, subject, payload)
     select * from unnest($1::text[], $2::bigint[], $3::jsonb[])`,
    [k, s, p],
  );
}

/** Claims up to BATCH deliveries and writes everything their replies need; gives the replies to send. */
async function advance(): Promise<Array<{ messageId: string; to: string; readId: string }>> {
  return transaction(async (client) => {
    const claimed = await client.query<{ payload: Inbound }>(
      `delete from bench_bound_jobs where id in (
         select id from bench_bound_jobs order by id limit $1 for update skip locked
       ) returning payload`,
      [BATCH],
    );
    // One message a customer a batch: the later ones of a customer wait for the next batch, in order.
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
    const runs = await client.query<{ id: string }>(
      `insert into bench_bound_runs (contact_id, status, node)
       select c, 'completed', 'reply' from unnest($1::bigint[]) as t(c) returning id`,
      [replyTo],
    );
    const outbound = await client.query<{ id: string; contact_id: string }>(
      `insert into bench_bound_messages (contact_id, conversation_id, direction, text, status)
       select c, v, 'outbound', $3, 'pending' from unnest($1::bigint[], $2::bigint[]) as x(c, v)
       returning id, contact_id`,
      [replyTo, replyTo.map((c) => conversationOf.get(c)!), reply],
    );
    await client.query("insert into bench_bound_sends (message_id) select * from unnest($1::bigint[])", [
      outbound.rows.map((r) => r.id),
    ]);
    await events(
      client,
      ["contact.updated", "conversation.updated", "message.received"],
      inbound.rows.map((r) => r.id),
    );
    await events(
      client,
      ["run.started", "run.node", "run.completed"],
      runs.rows.map((r) => r.id),
    );
    await events(
      client,
      ["message.created"],
      outbound.rows.map((r) => r.id),
    );
    await client.query("select pg_notify('bench_bound', $1)", [String(outbound.rows.length)]);
    const waIdOf = new Map(batch.map((b) => [contactOf.get(b.waId)!, b]));
    return outbound.rows.map((r) => {
      const inboundOf = waIdOf.get(r.contact_id)!;
      return { messageId: r.id, to: inboundOf.waId, readId: inboundOf.upstreamId };
    });
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
      await events(
        client,
        ["message.sent"],
        done.map((d) => d.messageId),
      );
    });
  } finally {
    recording = false;
    void record();
  }
}

function send(r: { messageId: string; to: string; readId: string }) {
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

const server = http.createServer((request, response) => {
  if (request.method === "GET") {
    response.writeHead(200).end("ready");
    return;
  }
  const chunks: Buffer[] = [];
  request.on("data", (c: Buffer) => chunks.push(c));
  request.on("end", async () => {
    const raw = Buffer.concat(chunks);
    const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`);
    const given = Buffer.from(String(request.headers["x-hub-signature-256"] ?? ""));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      response.writeHead(401).end();
      return;
    }
    try {
      const value = JSON.parse(raw.toString("utf8")).entry?.[0]?.changes?.[0]?.value;
      const message = value?.messages?.[0];
      const inbound: Inbound = {
        waId: message.from,
        name: value.contacts?.[0]?.profile?.name ?? null,
        upstreamId: message.id,
        text: message.text?.body ?? null,
      };
      await pool.query("insert into bench_bound_jobs (payload) values ($1)", [JSON.stringify(inbound)]);
      response.writeHead(200).end();
      pump();
    } catch {
      if (!response.headersSent) response.writeHead(500).end();
    }
  });
});
server.listen(Number(env.PORT), "127.0.0.1", () => console.log("batched bound ready"));
process.on("SIGTERM", () => {
  server.close();
  void pool.end().finally(() => process.exit(0));
});
