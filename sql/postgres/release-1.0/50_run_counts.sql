-- clock on PostgreSQL: counting runs (run_counts, migration 008) as history
-- records them, so that the counts outlive gc's pruning of history.
--
-- A trigger on history does the counting, so every function that writes
-- history counts without knowing it, in its own transaction: a run is
-- counted exactly when its history row commits. It runs with the rights of
-- those SECURITY DEFINER functions (the schema owner's), so no role needs a
-- privilege on run_counts. Its cost: one upsert of one row per counted
-- history row; released and expired rows do not call it (the WHEN clause).

CREATE OR REPLACE FUNCTION @schema@.count_run() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO @schema@.run_counts AS c (namespace, resource, outcome, count)
  VALUES (NEW.namespace, NEW.resource, NEW.event, 1)
  ON CONFLICT (namespace, resource, outcome) DO UPDATE SET count = c.count + 1;
  RETURN NULL;
END $$;

-- Created once, here rather than in the migration, because a trigger needs
-- its function to exist and the functions are applied after the migrations;
-- CREATE OR REPLACE of the function above keeps the trigger.
DO $create$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger
                 WHERE tgrelid = '@schema@.history'::regclass
                   AND tgname = 'history_counts_runs') THEN
    CREATE TRIGGER history_counts_runs AFTER INSERT ON @schema@.history
    FOR EACH ROW
    WHEN (NEW.event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced'))
    EXECUTE FUNCTION @schema@.count_run();
  END IF;
END $create$;
