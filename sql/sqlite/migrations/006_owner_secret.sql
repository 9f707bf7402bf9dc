-- clock schema for SQLite, version 6: proof of ownership, as the PostgreSQL
-- schema has it (its migration 010).
--
-- leases.secret_hash is the SHA-256 (64 hex digits) of the owner's secret:
-- renewing, releasing and re-entering a lease that has one needs the secret
-- (util::sha256_hex). It is NULL for a lease granted before this version, so
-- a live lease of the old format is not stranded: it stays renewable and
-- releasable by its owner id alone until it is released or expires. Adding a
-- nullable column without a default is a change of the table's schema only.
--
-- history also holds 'refused': a renew, release or re-entry refused for
-- want of the secret, with the holder's lease and, in `by`, who asked. SQLite
-- cannot change a CHECK constraint in place, so history is rebuilt as in 003:
-- rows, ids, the AUTOINCREMENT high-water mark, indexes, the run-count
-- trigger of 004 and the done_by column of 005 are kept, inside the
-- migration's IMMEDIATE transaction;
-- live leases stay held across the upgrade.
ALTER TABLE leases ADD COLUMN secret_hash TEXT;

CREATE TABLE history_new (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  at               INTEGER NOT NULL,
  event            TEXT    NOT NULL
                   CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                                    'skipped', 'timed_out', 'killed', 'refused')),
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
  done_by_started_at INTEGER                 -- skipped under --once-per: the run's start (005)
);
INSERT INTO history_new (id, at, event, namespace, resource, owner, mode, token, held_ms, host,
                         ip, pid, user, command, by, in_the_way_owner, in_the_way_host,
                         in_the_way_token, done_by_started_at)
  SELECT id, at, event, namespace, resource, owner, mode, token, held_ms, host, ip, pid, user,
         command, by, in_the_way_owner, in_the_way_host, in_the_way_token, done_by_started_at
  FROM history ORDER BY id;
-- Keep the high-water mark, so ids freed by gc are never handed out again.
DELETE FROM sqlite_sequence WHERE name = 'history_new';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'history_new', seq FROM sqlite_sequence WHERE name = 'history';
DROP TABLE history;
ALTER TABLE history_new RENAME TO history;
CREATE INDEX history_by_resource ON history (namespace, resource, id);
CREATE INDEX history_by_time ON history (at);
-- As in 004: dropping history dropped it.
CREATE TRIGGER history_counts_runs AFTER INSERT ON history
WHEN NEW.event IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')
BEGIN
  INSERT INTO run_counts (namespace, resource, outcome, count)
    VALUES (NEW.namespace, NEW.resource, NEW.event, 1)
    ON CONFLICT (namespace, resource, outcome) DO UPDATE SET count = count + 1;
END;
