import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Db } from "../db/client.js";
import { readJsonObject } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { requireAccount, type Sessions } from "./session.js";
import {
  acceptInvitation,
  createAccount,
  createInvitation,
  getAccount,
  listMembers,
  toAccountJson,
} from "./tenancy.js";

const accountBody = z.object({ name: storableString({ trim: true, min: 1, max: 200 }) });
const invitationBody = z.object({ email: z.string().trim().max(320).email().nullish() });

export function registerTenancyRoutes(app: FastifyInstance, deps: { db: Db; sessions: Sessions }) {
  const { db, sessions } = deps;

  app.get(
    "/api/me",
    docs({ tags: ["accounts"], summary: "The caller, their profile and account" }),
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
    docs({ tags: ["accounts"], summary: "Create an account and become its owner", body: accountBody }),
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
      summary: "Invite someone to the caller's account (valid 7 days)",
      body: invitationBody,
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const raw =
        typeof request.body === "string" && request.body.trim() !== "" ? readJsonObject(request) : {};
      const body = parse(invitationBody, raw);
      const invitation = await createInvitation(db, {
        accountId,
        invitedBy: caller.userId,
        email: body.email ?? null,
      });
      return reply.code(201).send({ invitation });
    },
  );

  app.post<{ Params: { token: string } }>(
    "/api/invitations/:token/accept",
    docs({ tags: ["accounts"], summary: "Join the account that issued the invitation" }),
    async (request) => {
      const caller = await sessions.require(request);
      if (caller.accountId) throw new ApiError(409, "You already belong to an account");
      const account = await acceptInvitation(db, { userId: caller.userId, token: request.params.token });
      sessions.forgetUser(caller.userId);
      if (!account) throw new ApiError(404, "Invitation not found or expired");
      return { account: toAccountJson(account) };
    },
  );

  app.get(
    "/api/accounts/members",
    docs({ tags: ["accounts"], summary: "Members of the caller's account" }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      return { members: await listMembers(db, accountId) };
    },
  );
}
