-- clock schema for SQLite, version 2: history can hold a 'lost' record of a
-- lease that was already gone when its owner tried to renew it (mode and
-- token NULL; token is the one the renewer held, when it said), as the
-- PostgreSQL schema does.
--
-- SQLite cannot relax NOT NULL in place, so history is rebuilt: rows, ids,
-- the AUTOINCREMENT high-water mark and indexes are kept. It runs inside the
-- migration's IMMEDIATE transaction; leases and waiters are not touched, so
-- live leases stay held across the upgrade.
CREATE TABLE history_new (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  at         INTEGER NOT NULL,
  event      TEXT    NOT NULL
             CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost')),
  namespace  TEXT    NOT NULL,
  resource   TEXT    NOT NULL,
  owner      TEXT    NOT NULL,
  mode       TEXT,                     -- NULL only for 'lost' of a lease already gone
  token      INTEGER,                  -- NULL only for 'lost' of a lease already gone
  held_ms    INTEGER,                  -- for the end of a lease
  host       TEXT    NOT NULL DEFAULT '',
  ip         TEXT    NOT NULL DEFAULT '',
  pid        INTEGER NOT NULL DEFAULT 0,
  user       TEXT    NOT NULL DEFAULT '',
  command    TEXT    NOT NULL DEFAULT '',
  by         TEXT    NOT NULL DEFAULT '' -- forced: user@host of who forced it
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
