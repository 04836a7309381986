import type { z } from "zod";
import { ApiError } from "./errors.js";

/** Validates with a zod schema; the first problem becomes a 400 naming the field. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.join(".");
  throw new ApiError(400, field ? `${field}: ${issue?.message}` : (issue?.message ?? "Invalid request"));
}
