-- clock schema for SQLite, version 4: how many runs each resource has had,
-- by outcome, kept apart from history so that pruning history (gc
-- --history-older-than) does not reset them: status --format prometheus
-- exports them as clock_runs_total, a counter, which must never go down.
--
-- The trigger counts every history row of the six outcomes in the
-- transaction that writes it, whichever statement writes it; released and
-- expired are ends of leases already counted as acquired, not outcomes of a
-- run. The counts start from the history the database still holds, in this
-- migration's IMMEDIATE transaction, so no row is counted twice or missed.
CREATE TABLE run_counts (
  namespace TEXT    NOT NULL,
  resource  TEXT    NOT NULL,
  outcome   TEXT    NOT NULL
            CHECK (outcome IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')),
  count     INTEGER NOT NULL CHECK (count >= 0),
  PRIMARY KEY (namespace, resource, outcome)
) WITHOUT ROWID;

INSERT INTO run_counts (namespace, resource, outcome, count)
  SELECT namespace, resource, event, count(*) FROM history
  WHERE event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')
  GROUP BY namespace, resource, event;

-- Dropping history drops this trigger: a migration that rebuilds history
-- (as 002 and 003 do) creates it again.
CREATE TRIGGER history_counts_runs AFTER INSERT ON history
WHEN NEW.event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')
BEGIN
  INSERT INTO run_counts (namespace, resource, outcome, count)
    VALUES (NEW.namespace, NEW.resource, NEW.event, 1)
    ON CONFLICT (namespace, resource, outcome) DO UPDATE SET count = count + 1;
END;
