-- clock schema for SQLite, version 8: missed runs (man clock, COMMANDS), as the
-- PostgreSQL schema has it (its migration 014).
--
-- expected_runs holds, per resource, the period within which a successful
-- run is expected: declared by `clock run --once-per D` or `--every D` at
-- each run that is granted (written only when missing or changed), so a
-- resource whose runs stop keeps its row and shows as overdue. declared_at
-- is the first declaration: a resource never run successfully is due one
-- period after it.
--
-- successes keeps the start of each successful run (what last_success
-- keeps only the latest of), so that the periods missed since a time can
-- be listed (`clock missed --since`). The trigger on last_success writes it
-- in the release's own transaction and keeps the newest 1000 per resource,
-- so it stays bounded without gc. It starts from last_success as it is.
--
-- New tables and a trigger: live leases, queue entries and history are
-- untouched by this migration.
CREATE TABLE expected_runs (
  namespace   TEXT    NOT NULL,
  resource    TEXT    NOT NULL,
  every_ms    INTEGER NOT NULL CHECK (every_ms > 0),
  declared_at INTEGER NOT NULL,  -- ms since the epoch
  PRIMARY KEY (namespace, resource)
) WITHOUT ROWID;

CREATE TABLE successes (
  namespace  TEXT    NOT NULL,
  resource   TEXT    NOT NULL,
  started_at INTEGER NOT NULL,  -- the successful run's grant, ms since the epoch
  PRIMARY KEY (namespace, resource, started_at)
) WITHOUT ROWID;

INSERT INTO successes (namespace, resource, started_at)
  SELECT namespace, resource, started_at FROM last_success;

CREATE TRIGGER last_success_logs_insert AFTER INSERT ON last_success
BEGIN
  INSERT OR IGNORE INTO successes (namespace, resource, started_at)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at);
  DELETE FROM successes WHERE namespace = NEW.namespace AND resource = NEW.resource
    AND started_at < (SELECT started_at FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1 OFFSET 999);
END;

CREATE TRIGGER last_success_logs_update AFTER UPDATE ON last_success
BEGIN
  INSERT OR IGNORE INTO successes (namespace, resource, started_at)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at);
  DELETE FROM successes WHERE namespace = NEW.namespace AND resource = NEW.resource
    AND started_at < (SELECT started_at FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1 OFFSET 999);
END;
