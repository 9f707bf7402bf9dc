-- clock schema for SQLite, version 13: a change of a resource's expected
-- period is history (docs/threat-model.md, "Expected periods"), as the
-- PostgreSQL schema has it (its migration 018): written by expect_runs
-- (src/store/sqlite/expected_runs.cpp) for each resource whose period it
-- declares or changes, with the declaring run's lease facts, who asked and
-- the login; read by clock history as events 'period_changed' and pruned by
-- clock gc with the rest of history.
--
-- A table of its own, not rows of history: an older binary on the same file
-- reads history with its own statements and would show an event it does not
-- know as another. Its ids are taken from history's AUTOINCREMENT sequence
-- (expected_runs.cpp), so the two tables' events are numbered in one order.
--
-- every_ms: the period declared; previous_every_ms: the one it replaced
-- (NULL: the first declaration).
CREATE TABLE period_changes (
  id                INTEGER PRIMARY KEY,
  at                INTEGER NOT NULL,          -- ms since the epoch
  namespace         TEXT    NOT NULL,
  resource          TEXT    NOT NULL,
  owner             TEXT    NOT NULL,
  mode              TEXT,
  token             INTEGER,
  host              TEXT    NOT NULL DEFAULT '',
  ip                TEXT    NOT NULL DEFAULT '',
  pid               INTEGER NOT NULL DEFAULT 0,
  user              TEXT    NOT NULL DEFAULT '',
  command           TEXT    NOT NULL DEFAULT '',
  by                TEXT    NOT NULL DEFAULT '', -- who asked: "user@host pid N"
  db_user           TEXT    NOT NULL DEFAULT '',
  every_ms          INTEGER NOT NULL,
  previous_every_ms INTEGER
);
CREATE INDEX period_changes_by_resource ON period_changes (namespace, resource, id);
CREATE INDEX period_changes_by_time ON period_changes (at);
