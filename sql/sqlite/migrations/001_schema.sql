-- clock schema for SQLite, version 1.
--
-- Guarantees: every write transaction is begun IMMEDIATE, so SQLite's single
-- database write lock serializes all writers; a check for conflicting leases
-- and the insert that follows it cannot interleave with another writer's. The
-- store reads the clock once per transaction (julianday('now'), the host's
-- real-time clock; one host, so one clock for every process) and stores
-- instants as integer milliseconds since the Unix epoch.
--
-- Resource names use SQLite's BINARY collation, so the descendants of 'a' are
-- exactly the keys strictly between 'a.' and 'a/' ('/' follows '.' and no
-- segment holds either): a primary-key range scan, never LIKE.

-- Monotonic counters that survive gc: fencing tokens and queue positions.
CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('token', 0);

-- Granted locks: one row per (namespace, resource, owner).
CREATE TABLE leases (
  namespace        TEXT    NOT NULL,
  resource         TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  mode             TEXT    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            INTEGER NOT NULL CHECK (slots >= 0),
  token            INTEGER NOT NULL,
  depth            INTEGER NOT NULL CHECK (depth >= 1),
  request_id       TEXT    NOT NULL,
  acquired_at      INTEGER NOT NULL,
  renewed_at       INTEGER NOT NULL,
  expires_at       INTEGER,            -- NULL: --ttl 0, never expires
  host             TEXT    NOT NULL,
  ip               TEXT    NOT NULL,
  pid              INTEGER NOT NULL,
  user             TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  owner_started_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, resource, owner)
);
CREATE INDEX leases_by_expiry ON leases (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX leases_by_owner ON leases (owner);

-- Queued requests, in arrival order (position). An entry that is not
-- refreshed within one TTL is dead and blocks nobody.
CREATE TABLE waiters (
  position         INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace        TEXT    NOT NULL,
  resource         TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  mode             TEXT    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            INTEGER NOT NULL CHECK (slots >= 0),
  request_id       TEXT    NOT NULL,
  enqueued_at      INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  host             TEXT    NOT NULL,
  ip               TEXT    NOT NULL,
  pid              INTEGER NOT NULL,
  user             TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  owner_started_at INTEGER NOT NULL,
  UNIQUE (namespace, resource, owner)
);
CREATE INDEX waiters_by_expiry ON waiters (expires_at);
CREATE INDEX waiters_by_owner ON waiters (owner);

-- Every grant, release, expiry, forced release and lost lease.
CREATE TABLE history (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  at         INTEGER NOT NULL,
  event      TEXT    NOT NULL
             CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost')),
  namespace  TEXT    NOT NULL,
  resource   TEXT    NOT NULL,
  owner      TEXT    NOT NULL,
  mode       TEXT    NOT NULL,
  token      INTEGER NOT NULL,
  held_ms    INTEGER,                  -- for the end of a lease
  host       TEXT    NOT NULL,
  ip         TEXT    NOT NULL,
  pid        INTEGER NOT NULL,
  user       TEXT    NOT NULL,
  command    TEXT    NOT NULL,
  by         TEXT    NOT NULL DEFAULT '' -- forced: user@host of who forced it
);
CREATE INDEX history_by_resource ON history (namespace, resource, id);
CREATE INDEX history_by_time ON history (at);
