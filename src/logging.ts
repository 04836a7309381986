import { hostname } from "node:os";
import { type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from "fastify";

/** Query parameters whose values are logged; every other value is masked (it may be a token or a message text). */
const KEPT_QUERY = new Set(["limit", "cursor", "after", "status", "hub.mode"]);
/** Paths that carry secrets: an invitation's token (up to its final `/accept`), the console's invitation page. */
const SECRET_PATH = /(\/api\/invitations\/|^\/invite\/).*?(\/accept\/?)?$/i;

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
};

/**
 * A URL as it may be logged: invitation tokens in the path masked, and every
 * query value masked but a few harmless ones. Names are compared decoded, so
 * `hub%2Everify_token` is masked like `hub.verify_token`.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf("?");
  const rawPath = q === -1 ? url : url.slice(0, q);
  const safePath = (decode(rawPath) ?? rawPath).replace(SECRET_PATH, "$1[redacted]$2");
  if (q === -1) return safePath;
  const query = url
    .slice(q + 1)
    .split("&")
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf("=");
      if (eq === -1) return "[redacted]";
      const name = decode(pair.slice(0, eq));
      if (name === undefined) return "[redacted]";
      return KEPT_QUERY.has(name) ? pair : `${encodeURIComponent(name)}=[redacted]`;
    });
  return `${safePath}?${query.join("&")}`;
}

// Values PostgreSQL quotes in its messages (`invalid input syntax for type uuid: "..."`).
const QUOTED = /"[^"]*"/g;

/**
 * Errors as they may be logged: type, message, stack frames and the fields
 * that say what failed (pg `code`, `constraint`, drizzle's SQL text), never
 * the values involved: drizzle's `params` (message texts, emails), pg's
 * `detail` (`Key (email)=(...)`) and quoted values in pg messages are left out.
 */
export function serializeError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return error;
  const fields = error as Error & Record<string, unknown>;
  const isPg = typeof fields.code === "string" && typeof fields.severity === "string";
  const isQuery = typeof fields.query === "string" && "params" in fields;
  const type = error.constructor?.name ?? error.name;
  const message = isQuery
    ? `Failed query: ${fields.query as string}`
    : isPg
      ? error.message.replace(QUOTED, '"[redacted]"')
      : error.message;
  const stack = error.stack ?? "";
  const frames = stack.indexOf("\n    at ");
  const out: Record<string, unknown> = {
    type,
    message,
    stack: `${type}: ${message}${frames === -1 ? "" : stack.slice(frames)}`,
  };
  for (const key of Object.keys(fields)) {
    if (key === "params" || key === "detail" || key === "cause" || key in out) continue;
    const value = fields[key];
    if (value instanceof Error) continue;
    if (typeof value === "string" && isPg) out[key] = value.replace(QUOTED, '"[redacted]"');
    else out[key] = value;
  }
  if (fields.cause instanceof Error && depth < 5) out.cause = serializeError(fields.cause, depth + 1);
  return out;
}

const LEVELS = { info: 30, warn: 40, error: 50, fatal: 60 } as const;

/**
 * One JSON log line shaped like pino's (level, time, pid, hostname, msg), for what is said before
 * the service's logger exists (start-up, a failed start): every line of the log is JSON.
 */
export function logLine(level: keyof typeof LEVELS, msg: string, fields: Record<string, unknown> = {}) {
  const line = {
    level: LEVELS[level],
    time: Date.now(),
    pid: process.pid,
    hostname: hostname(),
    ...fields,
    msg,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Why the service could not start, in one sentence a person can act on; undefined when unknown. */
export function startFailureText(error: unknown): string | undefined {
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === "EADDRINUSE")
    return `Port ${e.port ?? ""} is already in use${e.address ? ` on ${e.address}` : ""}: stop the other process or set PORT to a free port`.replace(
      "Port  is",
      "The port is",
    );
  if (e?.code === "EACCES" && e.syscall === "listen")
    return `Not allowed to listen on port ${e.port ?? ""}: choose a port above 1023 with PORT`;
  return undefined;
}

/**
 * The redaction list: names of fields whose values are never logged, at any
 * depth of a log line (headers logged by a library, a job's payload, an
 * error's fields). Compared lower-cased without separators, so
 * `x-api-key`, `X_Api_Key` and `xApiKey` are one name.
 */
export const SECRET_FIELDS = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
  "api_key",
  "set-auth-token",
  "password",
  "newPassword",
  "currentPassword",
  "token",
  "key",
  "secret",
  "access_token",
  "refresh_token",
  "id_token",
  "session_token",
  "verify_token",
  "hub.verify_token",
  "app_secret",
  "client_secret",
  "pin",
] as const;
const fieldName = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
const SECRET_NAMES = new Set(SECRET_FIELDS.map(fieldName));
export const isSecretField = (name: string) => SECRET_NAMES.has(fieldName(name));

const CENSOR = "[redacted]";
/** Query or form parameters whose name says they hold a credential: `?access_token=`, `hub.verify_token=`. */
const SECRET_PARAM =
  /([?&;](?:[^=&\s#"'<>]*?)(?:token|key|secret|password|passwd|signature|sig|code|auth|session)(?:[^=&\s#"'<>]*)=)[^&\s#"'<>]*/gi;
/** Credentials written out: `Bearer <token>`, `Basic <pair>`. */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic|Token)(\s+|%20|\+)[^\s"',;]+/gi;
/** The invitation token in an invitation URL. */
const INVITATION_PATH = /(\/api\/invitations\/)[^/\s?#"']+/gi;
/** Outbound webhook signing secrets. */
const WEBHOOK_SECRET = /\bwhsec_[A-Za-z0-9+/=]+/g;

/** A free text with every credential it may carry (URL parameters, bearer tokens...) masked. */
export function redactText(text: string): string {
  return text
    .replace(SECRET_PARAM, `$1${CENSOR}`)
    .replace(SCHEME_CREDENTIAL, `$1 ${CENSOR}`)
    .replace(INVITATION_PATH, `$1${CENSOR}`)
    .replace(WEBHOOK_SECRET, `whsec_${CENSOR}`);
}

const MAX_REDACT_DEPTH = 12;
const isPlain = (value: object) => {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/**
 * A log value with the redaction list applied at every depth: secret fields
 * censored, credentials in texts masked. Plain objects and arrays are copied
 * (never changed: a library may have logged the request's own headers);
 * class instances (a request, an error) are left to their serializers.
 */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactText(value);
  if (value === null || typeof value !== "object" || depth > MAX_REDACT_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1));
  if (!isPlain(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    out[name] =
      isSecretField(name) && field !== undefined && field !== null ? CENSOR : redactValue(field, depth + 1);
  }
  return out;
}

/**
 * Pino options: JSON lines, request id on every request line, secrets
 * redacted. Every logger of the process writes through the logger built from
 * these options (Fastify and its plugins, better-auth, graphile-worker, the
 * background tasks), so the redaction list applies to all of them: field
 * names at any depth (formatters), texts (the log method hook) and the
 * serialized request and error.
 */
export function loggerOptions(level: string): FastifyServerOptions["logger"] {
  return {
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        "req.headers.cookie",
        'req.headers["x-api-key"]',
        'res.headers["set-cookie"]',
        'res.headers["set-auth-token"]',
      ],
      censor: CENSOR,
    },
    formatters: {
      log: (object: Record<string, unknown>) => redactValue(object) as Record<string, unknown>,
      bindings: (bindings: Record<string, unknown>) => redactValue(bindings) as Record<string, unknown>,
    },
    hooks: {
      logMethod(args: unknown[], method: (...args: unknown[]) => void) {
        method.apply(
          this,
          args.map((arg) => (typeof arg === "string" ? redactText(arg) : arg)),
        );
      },
    },
    serializers: {
      req: (request: { method: string; url: string; id: string; ip?: string }) => ({
        method: request.method,
        url: redactText(redactUrl(request.url)),
        remoteAddress: request.ip,
      }),
      err: (error: Error) =>
        redactValue(serializeError(error)) as { type: string; message: string; stack: string },
    },
  };
}

/**
 * Fastify's request lines, one per request: "request completed" carries the request (method,
 * URL) with the status and time; the arrival is a debug line; a 4xx the API answered says nothing
 * more at info (the completed line has its status).
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest) {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    if (this.isLogDisabled(request)) return;
    const fields = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime) };
    if (error) reply.log.error({ ...fields, err: error }, "request errored");
    else reply.log.info(fields, "request completed");
  }

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply) {
    if (this.isLogDisabled(request)) return;
    if (reply.statusCode >= 500) reply.log.error({ req: request, res: reply, err: error }, error?.message);
    else reply.log.debug({ res: reply, err: error }, error?.message);
  }
}

/**
 * Console output of libraries that write there directly, masked by the same
 * list (the service's own lines go through pino).
 */
export function redactConsole(target: Console = console): void {
  for (const name of ["log", "info", "warn", "error", "debug", "trace"] as const) {
    const original = target[name].bind(target);
    target[name] = (...args: unknown[]) =>
      original(...args.map((arg) => (typeof arg === "string" ? redactText(arg) : redactValue(arg))));
  }
}
