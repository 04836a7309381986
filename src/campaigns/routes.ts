import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount, requireOwner } from "../auth/session.js";
import {
  campaignAnswer,
  campaignPreview,
  campaignsPage,
  draftPreview,
  recipientsPage,
  retryAnswer,
} from "../contracts/campaigns.js";
import { okAnswer, phoneRule } from "../contracts/common.js";
import { startedAnswer } from "../contracts/inbox.js";
import { RECIPIENT_STATUSES } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { csvRow } from "../http/csv.js";
import { ApiError } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { pageQuery } from "../http/pagination.js";
import { parse } from "../http/validation.js";
import {
  allRecipients,
  type CampaignInput,
  cancelCampaign,
  createCampaign,
  deleteCampaign,
  findCampaign,
  getCampaign,
  listCampaigns,
  listRecipients,
  pauseCampaignByOwner,
  previewCampaign,
  previewDraft,
  RECIPIENT_PAGE_MAX,
  resumeCampaign,
  retryFailed,
  startCampaign,
  testCampaign,
  updateCampaign,
} from "./service.js";

const TAGS = ["campaigns"];

const value = storableString({ max: 1024 });
const values = z.union([
  z.array(value, { error: "must be an array of strings" }).max(60),
  z.record(z.string().max(64), value, { error: "must be an array of strings or an object of strings" }),
]);
const parametersSchema = z
  .object(
    {
      header: values
        .optional()
        .describe("One value per header placeholder; a media header: its https link or media id"),
      body: values
        .optional()
        .describe("Values of `{{1}}`, `{{2}}`... in order, or `{ name: value }` for named placeholders"),
      buttons: z
        .array(
          z.object({
            index: z.number({ error: "must be the button's index" }).int().min(0).max(9),
            parameters: z.array(value, { error: "must be an array of strings" }).max(5),
          }),
          { error: "must be an array of { index, parameters }" },
        )
        .max(10)
        .optional(),
    },
    { error: "must be an object { header?, body?, buttons? }" },
  )
  .strict()
  .describe(
    "Values may use `{{contact.name}}`, `{{contact.phone}}`, `{{contact.attributes.KEY}}`, each with a fallback after `|`",
  );

const tagList = z
  .array(storableString({ trim: true, min: 1, max: 50 }), { error: "must be an array of tags" })
  .max(50);
const audienceSchema = z
  .object(
    {
      tags_any: tagList.optional().describe("Contacts with at least one of these tags"),
      tags_none: tagList.optional().describe("Contacts with none of these tags"),
      attributes: z
        .record(z.string().min(1).max(64), storableString({ max: 500 }), {
          error: "must be an object of strings",
        })
        .optional()
        .describe("Contacts whose attributes equal each of these"),
      contact_ids: z
        .array(z.uuid({ error: "must be contact ids (UUIDs)" }), { error: "must be an array of contact ids" })
        .max(10_000)
        .optional(),
    },
    { error: "must be an object (an empty one: every contact)" },
  )
  .strict();

const templateSchema = z
  .object(
    {
      name: z.string({ error: "must be a string" }).trim().min(1, "is required").max(512),
      language: z.string({ error: "must be a string" }).trim().min(1, "is required").max(20),
    },
    { error: "must be an object { name, language }" },
  )
  .strict();

const scheduledAt = z.iso
  .datetime({ offset: true, error: "must be an ISO 8601 date-time" })
  .transform((s) => new Date(s))
  .nullable();

const createBody = z
  .object({
    name: storableString({ trim: true, min: 1, max: 200 }),
    template: templateSchema,
    parameters: parametersSchema.optional(),
    audience: audienceSchema,
    scheduled_at: scheduledAt.optional(),
  })
  .strict();
const patchBody = z
  .object({
    name: storableString({ trim: true, min: 1, max: 200 }).optional(),
    template: templateSchema.optional(),
    parameters: parametersSchema.optional(),
    audience: audienceSchema.optional(),
    scheduled_at: scheduledAt.optional(),
  })
  .strict();
const draftPreviewBody = z
  .object({
    template: templateSchema.optional(),
    parameters: parametersSchema.optional(),
    audience: audienceSchema,
  })
  .strict();
const testBody = z
  .object({ phone: z.string({ error: "must be a phone number" }).trim().min(1).max(40).meta(phoneRule) })
  .strict();
const idParams = z.object({ id: z.string().describe("Campaign id (UUID)") });
const recipientsQuery = z.object({
  status: z.enum(RECIPIENT_STATUSES, { error: `must be one of ${RECIPIENT_STATUSES.join(", ")}` }).optional(),
  limit: z.coerce
    .number({ error: `must be a whole number from 1 to ${RECIPIENT_PAGE_MAX}` })
    .int()
    .min(1)
    .max(RECIPIENT_PAGE_MAX, `must be a whole number from 1 to ${RECIPIENT_PAGE_MAX}`)
    .default(100),
  cursor: z.string().min(1).max(40).optional(),
});
const csvQuery = recipientsQuery.pick({ status: true });

const COMMON = {
  403: "The caller's profile has no account",
  404: "No such campaign in the caller's account",
};
const OWNER = { ...COMMON, 403: "Not the account's owner (members and API keys may only look)" };

type Id = { Params: { id: string } };

const CSV_COLUMNS = [
  "contact_id",
  "name",
  "phone",
  "status",
  "message_id",
  "error_code",
  "error_title",
  "skipped_reason",
  "updated_at",
] as const;

export function registerCampaignRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.post(
    "/api/campaigns",
    docs({
      account: true,
      tags: TAGS,
      summary: "Create a campaign draft",
      description:
        "`template` must be synced and `APPROVED`, and `parameters` must give every placeholder of its header, body and URL buttons a value (positional `{{1}}` as an array in order, named as an object). `audience`: `tags_any`, `tags_none`, `attributes` (equality), `contact_ids`; all given must hold; `{}` is every contact. `scheduled_at` (future) makes `start` wait for it.",
      body: createBody,
      responses: {
        201: { description: "`{ campaign }` (status `draft`)", body: campaignAnswer },
        400: "Invalid JSON or a bad field; unknown or unapproved template; a placeholder without a value or a value for none (the error names it); an unknown contact field; `scheduled_at` not in the future",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const body = parse(createBody, readJsonObject(request));
      const input: CampaignInput = {
        ...body,
        parameters: body.parameters ?? {},
        scheduled_at: body.scheduled_at ?? null,
      };
      const campaign = await createCampaign(deps, accountId, caller.userId, input);
      return reply.code(201).send({ campaign });
    },
  );

  app.get(
    "/api/campaigns",
    docs({
      tags: TAGS,
      summary: "The account's campaigns, newest first, with live counts",
      querystring: pageQuery,
      responses: {
        200: { description: "`{ campaigns, next_cursor }`", body: campaignsPage },
        400: "Bad limit or cursor",
        ...COMMON,
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return listCampaigns(db, accountId, parse(pageQuery, request.query));
    },
  );

  app.get<Id>(
    "/api/campaigns/:id",
    docs({
      tags: TAGS,
      summary: "A campaign with its live counts",
      description:
        "`counts`: `total` and each recipient under its current status (`queued`, `sending`, `sent`, `delivered`, `read`, `replied`, `failed`, `skipped`, `deferred`, `unknown`).",
      params: idParams,
      responses: { 200: { description: "`{ campaign }`", body: campaignAnswer }, ...COMMON },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return { campaign: await getCampaign(db, accountId, request.params.id) };
    },
  );

  app.patch<Id>(
    "/api/campaigns/:id",
    docs({
      tags: TAGS,
      summary: "Change a draft",
      description: "Each field given replaces the stored one; the result is checked as on create.",
      params: idParams,
      body: patchBody,
      responses: {
        200: { description: "`{ campaign }`", body: campaignAnswer },
        400: "As on create, or nothing to change",
        ...COMMON,
        409: "The campaign is not a draft",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      await findCampaign(db, accountId, request.params.id);
      const body = parse(patchBody, readJsonObject(request));
      if (Object.values(body).every((v) => v === undefined)) {
        throw new ApiError(
          400,
          "Nothing to change: send name, template, parameters, audience or scheduled_at",
        );
      }
      return { campaign: await updateCampaign(deps, accountId, request.params.id, body) };
    },
  );

  app.delete<Id>(
    "/api/campaigns/:id",
    docs({
      tags: TAGS,
      summary: "Delete a draft",
      params: idParams,
      responses: {
        200: { description: "`{ ok: true }`", body: okAnswer },
        ...COMMON,
        409: "The campaign is not a draft",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      await deleteCampaign(db, accountId, request.params.id);
      return { ok: true };
    },
  );

  app.get<Id>(
    "/api/campaigns/:id/preview",
    docs({
      tags: TAGS,
      summary: "Who the campaign would reach now, who it leaves out, and three messages as sent",
      description:
        "`recipients`: contacts it would send to; `excluded`: `opted_out`, `no_address` (no phone number), `duplicate` (a second contact with the same number). `samples`: three recipients' messages rendered (`missing` names a placeholder left empty, which skips that recipient).",
      params: idParams,
      responses: {
        200: { description: "`{ recipients, excluded, samples }`", body: campaignPreview },
        400: "The template is no longer usable (named)",
        ...COMMON,
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return previewCampaign(db, accountId, request.params.id);
    },
  );

  app.post(
    "/api/campaigns/preview",
    docs({
      account: true,
      tags: TAGS,
      summary: "Preview a draft not saved yet: who it would reach, who it leaves out, three messages",
      description:
        "For the wizard's live count: nothing is stored. `audience` as on create (required); `template` and `parameters` optional. Answers like `GET /api/campaigns/{id}/preview`, plus `template_problem`: when the template or its parameters are not usable yet (the text names what), `samples` is empty and the counts are still given; null otherwise.",
      body: draftPreviewBody,
      responses: {
        200: { description: "`{ recipients, excluded, samples, template_problem }`", body: draftPreview },
        400: "Invalid JSON or a bad audience field (named), an unknown contact id",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return previewDraft(db, accountId, parse(draftPreviewBody, readJsonObject(request)));
    },
  );

  app.post<Id>(
    "/api/campaigns/:id/test",
    docs({
      tags: TAGS,
      summary: "Send the campaign's message to one number now (a test, not a recipient)",
      description:
        "Rendered with the account's contact of that number when there is one (else fallbacks); lands in that number's conversation like a started conversation.",
      params: idParams,
      body: testBody,
      responses: {
        200: { description: "`{ conversation, message }`", body: startedAnswer },
        400: "Bad phone, template no longer usable, a value empty for this number, channel not configured",
        ...COMMON,
        502: "Meta refused the send (its message)",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      await findCampaign(db, accountId, request.params.id);
      const { phone } = parse(testBody, readJsonObject(request));
      return testCampaign(deps, { accountId, userId: caller.userId, id: request.params.id, phone });
    },
  );

  const action = (
    path: string,
    summary: string,
    description: string,
    conflict: string,
    run: (accountId: string, id: string) => Promise<unknown>,
    extra: Record<number, string> = {},
    answer: { description: string; body: z.ZodType } = {
      description: "`{ campaign }`",
      body: campaignAnswer,
    },
  ) =>
    app.post<Id>(
      `/api/campaigns/:id/${path}`,
      docs({
        tags: TAGS,
        summary,
        description,
        params: idParams,
        responses: {
          200: answer,
          ...OWNER,
          409: conflict,
          ...extra,
        },
      }),
      async (request) => {
        const accountId = requireOwner(await sessions.require(request));
        await findCampaign(db, accountId, request.params.id);
        const result = await run(accountId, request.params.id);
        return result && typeof result === "object" && "campaign" in result ? result : { campaign: result };
      },
    );

  action(
    "start",
    "Start a draft: snapshot the audience and send now, or at scheduled_at (owner only)",
    "One recipient row per contact of the audience (opted-out contacts, contacts without a number and second contacts of a number left out), taken in one statement with the status change. Status `running`, or `scheduled` until `scheduled_at`.",
    "The campaign is not a draft",
    (accountId, id) => startCampaign(deps, accountId, id),
    { 400: "Template no longer usable, scheduled_at passed, no channel, or the audience matches nobody" },
  );
  action(
    "pause",
    "Pause a running or scheduled campaign (owner only)",
    "Sends already on the wire finish; those claimed but not yet sent wait `queued`; nobody else is sent until `resume`.",
    "The campaign is not running or scheduled",
    (accountId, id) => pauseCampaignByOwner(db, accountId, id),
  );
  action(
    "resume",
    "Resume a paused campaign (owner only)",
    "Sends the recipients still queued; nobody is sent twice, however often it is called.",
    "The campaign is not paused",
    (accountId, id) => resumeCampaign(deps, accountId, id),
  );
  action(
    "cancel",
    "Cancel a campaign (owner only)",
    "Recipients not yet sent (queued, deferred, or claimed but not yet on the wire) become `skipped` (`cancelled`); sends already on the wire finish.",
    "The campaign is a draft, completed or cancelled already",
    (accountId, id) => cancelCampaign(db, accountId, id),
  );
  action(
    "retry-failed",
    "Queue again the recipients that failed with a code worth retrying (owner only)",
    "Throughput and temporary errors (130429, 131056, 80007, 4, 1, 2, 131000, 131016, 131049); a final refusal (131026 undeliverable, for example) is not retried. Answers `{ campaign, requeued }`.",
    "The campaign is a draft or cancelled",
    (accountId, id) => retryFailed(db, accountId, id),
    {},
    { description: "`{ campaign, requeued }`", body: retryAnswer },
  );

  app.get<Id>(
    "/api/campaigns/:id/recipients",
    docs({
      tags: TAGS,
      summary: "The campaign's recipients, by contact id",
      params: idParams,
      querystring: recipientsQuery,
      responses: {
        200: {
          description:
            "`{ recipients: [{ contact_id, name, phone, status, message_id, error_code, error_title, skipped_reason, updated_at }], next_cursor }`",
          body: recipientsPage,
        },
        400: "Bad status, limit or cursor",
        ...COMMON,
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const campaign = await findCampaign(db, accountId, request.params.id);
      const query = parse(recipientsQuery, request.query);
      return listRecipients(db, { campaignId: campaign.id, ...query });
    },
  );

  app.get<Id>(
    "/api/campaigns/:id/recipients.csv",
    docs({
      tags: TAGS,
      summary: "Every recipient as CSV, streamed",
      params: idParams,
      querystring: csvQuery,
      responses: {
        200: {
          description: `text/csv with a header row: ${CSV_COLUMNS.join(", ")}`,
          contentType: "text/csv",
          headers: { "content-disposition": 'attachment; filename="campaign-<id>-recipients.csv"' },
        },
        400: "Bad status",
        ...COMMON,
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      const campaign = await findCampaign(db, accountId, request.params.id);
      const { status } = parse(csvQuery, request.query);
      async function* lines() {
        yield csvRow(CSV_COLUMNS);
        for await (const page of allRecipients(db, campaign.id, status)) {
          yield page.map((r) => csvRow(CSV_COLUMNS.map((c) => r[c]))).join("");
        }
      }
      return reply
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="campaign-${campaign.id}-recipients.csv"`)
        .send(Readable.from(lines()));
    },
  );
}
