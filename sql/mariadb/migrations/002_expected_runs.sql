-- clock schema for MariaDB (and MySQL), version 2: missed runs (man clock, COMMANDS),
-- as PostgreSQL's migration 014 and SQLite's 008 have them.
--
-- expected_runs holds, per resource, the period within which a successful
-- run is expected: declared by `clock run --once-per D` or `--every D` at
-- each granted run (clock_expect_runs, sql/mariadb/procedures/
-- 60_expected_runs.sql; written only when missing or changed), so a
-- resource whose runs stop keeps its row and shows as overdue. declared_us
-- is the first declaration.
--
-- successes keeps the start of each successful run (last_success keeps only
-- the latest), so that the periods missed since a time can be listed.
-- clock_release writes it beside last_success, in the release's own
-- transaction, and keeps the newest 1000 per resource (no trigger, as for
-- run_counts: one place writes both).
--
-- Idempotent like 001 (MariaDB commits DDL at once): new tables only, and a
-- backfill from last_success that INSERT IGNORE makes safe to repeat. Live
-- leases, queue entries and history are untouched.
CREATE TABLE IF NOT EXISTS expected_runs (
  namespace   VARBINARY(255) NOT NULL,
  resource    VARBINARY(255) NOT NULL,
  every_ms    BIGINT NOT NULL CHECK (every_ms > 0),
  declared_us BIGINT NOT NULL,
  PRIMARY KEY (namespace, resource)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS successes (
  namespace  VARBINARY(255) NOT NULL,
  resource   VARBINARY(255) NOT NULL,
  started_us BIGINT NOT NULL,
  PRIMARY KEY (namespace, resource, started_us)
) ENGINE=InnoDB;

INSERT IGNORE INTO successes (namespace, resource, started_us)
  SELECT namespace, resource, started_us FROM last_success;
