import { fromNodeHeaders } from "better-auth/node";
import { eq } from "drizzle-orm";
import type { FastifyRequest } from "fastify";
import type { Db } from "../db/client.js";
import { profiles } from "../db/schema/index.js";
import { ApiError, unauthorized } from "../http/errors.js";
import type { Auth } from "./auth.js";

/** The signed-in user behind a request, with the account their profile links to. */
export interface Caller {
  userId: string;
  email: string;
  name: string;
  sessionId: string;
  accountId: string | null;
  role: "owner" | "member" | null;
}

export interface Sessions {
  /** Resolves the caller or throws 401 `Unauthorized`. */
  require(request: FastifyRequest): Promise<Caller>;
  /** Forgets cached callers of this request's credential and of its user (sign-out, revocations). */
  forgetCredential(headers: FastifyRequest["headers"]): void;
  /** Forgets cached callers of this user (their profile or account link changed). */
  forgetUser(userId: string): void;
}

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
 * credential. Sign-out and account changes on this instance forget it at once;
 * on other instances a revoked session lives on for at most the TTL.
 */
export function createSessions(auth: Auth, db: Db, options: SessionCacheOptions = {}): Sessions {
  const ttlMs = options.ttlMs ?? 5_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const keysByUser = new Map<string, Set<string>>();

  const forgetKey = (key: string) => {
    const entry = cache.get(key);
    if (!entry) return;
    cache.delete(key);
    keysByUser.get(entry.caller.userId)?.delete(key);
  };

  const remember = (key: string, caller: Caller, sessionExpiresAt: Date) => {
    if (ttlMs <= 0) return;
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
      const key = credentialKey(request.headers);
      if (!key) throw unauthorized();
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
        accountId: profile?.accountId ?? null,
        role: profile?.accountId ? (profile.role ?? "member") : null,
      };
      remember(key, caller, new Date(found.session.expiresAt));
      return caller;
    },
    forgetCredential(headers) {
      const key = credentialKey(headers);
      if (!key) return;
      const userId = cache.get(key)?.caller.userId;
      forgetKey(key);
      if (userId) this.forgetUser(userId);
    },
    forgetUser(userId) {
      for (const key of keysByUser.get(userId) ?? []) cache.delete(key);
      keysByUser.delete(userId);
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
