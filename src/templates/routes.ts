import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { syncAnswer, templatesAnswer } from "../contracts/account.js";
import type { AppDeps } from "../deps.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { listTemplates, syncTemplates } from "./service.js";

const TAGS = ["templates"];
const listQuery = z.object({
  status: z
    .string()
    .trim()
    .regex(/^[A-Za-z_]{1,40}$/, "status must be a template status such as APPROVED")
    .optional(),
  q: storableString({ trim: true, min: 1, max: 200 }).optional(),
});

export function registerTemplateRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.post(
    "/api/messaging/templates/sync",
    docs({
      tags: TAGS,
      summary: "Sync the message templates of the account's WhatsApp business account",
      description:
        "Reads every template from Meta (all pages), then replaces the stored list in one transaction: new ones are added, changed ones updated, those gone upstream removed. A failure part-way changes nothing.",
      responses: {
        200: { description: "`{ templates, synced }`", body: syncAnswer },
        400: "Channel not configured, or it has no business_account_id",
        403: "Profile not linked to an account",
        502: "Meta refused or did not answer (its message); the stored list is unchanged",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return syncTemplates(deps, accountId);
    },
  );

  app.get(
    "/api/messaging/templates",
    docs({
      tags: TAGS,
      summary: "The account's synced templates, by name and language",
      description:
        "`status` filters by Meta's status (APPROVED, PENDING, REJECTED...); `q` by part of the name.",
      querystring: listQuery,
      responses: {
        200: { description: "`{ templates }`", body: templatesAnswer },
        400: "Bad status or q",
        403: "Profile not linked to an account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const query = parse(listQuery, request.query);
      return { templates: await listTemplates(db, { accountId, ...query }) };
    },
  );
}
