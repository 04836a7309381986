import type { FastifyServerOptions } from "fastify";

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

/** Pino options: JSON lines, request id on every request line, secrets redacted. */
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
        "*.password",
        "*.token",
        "*.key",
        "*.access_token",
        "*.accessToken",
        "*.verify_token",
        "*.verifyToken",
        "*.pin",
      ],
      censor: "[redacted]",
    },
    serializers: {
      req: (request: { method: string; url: string; id: string; ip?: string }) => ({
        method: request.method,
        url: redactUrl(request.url),
        remoteAddress: request.ip,
      }),
      err: (error: Error) => serializeError(error) as { type: string; message: string; stack: string },
    },
  };
}
