import { purgeOldEvents } from "../../events/log.js";
import type { Task } from "../types.js";

/** Every hour (cron), on one instance: drops account events and webhook delivery logs older than 7 days. */
export const purgeEvents: Task<"purge-events"> = async (_payload, deps) => {
  const deleted = await purgeOldEvents(deps.db, deps.now());
  if (deleted > 0) deps.log.info({ deleted }, "purged old account events and delivery logs");
};
