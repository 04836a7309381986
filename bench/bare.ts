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
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import pg from "pg";

const env = process.env;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 20 });
pool.on("error", () => undefined);
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const secret = env.APP_SECRET ?? "";
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

function graphSend(to: string): Promise<string> {
  const body = JSON.stringify({ messaging_product: "whatsapp", to, type: "text", text: { body: reply } });
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
            const id = json.messages?.[0]?.id;
            if (id) resolve(id);
            else reject(new Error("no message id"));
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
      const payload = JSON.parse(raw.toString("utf8"));
      const message = payload.entry?.[0]?.changes?.[0]?.value?.messages?.[0];
      const stored = await pool.query(
        `insert into bench_bare_messages (upstream_id, wa_id, direction, text, status)
         values ($1, $2, 'inbound', $3, 'received') on conflict (upstream_id) do nothing returning id`,
        [message.id, message.from, message.text?.body ?? null],
      );
      response.writeHead(200).end();
      if (stored.rowCount === 1) void answer(message.from);
    } catch {
      if (!response.headersSent) response.writeHead(500).end();
    }
  });
});
server.listen(Number(env.PORT), "127.0.0.1", () => console.log("bare pipeline ready"));
process.on("SIGTERM", () => {
  server.close();
  void pool.end().finally(() => process.exit(0));
});
