-- clock on PostgreSQL, version 18: a change of a resource's expected period
-- is history (docs/threat-model.md, "Expected periods"): written by
-- expect_runs() (sql/postgres/functions/60_expected_runs.sql) for each
-- resource whose period it declares or changes, with the declaring run's
-- lease facts, who asked and the login (db_user); read by history() and
-- history2() of the routine sets as events 'period_changed', and pruned by
-- gc_batch() with the rest of history.
--
-- A table of its own, not rows of history: release 1.0's history() (kept as
-- v1.0.0 installs it, docs/upgrades.md) returns every row of history, and a
-- v1.0.0 binary refuses an event it does not know, so its `clock history`
-- would fail during a rolling upgrade. Its ids are drawn from history's
-- identity sequence (expect_runs() takes them), so the two tables' events
-- are numbered in one order.
--
-- every_ms: the period declared; previous_every_ms: the one it replaced
-- (NULL: the first declaration).
CREATE TABLE @schema@.period_changes (
  id                bigint      PRIMARY KEY,
  at                timestamptz NOT NULL,
  namespace         text COLLATE "C" NOT NULL,
  resource          text COLLATE "C" NOT NULL,
  owner             uuid        NOT NULL,
  mode              text,
  token             bigint,
  host              text        NOT NULL DEFAULT '',
  ip                text        NOT NULL DEFAULT '',
  pid               bigint      NOT NULL DEFAULT 0,
  user_name         text        NOT NULL DEFAULT '',
  command           text        NOT NULL DEFAULT '',
  forced_by         text        NOT NULL DEFAULT '',  -- who asked, as the client says
  db_user           text        NOT NULL DEFAULT session_user,
  every_ms          bigint      NOT NULL,
  previous_every_ms bigint
);
CREATE INDEX period_changes_by_resource ON @schema@.period_changes (resource, id);
CREATE INDEX period_changes_by_time ON @schema@.period_changes (at);
