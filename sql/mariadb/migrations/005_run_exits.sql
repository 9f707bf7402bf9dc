-- clock schema for MariaDB, version 5: how each run of clock run ended, as
-- PostgreSQL's migration 016 and SQLite's 011 have it.
--
-- history.exit_code / history.exit_signal: on a `released` record written by
-- clock run (clock_release2, sql/mariadb/procedures/35_run_ends.sql), the
-- command's exit code, or the signal that ended it (one of the two; both
-- NULL for every other record, for a release by an older binary, and for
-- rows written before this version).
--
-- run_results: per resource, how many of its runs succeeded (exit 0) and
-- failed (another exit code, or a signal), and how the latest ended and how
-- long its lease was held: what status --format prometheus exports. Kept
-- apart from history so that gc's pruning never lowers a counter; no role
-- has any privilege on it (it is read through clock_run_results).
--
-- Nullable, no default, added last: InnoDB adds such columns in place, so an
-- older binary keeps working on this schema. IF NOT EXISTS makes the file
-- safe to run again, as 001 explains.
ALTER TABLE history ADD COLUMN IF NOT EXISTS exit_code INT NULL,
                    ADD COLUMN IF NOT EXISTS exit_signal INT NULL;

CREATE TABLE IF NOT EXISTS run_results (
  namespace        VARBINARY(255) NOT NULL,
  resource         VARBINARY(255) NOT NULL,
  succeeded        BIGINT NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
  failed           BIGINT NOT NULL DEFAULT 0 CHECK (failed >= 0),
  last_ended_us    BIGINT NOT NULL,
  last_exit_code   INT NULL,  -- NULL: ended by last_exit_signal
  last_exit_signal INT NULL,
  last_held_for_us BIGINT NOT NULL,
  PRIMARY KEY (namespace, resource)
) ENGINE=InnoDB;
