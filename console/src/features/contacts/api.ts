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
