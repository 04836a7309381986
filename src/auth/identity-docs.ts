import { z } from "zod";

// OpenAPI descriptions of better-auth's endpoints that this API exposes. They
// document only; better-auth parses and checks the bodies itself.

const timestamp = z.iso.datetime();

export const authUser = z.object({
  id: z.uuid(),
  name: z.string(),
  email: z.email(),
  emailVerified: z.boolean(),
  image: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const authSession = z.object({
  id: z.uuid(),
  userId: z.uuid(),
  expiresAt: timestamp,
  ipAddress: z.string().nullable(),
  userAgent: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const signUpBody = z.object({
  name: z.string().min(1),
  email: z.email(),
  password: z.string().min(8).max(128),
  image: z.string().optional(),
});

export const signInBody = z.object({
  email: z.email(),
  password: z.string(),
  rememberMe: z.boolean().optional().describe("false: the session ends with the browser session"),
});

export const changePasswordBody = z.object({
  currentPassword: z.string(),
  newPassword: z.string().min(8).max(128),
  revokeOtherSessions: z.boolean().optional().describe("true: every other session of the user ends at once"),
});

export const revokeSessionBody = z.object({
  id: z.uuid().optional().describe("The session's id (list-sessions)"),
  token: z.string().optional().describe("Or the session's token, as sign-in answered it"),
});

export const updateUserBody = z.object({
  name: z.string().min(1).optional(),
  image: z.string().nullable().optional(),
});

export const statusAnswer = z.object({ status: z.boolean() });

export const signOutAnswer = z.object({ success: z.boolean() });

export const signUpAnswer = z.object({
  token: z.null().describe("Always null: sign in to get a session"),
  user: authUser,
});

export const signInAnswer = z.object({
  redirect: z.boolean(),
  token: z
    .string()
    .describe(
      "The session's bearer token (signed), as in the `set-auth-token` header: send it as `Authorization: Bearer <token>`",
    ),
  url: z.string().nullable().optional(),
  user: authUser,
});

export const changePasswordAnswer = z.object({
  token: z.string().nullable().describe("A new bearer token (signed) when other sessions were revoked"),
  user: authUser,
});

export const getSessionAnswer = z
  .object({
    session: authSession.extend({
      token: z.string().describe("The session's bare token: no credential without its signature"),
    }),
    user: authUser,
  })
  .nullable()
  .describe("null when the request carries no valid session");

export const listSessionsAnswer = z
  .array(authSession)
  .describe("Without tokens (they are stored only as hashes): revoke a session by its id");

export const throttled = {
  description:
    "Too many failed sign-ins for this email from this client (backing off), or from this client address: `{ error, retry_after_seconds }`, with `Retry-After`",
  body: z.object({ error: z.string(), retry_after_seconds: z.int() }),
};

export const requestPasswordResetBody = z.object({ email: z.email() });

export const resetPasswordBody = z.object({
  token: z.string().describe("The `token` of the reset link (`/reset-password?token=...`)"),
  newPassword: z.string().min(8).max(128),
});

export const sendVerificationBody = z.object({
  email: z.email().describe("With a session: the caller's own email"),
});

export const verifyEmailQuery = z.object({
  token: z.string().describe("The token of the verification link"),
  callbackURL: z.string().optional().describe("Where the browser goes next (a path of this service)"),
});

export const mailRequestAnswer = z.object({
  status: z.boolean(),
  message: z.string().optional(),
});

export const mailThrottled = {
  description:
    "Too many mail requests for this email or from this address: `{ error, retry_after_seconds }`, with `Retry-After`",
  body: z.object({ error: z.string(), retry_after_seconds: z.int() }),
};
