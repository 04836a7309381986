/**
 * GET / POST / DELETE /api/messaging/config: the account's messaging channel
 * (spec "Messaging channel configuration"). Handlers follow the spec's
 * numbered checks top to bottom.
 */

import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { configHealth, configHealthFailure, configSaved } from "../contracts/account.js";
import { successAnswer, UPSTREAM_ID_PATTERN } from "../contracts/common.js";
import type { AppDeps } from "../deps.js";
import { tryParseJson } from "../http/body.js";
import { ApiError } from "../http/errors.js";
import { headerTokenProblem, storableProblem, upstreamIdProblem } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { GraphApiError, type PhoneInfo } from "../upstream/graph.js";
import {
  deleteMessagingConfig,
  findConfigsForSave,
  getMessagingConfig,
  type MessagingConfigRow,
  PhoneNumberTakenError,
  pgErrorOf,
  storeMessagingConfig,
  toConfigJson,
} from "./config.js";
import { EncryptionKeyError, TokenDecryptError } from "./crypto.js";

const META_ERROR_PREFIX = "Meta API error: ";
const VERIFY_FAILED_PREFIX = "Failed to verify credentials with Meta: ";

const configBody = z.object({
  phone_number_id: z
    .string()
    .regex(new RegExp(UPSTREAM_ID_PATTERN))
    .describe("The business phone number id from Meta's WhatsApp Manager (letters, digits, `.`, `_`, `-`)"),
  access_token: z.string().min(1).describe("A permanent System User access token; stored encrypted"),
  business_account_id: z
    .string()
    .regex(new RegExp(UPSTREAM_ID_PATTERN))
    .optional()
    .describe("WhatsApp Business Account id; subscribed to the app"),
  verify_token: z.string().optional().describe("Webhook verify token; stored encrypted"),
  pin: z
    .string()
    .regex(/^[0-9]{6}$/)
    .nullish()
    .describe("Two-step verification PIN (6 digits), needed to register the number"),
  messages_per_second: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .describe(
      "The number's send rate across all instances (default 80, Meta's default; up to 1,000 after Meta's upgrade); kept when omitted",
    ),
});

interface SaveInput {
  phoneNumberId: string;
  accessToken: string;
  businessAccountId: string | null;
  verifyToken: string | null;
  pin: string | null;
  /** Undefined: keep the stored rate (80 for a new channel). */
  messagesPerSecond: number | undefined;
}

export function registerMessagingConfigRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions, cipher, graph } = deps;

  app.get(
    "/api/messaging/config",
    docs({
      tags: ["messaging"],
      summary: "Health check of the account's messaging channel",
      description:
        "Answers 200 for every outcome but authentication failure: `{connected:true, phone_info, config}` or `{connected:false, reason, message}` with reason no_account, db_error, no_config, token_corrupted (with needs_reset: true) or meta_api_error.",
      responses: {
        200: { description: "Health outcome", body: configHealth },
        500: { description: "Unexpected error (reason unknown)", body: configHealthFailure },
      },
    }),
    async (request, reply) => {
      const notConnected = (reason: string, message: string, extra: Record<string, unknown> = {}) => ({
        connected: false,
        reason,
        ...extra,
        message,
      });
      try {
        const caller = await sessions.require(request);
        if (!caller.accountId) {
          return notConnected("no_account", "Your profile is not linked to an account");
        }
        let row: MessagingConfigRow | undefined;
        try {
          row = await getMessagingConfig(db, caller.accountId);
        } catch (error) {
          logStorageError(request.log, error, "reading the messaging configuration failed");
          return notConnected("db_error", "Could not read the messaging configuration");
        }
        if (!row) {
          return notConnected("no_config", "The messaging channel is not configured for this account");
        }
        let accessToken: string;
        try {
          accessToken = cipher.decrypt(row.accessToken);
        } catch (error) {
          if (!(error instanceof TokenDecryptError)) throw error;
          return notConnected(
            "token_corrupted",
            "The stored access token cannot be decrypted (was ENCRYPTION_KEY changed?). Delete the configuration and save it again.",
            { needs_reset: true },
          );
        }
        let phoneInfo: PhoneInfo;
        try {
          phoneInfo = await graph.getPhoneNumber(accessToken, row.phoneNumberId);
        } catch (error) {
          if (!(error instanceof GraphApiError)) throw error;
          return {
            ...notConnected("meta_api_error", `${META_ERROR_PREFIX}${error.message}`),
            config: toConfigJson(row),
          };
        }
        return { connected: true, phone_info: phoneInfo, config: toConfigJson(row) };
      } catch (error) {
        if (error instanceof ApiError) throw error;
        request.log.error({ err: safeError(error) }, "messaging config health check failed");
        return reply.code(500).send({
          connected: false,
          reason: "unknown",
          message:
            error instanceof EncryptionKeyError
              ? error.message
              : "Unexpected error while checking the messaging configuration",
        });
      }
    },
  );

  app.post(
    "/api/messaging/config",
    docs({
      tags: ["messaging"],
      summary: "Save (or replace) the account's messaging channel configuration",
      description:
        "Verifies the credentials upstream, registers the number when needed (with the PIN), subscribes the business account, and stores the tokens encrypted.",
      body: configBody,
      responses: {
        200: {
          description:
            "Saved: `{success, saved, registered, registration_skipped, phone_info}`, or `{success:false, saved:true, registered:false, registration_error, phone_info}` when registration failed",
          body: configSaved,
        },
        400: "Missing field, bad PIN, or upstream verification failed",
        403: "Profile not linked to an account",
        409: "Another account holds the phone number",
        500: "Storage or encryption failure, or an unexpected error",
      },
    }),
    async (request) => {
      // 1. 401, then 403.
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const input = readSaveInput(request);

      // 4. One account per phone number.
      let own: MessagingConfigRow | undefined;
      try {
        const found = await findConfigsForSave(db, { accountId, phoneNumberId: input.phoneNumberId });
        if (found.takenByOther) throw new PhoneNumberTakenError();
        own = found.own;
      } catch (error) {
        if (error instanceof PhoneNumberTakenError) throw new ApiError(409, error.message);
        logStorageError(request.log, error, "phone number ownership check failed");
        throw new ApiError(500, "Could not check whether the phone number is already connected");
      }

      // 5. Verify upstream before anything is stored.
      let phoneInfo: PhoneInfo;
      try {
        phoneInfo = await graph.getPhoneNumber(input.accessToken, input.phoneNumberId);
      } catch (error) {
        if (error instanceof GraphApiError)
          throw new ApiError(400, `${VERIFY_FAILED_PREFIX}${error.message}`);
        throw error;
      }

      // 6. Encrypt the tokens.
      let sealed: { accessToken: string; verifyToken: string | null; verifyTokenHash: string | null };
      try {
        sealed = {
          accessToken: cipher.encrypt(input.accessToken),
          verifyToken: input.verifyToken ? cipher.encrypt(input.verifyToken) : null,
          verifyTokenHash: input.verifyToken ? cipher.keyedHash(input.verifyToken) : null,
        };
      } catch (error) {
        request.log.error({ err: safeError(error) }, "encrypting the channel tokens failed");
        throw new ApiError(
          500,
          "Failed to encrypt the tokens: ENCRYPTION_KEY must be a valid 64-character hex string",
        );
      }

      // 7. Registration (the sameNumber rule).
      const sameNumber = own?.phoneNumberId === input.phoneNumberId && own.registeredAt !== null;
      const keptRegisteredAt = own?.phoneNumberId === input.phoneNumberId ? own.registeredAt : null;
      const registrationNeeded = !sameNumber || input.pin !== null;
      let registeredAt = keptRegisteredAt;
      let registrationSkipped = false;
      let registrationError: string | null = null;
      if (registrationNeeded && input.pin === null) {
        registrationSkipped = true;
      } else if (registrationNeeded && input.pin !== null) {
        try {
          await graph.registerPhoneNumber(input.accessToken, input.phoneNumberId, input.pin);
          registeredAt = deps.now();
        } catch (error) {
          if (!(error instanceof GraphApiError)) throw error;
          registrationError = error.message;
          registeredAt = null;
          request.log.warn(
            { phoneNumberId: input.phoneNumberId, code: error.code, kind: error.kind },
            "registering the phone number failed",
          );
        }
      }

      // 8. Subscription (non-fatal).
      let subscribedAppsAt: Date | null = null;
      if (input.businessAccountId) {
        try {
          await graph.subscribeApp(input.accessToken, input.businessAccountId);
          subscribedAppsAt = deps.now();
        } catch (error) {
          if (!(error instanceof GraphApiError)) throw error;
          request.log.warn(
            {
              businessAccountId: input.businessAccountId,
              code: error.code,
              kind: error.kind,
              reason: error.message,
            },
            "subscribing the business account to the app failed",
          );
        }
      }

      // 9. Store the row.
      const now = deps.now();
      try {
        await storeMessagingConfig(db, {
          accountId,
          userId: caller.userId,
          phoneNumberId: input.phoneNumberId,
          businessAccountId: input.businessAccountId,
          ...sealed,
          status: registrationError ? "disconnected" : "connected",
          connectedAt: registrationError ? null : now,
          registeredAt,
          subscribedAppsAt,
          lastRegistrationError: registrationError,
          updatedAt: now,
          ...(input.messagesPerSecond === undefined ? {} : { messagesPerSecond: input.messagesPerSecond }),
        });
      } catch (error) {
        if (error instanceof PhoneNumberTakenError) throw new ApiError(409, error.message);
        logStorageError(request.log, error, "storing the messaging configuration failed");
        throw new ApiError(500, "Could not save the messaging configuration");
      }
      request.log.info(
        {
          accountId,
          phoneNumberId: input.phoneNumberId,
          registered: registeredAt !== null,
          registrationSkipped,
        },
        "messaging configuration saved",
      );

      // 10. The two answers.
      if (registrationError !== null) {
        return {
          success: false,
          saved: true,
          registered: false,
          registration_error: registrationError,
          phone_info: phoneInfo,
        };
      }
      return {
        success: true,
        saved: true,
        registered: registeredAt !== null,
        registration_skipped: registrationSkipped,
        phone_info: phoneInfo,
      };
    },
  );

  app.delete(
    "/api/messaging/config",
    docs({
      tags: ["messaging"],
      summary: "Remove the account's messaging channel configuration",
      description: "Also how an account recovers from a token that can no longer be decrypted.",
      responses: {
        200: { description: "`{success:true}`", body: successAnswer },
        403: "Profile not linked to an account",
        500: "Storage error",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      try {
        await deleteMessagingConfig(db, accountId);
      } catch (error) {
        logStorageError(request.log, error, "deleting the messaging configuration failed");
        throw new ApiError(500, "Could not delete the messaging configuration");
      }
      request.log.info({ accountId }, "messaging configuration deleted");
      return { success: true };
    },
  );
}

/**
 * Steps 2 and 3. A body that cannot be parsed is an unexpected error for this
 * endpoint (spec step 11: 500 `Internal server error`), not a 400.
 */
function readSaveInput(request: FastifyRequest): SaveInput {
  const parsed = tryParseJson(request);
  if (!parsed.ok) throw new ApiError(500, "Internal server error");
  const value = parsed.value;
  // A JSON value that is not an object has none of the required fields (step 2).
  const body: Record<string, unknown> =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};

  const phoneNumberId = typeof body.phone_number_id === "string" ? body.phone_number_id.trim() : "";
  const accessToken = typeof body.access_token === "string" ? body.access_token.trim() : "";
  if (!phoneNumberId || !accessToken) {
    throw new ApiError(400, "phone_number_id and access_token are required");
  }
  const optional = (name: "business_account_id" | "verify_token") => {
    const value = body[name];
    if (value === undefined || value === null) return null;
    if (typeof value !== "string") throw new ApiError(400, `${name} must be a string`);
    return value.trim() || null;
  };
  const businessAccountId = optional("business_account_id");
  const verifyToken = optional("verify_token");

  const pin = body.pin;
  if (
    pin !== undefined &&
    pin !== null &&
    pin !== "" &&
    (typeof pin !== "string" || !/^[0-9]{6}$/.test(pin))
  ) {
    throw new ApiError(400, "pin must be a string of exactly 6 digits");
  }
  // Every value bound for the upstream (a URL path, the Authorization header) or for storage
  // is checked here, before the first upstream call: a bad field never leaves half a save done.
  const problems: Array<[string, string | null]> = [
    ["phone_number_id", upstreamIdProblem(phoneNumberId)],
    ["access_token", headerTokenProblem(accessToken, ACCESS_TOKEN_MAX_LENGTH)],
    ["business_account_id", businessAccountId === null ? null : upstreamIdProblem(businessAccountId)],
    ["verify_token", verifyToken === null ? null : storableProblem(verifyToken, VERIFY_TOKEN_MAX_LENGTH)],
  ];
  for (const [field, problem] of problems) {
    if (problem) throw new ApiError(400, `${field}: ${problem}`);
  }
  const rate = body.messages_per_second;
  if (rate !== undefined && !(Number.isInteger(rate) && (rate as number) >= 1 && (rate as number) <= 1000)) {
    throw new ApiError(400, "messages_per_second must be a whole number from 1 to 1000");
  }
  return {
    phoneNumberId,
    accessToken,
    businessAccountId,
    verifyToken,
    pin: pin ? (pin as string) : null,
    messagesPerSecond: rate as number | undefined,
  };
}

const ACCESS_TOKEN_MAX_LENGTH = 4096;
const VERIFY_TOKEN_MAX_LENGTH = 512;

/**
 * Drizzle's query errors carry the statement's parameters (encrypted tokens
 * among them): log only the database's own code and message.
 */
function logStorageError(log: FastifyBaseLogger, error: unknown, message: string) {
  const pg = pgErrorOf(error);
  log.error({ err: { code: pg.code, message: pg.message ?? safeError(error).message } }, message);
}

function safeError(error: unknown): { name: string; message: string } {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const pg = pgErrorOf(error);
  return { name: error.name, message: pg.message ?? error.message.split("\nparams:")[0] ?? "" };
}
