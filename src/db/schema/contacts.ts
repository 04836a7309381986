import { bigint, customType, integer, jsonb, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";
import { accounts } from "./tenancy.js";

/** The types a contact attribute can be defined with (product.md section 19). */
export const ATTRIBUTE_TYPES = ["text", "number", "date", "boolean", "list"] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** Typed contact attributes: every contact write is checked against the account's definitions. */
export const contactAttributeDefinitions = pgTable(
  "contact_attribute_definitions",
  {
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    label: text("label").notNull(),
    type: text("type", { enum: ATTRIBUTE_TYPES }).notNull(),
    // The allowed values of a `list` attribute (null for the other types).
    options: text("options").array(),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] })],
);

export const IMPORT_STATUSES = ["queued", "running", "completed", "failed"] as const;

/** A CSV import of contacts, run by the `import-contacts` job. */
export const contactImports = pgTable("contact_imports", {
  id: uuid("id").primaryKey().defaultRandom(),
  accountId: uuid("account_id")
    .notNull()
    .references(() => accounts.id, { onDelete: "cascade" }),
  status: text("status", { enum: IMPORT_STATUSES }).notNull().default("queued"),
  filename: text("filename"),
  // { phone, name?, tags?, "attributes.<key>"? }: CSV column names by contact field.
  mapping: jsonb("mapping").$type<Record<string, string>>().notNull(),
  defaultCountry: text("default_country"),
  onDuplicate: text("on_duplicate", { enum: ["update", "skip"] }).notNull(),
  addTags: text("add_tags").array().notNull().default([]),
  optInSource: text("opt_in_source"),
  totalRows: integer("total_rows"),
  processedRows: integer("processed_rows").notNull().default(0),
  created: integer("created").notNull().default(0),
  updated: integer("updated").notNull().default(0),
  skipped: integer("skipped").notNull().default(0),
  errors: integer("errors").notNull().default(0),
  // Why a failed import stopped.
  failure: text("failure"),
  createdAt: timestamptz("created_at").notNull().defaultNow(),
  updatedAt: timestamptz("updated_at").notNull().defaultNow(),
});

const bytea = customType<{ data: Buffer }>({ dataType: () => "bytea" });

/** An import's uploaded file, kept until its job has read it (it survives a crash of the instance). */
export const contactImportFiles = pgTable("contact_import_files", {
  importId: uuid("import_id")
    .primaryKey()
    .references(() => contactImports.id, { onDelete: "cascade" }),
  // STORAGE EXTERNAL (migration 0020): uncompressed, so the job's substring reads fetch just their slice.
  data: bytea("data").notNull(),
});

/** The rows an import could not take: the errors CSV. */
export const contactImportErrors = pgTable(
  "contact_import_errors",
  {
    importId: uuid("import_id")
      .notNull()
      .references(() => contactImports.id, { onDelete: "cascade" }),
    row: bigint("row", { mode: "number" }).notNull(),
    value: text("value"),
    reason: text("reason").notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.row] })],
);
