/**
 * The control surface outside the Graph API (`/_sandbox/...`), served when `npm run sandbox`
 * (main.ts) asks for it: the request log, the latency, numbers, template reviews, and the customer
 * (signed webhooks to the service). Not logged, not delayed, never faulted.
 */
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { createCustomer } from "../customer.js";
import { DEMO_IMAGE } from "../demo-media.js";
import { unsupported } from "../graph-error.js";
import type { SandboxNumber, SandboxState } from "../state.js";
import { signPayload, templateStatusPayload } from "../webhook-payloads.js";
import { pathOf, sendJson } from "./answer.js";

export interface ControlOptions {
  /** The demo number the customer writes to and the templates belong to. */
  demo: SandboxNumber & { businessAccountId: string; displayPhoneNumber: string };
  /** Where customer and template webhooks go (SANDBOX_WEBHOOK_URL), signed with appSecret. */
  webhookUrl?: string;
  appSecret?: string;
  /** The longest latency PUT /_sandbox/latency accepts. */
  maxLatencyMs: number;
}

/** Route config that marks a control route (server.ts neither logs nor delays it). */
export const CONTROL = { control: true };

export const isWholeNumber = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

export const boundsText = (min: number, max: number) =>
  max === Number.MAX_SAFE_INTEGER
    ? `a whole number of at least ${min}`
    : `a whole number from ${min} to ${max}`;

const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
const fields = (body: unknown) => (body ?? {}) as Record<string, unknown>;

export const HELP = [
  "GET  /_sandbox/requests                 the Graph API requests received (tokens masked)",
  "DELETE /_sandbox/requests               forgets them (the log keeps the newest SANDBOX_LOG_LIMIT)",
  "GET  /_sandbox/sends?type=&to_prefix=   messages of a type accepted since then, however many: {sends, recipients, repeated, first_at, last_at}",
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

const CUSTOMER_ACTIONS = ["text", "button_reply", "list_reply", "reaction", "status", "media"] as const;

export function controlRoutes(app: FastifyInstance, state: SandboxState, options: ControlOptions) {
  const { demo, webhookUrl, appSecret } = options;
  const route = { config: CONTROL, exposeHeadRoute: false };
  /** Each customer's profile name, by WhatsApp id, as last given to a customer route. */
  const customerNames = new Map<string, string>();

  app.get("/_sandbox", route, (_request, reply) =>
    sendJson(reply, 200, { demo_number: { ...demo, accessToken: "(see the console)" }, help: HELP }),
  );

  app.get("/_sandbox/requests", route, (_request, reply) =>
    sendJson(reply, 200, {
      requests: state.requests(),
      // Requests older than the log's limit (SANDBOX_LOG_LIMIT) are forgotten; this says how many.
      dropped: state.droppedRequests(),
    }),
  );
  app.get("/_sandbox/sends", route, (request, reply) => {
    const query = fields(request.query);
    const type = str(query.type);
    if (!type) return sendJson(reply, 400, { error: "type is required (text, template, reaction, ...)" });
    return sendJson(reply, 200, state.sendsTo(type, str(query.to_prefix)));
  });
  app.delete("/_sandbox/requests", route, (_request, reply) => {
    const cleared = state.requests().length;
    state.clearRequests();
    return sendJson(reply, 200, { cleared });
  });

  app.get("/_sandbox/latency", route, (_request, reply) => sendJson(reply, 200, { ms: state.latencyMs }));
  app.put("/_sandbox/latency", route, (request, reply) => {
    const ms = fields(request.body).ms;
    if (!isWholeNumber(ms, 0, options.maxLatencyMs)) {
      return sendJson(reply, 400, { error: `ms must be ${boundsText(0, options.maxLatencyMs)}` });
    }
    state.latencyMs = ms;
    return sendJson(reply, 200, { ms });
  });

  app.post("/_sandbox/numbers", route, (request, reply) => {
    const b = fields(request.body);
    const phoneNumberId = str(b.phone_number_id);
    const accessToken = str(b.access_token);
    if (!phoneNumberId || !accessToken) {
      return sendJson(reply, 400, { error: "phone_number_id and access_token are required" });
    }
    state.addNumber({
      phoneNumberId,
      accessToken,
      businessAccountId: str(b.business_account_id),
      displayPhoneNumber: str(b.display_phone_number),
      verifiedName: str(b.verified_name),
      pin: str(b.pin),
    });
    return sendJson(reply, 201, { added: phoneNumberId });
  });

  // Meta's template review, not the customer, sends these; the customer/ alias keeps all webhooks in one place.
  for (const url of ["/_sandbox/templates/status", "/_sandbox/customer/template_status"]) {
    app.post(url, route, async (request, reply) => {
      const b = fields(request.body);
      const template = state
        .templatesOf(demo.businessAccountId)
        .find((t) => t.name === b.name && t.language === (str(b.language) ?? "en_US"));
      const event = str(b.event)?.toUpperCase();
      if (!template || !event) {
        return sendJson(reply, 400, { error: "name (of a demo template), language? and event are required" });
      }
      if (!webhookUrl || !appSecret) {
        return sendJson(reply, 400, { error: "Set SANDBOX_WEBHOOK_URL and SANDBOX_APP_SECRET first" });
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
      return sendJson(reply, 200, { status: response.status, template });
    });
  }

  for (const action of CUSTOMER_ACTIONS) {
    app.post(`/_sandbox/customer/${action}`, route, async (request, reply) => {
      const b = fields(request.body);
      const target = str(b.to_webhook) ?? webhookUrl;
      const from = str(b.from);
      if (!target || !appSecret) {
        return sendJson(reply, 400, {
          error: "Set SANDBOX_WEBHOOK_URL (or send to_webhook) and SANDBOX_APP_SECRET first",
        });
      }
      if (!from) return sendJson(reply, 400, { error: "from (the customer's digits) is required" });
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
      return sendJson(reply, 200, await act(customer, action, b));
    });
  }

  async function act(
    customer: ReturnType<typeof createCustomer>,
    action: (typeof CUSTOMER_ACTIONS)[number],
    b: Record<string, unknown>,
  ) {
    const replyId = str(b.reply_id) ?? "";
    const title = str(b.title) ?? "";
    const contextMessageId = str(b.context_message_id);
    switch (action) {
      case "text":
        return customer.text(str(b.text) ?? "Hello");
      case "button_reply":
        return customer.buttonReply({ replyId, title, contextMessageId });
      case "list_reply":
        return customer.listReply({ replyId, title, description: str(b.description), contextMessageId });
      case "reaction":
        return customer.react(str(b.message_id) ?? "", str(b.emoji));
      case "media": {
        const type = (str(b.type) ?? "image") as "image" | "audio" | "video" | "document" | "sticker";
        const bytes = str(b.data_base64) ? Buffer.from(str(b.data_base64) ?? "", "base64") : DEMO_IMAGE;
        const mimeType = str(b.mime_type) ?? "image/png";
        const phoneNumberId = str(b.phone_number_id) ?? demo.phoneNumberId;
        const mediaId = state.addMedia({ bytes, mimeType, phoneNumberId });
        const sha256 = createHash("sha256").update(bytes).digest("base64");
        return customer.media({
          type,
          mediaId,
          mimeType,
          sha256,
          caption: str(b.caption),
          filename: str(b.filename),
        });
      }
      case "status": {
        const status = str(b.status) as "sent" | "delivered" | "read" | "failed" | undefined;
        const code = Number(b.error_code);
        return customer.status({
          messageId: str(b.message_id) ?? "",
          status: status ?? "read",
          ...(Number.isInteger(code) && code > 0
            ? { error: { code, title: str(b.error_title) ?? `Error ${code}` } }
            : {}),
        });
      }
    }
  }

  // Any other /_sandbox path: refused as the Graph API refuses an unknown object, and not logged.
  app.all("/_sandbox/*", route, (request) => {
    throw unsupported(request.method, pathOf(request));
  });
}
