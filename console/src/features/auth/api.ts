/**
 * The auth feature's calls: sign-in, sign-up, sign-out, password reset, accounts and invitations.
 * What they change is the signed-in user (lib/session's meQuery).
 */
import { api } from "../../lib/api";

// Signed-out pages: a 401 here is an answer to show, not a session that ended.
const signedOut = { allowUnauthorized: true } as const;

export const signIn = (body: { email: string; password: string }) =>
  api("/api/auth/sign-in/email", { body, ...signedOut });

export const signUp = (body: { name: string; email: string; password: string }) =>
  api("/api/auth/sign-up/email", { body, ...signedOut });

export const signOut = () => api("/api/auth/sign-out", { method: "POST", body: {}, ...signedOut });

export const requestPasswordReset = (email: string) =>
  api("/api/auth/request-password-reset", { body: { email }, ...signedOut });

export const resetPassword = (body: { token: string; newPassword: string }) =>
  api("/api/auth/reset-password", { body, ...signedOut });

export const createAccount = (name: string) => api("/api/accounts", { body: { name } });

export const acceptInvitation = (token: string) =>
  api(`/api/invitations/${encodeURIComponent(token)}/accept`, { method: "POST", body: {} });
