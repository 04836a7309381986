/** The rules of what agents keep on a contact: tags and attributes. */
import { z } from "zod";
import { storableString } from "../http/input.js";
import { searchQuery } from "./search.js";
import {
  ATTRIBUTE_KEY,
  ATTRIBUTE_KEY_MAX_LENGTH,
  ATTRIBUTE_VALUE_MAX_LENGTH,
  ATTRIBUTES_MAX,
  TAG_MAX_LENGTH,
  TAGS_MAX,
} from "./values.js";

export const tag = storableString({ trim: true, min: 1, max: TAG_MAX_LENGTH });

/** Tags, trimmed and without repeats (first spelling kept). */
export const tags = z
  .array(tag, { error: "must be an array of strings" })
  .max(TAGS_MAX, `must hold at most ${TAGS_MAX} tags`)
  .transform((list) => [...new Set(list)]);

/**
 * A flat map of values (strings, or numbers and booleans for typed attributes:
 * see attributes.ts); keys are letters, digits, `_`, `.` or `-`.
 */
export const attributes = z
  .record(
    z
      .string()
      .max(ATTRIBUTE_KEY_MAX_LENGTH, `keys must be at most ${ATTRIBUTE_KEY_MAX_LENGTH} characters`)
      .regex(ATTRIBUTE_KEY, "keys must be letters, digits, '_', '.' or '-'"),
    z.union([storableString({ max: ATTRIBUTE_VALUE_MAX_LENGTH }), z.number(), z.boolean()], {
      error: "must be a string (or a number or boolean for a typed attribute)",
    }),
    { error: "must be an object of string values" },
  )
  .refine((map) => Object.keys(map).length <= ATTRIBUTES_MAX, `must hold at most ${ATTRIBUTES_MAX} keys`);

/** The filters of the contact list and export. */
export const filterQuery = z.object({
  q: searchQuery,
  tag: tag.optional(),
  opted_out: z
    .enum(["true", "false"], { error: "must be true or false" })
    .transform((v) => v === "true")
    .optional(),
  attribute: z
    .string({ error: "must be a string" })
    .min(1, "must not be empty")
    .max(ATTRIBUTE_KEY_MAX_LENGTH, `must be at most ${ATTRIBUTE_KEY_MAX_LENGTH} characters`)
    .regex(ATTRIBUTE_KEY, "must be letters, digits, '_', '.' or '-' (an attribute key)")
    .describe("Contacts that have this attribute")
    .optional(),
  value: storableString({ max: 1024 }).describe("...with this value (with `attribute`)").optional(),
});
