-- clock on PostgreSQL, version 8: how many runs each resource has had, by
-- outcome, kept apart from history so that pruning history (gc_batch) does
-- not reset them: status --format prometheus exports them as
-- clock_runs_total, a counter, which must never go down. Written only by the
-- trigger on history (sql/postgres/functions/50_run_counts.sql), so only the
-- SECURITY DEFINER functions that write history change it; no role has any
-- privilege on it (roles.sql).
--
-- The counts start from the history the table holds now. The trigger is
-- created by the functions script later in this same transaction; SHARE ROW
-- EXCLUSIVE keeps any other transaction from writing history from this seed
-- until the commit, so no row is missed or counted twice.
CREATE TABLE @schema@.run_counts (
  namespace text COLLATE "C" NOT NULL,
  resource  text COLLATE "C" NOT NULL,
  outcome   text   NOT NULL
            CHECK (outcome IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')),
  count     bigint NOT NULL CHECK (count >= 0),
  PRIMARY KEY (namespace, resource, outcome)
);

LOCK TABLE @schema@.history IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO @schema@.run_counts (namespace, resource, outcome, count)
  SELECT namespace, resource, event, count(*) FROM @schema@.history
  WHERE event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')
  GROUP BY namespace, resource, event;
