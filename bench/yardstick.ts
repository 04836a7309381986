/**
 * What the bench's plain reply scripts share (bench/bare.ts, bench/batched.ts):
 * the Graph API call to the sandbox, and the webhook endpoint that checks
 * Meta's signature. Both are node:http, with nothing of the service's.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";

const env = process.env;
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });

/** POSTs `body` to the number's /messages on GRAPH_URL; gives the message id Meta's answer names, if any. */
export function graphPost(body: string): Promise<string | undefined> {
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

/** A delivery's first change: `value.messages[0]` and `value.contacts[0]`, as Meta sends them. */
export interface DeliveryValue {
  messages: Array<{ id: string; from: string; text?: { body?: string } }>;
  contacts?: Array<{ profile?: { name?: string } }>;
}

/**
 * Serves Meta's webhook on PORT (GET answers "ready"): a POST whose signature fails gets 401; one
 * that passes is given to `store`, answered 200 once `store` resolves (500 if it throws), and then
 * whatever `store` returned runs.
 */
export function serveWebhook(
  name: string,
  store: (value: DeliveryValue) => Promise<(() => void) | undefined>,
  close: () => Promise<unknown>,
) {
  const secret = env.APP_SECRET ?? "";
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
        const after = await store(JSON.parse(raw.toString("utf8")).entry?.[0]?.changes?.[0]?.value);
        response.writeHead(200).end();
        after?.();
      } catch {
        if (!response.headersSent) response.writeHead(500).end();
      }
    });
  });
  server.listen(Number(env.PORT), "127.0.0.1", () => console.log(`${name} ready`));
  process.on("SIGTERM", () => {
    server.close();
    void close()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  });
}
