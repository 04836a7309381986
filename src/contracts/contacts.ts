import { z } from "zod";
import { nextCursor, timestamp } from "./common.js";
import { Contact } from "./inbox.js";

/** A contact as the contacts API shows it: the inbox's fields, consent, identity and its conversation. */
export const ContactDetail = Contact.extend({
  opted_out_at: timestamp.nullable(),
  opted_in_at: timestamp.nullable(),
  opt_in_source: z.string().nullable(),
  bsuid: z.string().nullable().describe("WhatsApp's business-scoped user id, when known"),
  username: z.string().nullable(),
  conversation_id: z.uuid().nullable(),
}).meta({ id: "ContactDetail" });

export const ContactAttribute = z
  .object({
    key: z.string(),
    label: z.string(),
    type: z.enum(["text", "number", "date", "boolean", "list"]),
    options: z.array(z.string()).nullable(),
    created_at: timestamp,
  })
  .meta({ id: "ContactAttribute" });

export const ContactImport = z
  .object({
    id: z.uuid(),
    status: z.enum(["queued", "running", "completed", "failed"]),
    filename: z.string().nullable(),
    mapping: z.record(z.string(), z.string()),
    on_duplicate: z.enum(["update", "skip"]),
    total_rows: z.number().int().nullable(),
    processed_rows: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    skipped: z.number().int(),
    errors: z.number().int(),
    failure: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "ContactImport" });

export const contactAnswer = z.object({ contact: ContactDetail });
export const contactsPage = z.object({ contacts: z.array(ContactDetail), next_cursor: nextCursor });
export const attributesAnswer = z.object({ attributes: z.array(ContactAttribute) });
export const attributeAnswer = z.object({ attribute: ContactAttribute });
export const importAnswer = z.object({ import: ContactImport });
export const importPreview = z.object({
  columns: z.array(z.string()),
  rows: z.array(z.array(z.string())).describe("The first rows, as arrays of cells"),
  suggested_mapping: z.record(z.string(), z.string()),
});
