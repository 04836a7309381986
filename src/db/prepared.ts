import { createHash } from "node:crypto";
import { type SQL, sql } from "drizzle-orm";
import type pg from "pg";

/**
 * Named prepared statements for the hottest statements of the webhook and
 * runner path. PostgreSQL plans a big CTE (storing a customer message takes
 * one) in about as long as it runs it; a statement that is prepared is parsed
 * once per connection and, once PostgreSQL finds a generic plan as good as a
 * fresh one, planned once too.
 *
 * Only statements marked with `prepared()` are prepared: a generic plan cannot
 * use a partial index whose predicate the statement passes as a parameter
 * (drizzle's `eq(status, "active")` does), so statements are chosen by hand,
 * with such values written as literals.
 */
const MARK = "/* prepared */ ";

/** The statement, marked to run as a named prepared statement on the app's connections. */
export const prepared = (query: SQL): SQL => sql`${sql.raw(MARK)}${query}`;

/** The same, for a statement written as text (the job queue's own pool). */
export const preparedText = (text: string): string => MARK + text;

/** Gives each new connection of the pool the naming of marked statements. */
export function prepareMarkedStatements(pool: pg.Pool): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      // query(text, values?, callback?) as well as query({ text, values, ... }).
      if (typeof config === "string" && config.startsWith(MARK)) {
        const [values, ...more] = Array.isArray(rest[0]) ? rest : [undefined, ...rest];
        return query({ text: config, values, name: nameOf(config) }, ...more);
      }
      return query(named(config), ...rest);
    };
  });
}

/** A query config whose text is marked gets its name (one per distinct text). */
function named(config: unknown): unknown {
  if (typeof config !== "object" || config === null) return config;
  const { text, name } = config as { text?: unknown; name?: unknown };
  if (name !== undefined || typeof text !== "string" || !text.startsWith(MARK)) return config;
  return { ...config, name: nameOf(text) };
}

const nameOf = (text: string) => `p_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
