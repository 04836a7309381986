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
}

export function createSessions(auth: Auth, db: Db): Sessions {
  return {
    async require(request) {
      const found = await auth.api
        .getSession({ headers: fromNodeHeaders(request.headers) })
        .catch(() => null);
      if (!found) throw unauthorized();
      const [profile] = await db
        .select({ accountId: profiles.accountId, role: profiles.role })
        .from(profiles)
        .where(eq(profiles.userId, found.user.id));
      return {
        userId: found.user.id,
        email: found.user.email,
        name: found.user.name,
        sessionId: found.session.id,
        accountId: profile?.accountId ?? null,
        role: profile?.accountId ? (profile.role ?? "member") : null,
      };
    },
  };
}

/** The caller's account id, or 403 when their profile links to none. */
export function requireAccount(caller: Caller): string {
  if (!caller.accountId) {
    throw new ApiError(403, "Your profile is not linked to an account");
  }
  return caller.accountId;
}
