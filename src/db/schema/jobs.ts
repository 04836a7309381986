import { pgTable, text } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";

/**
 * graphile-worker's worker ids per running instance of the service. Each
 * instance holds a session advisory lock named after its instance id while it
 * lives; a worker whose instance's lock is free belongs to a dead process, and
 * the jobs it locked are freed (src/jobs/worker.ts).
 */
export const workerInstances = pgTable("worker_instances", {
  workerId: text("worker_id").primaryKey(),
  instanceId: text("instance_id").notNull(),
  createdAt: timestamptz("created_at").notNull().defaultNow(),
});
