/**
 * CSV import of contacts. The request stores the file (bytea, with the import
 * row and its job, in one transaction: the file survives a crash until the
 * job has read it); the job streams it through csv-parse and writes each
 * batch of rows with a few set-based statements in one transaction that also
 * moves the import's counters, so a job run again after a crash goes on from
 * the last committed batch.
 */

import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Worker } from "node:worker_threads";
import { parse } from "csv-parse";
import { eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { z } from "zod";
import type { ContactImport } from "../contracts/contacts.js";
import type { Db, DbOrTx } from "../db/client.js";
import * as schema from "../db/schema/index.js";
import { contactImportErrors, contactImportFiles, contactImports } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { addJob } from "../queue/add.js";
import { type Definitions, definitionMap } from "./attributes.js";
import { filePiece, storedFile } from "./import-file.js";
import { type Batch, detectDelimiter, parserOptions, STAGE_COLUMNS } from "./import-rows.js";
import type { FromParser, ParseJob, ToParser } from "./import-worker.js";
import { ATTRIBUTE_KEY_MAX_LENGTH, isAttributeKey } from "./values.js";

export const IMPORT_TASK = "import-contacts";
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;
/** Records per batch (one COPY and a few set-based statements in one transaction). */
export const IMPORT_BATCH = 10_000;
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

/** The bytes 64 KB at a time: csv-parse parses a whole chunk at once, whoever stops reading. */
function* slices(bytes: Buffer) {
  for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
}

/** A streaming parser over the bytes (records are arrays of strings), parsing no further than read. */
export const csvRecords = (bytes: Buffer) =>
  Readable.from(slices(bytes), { highWaterMark: 1 }).pipe(parse(parserOptions(detectDelimiter(bytes))));

/** The records (header excluded) in a stream of pieces: newlines outside quotes that end a non-empty line. */
async function countStoredRecords(pieces: AsyncIterable<Buffer>) {
  const counter = recordCounter();
  for await (const piece of pieces) counter.add(piece);
  return counter.total();
}

/** How much of the file's beginning the upload keeps in memory: the header and the rows a preview shows. */
const HEAD_BYTES = 1024 * 1024;

/** The uploaded file, on disk: its size, its first bytes and its records (header excluded). */
export interface SpooledFile {
  path: string;
  size: number;
  /** The first HEAD_BYTES (the whole file when it is smaller). */
  head: Buffer;
  /** Whether `head` is the whole file. */
  whole: boolean;
  records: number;
}

/**
 * Writes the upload to `path` as it arrives (at most `maxBytes`, else 413),
 * keeping only its beginning in memory and counting its records on the way:
 * a 50 MB file costs the service a megabyte, not 50.
 */
export async function spoolFile(stream: AsyncIterable<Buffer>, path: string, maxBytes: number) {
  const head = Buffer.allocUnsafe(HEAD_BYTES);
  let headLength = 0;
  let size = 0;
  const counter = recordCounter();
  const out = await open(path, "wx", 0o600);
  try {
    for await (const piece of stream) {
      size += piece.length;
      if (size > maxBytes) throw new ApiError(413, `The file is larger than ${maxBytes / 2 ** 20} MB`);
      if (headLength < HEAD_BYTES) headLength += piece.copy(head, headLength);
      counter.add(piece);
      await out.write(piece);
    }
  } finally {
    await out.close();
  }
  return {
    path,
    size,
    head: head.subarray(0, headLength),
    whole: size === headLength,
    records: counter.total(),
  } satisfies SpooledFile;
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

/**
 * The header's columns and the first `n` rows; 400 when the file is not CSV or
 * has no header. `whole` says whether `bytes` is the whole file or only its
 * beginning, whose last line may be cut: then the rows stop before it.
 */
export async function readHead(bytes: Buffer, n: number, whole = true) {
  const problem = notCsvProblem(bytes);
  if (problem) throw new ApiError(400, problem);
  const cut = whole ? bytes : bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
  const parser = csvRecords(cut);
  let columns: string[] | null = null;
  const rows: string[][] = [];
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!columns) columns = record.map((c) => c.trim());
      else rows.push(record);
      if (rows.length >= n) break;
    }
  } catch (error) {
    // A quoted field running past the beginning read: the job reads it whole.
    if (whole || !columns) throw csvError(error);
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
      (field.startsWith("attributes.") && isAttributeKey(field.slice("attributes.".length)));
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

/**
 * Writes one batch from the staging table (distinct numbers, COPYed in this
 * transaction): new numbers are inserted; existing ones (by WhatsApp id or
 * phone, including rows of earlier batches of this file) are updated (name
 * when given, tags added, attributes merged) or skipped. Returns the counts.
 */
async function writeBatch(
  tx: DbOrTx,
  input: { accountId: string; rows: number; update: boolean; optInSource: string | null; now: Date },
) {
  const now = input.now.toISOString();
  // The contacts the numbers have already, found before any row is written: one statement that
  // also inserted would scan, row after row, the rows it had just added.
  await tx.execute(sql`
    update ${sql.raw(STAGE)} i set contact_id = coalesce(
             (select c.id from contacts c where c.account_id = ${input.accountId} and c.wa_id = i.phone),
             (select c.id from contacts c where c.account_id = ${input.accountId} and c.phone = i.phone limit 1)
           )`);
  const result = await tx.execute<{ created: number; updated: number; existing: number }>(sql`
    with matched as (
      select * from ${sql.raw(STAGE)}
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
    skipped: input.rows - row.created - row.updated,
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

/** The temporary table each batch is COPYed into (dropped at the batch's commit). */
const STAGE = "contact_import_stage";

/** The parsing thread's heap: the batches it builds stay far below; a runaway fails the import, not the service. */
const PARSER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 4 };

/** Starts the parsing thread (under tsx, as in the tests, from the TypeScript source). */
function startParser(job: ParseJob) {
  const here = import.meta.url;
  if (here.endsWith(".ts")) {
    const file = new URL("./import-worker.ts", here).href;
    // (The eval'd code resolves tsx from the working directory: the project's.)
    return new Worker(
      `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(file)}); })`,
      { eval: true, workerData: job, resourceLimits: PARSER_LIMITS },
    );
  }
  return new Worker(new URL("./import-worker.js", here), { workerData: job, resourceLimits: PARSER_LIMITS });
}

/** COPYs the batch's rows into a fresh staging table on the transaction's connection. */
async function stageRows(client: pg.PoolClient, tx: DbOrTx, copy: Uint8Array) {
  await tx.execute(
    sql.raw(
      `create temp table ${STAGE} (phone text not null, name text, tags text not null, attributes text not null, contact_id uuid) on commit drop`,
    ),
  );
  if (copy.byteLength === 0) return;
  const stream = client.query(copyFrom(`copy ${STAGE} (${STAGE_COLUMNS}) from stdin`));
  await pipeline(Readable.from([Buffer.from(copy.buffer, copy.byteOffset, copy.byteLength)]), stream);
}

/**
 * Runs (or, after a crash, resumes) an import: a worker thread parses and
 * checks the records after the last committed batch, and this thread writes
 * each batch it hands over (COPY into a staging table, then set-based
 * statements) while the worker builds the next; the file is deleted when the
 * import ends.
 */
export async function runImport(deps: Pick<AppDeps, "db" | "pool" | "now" | "log">, importId: string) {
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
  const pieces = () => storedFile(deps.pool, importId, file.size);
  if (current.status === "queued" || current.totalRows === null) {
    current =
      (await saveProgress(db, importId, {
        status: "running",
        // Counted at the upload; an import stored before that was counted here.
        totalRows: current.totalRows ?? (await countStoredRecords(pieces())),
        updatedAt: deps.now(),
      })) ?? current;
  }
  const definitions = await definitionMap(db, current.accountId);
  const head = await filePiece(deps.pool, importId, 0, 64 * 1024);
  const update = current.onDuplicate === "update";
  let lastEventAt = 0;

  // One connection for the whole import: each batch's COPY and statements run on it.
  const { client, release } = await oneConnection(db);
  const onClient = drizzle(client, { schema });

  const write = async (batch: Batch, final: boolean) => {
    const now = deps.now();
    const next = await onClient.transaction(async (tx) => {
      // Safe without waiting for the disk: a batch lost in a crash loses its counters with it, and
      // the job run again writes it again.
      await tx.execute(sql`set local synchronous_commit = off`);
      let counts = { created: 0, updated: 0, skipped: 0 };
      if (batch.rows > 0) {
        await stageRows(client, tx, batch.copy);
        counts = await writeBatch(tx, {
          accountId: current.accountId,
          rows: batch.rows,
          update,
          optInSource: current.optInSource,
          now,
        });
      }
      if (batch.errors.length > 0) {
        await tx
          .insert(contactImportErrors)
          .values(batch.errors.map((e) => ({ importId, ...e })))
          .onConflictDoNothing();
      }
      // Repeats of a number within the batch, folded into its first row.
      const repeats = batch.records - batch.rows - batch.errors.length;
      const set = {
        processedRows: current.processedRows + batch.records,
        created: current.created + counts.created,
        updated: current.updated + counts.updated + (update ? repeats : 0),
        skipped: current.skipped + counts.skipped + (update ? 0 : repeats),
        errors: current.errors + batch.errors.length,
        updatedAt: now,
        ...(final && { status: "completed" as const, totalRows: current.processedRows + batch.records }),
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

  const worker = startParser({
    connection: connectionSettings(deps.pool),
    importId,
    fileSize: file.size,
    delimiter: detectDelimiter(head),
    mapping: current.mapping,
    plan: { definitions, defaultCountry: current.defaultCountry, addTags: current.addTags },
    update,
    skipUntil: current.processedRows,
    batchSize: IMPORT_BATCH,
  });
  // What the worker said, in order; `failed` also when it died (out of memory, a crash).
  const inbox: FromParser[] = [];
  let wake: (() => void) | null = null;
  const deliver = (message: FromParser) => {
    inbox.push(message);
    wake?.();
  };
  worker.on("message", deliver);
  worker.on("error", (error) =>
    deliver({ type: "failed", reason: `the file could not be read: ${error.message}` }),
  );
  worker.on("exit", () => deliver({ type: "failed", reason: "the file could not be read to its end" }));
  const received = async () => {
    while (inbox.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return inbox.shift()!;
  };

  let clientError: Error | undefined;
  try {
    worker.postMessage({ type: "next" } satisfies ToParser);
    for (;;) {
      const message = await received();
      if (message.type === "failed") throw new ImportFailure(message.reason);
      if (message.type !== "batch") continue;
      // The worker builds the next batch while this one is written.
      if (!message.final) worker.postMessage({ type: "next" } satisfies ToParser);
      await write(message.batch, message.final);
      if (message.final) break;
    }
  } catch (error) {
    if (!(error instanceof ImportFailure)) clientError = error as Error;
    const reason = error instanceof ImportFailure ? error.message : (error as Error).message;
    // What was committed stays (and is counted); the import stops here.
    await db.transaction(async (tx) => {
      await saveProgress(tx, importId, { status: "failed", failure: reason, updatedAt: deps.now() });
      await tx.delete(contactImportFiles).where(eq(contactImportFiles.importId, importId));
    });
    deps.log.warn({ importId, reason }, "contact import failed");
  } finally {
    worker.removeAllListeners("exit");
    await worker.terminate();
    release(clientError);
  }
}

class ImportFailure extends Error {}

/** What the parsing thread connects with: the pool's settings (its functions stay behind). */
function connectionSettings(pool: pg.Pool): pg.ClientConfig {
  const { connectionString, host, port, user, database, ssl } = pool.options;
  const password = typeof pool.options.password === "string" ? pool.options.password : undefined;
  return { connectionString, host, port, user, password, database, ssl };
}

/**
 * A connection of the pool's for statements that must share one (a COPY inside
 * a transaction), or the database's own client when it has no pool; `release`
 * gives it back (and, given the error that broke it, discards it).
 */
async function oneConnection(db: Db) {
  const client = db.$client instanceof pg.Pool ? await db.$client.connect() : db.$client;
  const release = (error?: Error) => {
    if (client !== db.$client) (client as pg.PoolClient).release(error);
  };
  return { client, release };
}

/** Stores the import, its file and its job in one transaction. */
export async function createImport(
  db: Db,
  input: {
    accountId: string;
    file: SpooledFile;
    filename: string | null;
    mapping: Mapping;
    defaultCountry: string | null;
    onDuplicate: "update" | "skip";
    addTags: string[];
    optInSource: string | null;
    now: Date;
  },
) {
  // On one connection: the file goes in by COPY, within the transaction.
  const { client, release } = await oneConnection(db);
  let failed: Error | undefined;
  try {
    return await drizzle(client, { schema }).transaction(async (tx) => {
      const [row] = await tx
        .insert(contactImports)
        .values({
          accountId: input.accountId,
          filename: input.filename,
          totalRows: input.file.records,
          mapping: input.mapping,
          defaultCountry: input.defaultCountry,
          onDuplicate: input.onDuplicate,
          addTags: input.addTags,
          optInSource: input.optInSource,
          createdAt: input.now,
          updatedAt: input.now,
        })
        .returning();
      await storeFile(client, row!.id, input.file);
      await addJob(
        tx,
        IMPORT_TASK,
        { import_id: row!.id },
        { jobKey: `${IMPORT_TASK}:${row!.id}`, maxAttempts: 5 },
      );
      await importEvent(tx, row!);
      return row!;
    });
  } catch (error) {
    failed = error as Error;
    throw error;
  } finally {
    release(failed);
  }
}

/** COPY's binary format: its signature, no flags, no header extension. */
const COPY_BINARY_HEADER = Buffer.concat([Buffer.from("PGCOPY\n\xff\r\n\0", "latin1"), Buffer.alloc(8)]);

/**
 * Writes the file's row with a binary COPY, the bytes streamed from the disk
 * as they are (64 KB at a time): a bytea parameter would be copied whole into
 * the driver's message, and hex text would double it.
 */
async function storeFile(client: pg.ClientBase, importId: string, file: SpooledFile) {
  const tuple = Buffer.alloc(2 + 4 + 16 + 4);
  tuple.writeInt16BE(2, 0);
  tuple.writeInt32BE(16, 2);
  Buffer.from(importId.replaceAll("-", ""), "hex").copy(tuple, 6);
  tuple.writeInt32BE(file.size, 22);
  async function* body() {
    yield Buffer.concat([COPY_BINARY_HEADER, tuple]);
    let written = 0;
    for await (const piece of createReadStream(file.path, { highWaterMark: 64 * 1024 })) {
      written += (piece as Buffer).length;
      yield piece as Buffer;
    }
    // (The length went first: a file changed meanwhile would store a row COPY refuses.)
    if (written !== file.size) throw new Error("The uploaded file changed while it was stored");
    yield Buffer.from([0xff, 0xff]);
  }
  const stream = client.query(
    copyFrom("copy contact_import_files (import_id, data) from stdin with (format binary)"),
  );
  await pipeline(Readable.from(body()), stream);
}

/** The import, or null when it is not the account's. */
export async function getImport(db: DbOrTx, accountId: string, id: string) {
  const [row] = await db.select().from(contactImports).where(eq(contactImports.id, id));
  return row && row.accountId === accountId ? row : null;
}
