-- clock on PostgreSQL, version 9: --once-per (man clock, COMMANDS), as the SQLite schema
-- has it (its migration 005).
--
-- last_success holds, per resource, the latest successful run of `clock run`
-- (its command exited 0 and its lease ended in a release): the grant time of
-- its lease on the database's clock, its owner, host and token. release()
-- writes it and try_acquire() of a --once-per request reads it, both under
-- the hierarchy's advisory lock, so two requests cannot both find a period
-- not done. One row per resource, never pruned by gc (like run_counts), so
-- pruning history cannot make a period look not done. Written only by those
-- SECURITY DEFINER functions; no role has a privilege on it (roles.sql).
CREATE TABLE @schema@.last_success (
  namespace  text COLLATE "C" NOT NULL,
  resource   text COLLATE "C" NOT NULL,
  started_at timestamptz NOT NULL,
  owner      uuid        NOT NULL,
  host       text        NOT NULL,
  token      bigint      NOT NULL,
  PRIMARY KEY (namespace, resource)
);

-- A skipped run whose period was done names that run in the in_the_way_*
-- columns and its start here (NULL for every other record): a nullable
-- column without a default, a catalog-only change.
ALTER TABLE @schema@.history ADD COLUMN done_by_started_at timestamptz;
