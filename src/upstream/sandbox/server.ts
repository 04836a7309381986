/**
 * A Graph API (WhatsApp Cloud API) emulator: a real HTTP server that answers
 * the calls the product makes (verify, register, subscribed_apps, messages)
 * the way Meta does, including its error envelope. Tests drive it over
 * loopback; `npm run sandbox` runs it for offline demos (see main.ts).
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  expectedNames,
  expectedParameters,
  givenParameters,
  nameMismatch,
  parameterMismatch,
} from "../../templates/placeholders.js";
import { newFbtraceId, newMediaId, newWamid } from "./ids.js";
import { DEMO_TEMPLATES, type SandboxTemplate } from "./templates.js";

export interface SandboxNumber {
  phoneNumberId: string;
  accessToken: string;
  displayPhoneNumber?: string;
  verifiedName?: string;
  businessAccountId?: string;
  /** two-step PIN already set upstream */
  pin?: string;
}

export interface SandboxFault {
  status?: number;
  error?: { code: number; message: string; type?: string; error_subcode?: number };
  rawBody?: string;
  delayMs?: number;
  /** The connection drops before the request is handled: Meta never got it. */
  drop?: boolean;
  /** Meta takes the request (a send is accepted, its statuses follow), then the connection drops before the answer. */
  dropAfterAccept?: boolean;
  /** default 1 */
  times?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  at: Date;
}

/** A file Meta holds: sent by a customer, or uploaded by the business. */
export interface SandboxMediaInput {
  bytes: Buffer;
  mimeType: string;
  /** The number the file belongs to (its token may download it). */
  phoneNumberId: string;
  /** What `GET /{media_id}` announces; defaults to the real hash and size (tests announce wrong ones). */
  sha256?: string;
  fileSize?: number;
}

export interface Sandbox {
  /** base URL without version, e.g. http://127.0.0.1:40123 — used as META_GRAPH_API_URL */
  url: string;
  addNumber(n: SandboxNumber): void;
  /** Replaces a business account's templates (each one starts with DEMO_TEMPLATES). */
  setTemplates(businessAccountId: string, templates: SandboxTemplate[]): void;
  templates(businessAccountId: string): SandboxTemplate[];
  /** Stores a file as Meta would hold it and answers its media id. */
  addMedia(media: SandboxMediaInput): string;
  /** The bytes and type of a stored file (an upload, for instance). */
  media(mediaId: string): { bytes: Buffer; mimeType: string; filename?: string } | undefined;
  /** Moves the sandbox's clock forward (download URLs expire after 5 minutes). */
  advanceTime(ms: number): void;
  /** Makes every Graph API answer wait this long from now on (0: answer at once). */
  setLatency(ms: number): void;
  latency(): number;
  /** The newest requests received, oldest first (at most `logLimit` of them). */
  requests(): RecordedRequest[];
  /** How many requests fell out of the log since it was last cleared. */
  droppedRequests(): number;
  clearRequests(): void;
  /**
   * Fails the next matching requests. Read receipts share the messages path with sends; a fault
   * applies to them only with `readReceipts: true` (and then only to them).
   */
  inject(
    match: { method?: string; path?: string | RegExp; readReceipts?: boolean },
    fault: SandboxFault,
  ): void;
  /**
   * Answers sends to `to` with another WhatsApp id, as Meta does for numbers it
   * rewrites (Brazil's and Mexico's mobile prefixes).
   */
  rewriteWaId(to: string, waId: string): void;
  /** numbers, faults, log, latency, rewrites */
  reset(): void;
  close(): Promise<void>;
}

/** A message the sandbox accepted on `POST /{phone_number_id}/messages`. */
export interface AcceptedMessage {
  phoneNumberId: string;
  to: string;
  messageId: string;
  type: string;
  /** The send's `biz_opaque_callback_data`, which Meta echoes in the message's status webhooks. */
  callbackData?: string;
}

export interface ExtraRouteResult {
  status: number;
  body: unknown;
}

/** How many requests the log keeps by default: a long demo or a load test must not grow without bound. */
export const DEFAULT_LOG_LIMIT = 20_000;

export interface SandboxOptions {
  port?: number;
  host?: string;
  /** The most requests the log keeps; older ones are forgotten (default DEFAULT_LOG_LIMIT). */
  logLimit?: number;
  /** How long every Graph API answer waits, like Meta's round trip over the internet (default 0). */
  latencyMs?: number;
  /** Called after each accepted outbound message (main.ts posts status webhooks from it). */
  onMessageAccepted?: (message: AcceptedMessage) => void;
  /**
   * Extra routes outside the Graph API (main.ts's `/_sandbox/...` control
   * surface). Answer undefined to fall through to the emulator.
   */
  extraRoutes?: (request: {
    method: string;
    path: string;
    query: Record<string, string>;
    body: unknown;
  }) => Promise<ExtraRouteResult | undefined>;
}

interface MetaError {
  status: number;
  code: number;
  message: string;
  type?: string;
  subcode?: number;
  details?: string;
}

interface NumberState extends SandboxNumber {
  registered: boolean;
}

interface FaultRule {
  method: string | undefined;
  path: string | RegExp | undefined;
  readReceipts: boolean;
  fault: SandboxFault;
  remaining: number;
}

class GraphError extends Error {
  constructor(readonly meta: MetaError) {
    super(meta.message);
  }
}

const VERSIONED = /^\/(v\d+\.\d+)(\/.*)?$/;
/** Where download URLs point, like Meta's lookaside host. */
const DOWNLOAD_PATH = "/whatsapp_business/attachments/";
export const MEDIA_URL_TTL_MS = 5 * 60 * 1000;
const MB = 1024 * 1024;
/** Meta's upload types and limits (image 5 MB, audio and video 16 MB, documents 100 MB, stickers 500 KB). */
export const UPLOAD_LIMITS: Record<string, number> = {
  "image/jpeg": 5 * MB,
  "image/png": 5 * MB,
  "image/webp": 500 * 1024,
  "video/mp4": 16 * MB,
  "video/3gpp": 16 * MB,
  "audio/aac": 16 * MB,
  "audio/mp4": 16 * MB,
  "audio/mpeg": 16 * MB,
  "audio/amr": 16 * MB,
  "audio/ogg": 16 * MB,
  "text/plain": 100 * MB,
  "application/pdf": 100 * MB,
  "application/vnd.ms-powerpoint": 100 * MB,
  "application/msword": 100 * MB,
  "application/vnd.ms-excel": 100 * MB,
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": 100 * MB,
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": 100 * MB,
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": 100 * MB,
};

interface StoredMedia extends SandboxMediaInput {
  filename?: string;
}
const PHONE_FIELDS = ["id", "display_phone_number", "verified_name", "quality_rating"] as const;
const MEDIA_TYPES = ["image", "video", "document", "audio", "sticker"];

const isReadReceipt = (body: unknown) =>
  typeof body === "object" && body !== null && (body as { status?: unknown }).status === "read";

/** Starts the emulator; port 0 (the default) picks a free port. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? "127.0.0.1";
  const numbers = new Map<string, NumberState>();
  const waIdRewrites = new Map<string, string>();
  const templates = new Map<string, SandboxTemplate[]>();
  const media = new Map<string, StoredMedia>();
  const signingKey = randomBytes(32);
  let clockOffsetMs = 0;
  const now = () => Date.now() + clockOffsetMs;
  let faults: FaultRule[] = [];
  const logLimit = Math.max(1, options.logLimit ?? DEFAULT_LOG_LIMIT);
  const startLatencyMs = Math.max(0, options.latencyMs ?? 0);
  let latencyMs = startLatencyMs;
  let log: RecordedRequest[] = [];
  /** Requests recorded since the log was last cleared, kept or not. */
  let received = 0;
  const record = (entry: RecordedRequest) => {
    received += 1;
    log.push(entry);
    // Trimmed in steps of a whole limit, so that a push costs the same however full the log is.
    if (log.length >= 2 * logLimit) log = log.slice(-logLimit);
  };
  const clearLog = () => {
    log = [];
    received = 0;
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent && !response.destroyed) {
        sendError(response, {
          status: 500,
          code: 1,
          message: `An unknown error occurred (${(error as Error).message})`,
        });
      }
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const method = (request.method ?? "GET").toUpperCase();
    const url = new URL(request.url ?? "/", "http://sandbox.invalid");
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const raw = await readBody(request);
    const body = parseBody(raw, request.headers["content-type"]);
    // The control surface (main.ts's /_sandbox routes) is not a Graph API request: not logged.
    const control = options.extraRoutes !== undefined && path.startsWith("/_sandbox");
    if (!control) {
      record({
        method,
        path,
        query,
        headers: maskHeaders(request.headers),
        body: loggable(body),
        at: new Date(),
      });
      if (latencyMs > 0) await sleep(latencyMs);
    }

    if (path === DOWNLOAD_PATH && method === "GET") {
      const fault = takeFault(method, path);
      if (fault?.status) {
        response.writeHead(fault.status, { "content-type": "text/plain" });
        return response.end("fault");
      }
      return download(query, request.headers.authorization, response);
    }

    if (control) {
      const answer = await options.extraRoutes?.({ method, path, query, body });
      if (answer) return sendJson(response, answer.status, answer.body);
    }

    const fault = takeFault(method, path, isReadReceipt(body));
    if (fault) {
      if (fault.delayMs) await sleep(fault.delayMs);
      if (fault.drop) {
        request.socket.destroy();
        return;
      }
      if (fault.dropAfterAccept) {
        try {
          route(method, path, query, body, request.headers.authorization);
        } catch {
          // Refused: nothing was taken; the connection drops all the same.
        }
        request.socket.destroy();
        return;
      }
      if (fault.rawBody !== undefined) {
        response.writeHead(fault.status ?? 500, { "content-type": "text/html; charset=utf-8" });
        response.end(fault.rawBody);
        return;
      }
      if (fault.error || fault.status) {
        const status = fault.status ?? 400;
        return sendError(response, {
          status,
          code: fault.error?.code ?? (status >= 500 ? 2 : 100),
          message:
            fault.error?.message ??
            (status >= 500 ? "Service temporarily unavailable" : "(#100) Invalid parameter"),
          type: fault.error?.type,
          subcode: fault.error?.error_subcode,
        });
      }
    }

    try {
      const result = route(method, path, query, body, request.headers.authorization);
      sendJson(response, 200, result);
    } catch (error) {
      if (error instanceof GraphError) return sendError(response, error.meta);
      throw error;
    }
  }

  function takeFault(method: string, path: string, readReceipt = false): SandboxFault | undefined {
    const rule = faults.find(
      (f) =>
        f.remaining > 0 &&
        (!f.method || f.method === method) &&
        pathMatches(f.path, path) &&
        f.readReceipts === readReceipt,
    );
    if (!rule) return undefined;
    rule.remaining -= 1;
    faults = faults.filter((f) => f.remaining > 0);
    return rule.fault;
  }

  function route(
    method: string,
    path: string,
    query: Record<string, string>,
    body: unknown,
    authorization: string | undefined,
  ): unknown {
    const versioned = VERSIONED.exec(path);
    const segments = (versioned?.[2] ?? "").split("/").filter(Boolean).map(decodeURIComponent);
    if (!versioned || segments.length === 0 || segments.length > 2) {
      throw unsupported(method, segments[0] ?? path);
    }
    const token = bearer(authorization);
    const [objectId, edge] = segments as [string, string | undefined];

    if (edge === undefined && method === "GET" && media.has(objectId)) {
      return mediaInfo(objectId, token, query.phone_number_id);
    }
    if (edge === undefined && method === "GET") {
      const number = phoneNumberFor(objectId, token, method);
      return phoneInfo(number, query.fields);
    }
    if (edge === "message_templates" && method === "GET") {
      wabaFor(objectId, token, method);
      return templatePage(objectId, versioned[1] ?? "v25.0", query);
    }
    if (edge === "media" && method === "POST") {
      return upload(phoneNumberFor(objectId, token, method), body);
    }
    if (edge === "register" && method === "POST") {
      return register(phoneNumberFor(objectId, token, method), body);
    }
    if (edge === "subscribed_apps" && method === "POST") {
      wabaFor(objectId, token, method);
      return { success: true };
    }
    if (edge === "messages" && method === "POST") {
      const number = phoneNumberFor(objectId, token, method);
      if (asObject(body).status === "read") return markRead(body);
      const accepted = acceptMessage(number, body);
      options.onMessageAccepted?.(accepted);
      return {
        messaging_product: "whatsapp",
        contacts: [
          { input: accepted.to, wa_id: waIdRewrites.get(accepted.to) ?? accepted.to.replace(/\D/g, "") },
        ],
        messages: [{ id: accepted.messageId }],
      };
    }
    throw unsupported(method, objectId);
  }

  /** Meta checks the token first (190), then whether it reaches the object (100). */
  function checkToken(token: string | undefined) {
    if (!token) {
      throw new GraphError({
        status: 401,
        code: 190,
        type: "OAuthException",
        message: "An active access token must be used to query information about the current user.",
      });
    }
    if (![...numbers.values()].some((n) => n.accessToken === token)) {
      throw new GraphError({
        status: 401,
        code: 190,
        subcode: 463,
        type: "OAuthException",
        message: "Invalid OAuth access token - Cannot parse access token",
      });
    }
  }

  function phoneNumberFor(id: string, token: string | undefined, method: string): NumberState {
    checkToken(token);
    const number = numbers.get(id);
    if (!number || number.accessToken !== token) throw unsupported(method, id);
    return number;
  }

  function wabaFor(id: string, token: string | undefined, method: string) {
    checkToken(token);
    const owns = [...numbers.values()].some((n) => n.businessAccountId === id && n.accessToken === token);
    if (!owns) throw unsupported(method, id);
  }

  function templatesOf(wabaId: string): SandboxTemplate[] {
    let list = templates.get(wabaId);
    if (!list) {
      list = DEMO_TEMPLATES.map((t) => structuredClone(t));
      templates.set(wabaId, list);
    }
    return list;
  }

  /** One page of templates with Meta's cursor paging (`paging.next` only when there is more). */
  function templatePage(wabaId: string, version: string, query: Record<string, string>) {
    const all = templatesOf(wabaId);
    const limit = Math.min(Math.max(Number(query.limit) || 25, 1), 1000);
    const start = query.after ? Number.parseInt(Buffer.from(query.after, "base64url").toString(), 10) : 0;
    if (!Number.isInteger(start) || start < 0 || start > all.length) {
      throw invalidParameter("after is not a valid cursor");
    }
    const fields = (query.fields ?? "id,name,language,status,category,components").split(",");
    const data = all.slice(start, start + limit).map((t) => {
      const answer: Record<string, unknown> = {};
      for (const field of fields) {
        const key = field.trim() as keyof SandboxTemplate;
        if (key in t) answer[key] = t[key];
      }
      answer.id = t.id;
      return answer;
    });
    const cursor = (n: number) => Buffer.from(String(n)).toString("base64url");
    const paging: Record<string, unknown> = {
      cursors: { before: cursor(start), after: cursor(start + data.length) },
    };
    if (start + data.length < all.length) {
      const next = new URLSearchParams({
        ...query,
        limit: String(limit),
        after: cursor(start + data.length),
      });
      paging.next = `${sandbox.url}/${version}/${wabaId}/message_templates?${next}`;
    }
    return { data, paging };
  }

  function mediaInfo(mediaId: string, token: string | undefined, phoneNumberId: string | undefined) {
    checkToken(token);
    const file = media.get(mediaId);
    const owner = file ? numbers.get(file.phoneNumberId) : undefined;
    if (!file || owner?.accessToken !== token) throw unsupported("GET", mediaId);
    if (phoneNumberId !== undefined && phoneNumberId !== file.phoneNumberId) {
      throw invalidParameter("The media does not belong to the given phone_number_id");
    }
    const expires = now() + MEDIA_URL_TTL_MS;
    const url = new URL(DOWNLOAD_PATH, sandbox.url);
    url.searchParams.set("mid", mediaId);
    url.searchParams.set("ext", String(expires));
    url.searchParams.set("hash", sign(`${mediaId}.${expires}`));
    return {
      messaging_product: "whatsapp",
      url: url.toString(),
      mime_type: file.mimeType,
      sha256: file.sha256 ?? createHash("sha256").update(file.bytes).digest("hex"),
      file_size: String(file.fileSize ?? file.bytes.length),
      id: mediaId,
    };
  }

  const sign = (value: string) => createHmac("sha256", signingKey).update(value).digest("base64url");

  /** Meta's download URLs need the bearer token of the number and stop working after 5 minutes. */
  function download(
    query: Record<string, string>,
    authorization: string | undefined,
    response: ServerResponse,
  ) {
    const refuse = (status: number, text: string) => {
      response.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
      response.end(text);
    };
    const { mid = "", ext = "", hash = "" } = query;
    const file = media.get(mid);
    if (!file || hash !== sign(`${mid}.${ext}`)) return refuse(404, "Not found");
    const token = bearer(authorization);
    if (!token || numbers.get(file.phoneNumberId)?.accessToken !== token) {
      return refuse(401, "Unauthorized");
    }
    if (now() > Number(ext)) return refuse(404, "URL signature expired");
    response.writeHead(200, { "content-type": file.mimeType, "content-length": file.bytes.length });
    response.end(file.bytes);
  }

  function upload(number: NumberState, body: unknown) {
    const form = body instanceof Map ? (body as Map<string, FormValue>) : undefined;
    if (!form) throw invalidParameter("The upload must be multipart/form-data");
    if (form.get("messaging_product")?.text !== "whatsapp") {
      throw invalidParameter("messaging_product must be 'whatsapp'");
    }
    const file = form.get("file");
    if (!file?.bytes || !file.contentType) throw invalidParameter("file is required");
    const type = file.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
    const limit = UPLOAD_LIMITS[type];
    if (limit === undefined) {
      throw new GraphError({
        status: 400,
        code: 131053,
        type: "OAuthException",
        message: "Media upload error",
        details: `Unsupported file type ${type}`,
      });
    }
    if (file.bytes.length > limit) {
      throw new GraphError({
        status: 400,
        code: 131053,
        type: "OAuthException",
        message: "Media upload error",
        details: `The file is larger than ${limit} bytes, the limit for ${type}`,
      });
    }
    const id = newMediaId();
    media.set(id, {
      bytes: file.bytes,
      mimeType: type,
      phoneNumberId: number.phoneNumberId,
      filename: file.filename,
    });
    return { id };
  }

  function markRead(body: unknown) {
    const b = asObject(body);
    if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
    if (typeof b.message_id !== "string" || b.message_id === "")
      throw invalidParameter("message_id is required");
    if (b.typing_indicator !== undefined) {
      const t = asObject(b.typing_indicator);
      if (t.type !== "text") throw invalidParameter("typing_indicator.type must be 'text'");
    }
    return { success: true };
  }

  /** Meta's checks of a template send: it must exist in that language, be approved, and get its parameters. */
  function checkTemplate(number: NumberState, p: Record<string, unknown>) {
    if (typeof p.name !== "string" || p.name === "") throw invalidParameter("template.name is required");
    const language = asObject(p.language).code;
    if (typeof language !== "string" || language === "") {
      throw invalidParameter("template.language.code is required");
    }
    const template = templatesOf(number.businessAccountId ?? "").find(
      (t) => t.name === p.name && t.language === language,
    );
    if (template?.status !== "APPROVED") {
      throw new GraphError({
        status: 404,
        code: 132001,
        type: "OAuthException",
        message: "(#132001) Template name does not exist in the translation",
        details: `template name (${p.name}) does not exist in ${language}`,
      });
    }
    const given = givenParameters(p.components);
    const mismatch =
      typeof given === "string"
        ? given
        : (parameterMismatch(expectedParameters(template.components), given) ??
          nameMismatch(expectedNames(template.components), p.components));
    if (mismatch) {
      throw new GraphError({
        status: 400,
        code: 132000,
        type: "OAuthException",
        message: "(#132000) Number of parameters does not match the expected number of params",
        details: mismatch,
      });
    }
  }

  function register(number: NumberState, body: unknown) {
    const b = asObject(body);
    if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
    if (typeof b.pin !== "string" || !/^[0-9]{6}$/.test(b.pin)) {
      throw invalidParameter("pin must be a string of exactly 6 digits");
    }
    if (number.pin !== undefined && number.pin !== b.pin) {
      throw new GraphError({
        status: 400,
        code: 133005,
        type: "OAuthException",
        message: "Two step verification PIN Mismatch",
        details: "The two-step verification PIN you entered is incorrect.",
      });
    }
    number.pin = b.pin;
    number.registered = true;
    return { success: true };
  }

  function acceptMessage(number: NumberState, body: unknown): AcceptedMessage {
    const b = asObject(body);
    if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
    // A customer who hides their number is addressed by BSUID in `recipient`; `to` wins when both come.
    const to =
      typeof b.to === "string"
        ? b.to
        : typeof b.recipient === "string" && /^[A-Z]{2}\.[A-Za-z0-9.]+$/.test(b.recipient)
          ? b.recipient
          : undefined;
    if (typeof to !== "string" || !/\d/.test(to)) {
      throw invalidParameter("to (a phone number) or recipient (a BSUID) is required");
    }
    if (typeof b.type !== "string") throw invalidParameter("type is required");
    const payload = b[b.type];
    const p =
      payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>) : undefined;
    if (!p) throw invalidParameter(`${b.type} object is required for type ${b.type}`);
    switch (b.type) {
      case "text":
        if (typeof p.body !== "string" || p.body === "") throw invalidParameter("text.body is required");
        break;
      case "interactive":
        checkInteractive(p);
        break;
      case "reaction":
        if (typeof p.message_id !== "string") throw invalidParameter("reaction.message_id is required");
        if (typeof p.emoji !== "string") throw invalidParameter("reaction.emoji is required");
        break;
      case "template":
        checkTemplate(number, p);
        break;
      default:
        if (!MEDIA_TYPES.includes(b.type)) {
          throw invalidParameter(`Unsupported message type: ${b.type}`);
        }
        if (typeof p.link !== "string" && typeof p.id !== "string") {
          throw invalidParameter(`${b.type}.link or ${b.type}.id is required`);
        }
        if (typeof p.id === "string" && media.get(p.id)?.phoneNumberId !== number.phoneNumberId) {
          throw invalidParameter(`${b.type}.id is not a media id of this number`);
        }
    }
    return {
      phoneNumberId: number.phoneNumberId,
      to,
      messageId: newWamid(),
      type: b.type,
      ...(typeof b.biz_opaque_callback_data === "string" ? { callbackData: b.biz_opaque_callback_data } : {}),
    };
  }

  const sandbox: Sandbox = {
    url: "",
    addNumber(n) {
      numbers.set(n.phoneNumberId, { ...n, registered: n.pin !== undefined });
    },
    setTemplates(wabaId, list) {
      templates.set(
        wabaId,
        list.map((t) => structuredClone(t)),
      );
    },
    templates: (wabaId) => templatesOf(wabaId),
    addMedia(input) {
      const id = newMediaId();
      media.set(id, { ...input });
      return id;
    },
    media(mediaId) {
      const file = media.get(mediaId);
      return file ? { bytes: file.bytes, mimeType: file.mimeType, filename: file.filename } : undefined;
    },
    advanceTime(ms) {
      clockOffsetMs += ms;
    },
    setLatency(ms) {
      latencyMs = Math.max(0, ms);
    },
    latency: () => latencyMs,
    requests: () => log.slice(-logLimit),
    droppedRequests: () => received - Math.min(log.length, logLimit),
    clearRequests: clearLog,
    inject(match, fault) {
      faults.push({
        method: match.method?.toUpperCase(),
        path: match.path,
        readReceipts: match.readReceipts ?? false,
        fault,
        remaining: fault.times ?? 1,
      });
    },
    rewriteWaId(to, waId) {
      waIdRewrites.set(to, waId);
    },
    reset() {
      waIdRewrites.clear();
      numbers.clear();
      templates.clear();
      media.clear();
      clockOffsetMs = 0;
      latencyMs = startLatencyMs;
      faults = [];
      clearLog();
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  sandbox.url = `http://${shownHost}:${address.port}`;
  return sandbox;
}

/** String paths match the whole path, the path after the version prefix, or its ending. */
function pathMatches(pattern: string | RegExp | undefined, path: string): boolean {
  if (pattern === undefined) return true;
  if (pattern instanceof RegExp) return pattern.test(path);
  return path === pattern || path.endsWith(pattern);
}

function phoneInfo(number: NumberState, fields: string | undefined) {
  const all: Record<string, unknown> = {
    id: number.phoneNumberId,
    display_phone_number: number.displayPhoneNumber ?? "+1 555-000-0000",
    verified_name: number.verifiedName ?? "Sandbox Business",
    quality_rating: "GREEN",
    code_verification_status: "VERIFIED",
    platform_type: "CLOUD_API",
    status: number.registered ? "CONNECTED" : "PENDING",
  };
  const wanted = fields ? fields.split(",").map((f) => f.trim()) : [...PHONE_FIELDS];
  const answer: Record<string, unknown> = { id: number.phoneNumberId };
  for (const field of wanted) if (field in all) answer[field] = all[field];
  return answer;
}

function checkInteractive(p: Record<string, unknown>) {
  const body = p.body as { text?: unknown } | undefined;
  if (typeof body?.text !== "string") throw invalidParameter("interactive.body.text is required");
  const action = (p.action ?? {}) as Record<string, unknown>;
  if (p.type === "button") {
    if (!Array.isArray(action.buttons) || action.buttons.length < 1 || action.buttons.length > 3) {
      throw invalidParameter("interactive.action.buttons must hold 1 to 3 buttons");
    }
  } else if (p.type === "list") {
    if (typeof action.button !== "string" || !Array.isArray(action.sections)) {
      throw invalidParameter("interactive.action.button and interactive.action.sections are required");
    }
  } else {
    throw invalidParameter("interactive.type must be button or list");
  }
}

function unsupported(method: string, id: string) {
  return new GraphError({
    status: 400,
    code: 100,
    subcode: 33,
    type: "GraphMethodException",
    message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
  });
}

function invalidParameter(details: string) {
  return new GraphError({
    status: 400,
    code: 100,
    type: "OAuthException",
    message: "(#100) Invalid parameter",
    details,
  });
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match?.[1]?.trim();
}

function asObject(body: unknown): Record<string, unknown> {
  return body !== null && typeof body === "object" && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : {};
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json; charset=UTF-8",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

function sendError(response: ServerResponse, e: MetaError) {
  sendJson(response, e.status, {
    error: {
      message: e.message,
      type: e.type ?? "OAuthException",
      code: e.code,
      ...(e.subcode === undefined ? {} : { error_subcode: e.subcode }),
      ...(e.details === undefined
        ? {}
        : { error_data: { messaging_product: "whatsapp", details: e.details } }),
      fbtrace_id: newFbtraceId(),
    },
  });
}

function maskHeaders(headers: IncomingMessage["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(", ") : value;
    out[name] = name === "authorization" ? text.replace(/^(\S+\s+)?.*$/, "$1[masked]") : text;
  }
  return out;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** One field of a multipart body: text, or a file's bytes with its name and type. */
export interface FormValue {
  text?: string;
  bytes?: Buffer;
  filename?: string;
  contentType?: string;
}

/**
 * JSON bodies parsed (whatever the content type, like Graph); multipart bodies
 * as a Map of their fields; form bodies as an object; else raw text.
 */
function parseBody(bytes: Buffer, contentType: string | undefined): unknown {
  if (bytes.length === 0) return undefined;
  const boundary = /^multipart\/form-data;.*boundary="?([^";]+)"?/i.exec(contentType ?? "")?.[1];
  if (boundary) return parseMultipart(bytes, boundary);
  const raw = bytes.toString("utf8");
  try {
    return JSON.parse(raw);
  } catch {
    return contentType?.includes("application/x-www-form-urlencoded")
      ? Object.fromEntries(new URLSearchParams(raw))
      : raw;
  }
}

/** Multipart fields as JSON: texts as they are, files as their name, type and size. */
function loggable(body: unknown): unknown {
  if (!(body instanceof Map)) return body;
  return Object.fromEntries(
    [...(body as Map<string, FormValue>)].map(([name, v]) => [
      name,
      v.bytes ? { filename: v.filename, content_type: v.contentType, size: v.bytes.length } : v.text,
    ]),
  );
}

function parseMultipart(bytes: Buffer, boundary: string): Map<string, FormValue> {
  const fields = new Map<string, FormValue>();
  const delimiter = Buffer.from(`--${boundary}`);
  let at = bytes.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (bytes.subarray(start, start + 2).toString() === "--") break;
    const next = bytes.indexOf(delimiter, start);
    if (next === -1) break;
    const part = bytes.subarray(start + 2, next - 2);
    const split = part.indexOf("\r\n\r\n");
    if (split !== -1) {
      const head = part.subarray(0, split).toString("utf8");
      const content = part.subarray(split + 4);
      const name = /name="([^"]*)"/i.exec(head)?.[1];
      const filename = /filename="([^"]*)"/i.exec(head)?.[1];
      const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1];
      if (name !== undefined) {
        fields.set(
          name,
          filename === undefined && type === undefined
            ? { text: content.toString("utf8") }
            : { bytes: Buffer.from(content), filename, contentType: type?.trim() },
        );
      }
    }
    at = next;
  }
  return fields;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
