-- clock on MariaDB, version 7: a change of a resource's expected period is
-- history (docs/threat-model.md, "Expected periods"), as PostgreSQL's
-- migration 018 and SQLite's 013 have it: written by clock_expect_runs
-- (procedures/60_expected_runs.sql) for each resource whose period it
-- declares or changes, with the declaring run's lease facts, who asked and
-- the login; read by clock_history and clock_history2 as events
-- 'period_changed' and pruned by clock_gc_batch with the rest of history.
--
-- A table of its own, not rows of history: release 1.0's clock_history
-- (kept as v1.0.0 installs it, docs/upgrades.md) returns every row of
-- history, and a v1.0.0 binary refuses an event it does not know, so its
-- `clock history` would fail during a rolling upgrade. Its ids are taken
-- from history's AUTO_INCREMENT (clock_expect_runs says how), so the two
-- tables' events are numbered in one order. IF NOT EXISTS makes the file
-- safe to run again, as 001 explains.
--
-- every_ms: the period declared; previous_every_ms: the one it replaced
-- (NULL: the first declaration).
CREATE TABLE IF NOT EXISTS period_changes (
  id                BIGINT NOT NULL PRIMARY KEY,
  at_us             BIGINT NOT NULL,
  namespace         VARBINARY(255) NOT NULL,
  resource          VARBINARY(255) NOT NULL,
  owner             CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  mode              VARCHAR(9) CHARACTER SET ascii NULL,
  token             BIGINT NULL,
  host              VARCHAR(255) NOT NULL DEFAULT '',
  ip                VARCHAR(64) NOT NULL DEFAULT '',
  pid               BIGINT NOT NULL DEFAULT 0,
  user_name         VARCHAR(255) NOT NULL DEFAULT '',
  command           TEXT NOT NULL DEFAULT '',
  forced_by         VARCHAR(512) NOT NULL DEFAULT '',  -- who asked, as the client says
  db_user           VARCHAR(384) NOT NULL DEFAULT '',  -- the login, for audit
  every_ms          BIGINT NOT NULL,
  previous_every_ms BIGINT NULL,
  KEY period_changes_by_resource (resource, id),
  KEY period_changes_by_time (at_us)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
