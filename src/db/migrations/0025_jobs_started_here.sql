-- Jobs a request adds that the adding instance starts itself (src/jobs/local-start.ts): a job whose
-- named queue is free and has no due job ahead of it is inserted already locked, with its attempt
-- counted, for the instance's local worker (worker_id), and its queue locked with it, as
-- graphile-worker's get_job would lock both. At most max_started such jobs; the others are added by
-- graphile-worker's add_jobs as usual (and its NOTIFY wakes a worker for them). A job started here
-- sends no NOTIFY: no other worker could take it. If the instance dies, the reaper frees both locks.
-- Writes graphile-worker 0.16's tables as add_jobs and get_job do (package.json keeps it to 0.16.x).
CREATE FUNCTION "add_jobs_started_here"(
  specs graphile_worker.job_spec[], worker_id text, max_started integer
) RETURNS TABLE (
  id text, identifier text, payload json, attempts integer, max_attempts integer, queue_id integer
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  spec graphile_worker.job_spec;
  later graphile_worker.job_spec[] := '{}';
  started integer := 0;
  queue integer;
  task_row integer;
  job graphile_worker._private_jobs;
BEGIN
  FOREACH spec IN ARRAY specs LOOP
    queue := NULL;
    IF started < max_started AND spec.queue_name IS NOT NULL AND spec.job_key IS NULL
       AND (spec.run_at IS NULL OR spec.run_at <= now()) THEN
      INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES (spec.queue_name)
        ON CONFLICT DO NOTHING;
      UPDATE graphile_worker._private_job_queues AS locked SET locked_at = now(), locked_by = worker_id
       WHERE locked.id = (
               SELECT q.id FROM graphile_worker._private_job_queues q
                WHERE q.queue_name = spec.queue_name AND q.locked_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM graphile_worker._private_jobs j
                                   WHERE j.job_queue_id = q.id AND j.is_available AND j.run_at <= now())
                  FOR UPDATE SKIP LOCKED)
      RETURNING locked.id INTO queue;
    END IF;
    IF queue IS NULL THEN
      later := later || spec;
      CONTINUE;
    END IF;
    INSERT INTO graphile_worker._private_tasks (identifier) VALUES (spec.identifier) ON CONFLICT DO NOTHING;
    SELECT t.id INTO task_row FROM graphile_worker._private_tasks t WHERE t.identifier = spec.identifier;
    INSERT INTO graphile_worker._private_jobs
        (job_queue_id, task_id, payload, run_at, max_attempts, priority, flags, attempts, locked_at, locked_by)
      VALUES (queue, task_row, coalesce(spec.payload, '{}'::json), now(), coalesce(spec.max_attempts, 25),
              coalesce(spec.priority, 0),
              (SELECT jsonb_object_agg(flag, true) FROM unnest(spec.flags) AS flag), 1, now(), worker_id)
      RETURNING * INTO job;
    started := started + 1;
    id := job.id::text;
    identifier := spec.identifier;
    payload := job.payload;
    attempts := job.attempts;
    max_attempts := job.max_attempts;
    queue_id := queue;
    RETURN NEXT;
  END LOOP;
  IF cardinality(later) > 0 THEN
    PERFORM graphile_worker.add_jobs(later);
  END IF;
END $$;
