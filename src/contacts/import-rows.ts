/**
 * The CSV import's row work, free of the database: the parser's options, one
 * record checked into a contact, and a batch of checked rows (a number twice
 * in the batch folded into one row) written out as the text COPY loads into
 * the staging table. The import's worker thread runs this (import-worker.ts).
 */
import type { Options } from "csv-parse";
import { isStorable } from "../http/storable.js";
import type { Definitions } from "./attributes.js";
import { normalisePhone } from "./phone.js";
import { checkAttributeValue, TAG_MAX_LENGTH, TAGS_MAX } from "./values.js";

/** `;` when the header line has more semicolons than commas (outside quotes), else `,`. */
export function detectDelimiter(bytes: Uint8Array): "," | ";" {
  let commas = 0;
  let semis = 0;
  let quoted = false;
  const end = Math.min(bytes.length, 64 * 1024);
  for (let i = 0; i < end; i++) {
    const c = bytes[i];
    if (c === 0x22) quoted = !quoted;
    else if (!quoted && (c === 0x0a || c === 0x0d)) break;
    else if (!quoted && c === 0x2c) commas++;
    else if (!quoted && c === 0x3b) semis++;
  }
  return semis > commas ? ";" : ",";
}

export const parserOptions = (delimiter: string): Options => ({
  bom: true,
  delimiter,
  relax_column_count: true,
  skip_empty_lines: true,
  max_record_size: 64 * 1024,
});

export interface Prepared {
  phone: string;
  name: string | null;
  tags: string[];
  attributes: Record<string, string>;
}

export interface RowError {
  row: number;
  value: string | null;
  reason: string;
}

export interface RowPlan {
  index: Record<string, number>;
  definitions: Definitions;
  defaultCountry: string | null;
  addTags: string[];
}

/** Splits a tags cell (`,`, `;` or `|` separated). */
const splitTags = (cell: string) =>
  cell
    .split(/[,;|]/)
    .map((t) => t.trim())
    .filter((t) => t !== "");

/** One CSV record as a contact, or why it cannot be one. */
export function prepareRow(
  record: string[],
  plan: RowPlan,
): Prepared | { value: string | null; reason: string } {
  const cell = (field: string) => {
    const i = plan.index[field];
    return i === undefined ? undefined : (record[i] ?? "");
  };
  const rawPhone = cell("phone") ?? "";
  const phone = normalisePhone(rawPhone, plan.defaultCountry);
  if (!phone)
    return {
      value: rawPhone,
      reason: rawPhone.trim() === "" ? "phone is empty" : "not a valid phone number",
    };
  const rawName = cell("name")?.trim();
  if (rawName !== undefined && (rawName.length > 200 || !isStorable(rawName)))
    return { value: rawName.slice(0, 200), reason: "name: must be at most 200 characters of text" };
  const tagsCell = cell("tags") ?? "";
  const tags =
    tagsCell === "" && plan.addTags.length === 0
      ? []
      : [...new Set([...splitTags(tagsCell), ...plan.addTags])];
  if (tags.length > TAGS_MAX) return { value: cell("tags") ?? null, reason: `tags: at most ${TAGS_MAX}` };
  const badTag = tags.find((t) => t.length > TAG_MAX_LENGTH || !isStorable(t));
  if (badTag) return { value: badTag, reason: `tags: each at most ${TAG_MAX_LENGTH} characters of text` };
  const attributes: Record<string, string> = {};
  for (const field in plan.index) {
    if (!field.startsWith("attributes.")) continue;
    const raw = cell(field) ?? "";
    if (raw.trim() === "") continue;
    const key = field.slice(11);
    const checked = checkAttributeValue(plan.definitions.get(key), raw);
    if ("problem" in checked) return { value: raw, reason: `attributes.${key}: ${checked.problem}` };
    if (checked.value.length > 1024 || !isStorable(checked.value))
      return {
        value: raw.slice(0, 200),
        reason: `attributes.${key}: must be at most 1024 characters of text`,
      };
    attributes[key] = checked.value;
  }
  return { phone, name: rawName ? rawName : null, tags, attributes };
}

// ---------------------------------------------------------------- a batch

/** The staging table's columns, in COPY's order. */
export const STAGE_COLUMNS = "phone, name, tags, attributes";
/** Tags travel joined by this character (never in a storable tag). */
export const TAG_SEPARATOR = "\u001f";

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };
/** A value in COPY's text format. */
const copyText = (value: string | null) =>
  value === null
    ? "\\N"
    : COPY_SPECIAL.test(value)
      ? value.replace(COPY_SPECIALS, (c) => COPY_ESCAPES[c]!)
      : value;

/** What a finished batch hands to the writer. */
export interface Batch {
  /** The rows to write, in COPY's text format (one line a distinct number). */
  copy: Uint8Array;
  /** Lines in `copy`. */
  rows: number;
  /** Records of the file the batch covers (rows, repeats folded into them, errors). */
  records: number;
  errors: RowError[];
}

/**
 * Collects checked rows: a number already in the batch is folded into its
 * first row (update: name when given, tags added, attributes merged, so the
 * last row of the file wins; skip: the first row stands).
 */
export class BatchBuilder {
  private rows: Prepared[] = [];
  private byPhone = new Map<string, number>();
  private errors: RowError[] = [];
  records = 0;
  /** Characters of the records so far (a batch of wide rows is handed over before it is long). */
  size = 0;

  constructor(private readonly update: boolean) {}

  add(row: number, record: string[], plan: RowPlan) {
    this.records += 1;
    for (const cell of record) this.size += cell.length;
    const prepared = prepareRow(record, plan);
    if ("reason" in prepared) {
      this.errors.push({ row, value: prepared.value, reason: prepared.reason });
      return;
    }
    const seen = this.byPhone.get(prepared.phone);
    if (seen === undefined) {
      this.byPhone.set(prepared.phone, this.rows.length);
      this.rows.push(prepared);
    } else if (this.update) {
      const earlier = this.rows[seen]!;
      this.rows[seen] = {
        phone: prepared.phone,
        name: prepared.name ?? earlier.name,
        tags: [...new Set([...earlier.tags, ...prepared.tags])],
        attributes: { ...earlier.attributes, ...prepared.attributes },
      };
    }
  }

  /** The batch so far, and a fresh start. */
  take(): Batch {
    let text = "";
    for (const r of this.rows) {
      text += `${r.phone}\t${copyText(r.name)}\t${copyText(r.tags.join(TAG_SEPARATOR))}\t${copyText(JSON.stringify(r.attributes))}\n`;
    }
    const batch = {
      copy: new TextEncoder().encode(text),
      rows: this.rows.length,
      records: this.records,
      errors: this.errors,
    };
    this.rows = [];
    this.byPhone = new Map();
    this.errors = [];
    this.records = 0;
    this.size = 0;
    return batch;
  }
}
