/**
 * CSV import of contacts. The request stores the file (bytea, with the import
 * row and its job, in one transaction: the file survives a crash until the
 * job has read it); the job streams it through csv-parse and writes each
 * batch of rows with a few set-based statements in one transaction that also
 * moves the import's counters, so a job run again after a crash goes on from
 * the last committed batch.
 */

import { Readable } from "node:stream";
import { type Options, parse } from "csv-parse";
import { eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { ContactImport } from "../contracts/contacts.js";
import type { Db, DbOrTx } from "../db/client.js";
import { contactImportErrors, contactImportFiles, contactImports } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { isStorable } from "../http/input.js";
import { addJob } from "../jobs/queue.js";
import { checkAttributeValue, type Definitions, definitionMap } from "./attributes.js";
import { ATTRIBUTE_KEY_MAX_LENGTH, TAG_MAX_LENGTH, TAGS_MAX } from "./fields.js";
import { normalisePhone } from "./phone.js";

export const IMPORT_TASK = "import-contacts";
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;
/** Rows written per transaction. */
export const IMPORT_BATCH = 2_000;
/** A progress event at most this often (and one at the end). */
const EVENT_EVERY_MS = 1_000;

type ImportRow = typeof contactImports.$inferSelect;

export const toImportJson = (i: ImportRow): z.infer<typeof ContactImport> => ({
  id: i.id,
  status: i.status,
  filename: i.filename,
  mapping: i.mapping,
  on_duplicate: i.onDuplicate,
  total_rows: i.totalRows,
  processed_rows: i.processedRows,
  created: i.created,
  updated: i.updated,
  skipped: i.skipped,
  errors: i.errors,
  failure: i.failure,
  created_at: i.createdAt,
  updated_at: i.updatedAt,
});

// ---------------------------------------------------------------- reading the file

/** Why the bytes are not a text CSV file, or null. */
export function notCsvProblem(bytes: Buffer): string | null {
  if (bytes.length === 0) return "The file is empty";
  const head = bytes.subarray(0, 64 * 1024);
  if (head.includes(0)) return "The file is not CSV: it holds binary data";
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: true });
  } catch {
    return "The file is not CSV: it is not UTF-8 text";
  }
  return null;
}

/** `;` when the header line has more semicolons than commas (outside quotes), else `,`. */
export function detectDelimiter(bytes: Buffer): "," | ";" {
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

const parserOptions = (delimiter: string): Options => ({
  bom: true,
  delimiter,
  relax_column_count: true,
  skip_empty_lines: true,
  max_record_size: 64 * 1024,
});

/** A streaming parser over the bytes (records are arrays of strings). */
export const csvRecords = (bytes: Buffer) =>
  Readable.from([bytes]).pipe(parse(parserOptions(detectDelimiter(bytes))));

/** Read from the stored file a piece at a time, so the job's memory does not grow with the file. */
const FILE_CHUNK = 1024 * 1024;

async function* storedFile(db: DbOrTx, importId: string, size: number) {
  for (let offset = 0; offset < size; offset += FILE_CHUNK) {
    const { rows } = await db.execute<{ piece: Buffer }>(
      sql`select substring(data from ${offset + 1} for ${FILE_CHUNK}) as piece
            from ${contactImportFiles} where import_id = ${importId}`,
    );
    const piece = rows[0]?.piece;
    if (!piece) throw new Error("The uploaded file is gone");
    yield piece;
  }
}

/** countRecords over a stream of pieces. */
async function countStoredRecords(pieces: AsyncIterable<Buffer>) {
  const counter = recordCounter();
  for await (const piece of pieces) counter.add(piece);
  return counter.total();
}

/**
 * The number of data records (header excluded): newlines outside quotes that
 * end a non-empty line. A quick pass, for the progress bar.
 */
export function countRecords(bytes: Buffer): number {
  const counter = recordCounter();
  counter.add(bytes);
  return counter.total();
}

function recordCounter() {
  let records = 0;
  let quoted = false;
  let lineHasContent = false;
  return {
    add(bytes: Buffer) {
      for (let i = 0; i < bytes.length; i++) {
        const c = bytes[i];
        if (c === 0x22) {
          quoted = !quoted;
          lineHasContent = true;
        } else if (!quoted && (c === 0x0a || c === 0x0d)) {
          if (lineHasContent) records++;
          lineHasContent = false;
        } else lineHasContent = true;
      }
    },
    total: () => Math.max(0, records + (lineHasContent ? 1 : 0) - 1),
  };
}

const csvError = (error: unknown) => {
  const message = (error as Error).message ?? String(error);
  return new ApiError(400, `The file is not valid CSV: ${message}`);
};

/** The header's columns and the first `n` rows; 400 when the file is not CSV or has no header. */
export async function readHead(bytes: Buffer, n: number) {
  const problem = notCsvProblem(bytes);
  if (problem) throw new ApiError(400, problem);
  const parser = csvRecords(bytes);
  let columns: string[] | null = null;
  const rows: string[][] = [];
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!columns) columns = record.map((c) => c.trim());
      else rows.push(record);
      if (rows.length >= n) break;
    }
  } catch (error) {
    throw csvError(error);
  } finally {
    parser.destroy();
  }
  if (!columns || columns.every((c) => c === "")) throw new ApiError(400, "The file has no header row");
  const seen = new Set<string>();
  for (const column of columns) {
    if (column !== "" && seen.has(column))
      throw new ApiError(400, `The header names the column "${column}" twice`);
    seen.add(column);
  }
  return { columns, rows };
}

// ---------------------------------------------------------------- mapping

/** Where a CSV column goes: `phone`, `name`, `tags` or `attributes.<key>`. */
export type Mapping = Record<string, string>;

const slug = (column: string) =>
  column
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .trim()
    .replace(/[^a-z0-9_.-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, ATTRIBUTE_KEY_MAX_LENGTH);

const PHONE_NAMES = new Set([
  "phone",
  "phone_number",
  "mobile",
  "mobile_number",
  "cell",
  "whatsapp",
  "number",
  "msisdn",
  "telefone",
  "telefono",
  "celular",
  "tel",
]);
const NAME_NAMES = new Set([
  "name",
  "full_name",
  "fullname",
  "contact",
  "contact_name",
  "customer",
  "nome",
  "nombre",
]);
const TAG_NAMES = new Set(["tags", "tag", "labels", "label", "segments"]);

/** A first guess of the mapping from the header: phone, name and tags by their usual names, the rest as attributes. */
export function suggestMapping(columns: string[], definitions: Definitions): Mapping {
  const mapping: Mapping = {};
  for (const column of columns) {
    const key = slug(column);
    if (!key) continue;
    if (!mapping.phone && PHONE_NAMES.has(key)) mapping.phone = column;
    else if (!mapping.name && NAME_NAMES.has(key)) mapping.name = column;
    else if (!mapping.tags && TAG_NAMES.has(key)) mapping.tags = column;
    else {
      const defined = [...definitions.keys()].find((k) => k.toLowerCase() === key);
      const field = `attributes.${defined ?? key}`;
      if (!(field in mapping)) mapping[field] = column;
    }
  }
  return mapping;
}

const ATTRIBUTE_KEY = /^[A-Za-z0-9_.-]+$/;

/** 400 naming the problem when the mapping is not one the file can fill. */
export function checkMapping(mapping: unknown, columns: string[]): Mapping {
  if (typeof mapping !== "object" || mapping === null || Array.isArray(mapping)) {
    throw new ApiError(400, "mapping: must be a JSON object of field: column");
  }
  const checked: Mapping = {};
  for (const [field, column] of Object.entries(mapping)) {
    if (typeof column !== "string") throw new ApiError(400, `mapping.${field}: must be a column name`);
    const known =
      field === "phone" ||
      field === "name" ||
      field === "tags" ||
      (field.startsWith("attributes.") &&
        ATTRIBUTE_KEY.test(field.slice(11)) &&
        field.length - 11 <= ATTRIBUTE_KEY_MAX_LENGTH);
    if (!known) {
      throw new ApiError(
        400,
        `mapping.${field}: not a contact field (phone, name, tags or attributes.<key>)`,
      );
    }
    if (!columns.includes(column))
      throw new ApiError(400, `mapping.${field}: the file has no column "${column}"`);
    checked[field] = column;
  }
  if (!checked.phone)
    throw new ApiError(400, "mapping.phone: is required (the column holding the phone numbers)");
  return checked;
}

// ---------------------------------------------------------------- the job

interface Prepared {
  phone: string;
  name: string | null;
  tags: string[];
  attributes: Record<string, string>;
}

interface RowError {
  row: number;
  value: string | null;
  reason: string;
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
  plan: {
    index: Record<string, number>;
    definitions: Definitions;
    defaultCountry: string | null;
    addTags: string[];
  },
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
  const tags = [...new Set([...splitTags(cell("tags") ?? ""), ...plan.addTags])];
  if (tags.length > TAGS_MAX) return { value: cell("tags") ?? null, reason: `tags: at most ${TAGS_MAX}` };
  const badTag = tags.find((t) => t.length > TAG_MAX_LENGTH || !isStorable(t));
  if (badTag) return { value: badTag, reason: `tags: each at most ${TAG_MAX_LENGTH} characters of text` };
  const attributes: Record<string, string> = {};
  for (const field of Object.keys(plan.index)) {
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

/**
 * Writes one batch: new numbers are inserted; existing ones (by WhatsApp id
 * or phone, including rows earlier in this file) are updated (name when
 * given, tags added, attributes merged) or skipped. Returns the counts.
 */
async function writeBatch(
  tx: DbOrTx,
  input: { accountId: string; rows: Prepared[]; update: boolean; optInSource: string | null; now: Date },
) {
  const { rows } = input;
  const phones = rows.map((r) => r.phone);
  const names = rows.map((r) => r.name);
  const tags = rows.map((r) => r.tags.join("\u001f"));
  const attrs = rows.map((r) => JSON.stringify(r.attributes));
  const now = input.now.toISOString();
  const result = await tx.execute<{ created: number; updated: number; existing: number }>(sql`
    with input as (
      select * from unnest(${sql.param(phones)}::text[], ${sql.param(names)}::text[], ${sql.param(tags)}::text[],
                           ${sql.param(attrs)}::text[])
        as i(phone, name, tags, attributes)
    ), matched as (
      select i.*, coalesce(
               (select c.id from contacts c where c.account_id = ${input.accountId} and c.wa_id = i.phone),
               (select c.id from contacts c where c.account_id = ${input.accountId} and c.phone = i.phone limit 1)
             ) as contact_id
        from input i
    ), inserted as (
      insert into contacts (account_id, wa_id, phone, name, tags, attributes, opt_in_source, opted_in_at,
                            created_at, updated_at)
      select ${input.accountId}, m.phone, m.phone, m.name,
             case when m.tags = '' then '{}'::text[] else string_to_array(m.tags, E'\\x1f') end,
             m.attributes::jsonb, ${input.optInSource}::text,
             case when ${input.optInSource}::text is null then null else ${now}::timestamptz end,
             ${now}::timestamptz, ${now}::timestamptz
        from matched m where m.contact_id is null
      on conflict (account_id, wa_id) do nothing
      returning 1
    ), updated as (
      update contacts c set
        name = coalesce(m.name, c.name),
        tags = array(select distinct t from unnest(c.tags || case when m.tags = '' then '{}'::text[]
                                                               else string_to_array(m.tags, E'\\x1f') end) t),
        attributes = c.attributes || m.attributes::jsonb,
        opt_in_source = coalesce(${input.optInSource}::text, c.opt_in_source),
        opted_in_at = case when ${input.optInSource}::text is null then c.opted_in_at else ${now}::timestamptz end,
        updated_at = ${now}::timestamptz
        from matched m
       where ${input.update} and c.id = m.contact_id
      returning 1
    )
    select (select count(*)::int from inserted) as created,
           (select count(*)::int from updated) as updated,
           (select count(*)::int from matched where contact_id is not null) as existing`);
  const row = result.rows[0]!;
  return {
    created: row.created,
    updated: row.updated,
    // Existing numbers not updated, and numbers a concurrent writer took meanwhile.
    skipped: rows.length - row.created - row.updated,
  };
}

const importEvent = (tx: DbOrTx, i: ImportRow) =>
  tx.execute(
    sql`select record_account_event(${i.accountId}, 'contact_import.updated', ${JSON.stringify(toImportJson(i))}::json)`,
  );

/** Saves the counters (and status), with a `contact_import.updated` event. */
async function saveProgress(tx: DbOrTx, id: string, set: Partial<ImportRow>) {
  const [row] = await tx.update(contactImports).set(set).where(eq(contactImports.id, id)).returning();
  if (row) await importEvent(tx, row);
  return row;
}

/**
 * Runs (or, after a crash, resumes) an import: the records after the last
 * committed batch are read, checked and written in batches; the file is
 * deleted when the import ends.
 */
export async function runImport(deps: Pick<AppDeps, "db" | "now" | "log">, importId: string) {
  const { db } = deps;
  const [found] = await db.select().from(contactImports).where(eq(contactImports.id, importId));
  if (!found || found.status === "completed" || found.status === "failed") return;
  const [file] = await db
    .select({ size: sql<number>`octet_length(${contactImportFiles.data})`.mapWith(Number) })
    .from(contactImportFiles)
    .where(eq(contactImportFiles.importId, importId));
  if (!file) {
    await saveProgress(db, importId, {
      status: "failed",
      failure: "The uploaded file is gone",
      updatedAt: deps.now(),
    });
    return;
  }
  let current: ImportRow = found;
  const pieces = () => storedFile(db, importId, file.size);
  if (current.status === "queued" || current.totalRows === null) {
    current =
      (await saveProgress(db, importId, {
        status: "running",
        totalRows: await countStoredRecords(pieces()),
        updatedAt: deps.now(),
      })) ?? current;
  }
  const definitions = await definitionMap(db, current.accountId);
  const [head] = await db
    .execute<{ piece: Buffer }>(
      sql`select substring(data from 1 for 65536) as piece from ${contactImportFiles} where import_id = ${importId}`,
    )
    .then((r) => r.rows);
  const parser = Readable.from(pieces()).pipe(
    parse(parserOptions(detectDelimiter(head?.piece ?? Buffer.alloc(0)))),
  );
  let header: string[] | null = null;
  let plan: Parameters<typeof prepareRow>[1] | null = null;
  let recordNo = 0;
  const skipUntil = current.processedRows;
  let batch: Prepared[] = [];
  let errors: RowError[] = [];
  let batchRecords = 0;
  let lastEventAt = 0;
  // Rows of the batch by phone: a number twice in one batch is written once (update: the last wins).
  let byPhone = new Map<string, number>();
  const update = current.onDuplicate === "update";

  const flush = async (final: boolean) => {
    const rows = batch;
    const rowErrors = errors;
    const records = batchRecords;
    batch = [];
    errors = [];
    batchRecords = 0;
    byPhone = new Map();
    const now = deps.now();
    const next = await db.transaction(async (tx) => {
      const counts =
        rows.length > 0
          ? await writeBatch(tx, {
              accountId: current.accountId,
              rows,
              update,
              optInSource: current.optInSource,
              now,
            })
          : { created: 0, updated: 0, skipped: 0 };
      if (rowErrors.length > 0) {
        await tx
          .insert(contactImportErrors)
          .values(rowErrors.map((e) => ({ importId, ...e })))
          .onConflictDoNothing();
      }
      // Repeats of a number within the batch, folded into its first row.
      const repeats = records - rows.length - rowErrors.length;
      const set = {
        processedRows: current.processedRows + records,
        created: current.created + counts.created,
        updated: current.updated + counts.updated + (update ? repeats : 0),
        skipped: current.skipped + counts.skipped + (update ? 0 : repeats),
        errors: current.errors + rowErrors.length,
        updatedAt: now,
        ...(final && { status: "completed" as const, totalRows: current.processedRows + records }),
      };
      const emit = final || now.getTime() - lastEventAt >= EVENT_EVERY_MS;
      const [row] = await tx
        .update(contactImports)
        .set(set)
        .where(eq(contactImports.id, importId))
        .returning();
      if (emit && row) {
        lastEventAt = now.getTime();
        await importEvent(tx, row);
      }
      if (final) await tx.delete(contactImportFiles).where(eq(contactImportFiles.importId, importId));
      return row;
    });
    if (next) current = next;
  };

  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!header) {
        header = record.map((c) => c.trim());
        const index: Record<string, number> = {};
        for (const [field, column] of Object.entries(current.mapping)) {
          const at = header.indexOf(column);
          if (at < 0) throw new ApiError(400, `the file has no column "${column}"`);
          index[field] = at;
        }
        plan = { index, definitions, defaultCountry: current.defaultCountry, addTags: current.addTags };
        continue;
      }
      recordNo += 1;
      if (recordNo <= skipUntil) continue;
      batchRecords += 1;
      // The spreadsheet's row number: the header is row 1.
      const row = recordNo + 1;
      const prepared = prepareRow(record, plan!);
      if ("reason" in prepared) errors.push({ row, value: prepared.value, reason: prepared.reason });
      else {
        const seen = byPhone.get(prepared.phone);
        if (seen === undefined) {
          byPhone.set(prepared.phone, batch.length);
          batch.push(prepared);
        } else if (update) {
          const earlier = batch[seen]!;
          batch[seen] = {
            phone: prepared.phone,
            name: prepared.name ?? earlier.name,
            tags: [...new Set([...earlier.tags, ...prepared.tags])],
            attributes: { ...earlier.attributes, ...prepared.attributes },
          };
        }
        // (skip: the first row of a number stands; the repeat is counted as skipped.)
      }
      if (batchRecords >= IMPORT_BATCH) await flush(false);
    }
    await flush(true);
  } catch (error) {
    parser.destroy();
    const reason =
      error instanceof ApiError ? error.message : `row ${recordNo + 1}: ${(error as Error).message}`;
    // What was committed stays (and is counted); the import stops here.
    await db.transaction(async (tx) => {
      await saveProgress(tx, importId, { status: "failed", failure: reason, updatedAt: deps.now() });
      await tx.delete(contactImportFiles).where(eq(contactImportFiles.importId, importId));
    });
    deps.log.warn({ importId, reason }, "contact import failed");
  }
}

/** Stores the import, its file and its job in one transaction. */
export async function createImport(
  db: Db,
  input: {
    accountId: string;
    bytes: Buffer;
    filename: string | null;
    mapping: Mapping;
    defaultCountry: string | null;
    onDuplicate: "update" | "skip";
    addTags: string[];
    optInSource: string | null;
    now: Date;
  },
) {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(contactImports)
      .values({
        accountId: input.accountId,
        filename: input.filename,
        mapping: input.mapping,
        defaultCountry: input.defaultCountry,
        onDuplicate: input.onDuplicate,
        addTags: input.addTags,
        optInSource: input.optInSource,
        createdAt: input.now,
        updatedAt: input.now,
      })
      .returning();
    await tx.insert(contactImportFiles).values({ importId: row!.id, data: input.bytes });
    await addJob(
      tx,
      IMPORT_TASK,
      { import_id: row!.id },
      { jobKey: `${IMPORT_TASK}:${row!.id}`, maxAttempts: 5 },
    );
    await importEvent(tx, row!);
    return row!;
  });
}

/** The import, or null when it is not the account's. */
export async function getImport(db: DbOrTx, accountId: string, id: string) {
  const [row] = await db.select().from(contactImports).where(eq(contactImports.id, id));
  return row && row.accountId === accountId ? row : null;
}
