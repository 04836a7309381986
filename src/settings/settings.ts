import { eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Settings } from "../contracts/account.js";
import type { DbOrTx } from "../db/client.js";
import { accountSettings } from "../db/schema/index.js";

export const AUTO_ASSIGN_MODES = ["off", "round_robin", "least_busy"] as const;
export type AutoAssignMode = (typeof AUTO_ASSIGN_MODES)[number];

/** An account's settings, every one resolved (the defaults stand where nothing was saved). */
export interface AccountSettings {
  defaultCountry: string | null;
  optOutKeywords: string[];
  optInKeywords: string[];
  optOutReply: string | null;
  agentReplyPauseMinutes: number;
  autoAssign: { mode: AutoAssignMode; maxOpenPerAgent: number | null };
}

export const DEFAULT_SETTINGS: Readonly<AccountSettings> = {
  defaultCountry: null,
  optOutKeywords: ["STOP", "UNSUBSCRIBE"],
  optInKeywords: ["START"],
  optOutReply: null,
  agentReplyPauseMinutes: 30,
  autoAssign: { mode: "off", maxOpenPerAgent: null },
};

/** A change to some settings; what is absent stays as it is. */
export type SettingsPatch = Partial<Omit<AccountSettings, "autoAssign">> & {
  autoAssign?: { mode: AutoAssignMode; maxOpenPerAgent?: number | null };
};

type Row = typeof accountSettings.$inferSelect;

const fromRow = (row: Row | undefined): AccountSettings =>
  row
    ? {
        defaultCountry: row.defaultCountry,
        optOutKeywords: row.optOutKeywords,
        optInKeywords: row.optInKeywords,
        optOutReply: row.optOutReply,
        agentReplyPauseMinutes: row.agentReplyPauseMinutes,
        autoAssign: { mode: row.autoAssignMode, maxOpenPerAgent: row.maxOpenPerAgent },
      }
    : structuredClone(DEFAULT_SETTINGS);

/** The account's settings (the defaults when it never changed any). */
export async function getSettings(db: DbOrTx, accountId: string): Promise<AccountSettings> {
  const [row] = await db.select().from(accountSettings).where(eq(accountSettings.accountId, accountId));
  return fromRow(row);
}

/**
 * Applies `patch` over the saved settings (or the defaults) in one statement
 * under the row's lock, so two concurrent changes to different settings both stand.
 */
export async function updateSettings(
  db: DbOrTx,
  accountId: string,
  patch: SettingsPatch,
  now: Date,
): Promise<AccountSettings> {
  return db.transaction(async (tx) => {
    // Lock the row (or, for an account that never saved settings, the account's
    // parent row) so the read-modify-write below is not interleaved.
    await tx.execute(sql`select 1 from accounts where id = ${accountId} for update`);
    const current = await getSettings(tx, accountId);
    const next: AccountSettings = {
      ...current,
      ...patch,
      autoAssign: patch.autoAssign
        ? {
            mode: patch.autoAssign.mode,
            maxOpenPerAgent:
              patch.autoAssign.maxOpenPerAgent === undefined
                ? current.autoAssign.maxOpenPerAgent
                : patch.autoAssign.maxOpenPerAgent,
          }
        : current.autoAssign,
    };
    const values = {
      defaultCountry: next.defaultCountry,
      optOutKeywords: next.optOutKeywords,
      optInKeywords: next.optInKeywords,
      optOutReply: next.optOutReply,
      agentReplyPauseMinutes: next.agentReplyPauseMinutes,
      autoAssignMode: next.autoAssign.mode,
      maxOpenPerAgent: next.autoAssign.maxOpenPerAgent,
      updatedAt: now,
    };
    await tx
      .insert(accountSettings)
      .values({ accountId, ...values })
      .onConflictDoUpdate({ target: accountSettings.accountId, set: values });
    return next;
  });
}

/** True when an inbound text is one of the keywords (trimmed, any case). */
export const matchesKeyword = (text: string, keywords: readonly string[]) => {
  const said = text.trim().toLocaleUpperCase("en-US");
  return said.length > 0 && keywords.some((k) => k.trim().toLocaleUpperCase("en-US") === said);
};

/** The settings as the API shows them. */
export const toSettingsJson = (s: AccountSettings): z.infer<typeof Settings> => ({
  default_country: s.defaultCountry,
  opt_out_keywords: s.optOutKeywords,
  opt_in_keywords: s.optInKeywords,
  opt_out_reply: s.optOutReply,
  agent_reply_pause_minutes: s.agentReplyPauseMinutes,
  auto_assign: { mode: s.autoAssign.mode, max_open_per_agent: s.autoAssign.maxOpenPerAgent },
});
