import type { FastifyServerOptions } from "fastify";

/** Query parameters and path segments that carry secrets, masked in every logged URL. */
const SECRET_QUERY = /([?&](?:hub\.verify_token|hub\.challenge|token|access_token)=)[^&]*/gi;
const SECRET_PATH = /(\/api\/invitations\/)[^/?]+/g;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PATH, "$1[redacted]").replace(SECRET_QUERY, "$1[redacted]");
}

/** Pino options: JSON lines, request id on every request line, secrets redacted. */
export function loggerOptions(level: string): FastifyServerOptions["logger"] {
  return {
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        "req.headers.cookie",
        'res.headers["set-cookie"]',
        'res.headers["set-auth-token"]',
        "*.password",
        "*.token",
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
    },
  };
}
