import { createHash, randomBytes } from "node:crypto";
import { and, desc, eq, isNull, lt, or } from "drizzle-orm";
import type { FastifyRequest } from "fastify";
import type { Db } from "../db/client.js";
import { apiKeys, users } from "../db/schema/index.js";
import type { Caller } from "./caller.js";

/** Every key starts with this, so that a key is told apart from a session token. */
export const API_KEY_PREFIX = "wak_";
/** How many of a key's characters are kept (in clear) to recognise it in lists. */
const SHOWN_CHARS = API_KEY_PREFIX.length + 8;
/** last_used_at is written at most this often per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

/**
 * The API key a request carries: `X-API-Key`, or a bearer token that looks
 * like a key. `undefined` when it carries none (a session may be there).
 */
export function apiKeyFromHeaders(headers: FastifyRequest["headers"]): string | undefined {
  const explicit = headers["x-api-key"];
  if (explicit !== undefined) return (Array.isArray(explicit) ? explicit[0] : explicit)?.trim() ?? "";
  const bearer = /^bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? "")?.[1];
  return bearer?.startsWith(API_KEY_PREFIX) ? bearer : undefined;
}

type ApiKeyRow = typeof apiKeys.$inferSelect;

export const toApiKeyJson = (row: ApiKeyRow) => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: row.createdAt,
  expires_at: row.expiresAt,
  last_used_at: row.lastUsedAt,
});

/** Creates a key; the key itself is returned this once and only its hash is stored. */
export async function createApiKey(
  db: Db,
  input: { accountId: string; createdBy: string; name: string; expiresInDays: number | null; now: Date },
) {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
  const expiresAt =
    input.expiresInDays === null ? null : new Date(input.now.getTime() + input.expiresInDays * 86_400_000);
  const [row] = await db
    .insert(apiKeys)
    .values({
      accountId: input.accountId,
      createdBy: input.createdBy,
      name: input.name,
      prefix: key.slice(0, SHOWN_CHARS),
      keyHash: hashKey(key),
      createdAt: input.now,
      expiresAt,
    })
    .returning();
  if (!row) throw new Error("api key insert returned nothing");
  return { apiKey: toApiKeyJson(row), key };
}

export async function listApiKeys(db: Db, accountId: string) {
  const rows = await db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.accountId, accountId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
  return rows.map(toApiKeyJson);
}

/** Deletes one of the account's keys; false when the account has no such key. */
export async function deleteApiKey(db: Db, input: { accountId: string; id: string }) {
  const deleted = await db
    .delete(apiKeys)
    .where(and(eq(apiKeys.id, input.id), eq(apiKeys.accountId, input.accountId)))
    .returning({ id: apiKeys.id });
  return deleted.length > 0;
}

/**
 * The caller an API key stands for, or null (unknown, deleted or expired).
 * Looked up on every request (no cache), so a deleted key stops working at
 * once on every instance. `last_used_at` is written at most once a minute.
 */
export async function resolveApiKey(db: Db, key: string, now: Date): Promise<Caller | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  const [row] = await db
    .select({
      id: apiKeys.id,
      accountId: apiKeys.accountId,
      expiresAt: apiKeys.expiresAt,
      lastUsedAt: apiKeys.lastUsedAt,
      userId: users.id,
      email: users.email,
      name: users.name,
    })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.createdBy))
    .where(eq(apiKeys.keyHash, hashKey(key)));
  if (!row) return null;
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) return null;
  const stale = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
  if (!row.lastUsedAt || row.lastUsedAt < stale) {
    // Conditional, so that instances racing on the same key write once.
    await db
      .update(apiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, stale))));
  }
  return {
    userId: row.userId,
    email: row.email,
    name: row.name,
    sessionId: null,
    apiKeyId: row.id,
    accountId: row.accountId,
    role: "member",
  };
}
