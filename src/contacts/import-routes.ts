/** The CSV import's routes: preview, start, progress and the errors CSV. */

import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { and, asc, eq, gt } from "drizzle-orm";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { importAnswer, importPreview } from "../contracts/contacts.js";
import { contactImportErrors } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { csvRow } from "../http/csv.js";
import { ApiError, notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { docs } from "../http/openapi.js";
import { isStorable } from "../http/storable.js";
import { getSettings } from "../settings/settings.js";
import { definitionMap } from "./attributes.js";
import {
  checkMapping,
  createImport,
  getImport,
  IMPORT_MAX_BYTES,
  readHead,
  type SpooledFile,
  spoolFile,
  suggestMapping,
  toImportJson,
} from "./import.js";
import { isCountry } from "./phone.js";
import { TAG_MAX_LENGTH, TAGS_MAX } from "./values.js";

const TAGS = ["contacts"];
const PREVIEW_ROWS = 10;
const FIELDS = ["mapping", "default_country", "on_duplicate", "add_tags", "opt_in_source"] as const;
type Field = (typeof FIELDS)[number];

const multipartDoc = z.object({
  file: z
    .string()
    .describe("The CSV file (multipart part; UTF-8, `,` or `;` separated, a header row; at most 50 MB)"),
});
const importDoc = multipartDoc.extend({
  mapping: z
    .string()
    .describe(
      'JSON object of contact field to column: `{ "phone": "Phone", "name": "Name", "tags": "Tags", "attributes.city": "City" }` (phone required)',
    ),
  default_country: z
    .string()
    .optional()
    .describe("ISO country for national numbers (default: the account's)"),
  on_duplicate: z
    .enum(["update", "skip"])
    .optional()
    .describe("A number that exists already (default: skip)"),
  add_tags: z
    .string()
    .optional()
    .describe("Tags added to every imported contact: a JSON array or comma-separated"),
  opt_in_source: z.string().optional().describe("How these customers consented; sets opted_in_at"),
});
const idParams = z.object({ id: z.string().describe("Import id (UUID)") });

/** Runs `use` with a private temporary folder for the upload, removed afterwards whatever happens. */
async function withUploadDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "wa-import-"));
  try {
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The multipart body: the file (at most 50 MB, written to `dir` as it
 * arrives) and the text fields.
 */
async function readImportBody(request: FastifyRequest, dir: string) {
  if (!request.isMultipart())
    throw new ApiError(400, 'Send multipart/form-data with the CSV as the field "file"');
  let file: (SpooledFile & { filename: string }) | undefined;
  const fields: Partial<Record<Field, string>> = {};
  try {
    for await (const part of request.parts({
      limits: { fileSize: IMPORT_MAX_BYTES, files: 1, fields: 8, fieldSize: 16 * 1024 },
    })) {
      if (part.type === "field") {
        if ((FIELDS as readonly string[]).includes(part.fieldname) && typeof part.value === "string") {
          fields[part.fieldname as Field] = part.value;
        }
        continue;
      }
      if (part.fieldname !== "file") {
        part.file.resume();
        throw new ApiError(400, `Unexpected file field "${part.fieldname}": send the CSV as "file"`);
      }
      const spooled = await spoolFile(part.file, path.join(dir, "upload.csv"), IMPORT_MAX_BYTES);
      file = { ...spooled, filename: (part.filename ?? "").slice(0, 255) };
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const code = (error as { code?: string }).code;
    if (code === "FST_REQ_FILE_TOO_LARGE") throw new ApiError(413, "The file is larger than 50 MB");
    if (code === "FST_FILES_LIMIT") throw new ApiError(400, "Send one file");
    if (code === "FST_FIELDS_LIMIT" || code === "FST_PARTS_LIMIT") throw new ApiError(400, "Too many fields");
    throw new ApiError(400, "The multipart body could not be read");
  }
  if (!file) throw new ApiError(400, 'file is required: send the CSV as the multipart field "file"');
  return { file, fields };
}

function readTags(text: string | undefined): string[] {
  if (text === undefined || text.trim() === "") return [];
  let list: unknown;
  if (text.trim().startsWith("[")) {
    try {
      list = JSON.parse(text);
    } catch {
      throw new ApiError(400, "add_tags: not valid JSON");
    }
  } else list = text.split(",");
  if (!Array.isArray(list) || !list.every((t) => typeof t === "string")) {
    throw new ApiError(400, "add_tags: must be an array of strings");
  }
  const tags = [...new Set(list.map((t: string) => t.trim()).filter((t) => t !== ""))];
  if (tags.length > TAGS_MAX) throw new ApiError(400, `add_tags: at most ${TAGS_MAX}`);
  if (tags.some((t) => t.length > TAG_MAX_LENGTH || !isStorable(t)))
    throw new ApiError(400, `add_tags: each at most ${TAG_MAX_LENGTH} characters`);
  return tags;
}

export function registerContactImportRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.post(
    "/api/contacts/imports/preview",
    docs({
      account: true,
      tags: TAGS,
      summary: "Read a CSV's columns and first rows, and suggest a mapping",
      description:
        "Nothing is stored. The delimiter (`,` or `;`) is detected from the header; a UTF-8 BOM and CRLF line ends are fine; quoted fields may hold delimiters, quotes (doubled) and line breaks. `suggested_mapping` guesses phone, name and tags by their usual column names and maps every other column to `attributes.<key>`.",
      body: multipartDoc,
      responses: {
        200: {
          description: "`{ columns, rows (the first 10, as arrays), suggested_mapping, total_rows }`",
          body: importPreview,
        },
        400: "Not multipart, no file, not CSV (binary, not UTF-8, unbalanced quotes), no header",
        413: "The file is larger than 50 MB",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      return withUploadDir(async (dir) => {
        const { file } = await readImportBody(request, dir);
        const { columns, rows } = await readHead(file.head, PREVIEW_ROWS, file.whole);
        const definitions = await definitionMap(db, accountId);
        return { columns, rows, suggested_mapping: suggestMapping(columns, definitions) };
      });
    },
  );

  app.post(
    "/api/contacts/imports",
    docs({
      account: true,
      tags: TAGS,
      summary: "Import contacts from a CSV",
      description:
        "Checks the file and the mapping, stores the file with the import and queues the job (one transaction), and answers at once. The job streams the file in batches: each row's phone is normalised (`default_country`, else the account's, for national numbers), attributes checked against their definitions, tags split on `,`, `;` or `|` and `add_tags` added. A number that exists (in the account, or earlier in the file) is updated (name, tags added, attributes merged) or skipped (`on_duplicate`). A bad row is left out and listed in errors.csv; the others go in. Progress: GET /api/contacts/imports/{id} and `contact_import.updated` events.",
      body: importDoc,
      responses: {
        202: { description: "`{ import }`", body: importAnswer },
        400: "Not multipart, no file, not CSV, no header, a bad mapping (names the field; a column the file lacks), a bad default_country, on_duplicate, add_tags or opt_in_source",
        413: "The file is larger than 50 MB",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      return withUploadDir(async (dir) => {
        const { file, fields } = await readImportBody(request, dir);
        const { columns } = await readHead(file.head, 1000, file.whole);
        if (fields.mapping === undefined)
          throw new ApiError(400, "mapping: is required (a JSON object of field: column)");
        let mappingJson: unknown;
        try {
          mappingJson = JSON.parse(fields.mapping);
        } catch {
          throw new ApiError(400, "mapping: not valid JSON");
        }
        const mapping = checkMapping(mappingJson, columns);
        const country = fields.default_country?.trim().toUpperCase() || null;
        if (country && !isCountry(country))
          throw new ApiError(400, "default_country: not an ISO 3166-1 country code");
        const onDuplicate = fields.on_duplicate ?? "skip";
        if (onDuplicate !== "update" && onDuplicate !== "skip") {
          throw new ApiError(400, "on_duplicate: must be update or skip");
        }
        const addTags = readTags(fields.add_tags);
        const source = fields.opt_in_source?.trim() || null;
        if (source && (source.length > 100 || !isStorable(source))) {
          throw new ApiError(400, "opt_in_source: at most 100 characters");
        }
        const row = await createImport(db, {
          accountId,
          file,
          filename: file.filename || null,
          mapping,
          defaultCountry: country ?? (await getSettings(db, accountId)).defaultCountry,
          onDuplicate,
          addTags,
          optInSource: source,
          now: deps.now(),
        });
        return reply.code(202).send({ import: toImportJson(row) });
      });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/contacts/imports/:id",
    docs({
      account: true,
      tags: TAGS,
      summary: "An import's progress and counts",
      params: idParams,
      responses: {
        200: {
          description:
            "`{ import: { id, status: queued | running | completed | failed, total_rows, processed_rows, created, updated, skipped, errors, failure } }`",
          body: importAnswer,
        },
        404: "No such import in the caller's account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!isUuid(request.params.id)) throw notFound();
      const row = await getImport(db, accountId, request.params.id);
      if (!row) throw notFound();
      return { import: toImportJson(row) };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/contacts/imports/:id/errors.csv",
    docs({
      account: true,
      tags: TAGS,
      summary: "The rows an import left out, as CSV",
      description:
        "Columns `row` (the file's row number; the header is row 1), `value` (the offending cell) and `reason`.",
      params: idParams,
      responses: {
        200: {
          description: "The rows as CSV",
          contentType: "text/csv",
          headers: { "content-disposition": 'attachment; filename="import-<id>-errors.csv"' },
        },
        404: "No such import in the caller's account",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!isUuid(request.params.id)) throw notFound();
      const found = await getImport(db, accountId, request.params.id);
      if (!found) throw notFound();
      async function* lines() {
        yield csvRow(["row", "value", "reason"]);
        let after = 0;
        for (;;) {
          const page = await db
            .select()
            .from(contactImportErrors)
            .where(and(eq(contactImportErrors.importId, found!.id), gt(contactImportErrors.row, after)))
            .orderBy(asc(contactImportErrors.row))
            .limit(5000);
          if (page.length === 0) return;
          yield page.map((e) => csvRow([e.row, e.value, e.reason])).join("");
          after = page.at(-1)!.row;
          if (page.length < 5000) return;
        }
      }
      return reply
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="import-${found.id}-errors.csv"`)
        .send(Readable.from(lines()));
    },
  );
}
