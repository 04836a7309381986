import { eq } from "drizzle-orm";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount, requireOwner } from "../auth/session.js";
import { availabilityAnswer, businessHoursAnswer } from "../contracts/account.js";
import { profiles } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { readJsonObject } from "../http/body.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { autoAssign } from "./assign.js";
import { getBusinessHours, putBusinessHours, readBusinessHours, toBusinessHoursJson } from "./hours.js";

const range = z.tuple([z.string(), z.string()]).describe('["HH:MM", "HH:MM"], 24-hour; "24:00" ends a day');
const businessHoursBody = z.object({
  timezone: z
    .string()
    .describe("IANA timezone, e.g. Europe/Berlin (daylight saving as the tz database says)"),
  weekly: z
    .object({
      mon: z.array(range).optional(),
      tue: z.array(range).optional(),
      wed: z.array(range).optional(),
      thu: z.array(range).optional(),
      fri: z.array(range).optional(),
      sat: z.array(range).optional(),
      sun: z.array(range).optional(),
    })
    .describe("Opening ranges per day; a day absent or empty is closed"),
  holidays: z.array(z.string()).optional().describe("Whole days closed, YYYY-MM-DD in the timezone"),
  away_message: z
    .string()
    .nullable()
    .optional()
    .describe("Sent once per closed period to a customer whose message no flow took; null: none"),
});

const meBody = z
  .object({
    availability: z.enum(["online", "away"], { error: "must be online or away" }),
  })
  .strict();

/** Business hours and members' availability (product.md section 20). */
export function registerBotsRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.get(
    "/api/settings/business-hours",
    docs({
      account: true,
      tags: ["settings"],
      summary: "The account's business hours",
      description:
        "`business_hours` is null until set (always open, no away message); `open_now` says whether the business is open at this moment.",
      responses: {
        200: {
          description: "`{ business_hours: { timezone, weekly, holidays, away_message, open_now } | null }`",
          body: businessHoursAnswer,
        },
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return { business_hours: toBusinessHoursJson(await getBusinessHours(db, accountId), deps.now()) };
    },
  );

  app.put(
    "/api/settings/business-hours",
    docs({
      tags: ["settings"],
      summary: "Set the account's business hours (owner only)",
      description:
        "Replaces them. Used by the `business_hours` flow node, the trigger option `outside_business_hours_only`, and the away message.",
      body: businessHoursBody,
      responses: {
        200: { description: "`{ business_hours }`", body: businessHoursAnswer },
        400: "Invalid JSON, an unknown timezone, a bad, reversed or overlapping range, a bad holiday or away message (the error names the field)",
        403: "Not the account's owner",
      },
    }),
    async (request) => {
      const accountId = requireOwner(await sessions.require(request));
      const hours = readBusinessHours(readJsonObject(request));
      await putBusinessHours(db, accountId, hours, deps.now());
      return { business_hours: toBusinessHoursJson(hours, deps.now()) };
    },
  );

  app.patch(
    "/api/me",
    docs({
      account: true,
      tags: ["accounts"],
      summary: "Set the caller's availability",
      description:
        "`online` members get auto-assigned conversations (up to the account's cap); `away` members get none. Coming online takes the oldest waiting conversations up to the cap.",
      body: meBody,
      responses: {
        200: { description: "`{ profile: { user_id, availability } }`", body: availabilityAnswer },
        400: "Invalid JSON, an unknown field or a bad availability",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const body = parse(meBody, readJsonObject(request));
      // updated_at is left alone: the members list shows it as the day the member joined.
      await db
        .update(profiles)
        .set({ availability: body.availability })
        .where(eq(profiles.userId, caller.userId));
      if (body.availability === "online") await autoAssign(db, { accountId, now: deps.now() });
      return { profile: { user_id: caller.userId, availability: body.availability } };
    },
  );
}
