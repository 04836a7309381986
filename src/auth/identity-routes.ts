import { fromNodeHeaders } from "better-auth/node";
import { eq } from "drizzle-orm";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { verifications } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { tryParseJson } from "../http/body.js";
import { unauthorized } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { docs, type ResponseDoc } from "../http/openapi.js";
import { createRateLimiter } from "../http/rate-limit.js";
import type { Auth } from "./auth.js";
import {
  changePasswordAnswer,
  changePasswordBody,
  getSessionAnswer,
  listSessionsAnswer,
  mailRequestAnswer,
  mailThrottled,
  requestPasswordResetBody,
  resetPasswordBody,
  revokeSessionBody,
  sendVerificationBody,
  signInAnswer,
  signInBody,
  signOutAnswer,
  signUpAnswer,
  signUpBody,
  statusAnswer,
  throttled,
  updateUserBody,
  verifyEmailQuery,
} from "./identity-docs.js";
import { isBrowserRequest, ownOrigins } from "./origins.js";
import { createSignInThrottle, emailThrottleKey } from "./sign-in-throttle.js";

interface IdentityRoute {
  method: "GET" | "POST";
  path: string;
  summary: string;
  description?: string;
  body?: z.ZodType;
  querystring?: z.ZodType;
  responses: Record<number, ResponseDoc>;
  public?: boolean;
}

const originRefused = "A browser request from an origin that is not this service's own (or with none)";

/** better-auth's endpoints that this API exposes; every other /api/auth path is 404. */
const ROUTES: IdentityRoute[] = [
  {
    method: "POST",
    path: "/sign-up/email",
    summary: "Create a user (then sign in)",
    description:
      "Answers alike whether or not the email is already registered, and opens no session: sign in next. Server-side clients send no `Origin`; browsers must send one of the service's own origins.",
    body: signUpBody,
    responses: {
      200: { description: "The user (for a taken email, a stand-in)", body: signUpAnswer },
      400: "Invalid email, or a password shorter than 8 or longer than 128 characters",
      403: originRefused,
      422: "The user could not be created",
    },
    public: true,
  },
  {
    method: "POST",
    path: "/sign-in/email",
    summary: "Sign in with email and password",
    description:
      "Opens a session: the token is answered in the body and in the `set-auth-token` header (send it as `Authorization: Bearer <token>`), and set as a cookie for browsers. Failed attempts are throttled without locking the email's owner out: per (email, client address) pair, SIGN_IN_RATE_LIMIT failures are free, then the pair backs off exponentially (429 with `Retry-After`); per client address over all emails, SIGN_IN_IP_RATE_LIMIT failures (then 429); per email over all clients, beyond SIGN_IN_EMAIL_RATE_LIMIT failures attempts are slowed, never refused.",
    body: signInBody,
    responses: {
      200: {
        description: "Signed in",
        body: signInAnswer,
        headers: {
          "set-auth-token": "The session's signed token, for `Authorization: Bearer <token>`",
          "set-cookie": "The session cookie, for browsers",
        },
      },
      400: "Invalid email or missing password",
      401: "Wrong email or password",
      403: originRefused,
      429: throttled,
    },
    public: true,
  },
  {
    method: "POST",
    path: "/sign-out",
    summary: "End the caller's session",
    responses: { 200: { description: "Signed out", body: signOutAnswer }, 403: originRefused },
  },
  {
    method: "GET",
    path: "/get-session",
    summary: "The caller's session and user",
    responses: { 200: { description: "The session, or null without one", body: getSessionAnswer } },
    public: true,
  },
  {
    method: "GET",
    path: "/list-sessions",
    summary: "The caller's open sessions (without their tokens)",
    responses: { 200: { description: "Sessions", body: listSessionsAnswer } },
  },
  {
    method: "POST",
    path: "/revoke-session",
    summary: "End one of the caller's sessions",
    description:
      "Names the session by its `id` (from list-sessions) or by its token; a session of another user is left alone (the answer is the same).",
    body: revokeSessionBody,
    responses: {
      200: { description: "Revoked", body: statusAnswer },
      400: "Neither id nor token",
      403: originRefused,
    },
  },
  {
    method: "POST",
    path: "/revoke-sessions",
    summary: "End every session of the caller, this one included",
    responses: { 200: { description: "Revoked", body: statusAnswer }, 403: originRefused },
  },
  {
    method: "POST",
    path: "/revoke-other-sessions",
    summary: "End every session of the caller but this one",
    responses: { 200: { description: "Revoked", body: statusAnswer }, 403: originRefused },
  },
  {
    method: "POST",
    path: "/change-password",
    summary: "Change the caller's password",
    body: changePasswordBody,
    responses: {
      200: { description: "Changed", body: changePasswordAnswer },
      400: "Wrong current password, or a bad new one",
      403: originRefused,
    },
  },
  {
    method: "POST",
    path: "/update-user",
    summary: "Change the caller's name or image",
    body: updateUserBody,
    responses: {
      200: { description: "Updated", body: statusAnswer },
      400: "Nothing to update, or a bad field",
      403: originRefused,
    },
  },
  {
    method: "POST",
    path: "/request-password-reset",
    summary: "Email a password reset link",
    description:
      "Answers alike, and in about the same time, whether or not a user has this email; when one has, a mail with a link to the console's `/reset-password?token=...` page is queued (valid an hour, once). Requests are limited per email and per client address (SIGN_IN_RATE_LIMIT, SIGN_IN_IP_RATE_LIMIT), known and unknown emails alike.",
    body: requestPasswordResetBody,
    responses: {
      200: { description: "Accepted (whether or not the email is known)", body: mailRequestAnswer },
      400: "Invalid email",
      403: originRefused,
      429: mailThrottled,
    },
    public: true,
  },
  {
    method: "POST",
    path: "/reset-password",
    summary: "Set a new password with the token of a reset link",
    description:
      "The token works once. Every session of the user ends, and the user's email counts as verified (the link only ever went to that mailbox).",
    body: resetPasswordBody,
    responses: {
      200: { description: "Password changed; sign in again", body: statusAnswer },
      400: "Invalid or expired token, or a password shorter than 8 or longer than 128 characters",
      403: originRefused,
    },
    public: true,
  },
  {
    method: "POST",
    path: "/send-verification-email",
    summary: "Email a link that verifies the email address (again)",
    description:
      "Without a session: answers alike whether or not the email is known, and mails only a user whose email is not verified yet. With one: the caller's own email (400 when it is another, or already verified). Limited like /request-password-reset.",
    body: sendVerificationBody,
    responses: {
      200: { description: "Accepted", body: mailRequestAnswer },
      400: "Invalid email; with a session, another email or one already verified",
      403: originRefused,
      429: mailThrottled,
    },
    public: true,
  },
  {
    method: "GET",
    path: "/verify-email",
    summary: "The link of the verification mail: marks the email verified",
    description:
      "Opens no session. With `callbackURL` (the mailed link has `/`) the answer is a redirect there, with `?error=INVALID_TOKEN` or `TOKEN_EXPIRED` when the link is bad.",
    querystring: verifyEmailQuery,
    responses: {
      200: { description: "Verified (without callbackURL)", body: mailRequestAnswer },
      302: {
        description: "Verified, or not (see `error` in the Location), and sent on to callbackURL",
        headers: {
          location: "callbackURL, with `?error=INVALID_TOKEN` or `TOKEN_EXPIRED` when the link is bad",
        },
      },
      401: "Invalid or expired token (without callbackURL)",
      403: "A callbackURL that is not an address of this service",
    },
    public: true,
  },
];

const SIGN_IN = "/api/auth/sign-in/email";
/** Routes that send a mail: throttled per email and per address, every request counted. */
const MAIL_REQUESTS = new Set(["/api/auth/request-password-reset", "/api/auth/send-verification-email"]);
const RESET_PASSWORD = "/api/auth/reset-password";
/** A reset request answers no sooner than this, so that a known email (a mail queued) takes no longer than an unknown one. */
const MAIL_REQUEST_FLOOR_MS = 250;
const LIST_SESSIONS = "/api/auth/list-sessions";
const REVOKE_ONE = "/api/auth/revoke-session";
const REVOKE_OTHERS = "/api/auth/revoke-other-sessions";
const CHANGE_PASSWORD = "/api/auth/change-password";

/** A change to a successful better-auth answer before it is sent. */
type Rewrite = (text: string, headers: Headers) => string;

/**
 * The `token` of an answer that opens a session (sign-in, change-password with
 * revokeOtherSessions) as the bearer credential: the signed value of
 * `set-auth-token`, not better-auth's bare token, which is no credential.
 */
const signedToken: Rewrite = (text, headers) => {
  const signed = headers.get("set-auth-token");
  const body = JSON.parse(text) as { token?: unknown };
  if (typeof body.token !== "string") return text;
  return JSON.stringify({ ...body, token: signed ?? null });
};

/** list-sessions without the tokens: a session is named by its id (revoke-session takes it). */
const withoutTokens: Rewrite = (text) => {
  const list = JSON.parse(text) as Record<string, unknown>[];
  return JSON.stringify(list.map(({ token: _token, ...session }) => session));
};

/**
 * The session id that revoke-session names (`{ id }`), or undefined when it
 * names a token instead: then the token's signature, if it came with one, is
 * dropped, since better-auth compares bare tokens.
 */
function sessionIdToRevoke(request: FastifyRequest): string | undefined {
  const parsed = tryParseJson(request);
  if (!parsed.ok || !parsed.value || typeof parsed.value !== "object") return undefined;
  const body = parsed.value as { id?: unknown; token?: unknown };
  if (typeof body.id === "string" && isUuid(body.id)) return body.id;
  if (typeof body.token === "string" && body.token.includes(".")) {
    request.body = JSON.stringify({ ...body, token: body.token.slice(0, body.token.indexOf(".")) });
  }
  return undefined;
}

/** The email a sign-in names, as better-auth compares it (lower case). */
function signInEmail(request: FastifyRequest): string | undefined {
  const parsed = tryParseJson(request);
  const email = parsed.ok ? (parsed.value as { email?: unknown } | null)?.email : undefined;
  return typeof email === "string" && email.trim() ? email.trim().toLowerCase() : undefined;
}
const SIGN_UP = "/api/auth/sign-up/email";

/**
 * Mounts better-auth's endpoints at /api/auth/*. Server-side clients (no
 * browser headers at all) are treated as coming from the service's own
 * origin, since better-auth demands an Origin from anything that sends Fetch
 * Metadata, as Node's fetch does; browsers keep its origin checks. Failed
 * sign-ins are throttled; whatever ends sessions or changes the user forgets
 * the user's cached sessions on this instance at once. better-auth's error
 * answers (`{ code, message }`) are rewritten to `{ error, code }`.
 */
export function registerIdentityRoutes(
  app: FastifyInstance,
  auth: Auth,
  deps: Pick<AppDeps, "config" | "sessions" | "db" | "pool">,
) {
  const { config, sessions, db, pool } = deps;
  const ownOrigin = ownOrigins(config)[0] ?? new URL(config.publicUrl).origin;
  const throttle = createSignInThrottle(app, deps);

  // Counted in Redis, else in PostgreSQL beside the sign-in attempts, so instances share them.
  const shared = { pool, table: "sign_in_attempts" };
  const tooMany = "Too many mail requests; try again later";
  const mailThrottle = {
    email: createRateLimiter(app, deps, config.signInRateLimit, tooMany, shared),
    address: createRateLimiter(app, deps, config.signInIpRateLimit, tooMany, shared),
  };

  for (const route of ROUTES) {
    const url = `/api/auth${route.path}`;
    app.route({
      method: route.method,
      url,
      ...docs({
        tags: ["identity"],
        summary: route.summary,
        description: route.description,
        body: route.body,
        querystring: route.querystring,
        responses: route.responses,
        public: route.public,
      }),
      handler: async (request, reply) => {
        if (url === SIGN_IN) return signIn(request, reply);
        if (MAIL_REQUESTS.has(url)) return mailRequest(request, reply);
        if (url === RESET_PASSWORD) return resetPassword(request, reply);
        if (url === SIGN_UP) return forward(request, reply);
        if (route.method === "GET")
          return forward(request, reply, url === LIST_SESSIONS ? withoutTokens : undefined);
        // Resolved before the call: a sign-out leaves no session to read afterwards.
        const before = await auth.api
          .getSession({ headers: fromNodeHeaders(request.headers) })
          .catch(() => null);
        // Spec section 5: a missing or invalid session is 401 (sign-out included).
        if (!before) throw unauthorized();
        try {
          if (url === REVOKE_OTHERS) return await revokeOtherSessions(before.user.id, before.session.id);
          if (url === REVOKE_ONE) {
            const id = sessionIdToRevoke(request);
            if (id) return await revokeSessionById(before.user.id, id);
          }
          return await forward(request, reply, url === CHANGE_PASSWORD ? signedToken : undefined);
        } finally {
          sessions.forgetUser(before.user.id);
        }
      },
    });
  }

  /** Every other session of the user ends (the rows go; the trigger tells every instance). */
  async function revokeOtherSessions(userId: string, sessionId: string) {
    await pool.query("delete from sessions where user_id = $1 and id <> $2", [userId, sessionId]);
    return { status: true };
  }

  /** One of the user's sessions, named by its id (list-sessions), ends; another user's id changes nothing. */
  async function revokeSessionById(userId: string, id: string) {
    await pool.query("delete from sessions where user_id = $1 and id = $2", [userId, id]);
    return { status: true };
  }

  async function signIn(request: FastifyRequest, reply: FastifyReply) {
    const attempt = await throttle.begin(signInEmail(request), request.ip);
    let status = 500;
    try {
      const answer = await forward(request, reply, signedToken);
      status = reply.statusCode;
      return answer;
    } finally {
      await (status === 401 ? attempt.failed() : status < 300 ? attempt.succeeded() : attempt.voided());
    }
  }

  /**
   * A request that may send a mail: counted per email and per client address
   * (known and unknown emails alike, none given back), and answered no sooner
   * than MAIL_REQUEST_FLOOR_MS.
   */
  async function mailRequest(request: FastifyRequest, reply: FastifyReply) {
    const started = Date.now();
    await mailThrottle.address.consume(`mail:address:${request.ip}`);
    const email = signInEmail(request);
    if (email) await mailThrottle.email.consume(`mail:email:${emailThrottleKey(email)}`);
    const answer = await forward(request, reply);
    const wait = MAIL_REQUEST_FLOOR_MS - (Date.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return answer;
  }

  /** A reset ends the user's sessions: this instance forgets them once it has. */
  async function resetPassword(request: FastifyRequest, reply: FastifyReply) {
    const parsed = tryParseJson(request);
    const token = parsed.ok ? (parsed.value as { token?: unknown } | null)?.token : undefined;
    const [pending] =
      // Only what a reset token can look like reaches the query; better-auth answers the rest.
      typeof token === "string" && /^[A-Za-z0-9_-]{1,200}$/.test(token)
        ? await db
            .select({ userId: verifications.value })
            .from(verifications)
            .where(eq(verifications.identifier, `reset-password:${token}`))
        : [];
    try {
      return await forward(request, reply);
    } finally {
      if (pending) sessions.forgetUser(pending.userId);
    }
  }

  async function forward(request: FastifyRequest, reply: FastifyReply, rewrite?: Rewrite) {
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined) continue;
      headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    if (!isBrowserRequest(request.headers)) headers.set("origin", ownOrigin);
    // Bodies are JSON whatever Content-Type a client sent, or none (see app.ts).
    if (request.method === "POST") headers.set("content-type", "application/json");
    const body = request.method === "POST" && typeof request.body === "string" ? request.body : undefined;
    const response = await auth.handler(
      new Request(new URL(request.url, config.publicUrl), { method: request.method, headers, body }),
    );

    reply.code(response.status);
    for (const [name, value] of response.headers) {
      if (name === "set-cookie" || name === "content-length") continue;
      reply.header(name, value);
    }
    const cookies = response.headers.getSetCookie();
    if (cookies.length) reply.header("set-cookie", cookies);

    const text = await response.text();
    if (response.status < 400) return reply.send(rewrite ? rewrite(text, response.headers) : text);
    let message = response.statusText || "Request failed";
    let code: string | undefined;
    try {
      const parsed = JSON.parse(text) as { message?: unknown; code?: unknown };
      if (typeof parsed.message === "string" && parsed.message) message = parsed.message;
      if (typeof parsed.code === "string") code = parsed.code;
    } catch {
      // Not JSON: keep the status text.
    }
    if (response.status === 401) message = "Unauthorized";
    return reply
      .header("content-type", "application/json; charset=utf-8")
      .send(JSON.stringify(code ? { error: message, code } : { error: message }));
  }
}
