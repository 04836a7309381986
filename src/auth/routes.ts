import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { invitationsAnswer } from "../contracts/account.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { invitationMail } from "../mail/messages.js";
import { queueMail } from "../mail/queue.js";
import { requireAccount, requireOwner } from "./session.js";
import {
  acceptInvitation,
  changeMemberRole,
  createAccount,
  createInvitation,
  EMAIL_NOT_VERIFIED,
  getAccount,
  listMembers,
  listPendingInvitations,
  removeMember,
  toAccountJson,
} from "./tenancy.js";

const accountBody = z.object({ name: storableString({ trim: true, min: 1, max: 200 }) });
const invitationBody = z.object({
  email: z.string({ error: "email is required" }).trim().email().max(320),
});
const tokenParams = z.object({ token: z.string() });

const timestamp = z.iso.datetime();
const role = z.enum(["owner", "member"]);
const accountJson = z.object({ id: z.uuid(), name: z.string(), created_at: timestamp });
const meAnswer = z.object({
  user: z.object({ id: z.uuid(), name: z.string(), email: z.string() }),
  profile: z.object({ user_id: z.uuid(), account_id: z.uuid().nullable(), role: role.nullable() }),
  account: accountJson.nullable(),
});
const accountAnswer = z.object({ account: accountJson });
const invitationAnswer = z.object({
  invitation: z.object({
    id: z.uuid(),
    email: z.string(),
    token: z
      .string()
      .describe(
        "Shown once. The invitee accepts with it only once their email is verified; the invitation mail carries another token that proves the mailbox by itself",
      ),
    expires_at: timestamp,
  }),
});
const memberJson = z.object({
  user_id: z.uuid(),
  name: z.string(),
  email: z.string(),
  role: role,
  availability: z
    .enum(["online", "away"])
    .describe("Auto-assignment gives conversations only to online members"),
  joined_at: timestamp,
});
const membersAnswer = z.object({ members: z.array(memberJson) });
const memberParams = z.object({ user_id: z.uuid() });
const roleBody = z.object({
  role: z.enum(["owner", "member"], { error: 'role must be "owner" or "member"' }),
});

const noAccount = "The caller's profile has no account";
const ownerOnly = `${noAccount}, the caller is a member, or an API key`;
const lastOwner = "The change would leave the account without an owner (make another member an owner first)";

/** The console's page where an invitation is accepted. */
export const invitationLink = (publicUrl: string, token: string) =>
  `${publicUrl}/invite/${encodeURIComponent(token)}`;

export function registerTenancyRoutes(
  app: FastifyInstance,
  deps: Pick<AppDeps, "db" | "sessions" | "cipher" | "config">,
) {
  const { db, sessions, cipher, config } = deps;

  app.get(
    "/api/me",
    docs({
      tags: ["accounts"],
      summary: "The caller, their profile and account",
      description: "With an API key: the owner who created the key, with the key's member rights.",
      responses: { 200: { description: "The caller", body: meAnswer } },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const account = caller.accountId ? await getAccount(db, caller.accountId) : null;
      return {
        user: { id: caller.userId, name: caller.name, email: caller.email },
        profile: { user_id: caller.userId, account_id: caller.accountId, role: caller.role },
        account: account ? toAccountJson(account) : null,
      };
    },
  );

  app.post(
    "/api/accounts",
    docs({
      tags: ["accounts"],
      summary: "Create an account and become its owner",
      body: accountBody,
      responses: {
        201: { description: "Created; the caller is its owner", body: accountAnswer },
        400: "Invalid JSON or a blank name",
        409: "The caller already belongs to an account",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      if (caller.accountId) throw new ApiError(409, "You already belong to an account");
      const body = parse(accountBody, readJsonObject(request));
      const account = await createAccount(db, { userId: caller.userId, name: body.name });
      sessions.forgetUser(caller.userId);
      return reply.code(201).send({ account: toAccountJson(account) });
    },
  );

  app.post(
    "/api/accounts/invitations",
    docs({
      tags: ["accounts"],
      summary: "Invite someone by email to the caller's account (owner only, valid 7 days)",
      description:
        "Emails the invitation (a link with a token that only the mail carries). Only the user who signs in with that email can accept it, with proof of the mailbox: the mailed link, or, with the `token` answered here, an email they have verified.",
      body: invitationBody,
      responses: {
        201: { description: "Created", body: invitationAnswer },
        400: "Invalid JSON, or email missing or invalid",
        403: `${noAccount}, the caller is a member, or an API key`,
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      const body = parse(invitationBody, readJsonObject(request));
      const account = await getAccount(db, accountId);
      const invitation = await createInvitation(
        db,
        { accountId, invitedBy: caller.userId, email: body.email },
        (tx, invited) =>
          queueMail(
            tx,
            cipher,
            invitationMail({
              to: invited.email,
              accountName: account?.name ?? "a team",
              inviterName: caller.name,
              link: invitationLink(config.publicUrl, invited.mailboxToken),
              expiresAt: invited.expiresAt,
            }),
          ),
      );
      return reply.code(201).send({ invitation });
    },
  );

  app.get(
    "/api/accounts/invitations",
    docs({
      tags: ["accounts"],
      summary: "The caller's account's pending invitations (owner only): not accepted, not expired",
      description:
        "Each `{ id, email, expires_at, created_at }`, newest first; the link's token is never shown again.",
      responses: {
        200: { description: "`{ invitations }`", body: invitationsAnswer },
        403: `${noAccount}, the caller is a member, or an API key`,
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      return { invitations: await listPendingInvitations(db, accountId) };
    },
  );

  app.post<{ Params: { token: string } }>(
    "/api/invitations/:token/accept",
    docs({
      tags: ["accounts"],
      summary: "Join the account that issued the invitation",
      description:
        "The token is the invitation mail's (proof of the mailbox: it also marks the caller's email verified) or the one answered to the owner (accepted only when the caller's email is verified).",
      params: tokenParams,
      responses: {
        200: { description: "Joined as a member", body: accountAnswer },
        403: `The invitation was sent to another email address; or \`code: "email_not_verified"\`: ${EMAIL_NOT_VERIFIED}`,
        404: "Invitation not found, used or expired",
        409: "The caller already belongs to an account",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      if (caller.accountId) throw new ApiError(409, "You already belong to an account");
      const account = await acceptInvitation(db, {
        userId: caller.userId,
        email: caller.email,
        token: request.params.token,
      });
      sessions.forgetUser(caller.userId);
      if (!account) throw new ApiError(404, "Invitation not found or expired");
      return { account: toAccountJson(account) };
    },
  );

  app.get(
    "/api/accounts/members",
    docs({
      tags: ["accounts"],
      summary: "Members of the caller's account",
      responses: { 200: { description: "Members, oldest first", body: membersAnswer }, 403: noAccount },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      return { members: await listMembers(db, accountId) };
    },
  );

  app.patch<{ Params: { user_id: string } }>(
    "/api/accounts/members/:user_id",
    docs({
      tags: ["accounts"],
      summary: "Change a member's role (owner only)",
      description:
        "An owner may make a member an owner or an owner (themself included) a member, as long as the account keeps one owner.",
      params: memberParams,
      body: roleBody,
      responses: {
        200: { description: "The member with their new role", body: z.object({ member: memberJson }) },
        400: 'Invalid JSON, or role not "owner" or "member"',
        403: ownerOnly,
        404: "No such member in the caller's account",
        409: lastOwner,
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      const body = parse(roleBody, readJsonObject(request));
      const userId = request.params.user_id;
      if (!isUuid(userId)) throw new ApiError(404, "Member not found");
      const member = await changeMemberRole(db, {
        accountId,
        callerId: caller.userId,
        userId,
        role: body.role,
      });
      sessions.forgetUser(userId);
      if (!member) throw new ApiError(404, "Member not found");
      return { member };
    },
  );

  app.delete<{ Params: { user_id: string } }>(
    "/api/accounts/members/:user_id",
    docs({
      tags: ["accounts"],
      summary: "Remove a member from the account (owner only)",
      description:
        "Their profile then links to no account: their sessions stay (they may create or join another account) but lose this account at once on every instance, open event streams included. Conversations assigned to them become unassigned.",
      params: memberParams,
      responses: {
        200: { description: "Removed", body: z.object({ ok: z.literal(true) }) },
        403: ownerOnly,
        404: "No such member in the caller's account",
        409: lastOwner,
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireOwner(caller);
      const userId = request.params.user_id;
      if (!isUuid(userId)) throw new ApiError(404, "Member not found");
      await removeMember(db, { accountId, callerId: caller.userId, userId });
      sessions.forgetUser(userId);
      return { ok: true };
    },
  );
}
