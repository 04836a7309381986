/**
 * One load scenario, run in its own process so the load generator never
 * shares an event loop with what it measures. Reads a JSON scenario from
 * argv, prints one JSON result line.
 */
import { createHmac, randomBytes } from "node:crypto";
import autocannon from "autocannon";

export interface Scenario {
  url: string;
  method: "GET" | "POST" | "PUT";
  headers?: Record<string, string>;
  /** A fixed body, or one of these per request in turn. */
  body?: string;
  bodies?: string[];
  /** Paths to rotate through, one per request in turn. */
  paths?: string[];
  /**
   * A fresh signed inbound text per request, for the webhook: from `waIds` in
   * turn, or from a new customer per request (`newCustomers`, the number
   * prefix), saying `text` (default "bench message <n>").
   */
  webhook?: {
    appSecret: string;
    phoneNumberId: string;
    waIds: string[];
    newCustomers?: string;
    text?: string;
  };
  /** Stop after this many requests instead of after durationSeconds. */
  amount?: number;
  durationSeconds: number;
  connections: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  errors: number;
  non2xx: number;
}

function webhookBody(w: NonNullable<Scenario["webhook"]>, n: number) {
  const waId = w.newCustomers
    ? `${w.newCustomers}${String(n).padStart(8, "0")}`
    : w.waIds[n % w.waIds.length]!;
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "bench-waba",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550100001", phone_number_id: w.phoneNumberId },
              contacts: [{ profile: { name: "Bench customer" }, wa_id: waId }],
              messages: [
                {
                  from: waId,
                  id: `wamid.bench.${randomBytes(12).toString("hex")}`,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: "text",
                  text: { body: w.text ?? `bench message ${n}` },
                },
              ],
            },
          },
        ],
      },
    ],
  });
}

/** Upper bound of the request rate signed deliveries are prepared for (the baseline's is below it). */
const MAX_EXPECTED_RPS = 8_000;

/**
 * Signed webhook deliveries, made before the clock starts: signing and
 * serialising each one while measuring would charge the load generator's own
 * work (it shares the cores with the service) to the webhook's figure, which
 * the baseline's plain GETs do not pay. Past the prepared ones, they are made
 * as needed.
 */
function prepareDeliveries(s: Scenario): Array<{ body: string; signature: string }> {
  const w = s.webhook;
  if (!w) return [];
  const count = s.amount ? s.amount + s.connections : s.durationSeconds * MAX_EXPECTED_RPS;
  return Array.from({ length: count }, (_, i) => signed(w, i + 1));
}

function signed(w: NonNullable<Scenario["webhook"]>, n: number) {
  const body = webhookBody(w, n);
  return { body, signature: `sha256=${createHmac("sha256", w.appSecret).update(body).digest("hex")}` };
}

async function run(s: Scenario): Promise<LoadResult> {
  const prepared = prepareDeliveries(s);
  let n = 0;
  const result = await autocannon({
    url: s.url,
    method: s.method,
    headers: s.headers,
    connections: s.connections,
    ...(s.amount ? { amount: s.amount } : { duration: s.durationSeconds }),
    requests: [
      {
        setupRequest: (request) => {
          n += 1;
          const next = { ...request };
          if (s.paths) next.path = s.paths[n % s.paths.length]!;
          if (s.webhook) {
            const { body, signature } = prepared[n - 1] ?? signed(s.webhook, n);
            next.body = body;
            next.headers = {
              ...request.headers,
              "content-type": "application/json",
              "x-hub-signature-256": signature,
            };
          } else if (s.bodies) {
            next.body = s.bodies[n % s.bodies.length];
          } else if (s.body !== undefined) {
            next.body = s.body;
          }
          return next;
        },
      },
    ],
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.average,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

const scenario = JSON.parse(process.argv[2] ?? "{}") as Scenario;
run(scenario).then(
  (r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
