import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { ApiError } from "../http/errors.js";

const LOOPBACK_TWINS: Record<string, string> = { localhost: "127.0.0.1", "127.0.0.1": "localhost" };

/**
 * The browser origins that count as this service's own: PUBLIC_URL's origin,
 * outside production also its localhost/127.0.0.1 twin (a browser opened on
 * http://localhost:3000 while the server listens on 127.0.0.1:3000), and
 * TRUSTED_ORIGINS.
 */
export function ownOrigins(config: Pick<Config, "publicUrl" | "env" | "trustedOrigins">): string[] {
  const publicUrl = new URL(config.publicUrl);
  const origins = new Set([publicUrl.origin]);
  const twin = LOOPBACK_TWINS[publicUrl.hostname];
  if (twin && config.env !== "production") {
    const other = new URL(publicUrl.origin);
    other.hostname = twin;
    origins.add(other.origin);
  }
  for (const origin of config.trustedOrigins) origins.add(origin);
  return [...origins];
}

type Headers = FastifyRequest["headers"];

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * Whether a browser sent the request. Browsers send `Origin` with every
 * unsafe request and Fetch Metadata (`Sec-Fetch-Site`) with every request;
 * server-side clients (curl, Node's fetch, which sends only
 * `Sec-Fetch-Mode`) send neither, and cannot be tricked into a cross-site
 * request, so no origin check concerns them.
 */
export function isBrowserRequest(headers: Headers): boolean {
  return Boolean(
    header(headers, "origin") || header(headers, "referer") || header(headers, "sec-fetch-site"),
  );
}

/** Whether a request authenticates with the session cookie only (no bearer token or API key). */
export function usesCookieSession(headers: Headers): boolean {
  if (header(headers, "x-api-key")) return false;
  if (/^bearer\s+\S/i.test(header(headers, "authorization") ?? "")) return false;
  return Boolean(header(headers, "cookie")?.includes("session_token="));
}

const refererOrigin = (referer: string | undefined) =>
  referer === undefined ? undefined : URL.canParse(referer) ? new URL(referer).origin : "null";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * CSRF protection for every route: an unsafe request authenticated by the
 * session cookie must come from one of the service's own origins. A foreign
 * or `null` Origin (or, without one, Referer) is 403, and so is a browser's
 * cross-site or same-site request without either (Fetch Metadata). Requests without any browser header
 * come from scripts and pass; bearer tokens and API keys are never sent by a
 * browser on its own, so they need no check.
 */
export function registerCrossOriginGuard(app: FastifyInstance, config: Parameters<typeof ownOrigins>[0]) {
  const trusted = new Set(ownOrigins(config));
  app.addHook("onRequest", async (request) => {
    if (SAFE_METHODS.has(request.method)) return;
    if (!usesCookieSession(request.headers)) return;
    const origin = header(request.headers, "origin") ?? refererOrigin(header(request.headers, "referer"));
    const site = header(request.headers, "sec-fetch-site");
    const foreign = origin
      ? !trusted.has(origin)
      : site !== undefined && site !== "same-origin" && site !== "none";
    if (foreign) throw new ApiError(403, "Cross-origin request refused");
  });
}
