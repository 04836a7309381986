import { betterAuth } from "better-auth";
import { drizzleAdapter } from "better-auth/adapters/drizzle";
import { APIError, createAuthMiddleware } from "better-auth/api";
import { bearer } from "better-auth/plugins";
import { eq } from "drizzle-orm";
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { authCredentials, profiles, sessions, users, verifications } from "../db/schema/index.js";
import { storableProblem } from "../http/input.js";
import type { Mail } from "../mail/mailer.js";
import { passwordResetMail, verificationMail } from "../mail/messages.js";
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

/** A reset link is valid this long, once. */
export const RESET_LINK_TTL_S = 60 * 60;
/** A verification link is valid this long. */
export const VERIFY_LINK_TTL_S = 24 * 60 * 60;

/** How better-auth's mails leave: queued as jobs (mail/queue.ts), committed before the request answers. */
export interface AuthMail {
  queue(mail: Mail): Promise<void>;
  /** Send a verification mail on sign-up (only when mail reaches real mailboxes: SMTP). */
  verifyOnSignUp: boolean;
}

/**
 * The links of the mails: the console's page where a new password is chosen
 * (it posts the token to /api/auth/reset-password), and the API route that
 * marks the email verified, then sends the browser to the console.
 */
export const resetLink = (publicUrl: string, token: string) =>
  `${publicUrl}/reset-password?token=${encodeURIComponent(token)}`;
export const verifyLink = (publicUrl: string, token: string) =>
  `${publicUrl}/api/auth/verify-email?token=${encodeURIComponent(token)}&callbackURL=${encodeURIComponent("/")}`;

export function createAuth(
  db: Db,
  config: Pick<Config, "publicUrl" | "authSecret" | "env" | "trustedOrigins">,
  log: FastifyBaseLogger,
  mail?: AuthMail,
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
    // Password reset by email: the link only ever goes to the mailbox, so using it also
    // verifies the email; every session of the user ends with the reset.
    emailAndPassword: {
      enabled: true,
      autoSignIn: false,
      minPasswordLength: 8,
      resetPasswordTokenExpiresIn: RESET_LINK_TTL_S,
      revokeSessionsOnPasswordReset: true,
      ...(mail && {
        sendResetPassword: async ({ user, token }) => {
          const link = resetLink(config.publicUrl, token);
          await mail.queue(passwordResetMail({ to: user.email, link, validFor: "an hour" }));
        },
        onPasswordReset: async ({ user }) => {
          await db.update(users).set({ emailVerified: true }).where(eq(users.id, user.id));
        },
      }),
    },
    ...(mail && {
      emailVerification: {
        sendOnSignUp: mail.verifyOnSignUp,
        autoSignInAfterVerification: false,
        expiresIn: VERIFY_LINK_TTL_S,
        sendVerificationEmail: async ({ user, token }) => {
          const link = verifyLink(config.publicUrl, token);
          await mail.queue(verificationMail({ to: user.email, link, validFor: "24 hours" }));
        },
      },
    }),
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
