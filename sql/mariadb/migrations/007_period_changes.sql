-- clock on MariaDB, version 7: a change of a resource's expected period is
-- history (docs/threat-model.md, "Expected periods"), as PostgreSQL's
-- migration 018: 'period_changed', written by clock_expect_runs
-- (procedures/60_expected_runs.sql) for each resource whose period it
-- declares or changes, with the declaring run's lease facts, who asked and
-- the login. history.every_ms: the period declared; previous_every_ms: the
-- one it replaced (NULL: the first declaration).
--
-- The event column keeps its CHECK inline, so it is restated with the new
-- kind (MODIFY rewrites the table: history is as large as gc keeps it).
ALTER TABLE history
  ADD COLUMN IF NOT EXISTS every_ms BIGINT NULL,
  ADD COLUMN IF NOT EXISTS previous_every_ms BIGINT NULL,
  MODIFY event VARCHAR(16) CHARACTER SET ascii NOT NULL
    CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                     'skipped', 'timed_out', 'killed', 'refused', 'period_changed'));
