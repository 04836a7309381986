/**
 * `npm run sandbox`: the Graph API emulator on SANDBOX_PORT (default 4010)
 * with one demo number, plus a small `/_sandbox/...` control surface so a
 * person can play the customer offline. Point the service at it with
 * META_GRAPH_API_URL=http://127.0.0.1:4010.
 *
 * This is a developer tool run on its own, so it reads its own environment
 * variables here rather than through the service's config.
 */

import { boundsText, HELP, isWholeNumber } from "./routes/control.js";
import { type AcceptedMessage, DEFAULT_LOG_LIMIT, startSandbox } from "./server.js";
import { signPayload, statusPayload } from "./webhook-payloads.js";

const env = process.env;
/** The longest round trip the sandbox imitates (a minute: longer only stalls a demo). */
const MAX_LATENCY_MS = 60_000;

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

const sandbox = await startSandbox({
  port,
  host,
  logLimit,
  latencyMs,
  control: { demo, webhookUrl, appSecret, maxLatencyMs: MAX_LATENCY_MS },
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
