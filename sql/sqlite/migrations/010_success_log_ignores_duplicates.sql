-- clock schema for SQLite, version 10: the success log's triggers (008)
-- ignore a start already logged, whatever statement fires them.
--
-- 008's `INSERT OR IGNORE` did not: SQLite runs a trigger's statements with
-- the conflict policy of the statement that fired it when that one has its
-- own, and the upsert into last_success (k_record_success) has ABORT. Two
-- shared holders granted in the same millisecond whose runs both succeed
-- log the same start twice; the second release then failed ("UNIQUE
-- constraint failed: successes…") and its lease stayed until its TTL. An
-- upsert clause (ON CONFLICT DO NOTHING) in the trigger is its own and is
-- kept.
DROP TRIGGER last_success_logs_insert;
DROP TRIGGER last_success_logs_update;

CREATE TRIGGER last_success_logs_insert AFTER INSERT ON last_success
BEGIN
  INSERT INTO successes (namespace, resource, started_at)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at)
    ON CONFLICT DO NOTHING;
  DELETE FROM successes WHERE namespace = NEW.namespace AND resource = NEW.resource
    AND started_at < (SELECT started_at FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1 OFFSET 999);
END;

CREATE TRIGGER last_success_logs_update AFTER UPDATE ON last_success
BEGIN
  INSERT INTO successes (namespace, resource, started_at)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at)
    ON CONFLICT DO NOTHING;
  DELETE FROM successes WHERE namespace = NEW.namespace AND resource = NEW.resource
    AND started_at < (SELECT started_at FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1 OFFSET 999);
END;
