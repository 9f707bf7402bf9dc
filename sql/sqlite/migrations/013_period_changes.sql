-- clock schema for SQLite, version 13: a change of a resource's expected
-- period is history (docs/threat-model.md, "Expected periods"), as the
-- PostgreSQL schema has it (its migration 018): 'period_changed', written by
-- expect_runs (src/store/sqlite/expected_runs.cpp) for each resource whose
-- period it declares or changes, with the declaring run's lease facts, who
-- asked and the login. every_ms: the period declared; previous_every_ms:
-- the one it replaced (NULL: the first declaration).
--
-- SQLite cannot change a CHECK constraint in place, so history is rebuilt
-- as in 006: every column, row and id, the AUTOINCREMENT high-water mark,
-- the indexes and the run-count trigger are kept, inside the migration's
-- IMMEDIATE transaction; live leases stay held across the upgrade.
CREATE TABLE history_new (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  at               INTEGER NOT NULL,
  event            TEXT    NOT NULL
                   CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                                    'skipped', 'timed_out', 'killed', 'refused',
                                    'period_changed')),
  namespace        TEXT    NOT NULL,
  resource         TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  mode             TEXT,                     -- NULL only for 'lost' of a lease already gone
  token            INTEGER,                  -- NULL for 'lost' of a lease already gone, and
                                             -- for a run that did not happen
  held_ms          INTEGER,                  -- for the end of a lease
  host             TEXT    NOT NULL DEFAULT '',
  ip               TEXT    NOT NULL DEFAULT '',
  pid              INTEGER NOT NULL DEFAULT 0,
  user             TEXT    NOT NULL DEFAULT '',
  command          TEXT    NOT NULL DEFAULT '',
  by               TEXT    NOT NULL DEFAULT '', -- who asked, when not the holder's process
                                                -- tree: "user@host pid N"
  in_the_way_owner TEXT,                     -- skipped, timed_out: who held or awaited it
  in_the_way_host  TEXT,
  in_the_way_token INTEGER,                  -- NULL for a queue entry
  done_by_started_at INTEGER,                -- skipped under --once-per: the run's start (005)
  secret_hash      TEXT,                     -- 007
  db_user          TEXT    NOT NULL DEFAULT '', -- 007
  leftovers        TEXT,                     -- 009
  every_ms         INTEGER,                  -- period_changed: the period declared
  previous_every_ms INTEGER                  -- period_changed: the one replaced (NULL: none)
);
INSERT INTO history_new (id, at, event, namespace, resource, owner, mode, token, held_ms, host,
                         ip, pid, user, command, by, in_the_way_owner, in_the_way_host,
                         in_the_way_token, done_by_started_at, secret_hash, db_user, leftovers)
  SELECT id, at, event, namespace, resource, owner, mode, token, held_ms, host, ip, pid, user,
         command, by, in_the_way_owner, in_the_way_host, in_the_way_token, done_by_started_at,
         secret_hash, db_user, leftovers
  FROM history ORDER BY id;
-- Keep the high-water mark, so ids freed by gc are never handed out again.
DELETE FROM sqlite_sequence WHERE name = 'history_new';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'history_new', seq FROM sqlite_sequence WHERE name = 'history';
DROP TABLE history;
ALTER TABLE history_new RENAME TO history;
CREATE INDEX history_by_resource ON history (namespace, resource, id);
CREATE INDEX history_by_time ON history (at);
-- As in 006: dropping history dropped it.
CREATE TRIGGER history_counts_runs AFTER INSERT ON history
WHEN NEW.event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')
BEGIN
  INSERT INTO run_counts (namespace, resource, outcome, count)
    VALUES (NEW.namespace, NEW.resource, NEW.event, 1)
    ON CONFLICT (namespace, resource, outcome) DO UPDATE SET count = count + 1;
END;
