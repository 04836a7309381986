import { eq } from "drizzle-orm";
import { flowRuns } from "../../db/schema/index.js";
import { contextFor } from "../../flows/runner/dispatch.js";
import { guardRun, resumeAfterWait } from "../../flows/runner/engine.js";
import { lockActiveRun, withContactLock } from "../../flows/runner/store.js";
import type { Task } from "../types.js";

/** The end of a `wait` node: the run walks on, once, on whichever instance takes the job. */
export const resumeWait: Task<"resume-wait"> = async (payload, deps) => {
  const runId = String(payload.runId);
  const nodeKey = String(payload.nodeKey);
  const [run] = await deps.db.select().from(flowRuns).where(eq(flowRuns.id, runId));
  if (run?.status !== "active") return;
  await withContactLock(deps.pool, { accountId: run.accountId, contactId: run.contactId }, async (tx) => {
    const fresh = await lockActiveRun(tx, runId);
    if (!fresh) return;
    const ctx = await contextFor(tx, deps, fresh);
    if (!ctx) return;
    await guardRun(ctx, () => resumeAfterWait(ctx, nodeKey));
  });
};
