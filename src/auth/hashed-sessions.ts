import { createHash } from "node:crypto";
import type { BetterAuthOptions, DBAdapter, Where } from "better-auth";

/**
 * SHA-256 (hex) of a session token: what the `sessions.token` column holds.
 * A session token is 32 random characters, so a plain hash suffices (no salt,
 * no slow hash): nobody can guess a token from its hash.
 */
export const hashSessionToken = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * How a stored session that was read without its token (a list of the user's
 * sessions) names its token inside better-auth: its hash, marked. Such a name
 * is accepted only to delete that session (revoking another device), never to
 * find or refresh one, so it is no credential even with the auth secret.
 */
const STORED = "sha256:";

type AdapterFactory = (options: BetterAuthOptions) => DBAdapter<BetterAuthOptions>;
type Row = Record<string, unknown>;

const isSession = (model: string) => model === "session" || model === "sessions";

/**
 * Wraps a better-auth database adapter so that session tokens are stored only
 * as hashes. better-auth keeps handing its raw tokens to the adapter (it sets
 * the cookie from the created row, finds a session by the cookie's token);
 * this layer hashes every token it is given before it reaches the database,
 * and gives back the raw token wherever the caller supplied it (so cookies,
 * refreshes and `set-auth-token` work unchanged). Rows read by anything else
 * (the user's session list) carry only the marked hash.
 */
export function hashedSessionTokens(factory: AdapterFactory): AdapterFactory {
  return (options) => wrap(factory(options));
}

function wrap(adapter: DBAdapter<BetterAuthOptions>): DBAdapter<BetterAuthOptions> {
  /** The where clauses with every token hashed; `raw` is the token asked for by equality, if any. */
  const translate = (where: Where[] | undefined, allowStored: boolean) => {
    let raw: string | undefined;
    const out = where?.map((clause) => {
      if (clause.field !== "token") return clause;
      const value = clause.value;
      if (typeof value === "string") {
        if ((clause.operator ?? "eq") === "eq") raw = value;
        return { ...clause, value: stored(value, allowStored) };
      }
      if (Array.isArray(value)) return { ...clause, value: value.map((v) => stored(String(v), allowStored)) };
      return clause;
    });
    return { where: out, raw };
  };
  const stored = (value: string, allowStored: boolean) => {
    if (value.startsWith(STORED)) return allowStored ? value.slice(STORED.length) : "!";
    return hashSessionToken(value);
  };
  /** A session row as better-auth sees it: the raw token it asked by, else the marked hash. */
  const shown = <T>(row: T, raw: string | undefined): T => {
    if (!row || typeof row !== "object") return row;
    const r = row as Row;
    if (typeof r.token !== "string") return row;
    return { ...r, token: raw ?? `${STORED}${r.token}` } as T;
  };

  const wrapped: DBAdapter<BetterAuthOptions> = {
    ...adapter,
    async create<T extends Record<string, unknown>, R = T>(data: Parameters<typeof adapter.create<T, R>>[0]) {
      if (!isSession(data.model)) return adapter.create<T, R>(data);
      const input = data.data as Row;
      const raw = typeof input.token === "string" ? input.token : undefined;
      const row = await adapter.create<T, R>({
        ...data,
        data: { ...input, ...(raw ? { token: hashSessionToken(raw) } : {}) } as typeof data.data,
      });
      return shown(row, raw);
    },
    async findOne(data) {
      if (!isSession(data.model)) return adapter.findOne(data);
      const { where, raw } = translate(data.where, false);
      return shown(await adapter.findOne({ ...data, where: where ?? [] }), raw);
    },
    async findMany<T>(data: Parameters<typeof adapter.findMany<T>>[0]) {
      if (!isSession(data.model)) return adapter.findMany<T>(data);
      const { where } = translate(data.where, false);
      const rows = await adapter.findMany<T>({ ...data, where });
      return rows.map((row) => shown(row, undefined));
    },
    async count(data) {
      if (!isSession(data.model)) return adapter.count(data);
      return adapter.count({ ...data, where: translate(data.where, false).where });
    },
    async update(data) {
      if (!isSession(data.model)) return adapter.update(data);
      const { where, raw } = translate(data.where, false);
      const update = { ...data.update };
      if (typeof update.token === "string") update.token = hashSessionToken(update.token);
      return shown(await adapter.update({ ...data, where: where ?? [], update }), raw);
    },
    async updateMany(data) {
      if (!isSession(data.model)) return adapter.updateMany(data);
      return adapter.updateMany({ ...data, where: translate(data.where, false).where ?? [] });
    },
    async delete(data) {
      if (!isSession(data.model)) return adapter.delete(data);
      return adapter.delete({ ...data, where: translate(data.where, true).where ?? [] });
    },
    async deleteMany(data) {
      if (!isSession(data.model)) return adapter.deleteMany(data);
      return adapter.deleteMany({ ...data, where: translate(data.where, true).where ?? [] });
    },
    async consumeOne(data) {
      if (!isSession(data.model)) return adapter.consumeOne(data);
      const { where, raw } = translate(data.where, false);
      return shown(await adapter.consumeOne({ ...data, where: where ?? [] }), raw);
    },
    async incrementOne(data) {
      if (!isSession(data.model)) return adapter.incrementOne(data);
      const { where, raw } = translate(data.where, false);
      return shown(await adapter.incrementOne({ ...data, where: where ?? [] }), raw);
    },
    transaction(callback) {
      return adapter.transaction((trx) => callback(wrap(trx as DBAdapter<BetterAuthOptions>)));
    },
  };
  return wrapped;
}
