-- clock schema for MariaDB, version 1: the tables of the lock model in the
-- shape of PostgreSQL's (sql/postgres/migrations 001-013 together), and the
-- server clock. The procedures of sql/mariadb/procedures read and write
-- them; the hosts' logins never touch them directly (sql/mariadb/roles.sql).
--
-- Tested on MariaDB 10.11. Every object lives in the URL's database,
-- unqualified (MariaDB has no schemas within a database). MariaDB commits
-- DDL at once, so a migration is not one transaction as on PostgreSQL:
-- each statement here is safe to run again (IF NOT EXISTS, INSERT IGNORE),
-- so that a migration cut off half-way is finished by the next `clock
-- init`; src/store/mariadb/schema.cpp records the version only after the
-- whole file ran, under GET_LOCK so two hosts migrating at once take turns.
-- (That lock serialises migrations only; no grant depends on GET_LOCK.)
--
-- Guarantees this file sets up, relied on by the procedures
-- (docs/internals/mariadb.md):
-- * Every time is a BIGINT of microseconds since 1970-01-01 UTC from the
--   server's clock: clock_now_us(), from UTC_TIMESTAMP(6), which no session
--   time zone changes and which keeps microseconds whatever a column's
--   precision. NOW() in a statement or a routine is the start of the calling
--   statement, so one call sees one "now". Durations are microseconds too.
-- * namespace and resource are VARBINARY: exact bytes in byte order, no
--   collation, no trailing-space padding (utf8mb4_bin pads): the descendants
--   of 'a' are exactly the keys strictly between 'a.' and 'a/' ('/' follows
--   '.' and no segment holds either), a primary-key range scan, as on
--   PostgreSQL with COLLATE "C".
-- * Fencing tokens come from the one row of `tokens`, incremented in the
--   granting statement's transaction: rolled back with it, never handed out
--   twice, monotonic across restarts and gc. A SEQUENCE would not do on
--   Galera: there its values interleave by node (auto_increment_offset)
--   and are not increasing in grant order across nodes.
-- * hierarchy_locks has one row per slot of a hash of (namespace, first
--   segment), as on PostgreSQL (013), plus a `writes` counter: every grant
--   UPDATEs its slot's row (not only locks it), so that on a multi-writer
--   Galera cluster two conflicting grants on different nodes write the same
--   row and certification aborts one (docs/galera.md). Slot -1 is the deadlock
--   search's.
-- * db_user is the login behind a row (USER(), which a SQL SECURITY DEFINER
--   procedure does not change), written by the procedures; the app user gets
--   EXECUTE on them, not table privileges (as roles.sql on PostgreSQL).

CREATE FUNCTION IF NOT EXISTS clock_now_us() RETURNS BIGINT
  NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER
  COMMENT 'clock: the server clock, microseconds since 1970-01-01 UTC'
  RETURN TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));

-- Granted locks: one row per (namespace, resource, owner).
CREATE TABLE IF NOT EXISTS leases (
  namespace        VARBINARY(255) NOT NULL,
  resource         VARBINARY(255) NOT NULL,
  owner            CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  mode             VARCHAR(9) CHARACTER SET ascii NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            INT NOT NULL CHECK (slots >= 0),
  token            BIGINT NOT NULL,
  depth            INT NOT NULL CHECK (depth >= 1),
  request_id       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  acquired_us      BIGINT NOT NULL,
  renewed_us       BIGINT NOT NULL,
  expires_us       BIGINT NULL,              -- NULL: --ttl 0, never expires
  ttl_us           BIGINT NOT NULL CHECK (ttl_us >= 0),
  host             VARCHAR(255) NOT NULL,
  ip               VARCHAR(64) NOT NULL,
  pid              BIGINT NOT NULL,
  user_name        VARCHAR(255) NOT NULL,
  command          TEXT NOT NULL,
  owner_started_us BIGINT NULL,
  secret_hash      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  db_user          VARCHAR(384) NOT NULL DEFAULT '',
  PRIMARY KEY (namespace, resource, owner),
  KEY leases_by_expiry (expires_us),
  KEY leases_by_owner (owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Queued requests in arrival order (position). An entry lives one waiter
-- lifetime past its last refresh; a dead entry blocks nobody and gc removes
-- it. On one server AUTO_INCREMENT values follow the order of the inserts
-- (each made under its hierarchy's row lock); on Galera they interleave by
-- node, yet keep arrival order where it matters (docs/internals/mariadb.md).
CREATE TABLE IF NOT EXISTS waiters (
  position         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  namespace        VARBINARY(255) NOT NULL,
  resource         VARBINARY(255) NOT NULL,
  owner            CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  mode             VARCHAR(9) CHARACTER SET ascii NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            INT NOT NULL CHECK (slots >= 0),
  request_id       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  enqueued_us      BIGINT NOT NULL,
  expires_us       BIGINT NOT NULL,
  host             VARCHAR(255) NOT NULL,
  ip               VARCHAR(64) NOT NULL,
  pid              BIGINT NOT NULL,
  user_name        VARCHAR(255) NOT NULL,
  command          TEXT NOT NULL,
  owner_started_us BIGINT NULL,
  secret_hash      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  db_user          VARCHAR(384) NOT NULL DEFAULT '',
  UNIQUE KEY waiters_one_per_owner (namespace, resource, owner),
  KEY waiters_in_order (namespace, resource, position),
  KEY waiters_by_expiry (expires_us),
  KEY waiters_by_owner (owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every grant, release, expiry, forced release, lost lease, refusal and run
-- that did not happen, until gc prunes it by age. mode and token are NULL
-- only for a 'lost' record of a lease already gone when its owner renewed.
CREATE TABLE IF NOT EXISTS history (
  id                 BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at_us              BIGINT NOT NULL,
  event              VARCHAR(16) CHARACTER SET ascii NOT NULL
                     CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                                      'skipped', 'timed_out', 'killed', 'refused')),
  namespace          VARBINARY(255) NOT NULL,
  resource           VARBINARY(255) NOT NULL,
  owner              CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  mode               VARCHAR(9) CHARACTER SET ascii NULL,
  token              BIGINT NULL,
  held_for_us        BIGINT NULL,             -- for the end of a lease
  host               VARCHAR(255) NOT NULL DEFAULT '',
  ip                 VARCHAR(64) NOT NULL DEFAULT '',
  pid                BIGINT NOT NULL DEFAULT 0,
  user_name          VARCHAR(255) NOT NULL DEFAULT '',
  command            TEXT NOT NULL DEFAULT '',
  forced_by          VARCHAR(512) NOT NULL DEFAULT '',  -- who asked, as the client says
  db_user            VARCHAR(384) NOT NULL DEFAULT '',  -- the login, for audit
  in_the_way_owner   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
  in_the_way_host    VARCHAR(255) NULL,
  in_the_way_token   BIGINT NULL,
  done_by_started_us BIGINT NULL,             -- skipped: the start of the run that did the period
  secret_hash        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  KEY history_by_resource (resource, id),
  KEY history_by_time (at_us)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Runs per resource by outcome, kept apart from history so that gc's pruning
-- never makes clock_runs_total go down. Written by the procedures beside
-- each history record (no trigger: one place writes both).
CREATE TABLE IF NOT EXISTS run_counts (
  namespace VARBINARY(255) NOT NULL,
  resource  VARBINARY(255) NOT NULL,
  outcome   VARCHAR(16) CHARACTER SET ascii NOT NULL
            CHECK (outcome IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced')),
  count     BIGINT NOT NULL CHECK (count >= 0),
  PRIMARY KEY (namespace, resource, outcome)
) ENGINE=InnoDB;

-- The last successful run of each resource (--once-per).
CREATE TABLE IF NOT EXISTS last_success (
  namespace  VARBINARY(255) NOT NULL,
  resource   VARBINARY(255) NOT NULL,
  started_us BIGINT NOT NULL,
  owner      CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  host       VARCHAR(255) NOT NULL,
  token      BIGINT NOT NULL,
  PRIMARY KEY (namespace, resource)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The fencing-token counter: one row.
CREATE TABLE IF NOT EXISTS tokens (
  id   TINYINT NOT NULL PRIMARY KEY CHECK (id = 1),
  last BIGINT NOT NULL CHECK (last >= 0)
) ENGINE=InnoDB;
INSERT IGNORE INTO tokens (id, last) VALUES (1, 0);

-- The rows that serialise a hierarchy: 16,385 rows, never inserted or
-- deleted after this, only updated (writes = writes + 1) by each grant.
CREATE TABLE IF NOT EXISTS hierarchy_locks (
  slot   INT NOT NULL PRIMARY KEY CHECK (slot BETWEEN -1 AND 16383),
  writes BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
-- Four hex digits of a cross join, not a recursive CTE: MariaDB stops one
-- at max_recursive_iterations (1000 by default), MySQL at
-- cte_max_recursion_depth (1000).
INSERT IGNORE INTO hierarchy_locks (slot) VALUES (-1);
INSERT IGNORE INTO hierarchy_locks (slot)
  WITH hex (n) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
                  UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15)
  SELECT a.n + 16 * b.n + 256 * c.n + 4096 * d.n FROM hex a, hex b, hex c, hex d WHERE d.n < 4;
