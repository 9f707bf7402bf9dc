-- clock schema for SQLite, version 11: how each run of clock run ended, as
-- the PostgreSQL schema has it (its migration 016).
--
-- history.exit_code / history.exit_signal: on a `released` record written by
-- clock run, the command's exit code, or the signal that ended it (one of
-- the two; both NULL for every other record and for rows written before
-- this version).
--
-- run_results: per resource, how many of its runs succeeded (exit 0) and
-- failed (another exit code, or a signal), and how the latest ended and how
-- long its lease was held: what status --format prometheus exports
-- (clock_runs_total's succeeded and failed outcomes, clock_last_exit_status,
-- clock_last_run_duration_seconds). Written by the release that records the
-- run's end, in its IMMEDIATE transaction; kept apart from history so that
-- gc's pruning never lowers a counter.
--
-- Nullable columns and a new table: an older binary keeps working on this
-- schema (it writes no exit, and nothing reads what it does not write).
ALTER TABLE history ADD COLUMN exit_code INTEGER;
ALTER TABLE history ADD COLUMN exit_signal INTEGER;

CREATE TABLE run_results (
  namespace        TEXT    NOT NULL,
  resource         TEXT    NOT NULL,
  succeeded        INTEGER NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
  failed           INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),
  last_ended_at    INTEGER NOT NULL,  -- ms since the epoch
  last_exit_code   INTEGER,           -- NULL: ended by last_exit_signal
  last_exit_signal INTEGER,
  last_held_ms     INTEGER NOT NULL,
  PRIMARY KEY (namespace, resource)
) WITHOUT ROWID;
