import { eq } from "drizzle-orm";
import { flowRuns } from "../../db/schema/index.js";
import { lockRunContext } from "../../flows/runner/dispatch.js";
import { guardRun, resumeAfterWait } from "../../flows/runner/engine.js";
import { withContactLock } from "../../flows/runner/store.js";
import type { Task } from "../types.js";

/** The end of a `wait` node: the run walks on, once, on whichever instance takes the job. */
export const resumeWait: Task<"resume-wait"> = async (payload, deps) => {
  const runId = String(payload.runId);
  const nodeKey = String(payload.nodeKey);
  const [run] = await deps.db.select().from(flowRuns).where(eq(flowRuns.id, runId));
  if (run?.status !== "active") return;
  await withContactLock(deps.pool, { accountId: run.accountId, contactId: run.contactId }, async (tx) => {
    const ctx = await lockRunContext(tx, deps, runId);
    if (!ctx) return;
    // Nothing follows the run's write: it goes with the commit.
    await guardRun(ctx, () => resumeAfterWait(ctx, nodeKey), { last: true });
  });
};
