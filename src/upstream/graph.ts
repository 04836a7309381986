/**
 * Meta Graph API (WhatsApp Cloud API) client: one function per call the
 * product makes. Every call has a timeout; POSTs are never retried (a retry
 * could register twice or send a message twice). Errors never contain the
 * access token.
 */

import http from "node:http";
import https from "node:https";

export type GraphErrorKind = "api" | "timeout" | "network" | "invalid_response";

export class GraphApiError extends Error {
  readonly kind: GraphErrorKind;
  /** HTTP status of the upstream answer, when there was one. */
  readonly status: number | undefined;
  /** Meta's error code (190 bad token, 133005 PIN mismatch, 131056 rate limit...). */
  readonly code: number | undefined;
  readonly subcode: number | undefined;
  readonly type: string | undefined;
  readonly fbtraceId: string | undefined;
  readonly details: string | undefined;
  /** A network failure before any connection was made: the request provably never left. */
  readonly refused: boolean;

  constructor(
    message: string,
    init: {
      kind: GraphErrorKind;
      status?: number;
      code?: number;
      subcode?: number;
      type?: string;
      fbtraceId?: string;
      details?: string;
      refused?: boolean;
    },
  ) {
    super(message);
    this.name = "GraphApiError";
    this.kind = init.kind;
    this.status = init.status;
    this.code = init.code;
    this.subcode = init.subcode;
    this.type = init.type;
    this.fbtraceId = init.fbtraceId;
    this.details = init.details;
    this.refused = init.refused ?? false;
  }

  /** A JSON-safe summary, for storing beside a failed message or run. */
  toJSON() {
    return {
      message: this.message,
      kind: this.kind,
      status: this.status ?? null,
      code: this.code ?? null,
      subcode: this.subcode ?? null,
      fbtrace_id: this.fbtraceId ?? null,
      details: this.details ?? null,
    };
  }
}

/** What the verification call answers; passed through to clients as `phone_info`. */
export type PhoneInfo = Record<string, unknown> & { id: string };

export type InteractiveBody =
  | {
      type: "button";
      header?: { type: "text"; text: string };
      body: { text: string };
      footer?: { text: string };
      action: { buttons: Array<{ type: "reply"; reply: { id: string; title: string } }> };
    }
  | {
      type: "list";
      header?: { type: "text"; text: string };
      body: { text: string };
      footer?: { text: string };
      action: {
        button: string;
        sections: Array<{
          title?: string;
          rows: Array<{ id: string; title: string; description?: string }>;
        }>;
      };
    };

/** The `type`-specific part of a send; `to` and `messaging_product` are added by sendMessage. */
export type OutboundMessage =
  | { type: "text"; text: { body: string; preview_url?: boolean } }
  | { type: "interactive"; interactive: InteractiveBody }
  | { type: "image" | "video"; image?: MediaLink; video?: MediaLink }
  | { type: "document"; document: MediaLink & { filename?: string } }
  | { type: "reaction"; reaction: { message_id: string; emoji: string } };

export interface MediaLink {
  link: string;
  caption?: string;
}

export interface SentMessage {
  /** The upstream message id (wamid...). */
  messageId: string;
  waId: string | undefined;
}

export interface GraphClient {
  getPhoneNumber(accessToken: string, phoneNumberId: string): Promise<PhoneInfo>;
  registerPhoneNumber(accessToken: string, phoneNumberId: string, pin: string): Promise<void>;
  subscribeApp(accessToken: string, businessAccountId: string): Promise<void>;
  /** `to` must already be digits only (see toUpstreamPhone). */
  sendMessage(
    accessToken: string,
    phoneNumberId: string,
    to: string,
    message: OutboundMessage,
  ): Promise<SentMessage>;
}

export interface GraphClientOptions {
  baseUrl: string;
  version: string;
  timeoutMs?: number;
}

export const PHONE_FIELDS = "id,display_phone_number,verified_name,quality_rating";

/** Strips everything but digits; a number with no digits is no number (null). */
export function toUpstreamPhone(phone: string | null | undefined): string | null {
  const digits = (phone ?? "").replace(/\D/g, "");
  return digits === "" ? null : digits;
}

export function createGraphClient(options: GraphClientOptions): GraphClient {
  const base = `${options.baseUrl.replace(/\/$/, "")}/${options.version}`;
  const timeoutMs = options.timeoutMs ?? 10_000;

  const timeoutError = (status?: number) =>
    new GraphApiError(`Upstream did not answer within ${timeoutMs / 1000} s`, { kind: "timeout", status });

  async function call(method: "GET" | "POST", path: string, accessToken: string, body?: unknown) {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const answer = await send(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${accessToken}`,
        accept: "application/json",
        ...(payload === undefined ? {} : { "content-type": "application/json" }),
      },
      body: payload,
      timeoutMs,
    });
    if (answer.kind === "timeout") throw timeoutError(answer.status);
    if (answer.kind === "network") {
      throw new GraphApiError(
        answer.status === undefined
          ? "Could not reach the upstream messaging platform"
          : "The upstream connection closed before the answer was complete",
        { kind: "network", status: answer.status, refused: answer.refused },
      );
    }
    const { text, status } = answer;
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }

    const envelope = (json as { error?: Record<string, unknown> } | undefined)?.error;
    if (envelope && typeof envelope === "object") {
      const details = (envelope.error_data as { details?: unknown } | undefined)?.details;
      throw new GraphApiError(
        typeof envelope.message === "string" && envelope.message ? envelope.message : "Upstream error",
        {
          kind: "api",
          status,
          code: typeof envelope.code === "number" ? envelope.code : undefined,
          subcode: typeof envelope.error_subcode === "number" ? envelope.error_subcode : undefined,
          type: typeof envelope.type === "string" ? envelope.type : undefined,
          fbtraceId: typeof envelope.fbtrace_id === "string" ? envelope.fbtrace_id : undefined,
          details: typeof details === "string" ? details : undefined,
        },
      );
    }
    if (status < 200 || status >= 300) {
      throw new GraphApiError(`Upstream answered HTTP ${status} without an error description`, {
        kind: "invalid_response",
        status,
      });
    }
    if (json === undefined || json === null || typeof json !== "object") {
      throw new GraphApiError(
        text === ""
          ? "Upstream answered with an empty body"
          : "Upstream answered with a body that is not JSON",
        { kind: "invalid_response", status },
      );
    }
    return json as Record<string, unknown>;
  }

  const seg = encodeURIComponent;

  return {
    async getPhoneNumber(accessToken, phoneNumberId) {
      const json = await call("GET", `/${seg(phoneNumberId)}?fields=${PHONE_FIELDS}`, accessToken);
      if (typeof json.id !== "string") {
        throw new GraphApiError("Upstream phone number answer has no id", { kind: "invalid_response" });
      }
      return json as PhoneInfo;
    },
    async registerPhoneNumber(accessToken, phoneNumberId, pin) {
      const json = await call("POST", `/${seg(phoneNumberId)}/register`, accessToken, {
        messaging_product: "whatsapp",
        pin,
      });
      expectSuccess(json);
    },
    async subscribeApp(accessToken, businessAccountId) {
      const json = await call("POST", `/${seg(businessAccountId)}/subscribed_apps`, accessToken);
      expectSuccess(json);
    },
    async sendMessage(accessToken, phoneNumberId, to, message) {
      const json = await call("POST", `/${seg(phoneNumberId)}/messages`, accessToken, {
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to,
        ...message,
      });
      const first = (json.messages as Array<{ id?: unknown }> | undefined)?.[0];
      if (typeof first?.id !== "string") {
        throw new GraphApiError("Upstream accepted the message but returned no message id", {
          kind: "invalid_response",
        });
      }
      const contact = (json.contacts as Array<{ wa_id?: unknown }> | undefined)?.[0];
      return { messageId: first.id, waId: typeof contact?.wa_id === "string" ? contact.wa_id : undefined };
    },
  };
}

function expectSuccess(json: Record<string, unknown>) {
  if (json.success !== true) {
    throw new GraphApiError("Upstream did not confirm success", { kind: "invalid_response" });
  }
}

type Answer =
  | { kind: "answer"; status: number; text: string }
  | { kind: "timeout"; status?: number }
  | { kind: "network"; status?: number; refused?: boolean };

// Errors of a connection that was never made: nothing of the request reached the upstream.
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"]);

// Keep-alive agents shared by every client: one connection pool per protocol.
// (node:http rather than fetch: fetch's machinery costs tens of MB of memory
// under load for what is a small JSON request.)
const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 64 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/**
 * One HTTP exchange with a deadline covering connect, answer and body: a body
 * that stalls past it is a timeout too. `status` is set once headers arrived.
 */
function send(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number },
): Promise<Answer> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const transport = target.protocol === "https:" ? https : http;
    let status: number | undefined;
    let settled = false;
    const settle = (answer: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const request = transport.request(
      target,
      {
        method: init.method,
        headers: {
          ...init.headers,
          ...(init.body === undefined ? {} : { "content-length": Buffer.byteLength(init.body) }),
        },
        agent: agents[target.protocol as keyof typeof agents],
      },
      (response) => {
        status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          settle({ kind: "answer", status: status ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        response.on("aborted", () => settle({ kind: "network", status }));
        response.on("error", () => settle({ kind: "network", status }));
      },
    );
    const timer = setTimeout(() => {
      settle({ kind: "timeout", status });
      request.destroy();
    }, init.timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) =>
      settle({ kind: "network", status, refused: NEVER_CONNECTED.has(error.code ?? "") }),
    );
    request.end(init.body);
  });
}
