-- Adding and removing jobs without a NOTIFY when it would wake nobody (src/queue/add.ts).
-- graphile-worker's add_job and remove_job send a NOTIFY on "jobs:insert" with every call. The
-- NOTIFY pays for a job due now: it wakes an idle worker at once. A job due later gains nothing from
-- it: the worker it wakes looks for a job and finds none due (the workers' poll, every second, finds
-- the job once it is). A removal's NOTIFY (a count of -1) wakes no worker at all. Every send adds a
-- settle job due minutes later and removes it once Meta has answered, so every claim woke an idle
-- worker for nothing. (A notifying transaction also takes one database-wide lock at its commit until
-- the commit is on disk; the account events' NOTIFY still takes it for most of a send's commits.)
-- Writes graphile-worker 0.16's tables as its add_jobs (one job, job_key_mode 'replace') and
-- remove_job do (package.json keeps it to 0.16.x; test/jobs/graphile-internals.test.ts).
CREATE FUNCTION "add_job_notify_if_due"(
  identifier text, payload json, queue_name text, run_at timestamptz, max_attempts integer,
  job_key text, priority integer
) RETURNS graphile_worker._private_jobs LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  job graphile_worker._private_jobs;
BEGIN
  IF add_job_notify_if_due.run_at IS NULL OR add_job_notify_if_due.run_at <= now() THEN
    RETURN graphile_worker.add_job(
      identifier := add_job_notify_if_due.identifier, payload := add_job_notify_if_due.payload,
      queue_name := add_job_notify_if_due.queue_name, run_at := add_job_notify_if_due.run_at,
      max_attempts := add_job_notify_if_due.max_attempts, job_key := add_job_notify_if_due.job_key,
      priority := add_job_notify_if_due.priority);
  END IF;
  INSERT INTO graphile_worker._private_tasks (identifier) VALUES (add_job_notify_if_due.identifier)
    ON CONFLICT DO NOTHING;
  IF add_job_notify_if_due.queue_name IS NOT NULL THEN
    INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES (add_job_notify_if_due.queue_name)
      ON CONFLICT DO NOTHING;
  END IF;
  -- A job of the same key already started (or out of attempts) keeps running without its key; a new
  -- job takes the key, as add_jobs does.
  IF add_job_notify_if_due.job_key IS NOT NULL THEN
    UPDATE graphile_worker._private_jobs AS jobs
       SET key = NULL, attempts = jobs.max_attempts, updated_at = now()
     WHERE jobs.key = add_job_notify_if_due.job_key AND jobs.is_available IS NOT TRUE;
  END IF;
  INSERT INTO graphile_worker._private_jobs AS jobs
      (job_queue_id, task_id, payload, run_at, max_attempts, key, priority)
    SELECT q.id, t.id, coalesce(add_job_notify_if_due.payload, '{}'::json), add_job_notify_if_due.run_at,
           coalesce(add_job_notify_if_due.max_attempts, 25), add_job_notify_if_due.job_key,
           coalesce(add_job_notify_if_due.priority, 0)
      FROM graphile_worker._private_tasks t
      LEFT JOIN graphile_worker._private_job_queues q ON q.queue_name = add_job_notify_if_due.queue_name
     WHERE t.identifier = add_job_notify_if_due.identifier
  ON CONFLICT (key) DO UPDATE SET
    job_queue_id = excluded.job_queue_id,
    task_id = excluded.task_id,
    payload = CASE
      WHEN json_typeof(jobs.payload) = 'array' AND json_typeof(excluded.payload) = 'array'
        THEN (jobs.payload::jsonb || excluded.payload::jsonb)::json
      ELSE excluded.payload
    END,
    max_attempts = excluded.max_attempts,
    run_at = excluded.run_at,
    priority = excluded.priority,
    revision = jobs.revision + 1,
    flags = excluded.flags,
    attempts = 0,
    last_error = NULL,
    updated_at = now()
  WHERE jobs.locked_at IS NULL
  RETURNING * INTO job;
  RETURN job;
END $$;

-- graphile-worker's remove_job without its NOTIFY: deletes the job of this key unless a worker holds
-- it (for less than four hours); a held one keeps running without its key, and is not tried again.
CREATE FUNCTION "remove_job_quietly"(job_key text)
RETURNS graphile_worker._private_jobs LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  job graphile_worker._private_jobs;
BEGIN
  DELETE FROM graphile_worker._private_jobs AS jobs
   WHERE jobs.key = remove_job_quietly.job_key
     AND (jobs.locked_at IS NULL OR jobs.locked_at < now() - interval '4 hours')
  RETURNING * INTO job;
  IF FOUND THEN
    RETURN job;
  END IF;
  UPDATE graphile_worker._private_jobs AS jobs
     SET key = NULL, attempts = jobs.max_attempts, updated_at = now()
   WHERE jobs.key = remove_job_quietly.job_key
  RETURNING * INTO job;
  RETURN job;
END $$;
