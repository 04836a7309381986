import { api, listOf } from "../../lib/api";

/** React-query keys of the contacts feature (lib/live and the inbox invalidate `all`). */
export const contactKeys = {
  all: ["contacts"] as const,
  list: (params: string) => ["contacts", params] as const,
  contact: (id: string) => ["contact", id] as const,
  attributes: ["contact-attributes"] as const,
  import: (id: string | null) => ["contact-import", id] as const,
};
/** The contacts API as the contacts screens use it. */

export interface ContactDetail {
  id: string;
  wa_id: string | null;
  name: string | null;
  phone: string | null;
  username: string | null;
  bsuid: string | null;
  tags: string[];
  attributes: Record<string, string>;
  opted_out: boolean;
  opted_out_at: string | null;
  opted_in_at: string | null;
  opt_in_source: string | null;
  conversation_id: string | null;
  created_at: string;
}

export type AttributeType = "text" | "number" | "date" | "boolean" | "list";

export interface AttributeDefinition {
  key: string;
  label: string;
  type: AttributeType;
  options: string[] | null;
}

export interface ContactImport {
  id: string;
  status: "queued" | "running" | "completed" | "failed";
  total_rows: number | null;
  processed_rows: number;
  created: number;
  updated: number;
  skipped: number;
  errors: number;
  failure: string | null;
}

export interface ImportPreview {
  columns: string[];
  rows: string[][];
  suggested_mapping: Record<string, string>;
}

/** Filters of the list and the export, as query parameters. */
export function filterParams(f: {
  q: string;
  tag: string;
  optedOut: string;
  attribute: string;
  value: string;
}) {
  const params = new URLSearchParams();
  if (f.q.trim().length >= 3) params.set("q", f.q.trim());
  if (f.tag.trim()) params.set("tag", f.tag.trim());
  if (f.optedOut) params.set("opted_out", f.optedOut);
  if (f.attribute) {
    params.set("attribute", f.attribute);
    if (f.value.trim()) params.set("value", f.value.trim());
  }
  return params;
}

/** How a contact is named: its name, its number, or @username for a customer who hides their number. */
export function contactName(c: Pick<ContactDetail, "name" | "phone" | "username">) {
  return c.name || (c.phone ? `+${c.phone}` : c.username ? `@${c.username}` : "Unknown");
}

/** The number, or @username where there is none. */
export const contactAddress = (c: Pick<ContactDetail, "phone" | "username">) =>
  c.phone ? `+${c.phone}` : c.username ? `@${c.username}` : "—";

/** Contacts matching the query parameters (filterParams plus limit). */
export const fetchContacts = async (query: URLSearchParams) =>
  listOf<ContactDetail>(await api(`/api/contacts?${query}`), "contacts");

export const fetchContact = async (id: string) =>
  (await api<{ contact: ContactDetail }>(`/api/contacts/${id}`)).contact;

export const updateContact = (
  id: string,
  patch: { tags?: string[]; name?: string | null; attributes?: Record<string, string>; opted_out?: boolean },
) => api(`/api/contacts/${id}`, { method: "PATCH", body: patch });

export const deleteContact = (id: string) => api(`/api/contacts/${id}`, { method: "DELETE" });

export const fetchAttributeDefinitions = async () =>
  listOf<AttributeDefinition>(await api("/api/contact-attributes"), "attributes");

/** The CSV export of the contacts the filters select (a download link). */
export const contactsCsvUrl = (params: URLSearchParams) => `/api/contacts.csv?${params}`;

export const previewImport = (form: FormData) =>
  api<ImportPreview>("/api/contacts/imports/preview", { method: "POST", form });

export const startImport = async (form: FormData) =>
  (await api<{ import: ContactImport }>("/api/contacts/imports", { method: "POST", form })).import;

export const fetchImport = async (id: string) =>
  (await api<{ import: ContactImport }>(`/api/contacts/imports/${id}`)).import;

/** The rows of an import that failed, as CSV (a download link). */
export const importErrorsCsvUrl = (id: string) => `/api/contacts/imports/${id}/errors.csv`;
