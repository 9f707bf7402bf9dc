-- clock schema for SQLite, version 5: --once-per (man clock, COMMANDS), as the
-- PostgreSQL schema has it (its migration 009).
--
-- last_success holds, per resource, the latest successful run of `clock run`
-- (its command exited 0 and its lease ended in a release): the grant time of
-- its lease, its owner, host and token. It is written by that release and
-- read by try_acquire of a --once-per request, each in its IMMEDIATE
-- transaction, so two requests cannot both find a period not done. One row
-- per resource, never pruned by gc (like run_counts), so pruning history
-- cannot make a period look not done.
CREATE TABLE last_success (
  namespace  TEXT    NOT NULL,
  resource   TEXT    NOT NULL,
  started_at INTEGER NOT NULL,  -- the lease's grant, ms since the epoch
  owner      TEXT    NOT NULL,
  host       TEXT    NOT NULL,
  token      INTEGER NOT NULL,
  PRIMARY KEY (namespace, resource)
) WITHOUT ROWID;

-- A skipped run whose period was done names that run in the in_the_way_*
-- columns and its start here (NULL for every other record). A nullable
-- column without a default: no rebuild of history.
ALTER TABLE history ADD COLUMN done_by_started_at INTEGER;
