/**
 * `npm run sandbox`: the Graph API emulator on SANDBOX_PORT (default 4010)
 * with one demo number, plus a small `/_sandbox/...` control surface so a
 * person can play the customer offline. Point the service at it with
 * META_GRAPH_API_URL=http://127.0.0.1:4010.
 *
 * This is a developer tool run on its own, so it reads its own environment
 * variables here rather than through the service's config.
 */

import { createHash } from "node:crypto";
import { createCustomer } from "./customer.js";
import { DEMO_IMAGE } from "./demo-media.js";
import { type AcceptedMessage, DEFAULT_LOG_LIMIT, type ExtraRouteResult, startSandbox } from "./server.js";
import { signPayload, statusPayload, templateStatusPayload } from "./webhook-payloads.js";

const env = process.env;
/** The longest round trip the sandbox imitates (a minute: longer only stalls a demo). */
const MAX_LATENCY_MS = 60_000;

const isWholeNumber = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;
const boundsText = (min: number, max: number) =>
  max === Number.MAX_SAFE_INTEGER
    ? `a whole number of at least ${min}`
    : `a whole number from ${min} to ${max}`;
const port = Number(env.SANDBOX_PORT ?? 4010);
const host = env.SANDBOX_HOST ?? "127.0.0.1";
const demo = {
  phoneNumberId: env.SANDBOX_PHONE_NUMBER_ID ?? "100000000000001",
  accessToken: env.SANDBOX_ACCESS_TOKEN ?? "sandbox-token",
  businessAccountId: env.SANDBOX_BUSINESS_ACCOUNT_ID ?? "200000000000001",
  displayPhoneNumber: env.SANDBOX_DISPLAY_PHONE_NUMBER ?? "+1 555-010-0001",
  verifiedName: env.SANDBOX_VERIFIED_NAME ?? "Sandbox Coffee",
  pin: env.SANDBOX_PIN || undefined,
};
const webhookUrl = env.SANDBOX_WEBHOOK_URL || undefined;
const logLimit = wholeNumber("SANDBOX_LOG_LIMIT", DEFAULT_LOG_LIMIT, 1);
const latencyMs = wholeNumber("SANDBOX_LATENCY_MS", 0, 0, MAX_LATENCY_MS);
const appSecret = env.SANDBOX_APP_SECRET || env.META_APP_SECRET || undefined;

/** A whole number within the bounds from the environment, or the default; anything else stops the start. */
function wholeNumber(name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!isWholeNumber(value, min, max)) {
    console.error(`${name} must be ${boundsText(min, max)} (got "${raw}")`);
    process.exit(1);
  }
  return value;
}

const STATUS_STEPS: Array<{ status: "sent" | "delivered" | "read"; afterMs: number }> = [
  { status: "sent", afterMs: 300 },
  { status: "delivered", afterMs: 900 },
];
/** Template sends (campaigns) are read too, a little later, so a demo campaign's counts move to `read`. */
const TEMPLATE_READ_STEP = { status: "read" as const, afterMs: 2_500 };

/**
 * After each accepted send, tell the service the message was sent, then delivered (like a phone
 * would; templates are read too), each status echoing the send's `biz_opaque_callback_data` as Meta does.
 */
function postDeliveryStatuses(message: AcceptedMessage) {
  if (!webhookUrl || !appSecret) return;
  const steps = message.type === "template" ? [...STATUS_STEPS, TEMPLATE_READ_STEP] : STATUS_STEPS;
  for (const step of steps) {
    setTimeout(() => {
      const { payload } = statusPayload({
        phoneNumberId: message.phoneNumberId,
        displayPhoneNumber: demo.displayPhoneNumber,
        businessAccountId: demo.businessAccountId,
        messageId: message.messageId,
        recipientId: message.to.replace(/\D/g, ""),
        status: step.status,
        callbackData: message.callbackData,
      });
      const raw = JSON.stringify(payload);
      fetch(webhookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, appSecret) },
        body: raw,
      }).catch((error: Error) => console.warn(`status webhook failed: ${error.message}`));
    }, step.afterMs);
  }
}

/** Each customer's profile name, by WhatsApp id, as last given to a customer route. */
const customerNames = new Map<string, string>();

const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);

async function controlRoute(request: {
  method: string;
  path: string;
  body: unknown;
}): Promise<ExtraRouteResult | undefined> {
  const { method, path } = request;
  if (method === "GET" && path === "/_sandbox/requests") {
    return {
      status: 200,
      body: {
        requests: sandbox.requests(),
        // Requests older than the log's limit (SANDBOX_LOG_LIMIT) are forgotten; this says how many.
        dropped: sandbox.droppedRequests(),
      },
    };
  }
  if (method === "DELETE" && path === "/_sandbox/requests") {
    const cleared = sandbox.requests().length;
    sandbox.clearRequests();
    return { status: 200, body: { cleared } };
  }
  if (path === "/_sandbox/latency" && (method === "GET" || method === "PUT")) {
    if (method === "PUT") {
      const ms = (request.body as { ms?: unknown } | null)?.ms;
      if (!isWholeNumber(ms, 0, MAX_LATENCY_MS)) {
        return { status: 400, body: { error: `ms must be ${boundsText(0, MAX_LATENCY_MS)}` } };
      }
      sandbox.setLatency(ms);
    }
    return { status: 200, body: { ms: sandbox.latency() } };
  }
  if (method === "POST" && path === "/_sandbox/numbers") {
    const b = (request.body ?? {}) as Record<string, unknown>;
    const phoneNumberId = str(b.phone_number_id);
    const accessToken = str(b.access_token);
    if (!phoneNumberId || !accessToken) {
      return { status: 400, body: { error: "phone_number_id and access_token are required" } };
    }
    sandbox.addNumber({
      phoneNumberId,
      accessToken,
      businessAccountId: str(b.business_account_id),
      displayPhoneNumber: str(b.display_phone_number),
      verifiedName: str(b.verified_name),
      pin: str(b.pin),
    });
    return { status: 201, body: { added: phoneNumberId } };
  }
  // Meta's template review, not the customer, sends these; the customer/ alias keeps all webhooks in one place.
  if (
    method === "POST" &&
    (path === "/_sandbox/templates/status" || path === "/_sandbox/customer/template_status")
  ) {
    const b = (request.body ?? {}) as Record<string, unknown>;
    const template = sandbox
      .templates(demo.businessAccountId)
      .find((t) => t.name === b.name && t.language === (str(b.language) ?? "en_US"));
    const event = str(b.event)?.toUpperCase();
    if (!template || !event) {
      return { status: 400, body: { error: "name (of a demo template), language? and event are required" } };
    }
    if (!webhookUrl || !appSecret) {
      return { status: 400, body: { error: "Set SANDBOX_WEBHOOK_URL and SANDBOX_APP_SECRET first" } };
    }
    template.status = event;
    const raw = JSON.stringify(
      templateStatusPayload({
        businessAccountId: demo.businessAccountId,
        templateId: template.id,
        name: template.name,
        language: template.language,
        event,
        reason: str(b.reason),
      }).payload,
    );
    const response = await fetch(webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, appSecret) },
      body: raw,
    });
    return { status: 200, body: { status: response.status, template } };
  }
  const customerAction = /^\/_sandbox\/customer\/(text|button_reply|list_reply|reaction|status|media)$/.exec(
    path,
  );
  if (method === "POST" && customerAction) {
    const b = (request.body ?? {}) as Record<string, unknown>;
    const target = str(b.to_webhook) ?? webhookUrl;
    const from = str(b.from);
    if (!target || !appSecret) {
      return {
        status: 400,
        body: { error: "Set SANDBOX_WEBHOOK_URL (or send to_webhook) and SANDBOX_APP_SECRET first" },
      };
    }
    if (!from) return { status: 400, body: { error: "from (the customer's digits) is required" } };
    // A real phone sends its profile name with every message: the name a customer was given
    // once stays theirs for button replies, reactions and the rest (not "Customer").
    const waId = from.replace(/\D/g, "");
    const given = str(b.name);
    if (given) customerNames.set(waId, given);
    const customer = createCustomer({
      webhookUrl: target,
      appSecret,
      phoneNumberId: str(b.phone_number_id) ?? demo.phoneNumberId,
      displayPhoneNumber: demo.displayPhoneNumber,
      businessAccountId: demo.businessAccountId,
      waId,
      name: customerNames.get(waId),
    });
    const replyId = str(b.reply_id) ?? "";
    const title = str(b.title) ?? "";
    const contextMessageId = str(b.context_message_id);
    switch (customerAction[1]) {
      case "text":
        return { status: 200, body: await customer.text(str(b.text) ?? "Hello") };
      case "button_reply":
        return { status: 200, body: await customer.buttonReply({ replyId, title, contextMessageId }) };
      case "list_reply":
        return {
          status: 200,
          body: await customer.listReply({
            replyId,
            title,
            description: str(b.description),
            contextMessageId,
          }),
        };
      case "reaction":
        return { status: 200, body: await customer.react(str(b.message_id) ?? "", str(b.emoji)) };
      case "media": {
        const type = (str(b.type) ?? "image") as "image" | "audio" | "video" | "document" | "sticker";
        const bytes = str(b.data_base64) ? Buffer.from(str(b.data_base64) ?? "", "base64") : DEMO_IMAGE;
        const mimeType = str(b.mime_type) ?? "image/png";
        const phoneNumberId = str(b.phone_number_id) ?? demo.phoneNumberId;
        const mediaId = sandbox.addMedia({ bytes, mimeType, phoneNumberId });
        const sha256 = createHash("sha256").update(bytes).digest("base64");
        return {
          status: 200,
          body: await customer.media({
            type,
            mediaId,
            mimeType,
            sha256,
            caption: str(b.caption),
            filename: str(b.filename),
          }),
        };
      }
      default: {
        const status = str(b.status) as "sent" | "delivered" | "read" | "failed" | undefined;
        const code = Number(b.error_code);
        return {
          status: 200,
          body: await customer.status({
            messageId: str(b.message_id) ?? "",
            status: status ?? "read",
            ...(Number.isInteger(code) && code > 0
              ? { error: { code, title: str(b.error_title) ?? `Error ${code}` } }
              : {}),
          }),
        };
      }
    }
  }
  if (method === "GET" && path === "/_sandbox") {
    return { status: 200, body: { demo_number: { ...demo, accessToken: "(see the console)" }, help: HELP } };
  }
  return undefined;
}

const HELP = [
  "GET  /_sandbox/requests                 the Graph API requests received (tokens masked)",
  "DELETE /_sandbox/requests               forgets them (the log keeps the newest SANDBOX_LOG_LIMIT)",
  "GET|PUT /_sandbox/latency               {ms}: how long every Graph API answer waits (SANDBOX_LATENCY_MS)",
  "POST /_sandbox/numbers                  {phone_number_id, access_token, business_account_id?, pin?}",
  "POST /_sandbox/customer/text            {from, name?, text, to_webhook?}",
  "     (every customer route takes name? (kept for that customer's later messages) and",
  "      phone_number_id? (the business number written to; default the demo number))",
  "POST /_sandbox/customer/button_reply    {from, reply_id, title, context_message_id?}",
  "POST /_sandbox/customer/list_reply      {from, reply_id, title, description?, context_message_id?}",
  "POST /_sandbox/customer/reaction        {from, message_id, emoji?}  (no emoji = removal)",
  "POST /_sandbox/customer/status          {from, message_id, status: sent|delivered|read|failed, error_code?, error_title?}",
  "POST /_sandbox/customer/media           {from, type?: image|audio|video|document|sticker, mime_type?, data_base64?, caption?, filename?}",
  "POST /_sandbox/templates/status         {name, language?, event: APPROVED|REJECTED|PAUSED|DISABLED, reason?}",
  "     (also /_sandbox/customer/template_status)",
];

const sandbox = await startSandbox({
  port,
  host,
  logLimit,
  latencyMs,
  extraRoutes: controlRoute,
  onMessageAccepted: postDeliveryStatuses,
});
sandbox.addNumber(demo);

console.log(`Graph API sandbox listening on ${sandbox.url}  (META_GRAPH_API_URL=${sandbox.url})`);
console.log(`  demo phone_number_id:     ${demo.phoneNumberId}`);
console.log(`  demo access_token:        ${demo.accessToken}`);
console.log(`  demo business_account_id: ${demo.businessAccountId}`);
console.log(`  two-step PIN:             ${demo.pin ?? "(none yet: the first register sets it)"}`);
console.log(
  webhookUrl && appSecret
    ? `  customer webhooks go to   ${webhookUrl}`
    : "  set SANDBOX_WEBHOOK_URL and SANDBOX_APP_SECRET to play the customer",
);
for (const line of HELP) console.log(`  ${line}`);

const stop = () => {
  sandbox.close().finally(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
