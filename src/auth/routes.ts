import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Db } from "../db/client.js";
import { readJsonObject } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { requireAccount, requireOwner, type Sessions } from "./session.js";
import {
  acceptInvitation,
  createAccount,
  createInvitation,
  getAccount,
  listMembers,
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
    token: z.string().describe("Shown once; the invitee accepts with it"),
    expires_at: timestamp,
  }),
});
const membersAnswer = z.object({
  members: z.array(
    z.object({
      user_id: z.uuid(),
      name: z.string(),
      email: z.string(),
      role: role,
      availability: z
        .enum(["online", "away"])
        .describe("Auto-assignment gives conversations only to online members"),
      joined_at: timestamp,
    }),
  ),
});

const noAccount = "The caller's profile has no account";

export function registerTenancyRoutes(app: FastifyInstance, deps: { db: Db; sessions: Sessions }) {
  const { db, sessions } = deps;

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
      description: "Only the user who signs in with that email can accept the invitation.",
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
      const invitation = await createInvitation(db, {
        accountId,
        invitedBy: caller.userId,
        email: body.email,
      });
      return reply.code(201).send({ invitation });
    },
  );

  app.post<{ Params: { token: string } }>(
    "/api/invitations/:token/accept",
    docs({
      tags: ["accounts"],
      summary: "Join the account that issued the invitation",
      params: tokenParams,
      responses: {
        200: { description: "Joined as a member", body: accountAnswer },
        403: "The invitation was sent to another email address",
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
}
