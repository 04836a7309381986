import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, gt, isNull } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accountInvitations, accounts, profiles, users } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export const hashInvitationToken = (token: string) => createHash("sha256").update(token).digest("hex");

export async function createAccount(db: Db, input: { userId: string; name: string }) {
  return db.transaction(async (tx) => {
    // Lock the profile row so two concurrent creates cannot both link the user.
    const [profile] = await tx.select().from(profiles).where(eq(profiles.userId, input.userId)).for("update");
    if (profile?.accountId) throw new ApiError(409, "You already belong to an account");
    const [account] = await tx.insert(accounts).values({ name: input.name }).returning();
    if (!account) throw new Error("account insert returned nothing");
    await tx
      .insert(profiles)
      .values({ userId: input.userId, accountId: account.id, role: "owner" })
      .onConflictDoUpdate({
        target: profiles.userId,
        set: { accountId: account.id, role: "owner", updatedAt: new Date() },
      });
    return account;
  });
}

export async function createInvitation(
  db: Db,
  input: { accountId: string; invitedBy: string; email: string; now?: Date },
) {
  const token = randomBytes(32).toString("base64url");
  const now = input.now ?? new Date();
  const [row] = await db
    .insert(accountInvitations)
    .values({
      accountId: input.accountId,
      invitedBy: input.invitedBy,
      email: input.email.toLowerCase(),
      tokenHash: hashInvitationToken(token),
      expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
    })
    .returning({
      id: accountInvitations.id,
      email: accountInvitations.email,
      expiresAt: accountInvitations.expiresAt,
    });
  if (!row) throw new Error("invitation insert returned nothing");
  return { id: row.id, email: row.email, token, expires_at: row.expiresAt };
}

/**
 * Links the user to the invitation's account. An invitation is single-use and
 * only the user with the invited email can accept it (403 for anyone else,
 * leaving it open for the invitee); unknown, used and expired tokens are 404.
 */
export async function acceptInvitation(db: Db, input: { userId: string; email: string; token: string }) {
  return db.transaction(async (tx) => {
    const [profile] = await tx.select().from(profiles).where(eq(profiles.userId, input.userId)).for("update");
    if (profile?.accountId) throw new ApiError(409, "You already belong to an account");
    const [open] = await tx
      .select({ id: accountInvitations.id, email: accountInvitations.email })
      .from(accountInvitations)
      .where(
        and(
          eq(accountInvitations.tokenHash, hashInvitationToken(input.token)),
          isNull(accountInvitations.acceptedAt),
          gt(accountInvitations.expiresAt, new Date()),
        ),
      )
      .for("update");
    if (!open) throw new ApiError(404, "Invitation not found or expired");
    if (open.email !== input.email.toLowerCase()) {
      throw new ApiError(403, "This invitation was sent to another email address");
    }
    const [invitation] = await tx
      .update(accountInvitations)
      .set({ acceptedAt: new Date(), acceptedBy: input.userId })
      .where(eq(accountInvitations.id, open.id))
      .returning({ accountId: accountInvitations.accountId });
    if (!invitation) throw new ApiError(404, "Invitation not found or expired");
    await tx
      .insert(profiles)
      .values({ userId: input.userId, accountId: invitation.accountId, role: "member" })
      .onConflictDoUpdate({
        target: profiles.userId,
        set: { accountId: invitation.accountId, role: "member", updatedAt: new Date() },
      });
    const [account] = await tx.select().from(accounts).where(eq(accounts.id, invitation.accountId));
    return account;
  });
}

export async function getAccount(db: Db, accountId: string) {
  const [account] = await db.select().from(accounts).where(eq(accounts.id, accountId));
  return account ?? null;
}

export async function listMembers(db: Db, accountId: string) {
  const rows = await db
    .select({
      user_id: users.id,
      name: users.name,
      email: users.email,
      role: profiles.role,
      availability: profiles.availability,
      joined_at: profiles.updatedAt,
    })
    .from(profiles)
    .innerJoin(users, eq(users.id, profiles.userId))
    .where(eq(profiles.accountId, accountId))
    .orderBy(asc(profiles.updatedAt), asc(users.id));
  return rows;
}

export const toAccountJson = (a: { id: string; name: string; createdAt: Date }) => ({
  id: a.id,
  name: a.name,
  created_at: a.createdAt,
});
