import type { Task } from "../types.js";

/** Deletes an erased contact's media files (local or S3); deleting a missing file is no error, so a rerun is safe. */
export const eraseMedia: Task<"erase-media"> = async (payload, deps) => {
  const keys = payload.keys;
  if (!Array.isArray(keys) || !keys.every((k) => typeof k === "string"))
    throw new Error("erase-media needs keys");
  for (const key of keys) await deps.media.delete(key);
};
