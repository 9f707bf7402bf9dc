-- clock schema for SQLite, version 3: history also holds the runs that did
-- not happen (skipped, timed_out, killed) and, for skipped and timed_out,
-- who was in the way (owner, host, token: NULL for a queue entry), as the
-- PostgreSQL schema does (its migration 007).
--
-- SQLite cannot change a CHECK constraint in place, so history is rebuilt as
-- in 002: rows, ids, the AUTOINCREMENT high-water mark and indexes are kept,
-- inside the migration's IMMEDIATE transaction; leases and waiters are not
-- touched, so live leases stay held across the upgrade.
CREATE TABLE history_new (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  at               INTEGER NOT NULL,
  event            TEXT    NOT NULL
                   CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                                    'skipped', 'timed_out', 'killed')),
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
  by               TEXT    NOT NULL DEFAULT '', -- forced: user@host of who forced it
  in_the_way_owner TEXT,                     -- skipped, timed_out: who held or awaited it
  in_the_way_host  TEXT,
  in_the_way_token INTEGER                   -- NULL for a queue entry
);
INSERT INTO history_new (id, at, event, namespace, resource, owner, mode, token, held_ms, host,
                         ip, pid, user, command, by)
  SELECT id, at, event, namespace, resource, owner, mode, token, held_ms, host, ip, pid, user,
         command, by
  FROM history ORDER BY id;
-- Keep the high-water mark, so ids freed by gc are never handed out again.
DELETE FROM sqlite_sequence WHERE name = 'history_new';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'history_new', seq FROM sqlite_sequence WHERE name = 'history';
DROP TABLE history;
ALTER TABLE history_new RENAME TO history;
CREATE INDEX history_by_resource ON history (namespace, resource, id);
CREATE INDEX history_by_time ON history (at);
