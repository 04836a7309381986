/** Writing CSV cells and rows (RFC 4180), safe to open in a spreadsheet. */

const NEEDS_QUOTES = /[",\r\n]/;
// A cell a spreadsheet would run as a formula; plain numbers (-5, +3.2) are left alone.
const FORMULA = /^[=+\-@\t\r]/;
const NUMBER = /^[+-]?\d+(\.\d+)?$/;

export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = value instanceof Date ? value.toISOString() : String(value);
  if (FORMULA.test(text) && !NUMBER.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvRow = (values: readonly unknown[]) => `${values.map(csvCell).join(",")}\r\n`;
