/**
 * Meta Graph API (WhatsApp Cloud API) client: one function per call the
 * product makes. Every call has a timeout; POSTs are never retried (a retry
 * could register twice or send a message twice). Errors never contain the
 * access token.
 */

import { randomBytes } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { OutboundMessage } from "./messages.js";

/** `late`: the request was never written (its `writeWhenReady` said no, or its time ran out first): nothing reached Meta. */
export type GraphErrorKind = "api" | "timeout" | "network" | "invalid_response" | "too_large" | "late";

/**
 * When a request may be written, asked once its connection is ready: true writes it
 * (after waiting, if need be), false drops it unwritten.
 */
export type WriteGate = () => boolean | Promise<boolean>;

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

export type {
  InteractiveBody,
  MediaLink,
  MediaRef,
  OutboundMessage,
  TemplateComponentParameters,
  TemplateMessage,
} from "./messages.js";

/** A template as Meta's `message_templates` edge lists it. */
export interface UpstreamTemplate {
  id: string;
  name: string;
  language: string;
  status: string;
  category: string | null;
  components: Array<Record<string, unknown>>;
}

/** What `GET /{media_id}` answers: a download URL valid for 5 minutes, and what the file must be. */
export interface MediaInfo {
  id: string;
  url: string;
  mimeType: string;
  sha256: string | null;
  fileSize: number | null;
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
  /**
   * `to` must already be digits only (see toUpstreamPhone). `callbackData`
   * (our message id) goes as Meta's `biz_opaque_callback_data`, which Meta
   * echoes in the message's status webhooks. With `writeWhenReady`, the
   * request is written only once its connection is ready and the gate answers
   * true (it may wait, holding the connection); false fails the send with kind
   * `late`, and nothing of it was sent.
   */
  sendMessage(
    accessToken: string,
    phoneNumberId: string,
    to: string,
    message: OutboundMessage,
    options?: { callbackData?: string; writeWhenReady?: WriteGate },
  ): Promise<SentMessage>;
  /** Every template of a business account, following Meta's pages. */
  listTemplates(accessToken: string, businessAccountId: string): Promise<UpstreamTemplate[]>;
  getMediaInfo(accessToken: string, mediaId: string, phoneNumberId?: string): Promise<MediaInfo>;
  /** The bytes behind a media URL (sent with the bearer token, as Meta requires); more than maxBytes fails. */
  downloadMedia(accessToken: string, url: string, maxBytes: number): Promise<Buffer>;
  /** Uploads a file for sending (`POST /{phone_number_id}/media`, multipart); answers Meta's media id. */
  uploadMedia(
    accessToken: string,
    phoneNumberId: string,
    file: { bytes: Buffer; mimeType: string; filename: string },
  ): Promise<string>;
  /** Marks a customer's message read (blue ticks), optionally showing "typing..." until the reply. */
  markRead(
    accessToken: string,
    phoneNumberId: string,
    messageId: string,
    options?: { typing?: boolean },
  ): Promise<void>;
}

/** The page size asked of Meta when listing templates. */
export const TEMPLATE_PAGE_LIMIT = 100;
export const TEMPLATE_FIELDS = "id,name,language,status,category,components";
/** Stops a paging loop that never ends (a broken upstream answering the same cursor). */
const MAX_TEMPLATE_PAGES = 200;

export interface GraphClientOptions {
  baseUrl: string;
  version: string;
  timeoutMs?: number;
}

export const PHONE_FIELDS = "id,display_phone_number,verified_name,quality_rating";

/** Strips everything but digits; a number with no digits is no number (null). */
/** A business-scoped user id (`US.13491208655302741918`, `US.ENT.…`); phone ids are digits. */
export const isBsuid = (id: string | null | undefined): id is string =>
  typeof id === "string" && /^[A-Z]{2}\.[A-Za-z0-9.]+$/.test(id);

export function toUpstreamPhone(phone: string | null | undefined): string | null {
  const digits = (phone ?? "").replace(/\D/g, "");
  return digits === "" ? null : digits;
}

export function createGraphClient(options: GraphClientOptions): GraphClient {
  const base = `${options.baseUrl.replace(/\/$/, "")}/${options.version}`;
  const timeoutMs = options.timeoutMs ?? 10_000;

  const timeoutError = (status?: number) =>
    new GraphApiError(`Upstream did not answer within ${timeoutMs / 1000} s`, { kind: "timeout", status });

  async function call(
    method: "GET" | "POST",
    path: string,
    accessToken: string,
    body?: unknown,
    raw?: { bytes: Buffer; contentType: string },
    writeWhenReady?: WriteGate,
  ) {
    const payload = raw ? raw.bytes : body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const contentType = raw ? raw.contentType : "application/json";
    const answer = await send(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${accessToken}`,
        accept: "application/json",
        ...(payload === undefined ? {} : { "content-type": contentType }),
      },
      body: payload,
      timeoutMs,
      writeWhenReady,
    });
    return readJson(answer);
  }

  function failedExchange(answer: Exclude<Answer, { kind: "answer" }>): GraphApiError {
    if (answer.kind === "timeout") return timeoutError(answer.status);
    if (answer.kind === "late") {
      return new GraphApiError("The request was not written in time; nothing was sent", { kind: "late" });
    }
    if (answer.kind === "too_large") {
      return new GraphApiError("The upstream file is larger than allowed", {
        kind: "too_large",
        status: answer.status,
      });
    }
    return new GraphApiError(
      answer.status === undefined
        ? "Could not reach the upstream messaging platform"
        : "The upstream connection closed before the answer was complete",
      { kind: "network", status: answer.status, refused: answer.refused },
    );
  }

  function readJson(answer: Answer) {
    if (answer.kind !== "answer") throw failedExchange(answer);
    const { status } = answer;
    const text = answer.bytes.toString("utf8");
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
    async sendMessage(accessToken, phoneNumberId, to, message, sendOptions = {}) {
      const json = await call(
        "POST",
        `/${seg(phoneNumberId)}/messages`,
        accessToken,
        {
          messaging_product: "whatsapp",
          recipient_type: "individual",
          // A customer known only by their BSUID is addressed with `recipient`.
          ...(isBsuid(to) ? { recipient: to } : { to }),
          ...message,
          ...(sendOptions.callbackData ? { biz_opaque_callback_data: sendOptions.callbackData } : {}),
        },
        undefined,
        sendOptions.writeWhenReady,
      );
      const first = (json.messages as Array<{ id?: unknown }> | undefined)?.[0];
      if (typeof first?.id !== "string") {
        throw new GraphApiError("Upstream accepted the message but returned no message id", {
          kind: "invalid_response",
        });
      }
      const contact = (json.contacts as Array<{ wa_id?: unknown }> | undefined)?.[0];
      return { messageId: first.id, waId: typeof contact?.wa_id === "string" ? contact.wa_id : undefined };
    },
    async listTemplates(accessToken, businessAccountId) {
      const templates: UpstreamTemplate[] = [];
      let after: string | undefined;
      for (let page = 0; page < MAX_TEMPLATE_PAGES; page++) {
        const query = new URLSearchParams({ fields: TEMPLATE_FIELDS, limit: String(TEMPLATE_PAGE_LIMIT) });
        if (after) query.set("after", after);
        const json = await call("GET", `/${seg(businessAccountId)}/message_templates?${query}`, accessToken);
        if (!Array.isArray(json.data)) {
          throw new GraphApiError("Upstream template list has no data array", { kind: "invalid_response" });
        }
        for (const item of json.data) templates.push(readTemplate(item));
        after = nextCursor(json.paging);
        if (!after) return templates;
      }
      throw new GraphApiError("Upstream template list did not end", { kind: "invalid_response" });
    },
    async getMediaInfo(accessToken, mediaId, phoneNumberId) {
      const query = phoneNumberId ? `?phone_number_id=${seg(phoneNumberId)}` : "";
      const json = await call("GET", `/${seg(mediaId)}${query}`, accessToken);
      if (typeof json.url !== "string" || typeof json.mime_type !== "string") {
        throw new GraphApiError("Upstream media answer has no url or mime_type", {
          kind: "invalid_response",
        });
      }
      const size = Number(json.file_size);
      return {
        id: typeof json.id === "string" ? json.id : mediaId,
        url: json.url,
        mimeType: json.mime_type,
        sha256: typeof json.sha256 === "string" ? json.sha256 : null,
        fileSize: json.file_size !== undefined && Number.isSafeInteger(size) && size >= 0 ? size : null,
      };
    },
    async downloadMedia(accessToken, url, maxBytes) {
      const target = new URL(url);
      if (target.protocol !== "https:" && target.protocol !== "http:") {
        throw new GraphApiError("Upstream media URL is not an http(s) URL", { kind: "invalid_response" });
      }
      const answer = await send(url, {
        method: "GET",
        headers: { authorization: `Bearer ${accessToken}` },
        timeoutMs,
        maxBytes,
      });
      if (answer.kind !== "answer") throw failedExchange(answer);
      if (answer.status < 200 || answer.status >= 300) return readJson(answer) as never;
      return answer.bytes;
    },
    async uploadMedia(accessToken, phoneNumberId, file) {
      const form = multipartBody([
        { name: "messaging_product", value: "whatsapp" },
        { name: "type", value: file.mimeType },
        { name: "file", value: file.bytes, filename: file.filename, contentType: file.mimeType },
      ]);
      const json = await call("POST", `/${seg(phoneNumberId)}/media`, accessToken, undefined, form);
      if (typeof json.id !== "string" || json.id === "") {
        throw new GraphApiError("Upstream accepted the upload but returned no media id", {
          kind: "invalid_response",
        });
      }
      return json.id;
    },
    async markRead(accessToken, phoneNumberId, messageId, options = {}) {
      const json = await call("POST", `/${seg(phoneNumberId)}/messages`, accessToken, {
        messaging_product: "whatsapp",
        status: "read",
        message_id: messageId,
        ...(options.typing ? { typing_indicator: { type: "text" } } : {}),
      });
      expectSuccess(json);
    },
  };
}

function readTemplate(item: unknown): UpstreamTemplate {
  const t = (item ?? {}) as Record<string, unknown>;
  if (
    typeof t.id !== "string" ||
    typeof t.name !== "string" ||
    typeof t.language !== "string" ||
    typeof t.status !== "string"
  ) {
    throw new GraphApiError("Upstream template has no id, name, language or status", {
      kind: "invalid_response",
    });
  }
  const components = Array.isArray(t.components)
    ? t.components.filter((c): c is Record<string, unknown> => c !== null && typeof c === "object")
    : [];
  return {
    id: t.id,
    name: t.name,
    language: t.language,
    status: t.status,
    category: typeof t.category === "string" ? t.category : null,
    components,
  };
}

/** The `after` cursor of a page that has a next one (Meta omits `next` on the last page). */
function nextCursor(paging: unknown): string | undefined {
  const p = (paging ?? {}) as { next?: unknown; cursors?: { after?: unknown } };
  if (typeof p.next !== "string" || p.next === "") return undefined;
  if (typeof p.cursors?.after === "string" && p.cursors.after !== "") return p.cursors.after;
  try {
    return new URL(p.next).searchParams.get("after") ?? undefined;
  } catch {
    return undefined;
  }
}

type FormPart =
  | { name: string; value: string }
  | { name: string; value: Buffer; filename: string; contentType: string };

/** A multipart/form-data body; the filename is quoted with its quotes and line breaks removed. */
function multipartBody(parts: FormPart[]): { bytes: Buffer; contentType: string } {
  const boundary = `----wa-inbox-${randomBytes(12).toString("hex")}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (typeof part.value !== "string" && "filename" in part) {
      head += `; filename="${part.filename.replace(/["\r\n\\]/g, "_")}"\r\nContent-Type: ${part.contentType}`;
    }
    chunks.push(Buffer.from(`${head}\r\n\r\n`), Buffer.from(part.value), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { bytes: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

function expectSuccess(json: Record<string, unknown>) {
  if (json.success !== true) {
    throw new GraphApiError("Upstream did not confirm success", { kind: "invalid_response" });
  }
}

type Answer =
  | { kind: "answer"; status: number; bytes: Buffer }
  | { kind: "timeout"; status?: number }
  | { kind: "network"; status?: number; refused?: boolean }
  | { kind: "too_large"; status?: number }
  | { kind: "late" };

// Errors of a connection that was never made: nothing of the request reached the upstream.
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"]);

// Keep-alive agents shared by every client: one connection pool per protocol.
// (node:http rather than fetch: fetch's machinery costs tens of MB of memory
// under load for what is a small JSON request.) Sized for the send pipeline's
// sends in flight (setUpstreamSockets, from SEND_MAX_IN_FLIGHT).
const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 }),
};

/** Lets this many upstream requests be in flight at once (besides a few for other calls), kept alive. */
export function setUpstreamSockets(count: number) {
  for (const agent of Object.values(agents)) {
    agent.maxSockets = Math.max(64, count + 16);
    agent.maxFreeSockets = Math.max(64, count + 16);
  }
}

/**
 * One HTTP exchange with a deadline covering connect, answer and body: a body
 * that stalls past it is a timeout too. `status` is set once headers arrived.
 */
function send(
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: Buffer;
    timeoutMs: number;
    /** An answer body longer than this is abandoned (`too_large`). */
    maxBytes?: number;
    /** Asked once the connection is ready (a kept-alive socket at once, a new one when connected). */
    writeWhenReady?: WriteGate;
  },
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
          ...(init.body === undefined ? {} : { "content-length": init.body.length }),
        },
        agent: agents[target.protocol as keyof typeof agents],
      },
      (response) => {
        status = response.statusCode ?? 0;
        const declared = Number(response.headers["content-length"]);
        if (init.maxBytes !== undefined && declared > init.maxBytes) {
          settle({ kind: "too_large", status });
          request.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let received = 0;
        response.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (init.maxBytes !== undefined && received > init.maxBytes) {
            settle({ kind: "too_large", status });
            request.destroy();
            return;
          }
          chunks.push(chunk);
        });
        response.on("end", () =>
          settle({ kind: "answer", status: status ?? 0, bytes: Buffer.concat(chunks) }),
        );
        response.on("aborted", () => settle({ kind: "network", status }));
        response.on("error", () => settle({ kind: "network", status }));
      },
    );
    const gate = init.writeWhenReady;
    // A gated request not yet written when it times out or its connection fails was never sent.
    let written = gate === undefined;
    const timer = setTimeout(() => {
      settle(written ? { kind: "timeout", status } : { kind: "late" });
      request.destroy();
    }, init.timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) =>
      settle({ kind: "network", status, refused: !written || NEVER_CONNECTED.has(error.code ?? "") }),
    );
    if (gate === undefined) {
      request.end(init.body);
      return;
    }
    const write = () => {
      void Promise.resolve()
        .then(gate)
        .catch(() => false)
        .then((now) => {
          if (settled) return;
          if (now) {
            written = true;
            request.end(init.body);
          } else {
            // Not a byte of the request was written: it provably never reached the upstream.
            settle({ kind: "late" });
            request.destroy();
          }
        });
    };
    request.once("socket", (socket) => {
      // A new connection: written once connected (and, over TLS, once the handshake is done).
      if (socket.connecting) socket.once(target.protocol === "https:" ? "secureConnect" : "connect", write);
      else write();
    });
  });
}
