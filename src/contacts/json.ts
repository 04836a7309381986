import type { contacts } from "../db/schema/index.js";

type ContactRow = typeof contacts.$inferSelect;

/** A contact as the API answers it (in a contact, and inside a conversation). */
export const toContactJson = (c: ContactRow) => ({
  id: c.id,
  wa_id: c.waId,
  name: c.name,
  phone: c.phone,
  tags: c.tags,
  attributes: c.attributes,
  opted_out: c.optedOut,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});
