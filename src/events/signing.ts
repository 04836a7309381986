import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret
 * is `whsec_` + base64 key bytes; the signature is the base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>` with those bytes, sent as `v1,<sig>`.
 */

const PREFIX = "whsec_";

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString("base64")}`;
}

export function signWebhook(secret: string, input: { id: string; timestamp: number; body: string }): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  const mac = createHmac("sha256", key)
    .update(`${input.id}.${input.timestamp}.${input.body}`)
    .digest("base64");
  return `v1,${mac}`;
}

/** The headers of one signed delivery; the timestamp is in whole seconds. */
export function webhookHeaders(secret: string, input: { id: string; timestamp: number; body: string }) {
  return {
    "webhook-id": input.id,
    "webhook-timestamp": String(input.timestamp),
    "webhook-signature": signWebhook(secret, input),
  };
}
