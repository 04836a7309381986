/**
 * A Graph API (WhatsApp Cloud API) emulator: a real HTTP server (Fastify, multipart bodies through
 * `@fastify/multipart` as the service reads them) that answers the calls the product makes
 * (verify, register, subscribed_apps, messages, templates, media) the way Meta does, including its
 * error envelope. Tests drive it over loopback; `npm run sandbox` runs it for offline demos (see
 * main.ts).
 *
 * state.ts holds what it remembers; routes/ answers the Graph API (one module per object: phone
 * numbers, business accounts, messages, media) and the `/_sandbox` control surface; this file
 * parses bodies, logs and delays requests, writes Meta's errors and starts the server.
 */
import type { AddressInfo } from "node:net";
import multipart, { type Multipart } from "@fastify/multipart";
import Fastify, { type FastifyError, type FastifyRequest } from "fastify";
import { errorBody, GraphError, invalidParameter, unsupported } from "./graph-error.js";
import { answer, type FormValue, pathOf, queryOf, sendJson, sleep, VERSIONED } from "./routes/answer.js";
import { businessAccountRoutes } from "./routes/business-accounts.js";
import { type ControlOptions, controlRoutes } from "./routes/control.js";
import { LARGEST_UPLOAD, mediaRoutes, uploadError } from "./routes/media.js";
import { messageRoutes } from "./routes/messages.js";
import { phoneNumberRoutes } from "./routes/phone-numbers.js";
import {
  type AcceptedMessage,
  type FaultMatch,
  type RecordedRequest,
  type SandboxFault,
  type SandboxMediaInput,
  type SandboxNumber,
  SandboxState,
} from "./state.js";
import type { SandboxTemplate } from "./templates.js";

export type { FormValue } from "./routes/answer.js";
export type { ControlOptions } from "./routes/control.js";
export { MEDIA_URL_TTL_MS, UPLOAD_LIMITS } from "./routes/media.js";
export {
  type AcceptedMessage,
  DEFAULT_LOG_LIMIT,
  type FaultMatch,
  type RecordedRequest,
  type SandboxFault,
  type SandboxMediaInput,
  type SandboxNumber,
} from "./state.js";

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
  inject(match: FaultMatch, fault: SandboxFault): void;
  /**
   * Answers sends to `to` with another WhatsApp id, as Meta does for numbers it
   * rewrites (Brazil's and Mexico's mobile prefixes).
   */
  rewriteWaId(to: string, waId: string): void;
  /** numbers, faults, log, latency, rewrites */
  reset(): void;
  close(): Promise<void>;
}

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
   * Serve the `/_sandbox/...` control surface (request log, latency, numbers, the customer's
   * webhooks: routes/control.ts), as `npm run sandbox` (main.ts) does.
   */
  control?: ControlOptions;
}

/** Starts the emulator; port 0 (the default) picks a free port. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const state = new SandboxState(options);
  const app = Fastify({
    logger: false,
    // Bodies other than multipart (which has its own limit below) are small JSON or form posts.
    bodyLimit: 10 * 1024 * 1024,
    forceCloseConnections: true,
    routerOptions: { maxParamLength: 1000 },
  });

  // Graph reads JSON whatever the content type; form bodies as fields; anything else as text.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (request, bytes, done) => {
    done(null, parseBody(bytes as Buffer, request.headers["content-type"]));
  });
  await app.register(multipart, {
    attachFieldsToBody: true,
    limits: { fileSize: LARGEST_UPLOAD, fieldSize: 1024 * 1024 },
  });

  const recorded = new WeakSet<FastifyRequest>();
  // When the request's head arrived: what Meta would count a send by, before the body is read.
  const arrived = new WeakMap<FastifyRequest, Date>();
  app.addHook("onRequest", async (request) => {
    arrived.set(request, new Date());
  });
  const record = (request: FastifyRequest) => {
    if (recorded.has(request)) return;
    recorded.add(request);
    state.record({
      method: request.method,
      path: pathOf(request),
      query: queryOf(request),
      headers: maskHeaders(request.headers),
      // A multipart body that failed to stream in is not logged half read.
      body: request.isMultipart() && !(request.body instanceof Map) ? undefined : loggable(request.body),
      at: arrived.get(request) ?? new Date(),
    });
  };
  const isControl = (request: FastifyRequest) =>
    (request.routeOptions.config as { control?: boolean } | undefined)?.control === true;

  app.addHook("preHandler", async (request) => {
    if (request.isMultipart()) request.body = await formFields(request.body);
    // The control surface (/_sandbox routes) is not a Graph API request: not logged.
    if (isControl(request)) return;
    record(request);
    if (state.latencyMs > 0) await sleep(state.latencyMs);
  });

  app.setErrorHandler((error: FastifyError | GraphError, request, reply) => {
    if (!isControl(request)) record(request);
    const refusal =
      error instanceof GraphError
        ? error
        : error.code === "FST_REQ_FILE_TOO_LARGE"
          ? uploadError(`The file is larger than ${LARGEST_UPLOAD} bytes`)
          : error.statusCode !== undefined && error.statusCode < 500
            ? invalidParameter(error.message)
            : new GraphError({
                status: 500,
                code: 1,
                message: `An unknown error occurred (${error.message})`,
              });
    return sendJson(reply, refusal.meta.status, errorBody(refusal.meta));
  });

  // Anything else: Meta's "unsupported request" on the object (the first segment after the version).
  app.setNotFoundHandler((request, reply) =>
    answer(state, request, reply, () => {
      const path = pathOf(request);
      const versioned = VERSIONED.exec(path);
      const first = versioned ? (versioned[2] ?? "").split("/").find(Boolean) : undefined;
      throw unsupported(request.method, first === undefined ? path : decodeURIComponent(first));
    }),
  );

  phoneNumberRoutes(app, state);
  businessAccountRoutes(app, state);
  messageRoutes(app, state, options.onMessageAccepted);
  mediaRoutes(app, state);
  if (options.control) controlRoutes(app, state, options.control);

  await app.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1" });
  const address = app.server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  state.url = `http://${shownHost}:${address.port}`;

  return {
    url: state.url,
    addNumber: (n) => state.addNumber(n),
    setTemplates: (wabaId, list) => state.setTemplates(wabaId, list),
    templates: (wabaId) => state.templatesOf(wabaId),
    addMedia: (input) => state.addMedia(input),
    media(mediaId) {
      const file = state.media.get(mediaId);
      return file ? { bytes: file.bytes, mimeType: file.mimeType, filename: file.filename } : undefined;
    },
    advanceTime: (ms) => state.advanceTime(ms),
    setLatency(ms) {
      state.latencyMs = Math.max(0, ms);
    },
    latency: () => state.latencyMs,
    requests: () => state.requests(),
    droppedRequests: () => state.droppedRequests(),
    clearRequests: () => state.clearRequests(),
    inject: (match, fault) => state.inject(match, fault),
    rewriteWaId(to, waId) {
      state.waIdRewrites.set(to, waId);
    },
    reset: () => state.reset(),
    close: () => app.close(),
  };
}

function maskHeaders(headers: FastifyRequest["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(", ") : value;
    out[name] = name === "authorization" ? text.replace(/^(\S+\s+)?.*$/, "$1[masked]") : text;
  }
  return out;
}

/** JSON bodies parsed (whatever the content type, like Graph); form bodies as an object; else raw text. */
function parseBody(bytes: Buffer, contentType: string | undefined): unknown {
  if (bytes.length === 0) return undefined;
  const raw = bytes.toString("utf8");
  try {
    return JSON.parse(raw);
  } catch {
    return contentType?.includes("application/x-www-form-urlencoded")
      ? Object.fromEntries(new URLSearchParams(raw))
      : raw;
  }
}

/** @fastify/multipart's fields (attached to the body) as a Map: texts, and files with their bytes. */
async function formFields(body: unknown): Promise<Map<string, FormValue>> {
  const fields = new Map<string, FormValue>();
  for (const [name, entry] of Object.entries((body ?? {}) as Record<string, Multipart | Multipart[]>)) {
    // A repeated field counts once: its last value, as a Map keeps it.
    const part = Array.isArray(entry) ? entry.at(-1) : entry;
    if (!part) continue;
    fields.set(
      name,
      part.type === "file"
        ? { bytes: await part.toBuffer(), filename: part.filename, contentType: part.mimetype }
        : { text: String(part.value) },
    );
  }
  return fields;
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
