-- The flow runner's run write raises this when the run it inserts cannot be (the contact has an
-- active run already), so the statement fails by itself and its transaction rolls back, even when
-- the transaction's commit was sent right behind it (commitWith, src/db/client.ts).
CREATE FUNCTION "flow_run_busy"() RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'The contact has an active run already' USING ERRCODE = 'WA409';
END $$;
