import type { FastifyInstance } from "fastify";
import { isSupportedCountry } from "libphonenumber-js";
import { z } from "zod";
import { requireAccount, requireOwner } from "../auth/session.js";
import { settingsAnswer } from "../contracts/account.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import {
  AUTO_ASSIGN_MODES,
  getSettings,
  type SettingsPatch,
  toSettingsJson,
  updateSettings,
} from "./settings.js";

const TAGS = ["settings"];

const keyword = storableString({ trim: true, min: 1, max: 64 });
const keywords = z
  .array(keyword, { error: "must be an array of strings" })
  .max(20, "must have at most 20 keywords")
  .describe("Inbound texts (trimmed, any case) that match");

const patchBody = z
  .object({
    default_country: z
      .string({ error: "must be a two-letter country code or null" })
      .trim()
      .toUpperCase()
      .refine(
        (c) => isSupportedCountry(c),
        "must be a two-letter country code (ISO 3166-1) with a phone numbering plan",
      )
      .nullable()
      .optional()
      .describe(
        "Country of national phone numbers (ISO 3166-1 alpha-2, e.g. `BR`); null: numbers must be international",
      ),
    opt_out_keywords: keywords.optional(),
    opt_in_keywords: keywords.optional(),
    opt_out_reply: storableString({ trim: true, min: 1, max: 4096 })
      .nullable()
      .optional()
      .describe("Answer to an opt-out while the window is open; null: none"),
    agent_reply_pause_minutes: z
      .number({ error: "must be a whole number of minutes" })
      .int("must be a whole number of minutes")
      .min(0, "must be 0 (off) or more")
      .max(10_080, "must be at most 10080 (a week)")
      .optional()
      .describe("How long an agent's message pauses the conversation's automation; 0: never"),
    auto_assign: z
      .object(
        {
          mode: z.enum(AUTO_ASSIGN_MODES, { error: `must be one of ${AUTO_ASSIGN_MODES.join(", ")}` }),
          max_open_per_agent: z
            .number({ error: "must be a whole number or null" })
            .int("must be a whole number")
            .min(1, "must be at least 1")
            .max(10_000, "must be at most 10000")
            .nullable()
            .optional(),
        },
        { error: "must be an object" },
      )
      .strict()
      .optional()
      .describe("Who new conversations go to, and the most open conversations one member gets"),
  })
  .strict();

export function registerSettingsRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.get(
    "/api/settings",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's settings (defaults where none was saved)",
      responses: {
        200: { description: "`{ settings }`", body: settingsAnswer },
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return { settings: toSettingsJson(await getSettings(db, accountId)) };
    },
  );

  app.patch(
    "/api/settings",
    docs({
      tags: TAGS,
      summary: "Change some of the account's settings (owner only)",
      body: patchBody,
      responses: {
        200: { description: "`{ settings }`, all of them after the change", body: settingsAnswer },
        400: "Invalid JSON, an unknown field, no field, or a bad value (the error names the field)",
        403: "Not the account's owner",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const body = parse(patchBody, readJsonObject(request));
      if (Object.keys(body).length === 0)
        throw new ApiError(400, "Nothing to change: send at least one setting");
      const patch: SettingsPatch = {
        ...(body.default_country !== undefined && { defaultCountry: body.default_country }),
        ...(body.opt_out_keywords && { optOutKeywords: body.opt_out_keywords }),
        ...(body.opt_in_keywords && { optInKeywords: body.opt_in_keywords }),
        ...(body.opt_out_reply !== undefined && { optOutReply: body.opt_out_reply }),
        ...(body.agent_reply_pause_minutes !== undefined && {
          agentReplyPauseMinutes: body.agent_reply_pause_minutes,
        }),
        ...(body.auto_assign && {
          autoAssign: { mode: body.auto_assign.mode, maxOpenPerAgent: body.auto_assign.max_open_per_agent },
        }),
      };
      const settings = await updateSettings(db, accountId, patch, deps.now());
      return { settings: toSettingsJson(settings) };
    },
  );
}
