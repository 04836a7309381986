/**
 * A Graph API (WhatsApp Cloud API) emulator: a real HTTP server that answers
 * the calls the product makes (verify, register, subscribed_apps, messages)
 * the way Meta does, including its error envelope. Tests drive it over
 * loopback; `npm run sandbox` runs it for offline demos (see main.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { newFbtraceId, newWamid } from "./ids.js";

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
  drop?: boolean;
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

export interface Sandbox {
  /** base URL without version, e.g. http://127.0.0.1:40123 — used as META_GRAPH_API_URL */
  url: string;
  addNumber(n: SandboxNumber): void;
  requests(): RecordedRequest[];
  clearRequests(): void;
  inject(match: { method?: string; path?: string | RegExp }, fault: SandboxFault): void;
  /** numbers, faults, log */
  reset(): void;
  close(): Promise<void>;
}

/** A message the sandbox accepted on `POST /{phone_number_id}/messages`. */
export interface AcceptedMessage {
  phoneNumberId: string;
  to: string;
  messageId: string;
  type: string;
}

export interface ExtraRouteResult {
  status: number;
  body: unknown;
}

export interface SandboxOptions {
  port?: number;
  host?: string;
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
  fault: SandboxFault;
  remaining: number;
}

class GraphError extends Error {
  constructor(readonly meta: MetaError) {
    super(meta.message);
  }
}

const VERSIONED = /^\/(v\d+\.\d+)(\/.*)?$/;
const PHONE_FIELDS = ["id", "display_phone_number", "verified_name", "quality_rating"] as const;
const MEDIA_TYPES = ["image", "video", "document", "audio", "sticker"];

/** Starts the emulator; port 0 (the default) picks a free port. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? "127.0.0.1";
  const numbers = new Map<string, NumberState>();
  let faults: FaultRule[] = [];
  let log: RecordedRequest[] = [];

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
    log.push({ method, path, query, headers: maskHeaders(request.headers), body, at: new Date() });

    if (options.extraRoutes && path.startsWith("/_sandbox")) {
      const answer = await options.extraRoutes({ method, path, query, body });
      if (answer) return sendJson(response, answer.status, answer.body);
    }

    const fault = takeFault(method, path);
    if (fault) {
      if (fault.delayMs) await sleep(fault.delayMs);
      if (fault.drop) {
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

  function takeFault(method: string, path: string): SandboxFault | undefined {
    const rule = faults.find(
      (f) => f.remaining > 0 && (!f.method || f.method === method) && pathMatches(f.path, path),
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

    if (edge === undefined && method === "GET") {
      const number = phoneNumberFor(objectId, token, method);
      return phoneInfo(number, query.fields);
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
      const accepted = acceptMessage(number, body);
      options.onMessageAccepted?.(accepted);
      return {
        messaging_product: "whatsapp",
        contacts: [{ input: accepted.to, wa_id: accepted.to.replace(/\D/g, "") }],
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
    if (typeof b.to !== "string" || !/\d/.test(b.to)) {
      throw invalidParameter("to is required and must be a phone number");
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
      default:
        if (!MEDIA_TYPES.includes(b.type)) {
          throw invalidParameter(`Unsupported message type: ${b.type}`);
        }
        if (typeof p.link !== "string" && typeof p.id !== "string") {
          throw invalidParameter(`${b.type}.link or ${b.type}.id is required`);
        }
    }
    return { phoneNumberId: number.phoneNumberId, to: b.to, messageId: newWamid(), type: b.type };
  }

  const sandbox: Sandbox = {
    url: "",
    addNumber(n) {
      numbers.set(n.phoneNumberId, { ...n, registered: n.pin !== undefined });
    },
    requests: () => log.slice(),
    clearRequests() {
      log = [];
    },
    inject(match, fault) {
      faults.push({
        method: match.method?.toUpperCase(),
        path: match.path,
        fault,
        remaining: fault.times ?? 1,
      });
    },
    reset() {
      numbers.clear();
      faults = [];
      log = [];
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

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** JSON bodies parsed (whatever the content type, like Graph); form bodies as an object; else raw. */
function parseBody(raw: string, contentType: string | undefined): unknown {
  if (raw === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return contentType?.includes("application/x-www-form-urlencoded")
      ? Object.fromEntries(new URLSearchParams(raw))
      : raw;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
