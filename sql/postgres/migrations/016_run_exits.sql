-- clock on PostgreSQL, version 16: how each run of clock run ended, as the
-- SQLite schema has it (its migration 011).
--
-- history.exit_code / history.exit_signal: on a `released` record written by
-- clock run (release2(), sql/postgres/functions/35_run_ends.sql), the
-- command's exit code, or the signal that ended it (one of the two; both
-- NULL for every other record, for a release by an older binary, and for
-- rows written before this version).
--
-- run_results: per resource, how many of its runs succeeded (exit 0) and
-- failed (another exit code, or a signal), and how the latest ended and how
-- long its lease was held: what status --format prometheus exports. Written
-- by release2() in the release's transaction; kept apart from history so
-- that gc's pruning never lowers a counter. No role has any privilege on it:
-- it is read through run_results() (roles.sql).
--
-- Nullable columns without a default and a new table: a catalog change only
-- (no table rewrite), and an older binary keeps working on this schema.
ALTER TABLE @schema@.history ADD COLUMN exit_code integer, ADD COLUMN exit_signal integer;

CREATE TABLE @schema@.run_results (
  namespace        text COLLATE "C" NOT NULL,
  resource         text COLLATE "C" NOT NULL,
  succeeded        bigint      NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
  failed           bigint      NOT NULL DEFAULT 0 CHECK (failed >= 0),
  last_ended_at    timestamptz NOT NULL,
  last_exit_code   integer,  -- NULL: ended by last_exit_signal
  last_exit_signal integer,
  last_held_for    interval    NOT NULL,
  PRIMARY KEY (namespace, resource)
);
