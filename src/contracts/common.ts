import { z } from "zod";

/**
 * The response contracts' building blocks. A contract is a zod schema named
 * with `.meta({ id })`: the row mapper's return type is its `z.output`, and the
 * OpenAPI document lists it under `components.schemas` (src/http/openapi.ts).
 */

/** A Date in the row mappers (or an ISO string already), an ISO 8601 date-time on the wire. */
export const timestamp = z.custom<Date | string>((v) => v instanceof Date || typeof v === "string");

/**
 * Rules the handlers enforce with their own messages, stated in the document
 * for clients (`.meta` adds them to the JSON Schema without changing parsing).
 */
export const PHONE_DIGITS_PATTERN = "^\\D*(\\d\\D*){6,15}$";
export const phoneRule = {
  pattern: PHONE_DIGITS_PATTERN,
  description: "A phone number, country code first: 6 to 15 digits (spaces, `+`, `-`, `(`, `)` are ignored)",
};
export const UPSTREAM_ID_PATTERN = "^[A-Za-z0-9._-]{1,64}$";

/** A JSON object whose keys the API does not fix (a node's config, a flow's variables). */
export const jsonObject = z.record(z.string(), z.unknown());

/** The opaque cursor of the next page, or null on the last page. */
export const nextCursor = z
  .string()
  .nullable()
  .describe("Pass as `cursor` for the next page; null on the last");

/** The answer of a delete or other change that returns nothing else. */
export const okAnswer = z.object({ ok: z.literal(true) }).meta({ id: "Ok" });

/** An answer `{ success: true }` (the messaging routes' older shape). */
export const successAnswer = z.object({ success: z.literal(true) }).meta({ id: "Success" });
