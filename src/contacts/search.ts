/**
 * Free-text search of the inbox and the contacts: substring patterns for the
 * pg_trgm indexes (contact name and phone, message text).
 */
import type { z } from "zod";
import { storableString } from "../http/input.js";

/** Trigram indexes need three characters to narrow a search. */
export const SEARCH_MIN_LENGTH = 3;
export const SEARCH_MAX_LENGTH = 200;

export const searchQuery = storableString({ trim: true, min: SEARCH_MIN_LENGTH, max: SEARCH_MAX_LENGTH })
  .describe(`Substring of a contact's name or phone (at least ${SEARCH_MIN_LENGTH} characters)`)
  .optional();

const escapeLike = (value: string) => value.replace(/[\\%_]/g, "\\$&");

/**
 * ILIKE patterns for a search text: `text` for names and messages, `phone`
 * (digits only, as phones are stored) when the text reads as a phone number.
 */
export function searchPatterns(q: string): { text: string; phone: string | null } {
  const digits = q.replace(/\D/g, "");
  const phoneLike = /^[+\d\s().-]+$/.test(q) && digits.length >= SEARCH_MIN_LENGTH;
  return { text: `%${escapeLike(q)}%`, phone: phoneLike ? `%${digits}%` : null };
}

export type SearchQuery = z.infer<typeof searchQuery>;
