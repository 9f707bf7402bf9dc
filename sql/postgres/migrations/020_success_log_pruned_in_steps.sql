-- clock on PostgreSQL, version 20: the success log (successes, 014) is
-- pruned to the newest 1000 starts of a resource at every 50th success
-- instead of at every one. Finding the 1000th newest start walks 1000 index
-- entries (0.4 ms of server time), which every successful run of a resource
-- with a full log paid; in steps it costs a fiftieth of that, and the log
-- holds at most 1049 starts of a resource.
--
-- ordinal numbers a resource's successes, one more than its newest
-- logged start's (NULL for the starts logged before this version: the
-- count starts again at 1).
--
-- The trigger that writes the log moves from release 1.0's log_success()
-- (the functions in the schema itself, docs/upgrades.md) to a function of
-- the schema's own, created here: it belongs to the table, not to any
-- release's routine set, so retiring a set never drops it, and it writes
-- the log for every release's record_success() alike. Release 1.0's
-- log_success() stays, unused, until its release is retired.
ALTER TABLE @schema@.successes ADD COLUMN ordinal bigint;

CREATE FUNCTION @schema@.log_success_pruned_in_steps() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  v_ordinal bigint;
BEGIN
  SELECT s.ordinal INTO v_ordinal FROM @schema@.successes s
  WHERE s.namespace = NEW.namespace AND s.resource = NEW.resource
  ORDER BY s.started_at DESC LIMIT 1;
  v_ordinal := coalesce(v_ordinal, 0) + 1;
  INSERT INTO @schema@.successes (namespace, resource, started_at, ordinal)
  VALUES (NEW.namespace, NEW.resource, NEW.started_at, v_ordinal)
  ON CONFLICT DO NOTHING;
  IF v_ordinal % 50 = 0 THEN
    DELETE FROM @schema@.successes s
    WHERE s.namespace = NEW.namespace AND s.resource = NEW.resource
      AND s.started_at < (SELECT k.started_at FROM @schema@.successes k
                          WHERE k.namespace = NEW.namespace AND k.resource = NEW.resource
                          ORDER BY k.started_at DESC LIMIT 1 OFFSET 999);
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION @schema@.log_success_pruned_in_steps() FROM PUBLIC;

-- A database this version creates has no trigger yet (the functions that
-- made it come after the migrations); one made earlier has release 1.0's.
DROP TRIGGER IF EXISTS last_success_logs ON @schema@.last_success;
CREATE TRIGGER last_success_logs AFTER INSERT OR UPDATE ON @schema@.last_success
FOR EACH ROW EXECUTE FUNCTION @schema@.log_success_pruned_in_steps();
