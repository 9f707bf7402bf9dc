-- clock on PostgreSQL, version 18: a change of a resource's expected period
-- is history (docs/threat-model.md, "Expected periods"): 'period_changed',
-- written by expect_runs() (sql/postgres/functions/60_expected_runs.sql)
-- for each resource whose period it declares or changes, with the
-- declaring run's lease facts, who asked and the login (db_user).
--
-- history.every_ms: the period declared; history.previous_every_ms: the one
-- it replaced (NULL: the first declaration). Nullable columns without a
-- default: a catalog change only.
--
-- The event constraint is widened from whatever it is now (another
-- migration may have added kinds of its own), NOT VALID and then
-- validated, as in 010.
ALTER TABLE @schema@.history ADD COLUMN every_ms bigint;
ALTER TABLE @schema@.history ADD COLUMN previous_every_ms bigint;

DO $widen$
DECLARE
  v_check text;
BEGIN
  SELECT regexp_replace(pg_get_constraintdef(c.oid), '^CHECK ', '') INTO v_check
  FROM pg_constraint c
  WHERE c.conrelid = '@schema@.history'::regclass AND c.conname = 'history_event_check';
  EXECUTE format('ALTER TABLE @schema@.history DROP CONSTRAINT history_event_check, '
                 'ADD CONSTRAINT history_event_check CHECK (event = %L OR %s) NOT VALID',
                 'period_changed', v_check);
END $widen$;
ALTER TABLE @schema@.history VALIDATE CONSTRAINT history_event_check;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
