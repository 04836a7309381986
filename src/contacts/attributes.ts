/**
 * Typed contact attributes: the account's definitions, and the check every
 * contact write (API, import) goes through. Values are kept as strings in
 * their canonical form (`12.5`, `2026-11-25`, `true`); keys without a
 * definition are free text.
 */

import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import type { ContactAttribute } from "../contracts/contacts.js";
import type { DbOrTx } from "../db/client.js";
import { pgErrorCode } from "../db/errors.js";
import { ATTRIBUTE_TYPES, type AttributeType, contactAttributeDefinitions } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { storableString } from "../http/input.js";
import {
  ATTRIBUTE_KEY,
  ATTRIBUTE_KEY_MAX_LENGTH,
  ATTRIBUTE_VALUE_MAX_LENGTH,
  checkAttributeValue,
} from "./values.js";

export interface AttributeDefinition {
  key: string;
  label: string;
  type: AttributeType;
  options: string[] | null;
}

export const definitionBody = z
  .object({
    key: z
      .string({ error: "is required" })
      .max(ATTRIBUTE_KEY_MAX_LENGTH, `must be at most ${ATTRIBUTE_KEY_MAX_LENGTH} characters`)
      .regex(ATTRIBUTE_KEY, "must be letters, digits, '_', '.' or '-'"),
    label: storableString({ trim: true, min: 1, max: 100 }),
    type: z.enum(ATTRIBUTE_TYPES, { error: `must be one of ${ATTRIBUTE_TYPES.join(", ")}` }),
    options: z
      .array(storableString({ trim: true, min: 1, max: ATTRIBUTE_VALUE_MAX_LENGTH }), {
        error: "must be an array of strings",
      })
      .min(1, "must hold at least one option")
      .max(200, "must hold at most 200 options")
      .transform((list) => [...new Set(list)])
      .optional(),
  })
  .superRefine((value, ctx) => {
    if (value.type === "list" && !value.options)
      ctx.addIssue({ code: "custom", path: ["options"], message: "is required for a list attribute" });
    if (value.type !== "list" && value.options)
      ctx.addIssue({ code: "custom", path: ["options"], message: "only a list attribute has options" });
  });

const toJson = (d: typeof contactAttributeDefinitions.$inferSelect): z.infer<typeof ContactAttribute> => ({
  key: d.key,
  label: d.label,
  type: d.type,
  options: d.options,
  created_at: d.createdAt,
});

export async function listDefinitions(db: DbOrTx, accountId: string) {
  return db
    .select()
    .from(contactAttributeDefinitions)
    .where(eq(contactAttributeDefinitions.accountId, accountId))
    .orderBy(asc(contactAttributeDefinitions.key));
}

export const listDefinitionsJson = async (db: DbOrTx, accountId: string) =>
  (await listDefinitions(db, accountId)).map(toJson);

/** Adds a definition; 409 when the key is defined already. */
export async function createDefinition(db: DbOrTx, accountId: string, body: z.infer<typeof definitionBody>) {
  try {
    const [row] = await db
      .insert(contactAttributeDefinitions)
      .values({ accountId, key: body.key, label: body.label, type: body.type, options: body.options ?? null })
      .returning();
    return toJson(row!);
  } catch (error) {
    if (pgErrorCode(error) === "23505")
      throw new ApiError(409, `An attribute '${body.key}' is defined already`);
    throw error;
  }
}

/** Removes a definition (the values stay on contacts, as free text); false when there was none. */
export async function deleteDefinition(db: DbOrTx, accountId: string, key: string) {
  const gone = await db
    .delete(contactAttributeDefinitions)
    .where(
      and(eq(contactAttributeDefinitions.accountId, accountId), eq(contactAttributeDefinitions.key, key)),
    )
    .returning({ key: contactAttributeDefinitions.key });
  return gone.length > 0;
}

export type Definitions = Map<string, AttributeDefinition>;

export async function definitionMap(db: DbOrTx, accountId: string): Promise<Definitions> {
  return new Map((await listDefinitions(db, accountId)).map((d) => [d.key, d]));
}

/** Attributes checked against the definitions: canonical values, or a 400 naming the first bad key. */
export function checkAttributes(definitions: Definitions, attributes: Record<string, unknown>) {
  const checked: Record<string, string> = {};
  for (const [key, raw] of Object.entries(attributes)) {
    const result = checkAttributeValue(definitions.get(key), raw);
    if ("problem" in result) throw new ApiError(400, `attributes.${key}: ${result.problem}`);
    checked[key] = result.value;
  }
  return checked;
}
