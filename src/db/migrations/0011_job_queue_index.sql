-- The job queue's follow-ups (src/jobs/follow-ups.ts) take the next due job of one named queue.
-- graphile-worker's own indexes order all available jobs by priority and run_at, so finding one
-- queue's next job scanned the whole backlog: each look cost more the more was queued. This index
-- (on graphile-worker's table; its migrations ran before ours) makes it one index probe.
CREATE INDEX IF NOT EXISTS "jobs_queue_due_idx" ON "graphile_worker"."_private_jobs" USING btree ("job_queue_id", "priority", "run_at", "id") WHERE "is_available" = true;
