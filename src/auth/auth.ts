import { betterAuth } from "better-auth";
import { drizzleAdapter } from "better-auth/adapters/drizzle";
import { APIError, createAuthMiddleware } from "better-auth/api";
import { bearer } from "better-auth/plugins";
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { authCredentials, profiles, sessions, users, verifications } from "../db/schema/index.js";
import { storableProblem } from "../http/input.js";
import { hashedSessionTokens } from "./hashed-sessions.js";
import { ownOrigins } from "./origins.js";

/** Longest accepted user fields (better-auth itself bounds only the password). */
const USER_FIELD_LIMITS = new Map<string, number>([
  ["name", 200],
  ["email", 320],
  ["image", 2048],
  ["password", 1024],
  ["newPassword", 1024],
  ["currentPassword", 1024],
]);
/** Any other string the auth routes take (session tokens, callback URLs). */
const OTHER_STRING_LIMIT = 4096;

/**
 * The shared input policy (http/input.ts) for the bodies of better-auth's
 * routes: none of them takes an object or an array, and every string must be
 * storable and bounded. Null when the body is acceptable.
 */
function authBodyProblem(body: Record<string, unknown>): string | null {
  for (const [field, value] of Object.entries(body)) {
    if (value !== null && typeof value === "object")
      return `${field} must be a string, a number or a boolean`;
    if (typeof value !== "string") {
      // Only the image may be null (it removes the picture); a null name or email is refused here, not by the database.
      if (USER_FIELD_LIMITS.has(field) && value !== undefined && !(value === null && field === "image"))
        return `${field} must be a string`;
      continue;
    }
    const problem = storableProblem(value, USER_FIELD_LIMITS.get(field) ?? OTHER_STRING_LIMIT);
    if (problem) return `${field}: ${problem}`;
  }
  return null;
}

const EMAIL = /[^\s@<>"'()]+@[^\s@<>"'()]+/g;

/**
 * better-auth's log lines, written through the app's pino logger (one JSON
 * stream) instead of its coloured console lines. Email addresses in its
 * messages are masked and only errors among its extra arguments are kept.
 */
function authLogger(log: FastifyBaseLogger) {
  const child = log.child({ module: "better-auth" });
  return {
    level: "debug" as const,
    log(level: "debug" | "info" | "warn" | "error", message: string, ...args: unknown[]) {
      const err = args.find((arg) => arg instanceof Error);
      const text = String(message).replace(EMAIL, "[email]");
      child[level](err ? { err } : {}, text);
    },
  };
}

export function createAuth(
  db: Db,
  config: Pick<Config, "publicUrl" | "authSecret" | "env" | "trustedOrigins">,
  log: FastifyBaseLogger,
) {
  return betterAuth({
    appName: "wa-inbox",
    baseURL: config.publicUrl,
    basePath: "/api/auth",
    trustedOrigins: ownOrigins(config),
    secret: config.authSecret,
    // Session tokens are stored as SHA-256 hashes (see hashed-sessions.ts).
    database: hashedSessionTokens(
      drizzleAdapter(db, {
        provider: "pg",
        schema: { users, sessions, auth_credentials: authCredentials, verifications },
      }),
    ),
    user: { modelName: "users" },
    session: { modelName: "sessions" },
    account: { modelName: "auth_credentials" },
    verification: { modelName: "verifications" },
    // No session from sign-up: it answers alike whether or not the email is taken
    // (better-auth's generic duplicate answer), so it cannot tell who has an account.
    emailAndPassword: { enabled: true, autoSignIn: false, minPasswordLength: 8 },
    // A bearer token is the signed cookie value (`set-auth-token`); the unsigned token alone is no credential.
    plugins: [bearer({ requireSignature: true })],
    // Origin and CSRF checks stay on whatever NODE_ENV says (better-auth skips them under test).
    advanced: { database: { generateId: "uuid" }, disableOriginCheck: false, disableCSRFCheck: false },
    // Our own limiter covers what needs one; better-auth's would key on IPs we may not see.
    rateLimit: { enabled: false },
    telemetry: { enabled: false },
    logger: authLogger(log),
    // The shared input policy for every better-auth route's body (see authBodyProblem).
    hooks: {
      before: createAuthMiddleware(async (ctx) => {
        const body = ctx.body as Record<string, unknown> | undefined;
        if (!body || typeof body !== "object") return;
        const problem = authBodyProblem(body);
        if (problem) throw new APIError("BAD_REQUEST", { message: problem });
      }),
    },
    databaseHooks: {
      user: {
        create: {
          // Every user has a profile; it links to no account until they create or join one.
          after: async (user) => {
            await db.insert(profiles).values({ userId: user.id }).onConflictDoNothing();
          },
        },
      },
    },
  });
}

export type Auth = ReturnType<typeof createAuth>;
