import { fromNodeHeaders } from "better-auth/node";
import { eq } from "drizzle-orm";
import type { FastifyRequest } from "fastify";
import type { Db } from "../db/client.js";
import { profiles } from "../db/schema/index.js";
import { ApiError, unauthorized } from "../http/errors.js";
import type { Sessions } from "../ports.js";
import { apiKeyFromHeaders, resolveApiKey } from "./api-keys.js";
import type { Auth } from "./auth.js";
import type { Caller } from "./caller.js";

export type { Caller } from "./caller.js";

interface Cached {
  caller: Caller;
  expiresAt: number;
}

export interface SessionCacheOptions {
  /** How long a resolved session is reused without asking the database (0 disables). */
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

/**
 * Resolving a session costs several queries (session, user, profile) on every
 * request, so a resolved caller is reused for a few seconds, keyed by the
 * credential. Sign-out, revocations and account changes forget the user's
 * entries at once: on this instance directly, on every instance through the
 * database's notification (auth/revocations.ts, wired in app.ts); the TTL
 * bounds the rest (a LISTEN connection down). API keys are never cached: one
 * indexed query per request, so a deleted key is dead at once everywhere.
 */
export function createSessions(auth: Auth, db: Db, options: SessionCacheOptions = {}): Sessions {
  const ttlMs = options.ttlMs ?? 5_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const keysByUser = new Map<string, Set<string>>();
  // When each user's entries were last forgotten: a resolution that started
  // before then may have read a session revoked meanwhile, and is not cached.
  const forgottenAt = new Map<string, number>();
  let everythingForgottenAt = -1;

  const forgetKey = (key: string) => {
    const entry = cache.get(key);
    if (!entry) return;
    cache.delete(key);
    keysByUser.get(entry.caller.userId)?.delete(key);
  };

  const remember = (key: string, caller: Caller, sessionExpiresAt: Date, startedAt: number) => {
    if (ttlMs <= 0) return;
    if (Math.max(forgottenAt.get(caller.userId) ?? -1, everythingForgottenAt) >= startedAt) return;
    if (cache.size >= maxEntries) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) forgetKey(oldest);
    }
    cache.set(key, { caller, expiresAt: Math.min(now() + ttlMs, sessionExpiresAt.getTime()) });
    let keys = keysByUser.get(caller.userId);
    if (!keys) {
      keys = new Set();
      keysByUser.set(caller.userId, keys);
    }
    keys.add(key);
  };

  return {
    async require(request) {
      // A request carrying an API key is the key's: an invalid one is 401, never a fall-back to a session.
      const apiKey = apiKeyFromHeaders(request.headers);
      if (apiKey !== undefined) {
        const caller = await resolveApiKey(db, apiKey, new Date(now()));
        if (!caller) throw unauthorized();
        return caller;
      }
      const key = credentialKey(request.headers);
      if (!key) throw unauthorized();
      const startedAt = now();
      const hit = cache.get(key);
      if (hit && hit.expiresAt > now()) return hit.caller;
      if (hit) forgetKey(key);

      const found = await auth.api
        .getSession({ headers: fromNodeHeaders(request.headers) })
        .catch(() => null);
      if (!found) throw unauthorized();
      const [profile] = await db
        .select({ accountId: profiles.accountId, role: profiles.role })
        .from(profiles)
        .where(eq(profiles.userId, found.user.id));
      const caller: Caller = {
        userId: found.user.id,
        email: found.user.email,
        name: found.user.name,
        sessionId: found.session.id,
        apiKeyId: null,
        accountId: profile?.accountId ?? null,
        role: profile?.accountId ? (profile.role ?? "member") : null,
      };
      remember(key, caller, new Date(found.session.expiresAt), startedAt);
      return caller;
    },
    forgetUser(userId) {
      for (const key of keysByUser.get(userId) ?? []) cache.delete(key);
      keysByUser.delete(userId);
      const at = now();
      if (forgottenAt.size >= maxEntries) {
        for (const [user, time] of forgottenAt) if (time < at - ttlMs) forgottenAt.delete(user);
      }
      forgottenAt.set(userId, at);
    },
    forgetAll() {
      cache.clear();
      keysByUser.clear();
      forgottenAt.clear();
      everythingForgottenAt = now();
    },
  };
}

/** The credential a request carries: its bearer token, else its cookie header. */
function credentialKey(headers: FastifyRequest["headers"]): string | undefined {
  const authorization = headers.authorization;
  if (authorization && /^bearer\s+\S/i.test(authorization)) return `b:${authorization.slice(7).trim()}`;
  const cookie = headers.cookie;
  if (cookie?.includes("session_token=")) return `c:${cookie}`;
  return undefined;
}

/** The caller's account id, or 403 when their profile links to none. */
export function requireAccount(caller: Caller): string {
  if (!caller.accountId) {
    throw new ApiError(403, "Your profile is not linked to an account");
  }
  return caller.accountId;
}

/**
 * The guard of owner-only routes (invitations, API keys, webhook endpoints):
 * the caller's account id when they own it; 403 for a member, for an API key
 * (keys act with member rights) and for a user without an account.
 */
export function requireOwner(caller: Caller): string {
  const accountId = requireAccount(caller);
  if (caller.apiKeyId) throw new ApiError(403, "API keys cannot manage the account; sign in as its owner");
  if (caller.role !== "owner") throw new ApiError(403, "Only the account owner can do this");
  return accountId;
}

export type { Sessions } from "../ports.js";
