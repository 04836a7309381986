/**
 * The account's messaging channel configuration: reading, storing and
 * removing the one row per account. Tokens arrive here already encrypted.
 */

import { and, eq, ne, or } from "drizzle-orm";
import type { z } from "zod";
import type { MessagingConfig } from "../contracts/account.js";
import type { DbOrTx } from "../db/client.js";
import { messagingConfigs } from "../db/schema/index.js";

export type MessagingConfigRow = typeof messagingConfigs.$inferSelect;

/** Another account already holds the phone number (spec: 409). */
export class PhoneNumberTakenError extends Error {
  constructor() {
    super("This phone number is already connected to another account");
    this.name = "PhoneNumberTakenError";
  }
}

export async function getMessagingConfig(
  db: DbOrTx,
  accountId: string,
): Promise<MessagingConfigRow | undefined> {
  const [row] = await db.select().from(messagingConfigs).where(eq(messagingConfigs.accountId, accountId));
  return row;
}

/**
 * One read for the save path: the account's own row (for the registration
 * rule) and whether another account holds the number.
 */
export async function findConfigsForSave(
  db: DbOrTx,
  input: { accountId: string; phoneNumberId: string },
): Promise<{ own: MessagingConfigRow | undefined; takenByOther: boolean }> {
  const rows = await db
    .select()
    .from(messagingConfigs)
    .where(
      or(
        eq(messagingConfigs.accountId, input.accountId),
        and(
          eq(messagingConfigs.phoneNumberId, input.phoneNumberId),
          ne(messagingConfigs.accountId, input.accountId),
        ),
      ),
    );
  return {
    own: rows.find((r) => r.accountId === input.accountId),
    takenByOther: rows.some((r) => r.accountId !== input.accountId),
  };
}

export interface StoredConfig {
  accountId: string;
  userId: string;
  phoneNumberId: string;
  businessAccountId: string | null;
  /** Encrypted. */
  accessToken: string;
  /** Encrypted, or null. */
  verifyToken: string | null;
  verifyTokenHash: string | null;
  status: "connected" | "disconnected";
  connectedAt: Date | null;
  registeredAt: Date | null;
  subscribedAppsAt: Date | null;
  lastRegistrationError: string | null;
  updatedAt: Date;
  /** Left out: kept as stored (80 for a new channel). */
  messagesPerSecond?: number;
}

/**
 * Inserts the account's row or updates it (keeping the user who first saved
 * it). The unique phone number constraint decides between two accounts
 * saving the same number at once: the loser gets PhoneNumberTakenError.
 */
export async function storeMessagingConfig(db: DbOrTx, config: StoredConfig): Promise<MessagingConfigRow> {
  const { accountId: _accountId, userId: _userId, ...changes } = config;
  try {
    const [row] = await db
      .insert(messagingConfigs)
      .values(config)
      .onConflictDoUpdate({ target: messagingConfigs.accountId, set: changes })
      .returning();
    return row!;
  } catch (error) {
    if (isPhoneNumberUniqueViolation(error)) throw new PhoneNumberTakenError();
    throw error;
  }
}

export async function deleteMessagingConfig(db: DbOrTx, accountId: string): Promise<void> {
  await db.delete(messagingConfigs).where(eq(messagingConfigs.accountId, accountId));
}

/** The non-secret fields, for the health check answer. */
export function toConfigJson(row: MessagingConfigRow): z.infer<typeof MessagingConfig> {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    status: row.status,
    phone_number_id: row.phoneNumberId,
    business_account_id: row.businessAccountId,
    has_verify_token: row.verifyToken !== null,
    connected_at: iso(row.connectedAt),
    registered_at: iso(row.registeredAt),
    subscribed_apps_at: iso(row.subscribedAppsAt),
    last_registration_error: row.lastRegistrationError,
    messages_per_second: row.messagesPerSecond,
    updated_at: iso(row.updatedAt),
  };
}

/** Postgres error fields, found on the error or (drizzle wraps them) on its cause. */
export function pgErrorOf(error: unknown): { code?: string; constraint?: string; message?: string } {
  const candidates = [error, (error as { cause?: unknown } | null)?.cause];
  for (const c of candidates) {
    if (c && typeof c === "object" && typeof (c as { code?: unknown }).code === "string") {
      return c as { code?: string; constraint?: string; message?: string };
    }
  }
  return {};
}

function isPhoneNumberUniqueViolation(error: unknown): boolean {
  const pg = pgErrorOf(error);
  return pg.code === "23505" && pg.constraint === "messaging_configs_phone_number_id_unique";
}
