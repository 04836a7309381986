import { getTableColumns, type InferSelectModel, type Table } from "drizzle-orm";

/** A row of `table` read by raw SQL (`returning *`), as drizzle's query builder gives it. */
export function tableRow<T extends Table>(table: T, raw: Record<string, unknown>): InferSelectModel<T> {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as InferSelectModel<T>;
}
