import { sweepTimedOutRuns } from "../../flows/runner/timeouts.js";
import type { Task } from "../types.js";

/** Once a minute (cron), on one instance: ends runs idle past their flow's timeout. */
export const sweepTimeouts: Task<"sweep-timeouts"> = async (_payload, deps) => {
  await sweepTimedOutRuns(deps, deps.now());
};
