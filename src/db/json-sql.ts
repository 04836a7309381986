import { getTableColumns, getTableName, type Table } from "drizzle-orm";

/**
 * The API's JSON of a row, written once (its TypeScript serializer) and read
 * back as SQL: the serializer is called on a sample row whose every column
 * holds a value of its own, and a field that comes back holding a column's
 * value is that column in SQL (timestamps formatted as Date#toJSON), in the
 * serializer's order. A field computed from several columns has its SQL given
 * beside it; a field neither found nor given throws, so a serializer that
 * gains a computed field cannot drift from its SQL unnoticed.
 *
 * Used where PostgreSQL builds the JSON itself: the event data functions
 * (src/events/resource-sql.ts) and the flow read (src/flows/service.ts).
 */

type Row = Record<string, unknown>;

/** SQL of a timestamp column as Date#toJSON writes it; `%` stands for the table's alias. */
export type TimestampSql = (column: string) => string;

/** The migrations' `api_timestamp(t)`: to_char in UTC with milliseconds. */
export const apiTimestamp: TimestampSql = (column) => `api_timestamp(${column})`;

/** The same format inline (no function call), for the hottest statements. */
export const inlineTimestamp: TimestampSql = (column) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A row of `table` whose every column holds a value no other column (of any table) holds. */
export function sampleRow(
  table: Table,
  base: number,
  timestamp: TimestampSql = apiTimestamp,
): { row: Row; sql: Map<unknown, string> } {
  const row: Row = {};
  const sql = new Map<unknown, string>();
  Object.entries(getTableColumns(table)).forEach(([property, column], i) => {
    if (column.dataType === "date") {
      const at = new Date(Date.UTC(2001, 0, 1) + (base + i) * 60_000);
      row[property] = at;
      sql.set(at.getTime(), timestamp(`%.${column.name}`));
    } else {
      const marker = `\u0001${getTableName(table)}.${column.name}`;
      row[property] = marker;
      sql.set(marker, `%.${column.name}`);
    }
  });
  return { row, sql };
}

/**
 * `[field, expression]` of the JSON that `serialize` builds from a row of
 * `table` (aliased `alias` in SQL), in the serializer's order; `computed` gives
 * the SQL of the fields that are not one column.
 */
export function jsonFieldExpressions(
  table: Table,
  alias: string,
  serialize: (row: Row) => object,
  options: { computed?: Record<string, string>; timestamp?: TimestampSql } = {},
): Array<[field: string, expression: string]> {
  const { row, sql } = sampleRow(table, 0, options.timestamp);
  return Object.entries(serialize(row)).map(([field, value]) => {
    const key = value instanceof Date ? value.getTime() : value;
    const expression = options.computed?.[field] ?? sql.get(key)?.replaceAll("%", alias);
    if (expression === undefined) {
      throw new Error(`${getTableName(table)} JSON: "${field}" is not one column; give its SQL in computed`);
    }
    return [field, expression];
  });
}

/** `'field', expression` pairs for json_build_object (see jsonFieldExpressions). */
export function jsonFieldsSql(...args: Parameters<typeof jsonFieldExpressions>): string[] {
  return jsonFieldExpressions(...args).map(([field, expression]) => `'${field}', ${expression}`);
}

/**
 * `expression as "field"` items of a select list whose row, given to row_to_json,
 * is the serializer's JSON (compact: no blanks around `:` and `,`, unlike
 * json_build_object, and about a fifth cheaper for PostgreSQL to build).
 */
export function jsonColumnsSql(...args: Parameters<typeof jsonFieldExpressions>): string[] {
  return jsonFieldExpressions(...args).map(([field, expression]) => `${expression} as "${field}"`);
}
