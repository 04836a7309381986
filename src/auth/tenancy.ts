import { createHash, randomBytes } from "node:crypto";
import { and, asc, desc, eq, gt, isNull, or } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/client.js";
import { accountInvitations, accounts, conversations, profiles, users } from "../db/schema/index.js";
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

/** What the invitation mail needs; it is queued in the invitation's own transaction. */
export interface InvitationToMail {
  email: string;
  /** The token only the mail carries (the owner never sees it). */
  mailboxToken: string;
  expiresAt: Date;
}

/**
 * An invitation with two tokens: `token`, answered to the owner (who may pass
 * the link on), and the mailbox token, which only the invitation mail carries.
 * `mail` queues that mail in the same transaction: the invitation exists
 * exactly when its mail is on its way.
 */
export async function createInvitation(
  db: Db,
  input: { accountId: string; invitedBy: string; email: string; now?: Date },
  mail: (tx: DbOrTx, invitation: InvitationToMail) => Promise<void>,
) {
  const token = randomBytes(32).toString("base64url");
  const mailboxToken = randomBytes(32).toString("base64url");
  const now = input.now ?? new Date();
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(accountInvitations)
      .values({
        accountId: input.accountId,
        invitedBy: input.invitedBy,
        email: input.email.toLowerCase(),
        tokenHash: hashInvitationToken(token),
        mailboxTokenHash: hashInvitationToken(mailboxToken),
        expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
      })
      .returning({
        id: accountInvitations.id,
        email: accountInvitations.email,
        expiresAt: accountInvitations.expiresAt,
      });
    if (!row) throw new Error("invitation insert returned nothing");
    await mail(tx, { email: row.email, mailboxToken, expiresAt: row.expiresAt });
    return { id: row.id, email: row.email, token, expires_at: row.expiresAt };
  });
}

/** The account's invitations nobody has accepted yet and that have not expired, newest first (no token). */
export async function listPendingInvitations(db: Db, accountId: string, now = new Date()) {
  const rows = await db
    .select({
      id: accountInvitations.id,
      email: accountInvitations.email,
      expiresAt: accountInvitations.expiresAt,
      createdAt: accountInvitations.createdAt,
    })
    .from(accountInvitations)
    .where(
      and(
        eq(accountInvitations.accountId, accountId),
        isNull(accountInvitations.acceptedAt),
        gt(accountInvitations.expiresAt, now),
      ),
    )
    .orderBy(desc(accountInvitations.createdAt));
  return rows.map((r) => ({ id: r.id, email: r.email, expires_at: r.expiresAt, created_at: r.createdAt }));
}

/** The 403 of an invitation taken with the owner's token by a user whose email nobody has verified. */
export const EMAIL_NOT_VERIFIED =
  "Verify your email address first (open the link of the verification mail), or accept with the link of the invitation mail";

/**
 * Links the user to the invitation's account. An invitation is single-use and
 * only the user with the invited email can accept it (403 for anyone else,
 * leaving it open for the invitee), with proof of the mailbox: the mailbox
 * token (which only the invitation mail carries; using it verifies the
 * user's email), or, with the owner's token, an email already verified (403
 * `email_not_verified` otherwise). Unknown, used and expired tokens are 404.
 */
export async function acceptInvitation(db: Db, input: { userId: string; email: string; token: string }) {
  const hash = hashInvitationToken(input.token);
  return db.transaction(async (tx) => {
    const [profile] = await tx.select().from(profiles).where(eq(profiles.userId, input.userId)).for("update");
    if (profile?.accountId) throw new ApiError(409, "You already belong to an account");
    const [open] = await tx
      .select({
        id: accountInvitations.id,
        email: accountInvitations.email,
        mailboxTokenHash: accountInvitations.mailboxTokenHash,
      })
      .from(accountInvitations)
      .where(
        and(
          or(eq(accountInvitations.tokenHash, hash), eq(accountInvitations.mailboxTokenHash, hash)),
          isNull(accountInvitations.acceptedAt),
          gt(accountInvitations.expiresAt, new Date()),
        ),
      )
      .for("update");
    if (!open) throw new ApiError(404, "Invitation not found or expired");
    if (open.email !== input.email.toLowerCase()) {
      throw new ApiError(403, "This invitation was sent to another email address");
    }
    if (open.mailboxTokenHash === hash) {
      await tx.update(users).set({ emailVerified: true }).where(eq(users.id, input.userId));
    } else {
      const [user] = await tx
        .select({ emailVerified: users.emailVerified })
        .from(users)
        .where(eq(users.id, input.userId));
      if (!user?.emailVerified) throw new ApiError(403, EMAIL_NOT_VERIFIED, { code: "email_not_verified" });
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

export type Role = "owner" | "member";

const LAST_OWNER = "The account must keep at least one owner: make another member an owner first";

/**
 * Locks every profile of the account (so that two owners demoting each other
 * at once cannot leave it with none) and returns the target's role; 403 when
 * the caller is no longer an owner of it (demoted meanwhile), 404 when the
 * user is not a member of the account.
 */
async function lockMembers(
  tx: Parameters<Parameters<Db["transaction"]>[0]>[0],
  input: { accountId: string; userId: string; callerId: string },
) {
  const { accountId, userId } = input;
  const members = await tx
    .select({ userId: profiles.userId, role: profiles.role })
    .from(profiles)
    .where(eq(profiles.accountId, accountId))
    .orderBy(asc(profiles.userId))
    .for("update");
  if (members.find((m) => m.userId === input.callerId)?.role !== "owner") {
    throw new ApiError(403, "Only the account owner can do this");
  }
  const target = members.find((m) => m.userId === userId);
  if (!target) throw new ApiError(404, "Member not found");
  const owners = members.filter((m) => m.role === "owner").length;
  return { role: target.role ?? "member", owners };
}

/** Gives a member of the account another role; 409 when it would leave the account without an owner. */
export async function changeMemberRole(
  db: Db,
  input: { accountId: string; callerId: string; userId: string; role: Role },
) {
  await db.transaction(async (tx) => {
    const { role, owners } = await lockMembers(tx, input);
    if (role === "owner" && input.role !== "owner" && owners <= 1) throw new ApiError(409, LAST_OWNER);
    await tx
      .update(profiles)
      .set({ role: input.role })
      .where(and(eq(profiles.userId, input.userId), eq(profiles.accountId, input.accountId)));
  });
  const members = await listMembers(db, input.accountId);
  return members.find((m) => m.user_id === input.userId) ?? null;
}

/**
 * Removes a member from the account: their profile links to no account (they
 * may create or join another) and the account's conversations assigned to them
 * become unassigned. 409 for the last owner.
 */
export async function removeMember(db: Db, input: { accountId: string; callerId: string; userId: string }) {
  await db.transaction(async (tx) => {
    const { role, owners } = await lockMembers(tx, input);
    if (role === "owner" && owners <= 1) throw new ApiError(409, LAST_OWNER);
    await tx
      .update(profiles)
      .set({ accountId: null, role: null, updatedAt: new Date() })
      .where(and(eq(profiles.userId, input.userId), eq(profiles.accountId, input.accountId)));
    // Unassigned as PATCH /api/conversations/{id} would: that ends a pause the assignment caused
    // (bots/automation.ts's automationForChange, which auth cannot import: bots imports auth).
    const theirs = and(
      eq(conversations.accountId, input.accountId),
      eq(conversations.assignedTo, input.userId),
    );
    const now = new Date();
    await tx
      .update(conversations)
      .set({
        assignedTo: null,
        automationState: "active",
        automationUntil: null,
        automationReason: null,
        updatedAt: now,
      })
      .where(and(theirs, eq(conversations.automationReason, "assigned")));
    await tx.update(conversations).set({ assignedTo: null, updatedAt: now }).where(theirs);
  });
}

export const toAccountJson = (a: { id: string; name: string; createdAt: Date }) => ({
  id: a.id,
  name: a.name,
  created_at: a.createdAt,
});
