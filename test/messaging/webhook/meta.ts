import { createHmac, randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";

/**
 * Webhook bodies in the shapes of the examples under `/whatsapp/webhooks` in
 * Meta's OpenAPI file, and a signed POST of them.
 */

export const APP_SECRET = "test-secret";

export const wamid = () => `wamid.${randomBytes(18).toString("base64url")}`;

export const sign = (raw: string, secret = APP_SECRET) =>
  `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`;

/**
 * Delivers a webhook like Meta does and, once it is acknowledged, waits for
 * the background jobs it started (storing, flow runs, bot sends) to finish.
 */
export async function postWebhook(app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) {
  const raw = typeof body === "string" ? body : JSON.stringify(body);
  const response = await app.inject({
    method: "POST",
    url: "/api/messaging/webhook",
    headers: { "content-type": "application/json", "x-hub-signature-256": sign(raw), ...headers },
    payload: raw,
  });
  if (response.statusCode === 200) await app.deps.jobs.drain();
  return response;
}

export const batch = (...changes: unknown[]) => ({
  object: "whatsapp_business_account",
  entry: [{ id: "419561257915477", changes }],
});

export function messagesChange(
  phoneNumberId: string,
  messages: unknown[],
  contacts: Array<{ waId: string; name: string }> = [],
) {
  return {
    field: "messages",
    value: {
      messaging_product: "whatsapp",
      metadata: { display_phone_number: "15550783881", phone_number_id: phoneNumberId },
      contacts: contacts.map((c) => ({ profile: { name: c.name }, wa_id: c.waId })),
      messages,
    },
  };
}

export const textMessage = (from: string, body: string, id = wamid()) => ({
  from,
  id,
  timestamp: "1749416383",
  type: "text",
  text: { body },
});

/** One text message from one customer, as Meta's "Text Message" example. */
export const textBatch = (input: {
  phoneNumberId: string;
  from: string;
  name?: string;
  body: string;
  id?: string;
}) =>
  batch(
    messagesChange(
      input.phoneNumberId,
      [textMessage(input.from, input.body, input.id)],
      [{ waId: input.from, name: input.name ?? "Sheena Nelson" }],
    ),
  );

export const statusChange = (
  phoneNumberId: string,
  statuses: Array<{ id: string; status: string; errors?: unknown[]; recipient_id?: string }>,
) => ({
  field: "messages",
  value: {
    messaging_product: "whatsapp",
    metadata: { display_phone_number: "15550783881", phone_number_id: phoneNumberId },
    statuses: statuses.map((s) => ({ timestamp: "1750263773", recipient_id: "16505551234", ...s })),
  },
});
