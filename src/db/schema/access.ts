import { bigint, index, integer, pgTable, text, uuid, varchar } from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

/** API keys: an account's credentials for scripts and integrations (member rights). */
export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    // The owner who created it; the key's actions are recorded in their name.
    createdBy: uuid("created_by")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    // The key's first characters, shown in lists so that a key can be recognised.
    prefix: text("prefix").notNull(),
    // SHA-256 of the whole key; the key itself is never stored.
    keyHash: text("key_hash").notNull().unique(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    expiresAt: timestamptz("expires_at"),
    lastUsedAt: timestamptz("last_used_at"),
  },
  (t) => [index("api_keys_account_id_idx").on(t.accountId)],
);

/**
 * Sign-in throttling counters when there is no Redis (rate-limiter-flexible's
 * Postgres store, which owns the layout): one row per key, `expire` in epoch ms.
 */
export const signInAttempts = pgTable("sign_in_attempts", {
  key: varchar("key", { length: 255 }).primaryKey(),
  points: integer("points").notNull().default(0),
  expire: bigint("expire", { mode: "number" }),
});
