import { createHmac, timingSafeEqual } from "node:crypto";

const HEADER = /^sha256=([0-9a-f]{64})$/i;

/**
 * Checks Meta's `X-Hub-Signature-256` (`sha256=<hex HMAC-SHA256 of the raw
 * body>`) in constant time. Anything that is not exactly one well-formed
 * header value fails.
 */
export function verifyWebhookSignature(rawBody: string, header: unknown, appSecret: string): boolean {
  if (typeof header !== "string") return false;
  const match = HEADER.exec(header.trim());
  if (!match?.[1]) return false;
  const expected = createHmac("sha256", appSecret).update(Buffer.from(rawBody, "utf8")).digest();
  return timingSafeEqual(Buffer.from(match[1], "hex"), expected);
}
