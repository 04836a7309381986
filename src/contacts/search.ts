/**
 * Free-text search of the inbox and the contacts: substring patterns for the
 * pg_trgm indexes (contact name and phone, message text), and which part of
 * the text the index is probed with.
 */
import { type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import type { z } from "zod";
import type { Db } from "../db/client.js";
import { type ColumnSample, columnSample, shareContaining } from "../db/column-sample.js";
import { storableString } from "../http/input.js";

/** Trigram indexes need three characters to narrow a search. */
export const SEARCH_MIN_LENGTH = 3;
export const SEARCH_MAX_LENGTH = 200;

export const searchQuery = storableString({ trim: true, min: SEARCH_MIN_LENGTH, max: SEARCH_MAX_LENGTH })
  .describe(`Substring of a contact's name or phone (at least ${SEARCH_MIN_LENGTH} characters)`)
  .optional();

const escapeLike = (value: string) => value.replace(/[\\%_]/g, "\\$&");

/** The LIKE pattern for phones (digits only, as phones are stored) when the text reads as a phone number. */
export function phonePattern(q: string): string | null {
  const digits = q.replace(/\D/g, "");
  const phoneLike = /^[+\d\s().-]+$/.test(q) && digits.length >= SEARCH_MIN_LENGTH;
  return phoneLike ? `%${digits}%` : null;
}

/** A word found in fewer rows than this is rare: the index finds its rows cheaply. */
const RARE_SHARE = 0.01;
/** A word found in more rows than this is common: its trigrams' lists are long. */
const COMMON_SHARE = 0.05;

/**
 * The part of a search text to look up in a column's trigram index: its
 * rarest word, when that word is rare and another word is common; else the
 * whole text. A trigram index intersects the lists of all the pattern's
 * trigrams, and a common word's lists hold nearly every row of every account
 * (`in conversation 4322` read 493 index pages, `4322` alone 37). The rows the
 * rare word finds are then checked against the whole text.
 */
export function probeOf(q: string, sample: ColumnSample): string {
  const words = [...new Set(q.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= SEARCH_MIN_LENGTH))];
  if (words.length < 2) return q;
  const shares = words.map((word) => ({ word, share: shareContaining(sample, word) }));
  const rarest = shares.reduce((a, b) =>
    b.share < a.share || (b.share === a.share && b.word.length > a.word.length) ? b : a,
  );
  const common = shares.some((s) => s.share > COMMON_SHARE);
  return rarest.share < RARE_SHARE && common ? rarest.word : q;
}

/** The probes of a search: for contacts' names (also usernames) and for messages' texts. */
export interface SearchProbes {
  name: string;
  text: string;
}

/** The probe of contacts' names (and usernames), from the column's sample (see probeOf). */
export async function nameProbe(db: Db, q: string): Promise<string> {
  return probeOf(q, await columnSample(db, "contacts", "name"));
}

/** The search's probes of names and of message texts (see probeOf). */
export async function searchProbes(db: Db, q: string): Promise<SearchProbes> {
  const [name, texts] = await Promise.all([nameProbe(db, q), columnSample(db, "messages", "text")]);
  return { name, text: probeOf(q, texts) };
}

/**
 * The column contains the search text, the index probed with `probe` (a part
 * of it): the rest is checked on the rows found, in a form no index serves
 * (ILIKE on a UTF-8 database compares lower-cased, as lower() does).
 */
export function containsText(column: AnyPgColumn | SQL, q: string, probe = q): SQL {
  const pattern = `%${escapeLike(probe)}%`;
  if (probe === q) return sql`${column} ilike ${pattern}`;
  return sql`(${column} ilike ${pattern} and strpos(lower(${column}), lower(${q})) > 0)`;
}

export type SearchQuery = z.infer<typeof searchQuery>;
