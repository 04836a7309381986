import { runImport } from "../../contacts/import.js";
import type { Task } from "../types.js";

/** Runs (or resumes after a crash) one CSV import of contacts (see runImport). */
export const importContacts: Task<"import-contacts"> = async (payload, deps) => {
  if (typeof payload.import_id !== "string") throw new Error("import-contacts needs an import_id");
  await runImport(deps, payload.import_id);
};
