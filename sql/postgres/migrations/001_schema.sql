-- clock schema for PostgreSQL, version 1: tables and the token sequence. The
-- functions that use them are in sql/postgres/functions/.
--
-- @schema@ is replaced by the quoted schema name ("clock" by default) and
-- @schema_name@ by the bare name, validated as [a-z_][a-z0-9_]* by the store
-- before substitution, so neither can inject SQL. Every object is qualified
-- with the schema; nothing depends on the caller's search_path.
--
-- Requires PostgreSQL 11 or later (hashtextextended); tested on 15. Like
-- every migration it runs inside the one transaction of the migration script
-- (src/store/postgres/schema.cpp), under a transaction-level advisory lock,
-- so two hosts migrating at once apply it once, all or nothing.
--
-- Guarantees this file sets up, relied on by the functions:
-- * Resource and namespace columns are text COLLATE "C" (byte order), so the
--   descendants of 'a' are exactly the keys strictly between 'a.' and 'a/'
--   ('/' follows '.' and no segment holds either): a primary-key range scan.
--   The database's default collation (often en_US) sorts punctuation
--   differently and would break that trick; LIKE on user text is never used.
-- * Fencing tokens come from one sequence with CACHE 1: nextval() is
--   monotonic across sessions (a per-session cache would hand out values out
--   of order), survives gc and restarts, and a value is never handed out
--   twice. Tokens are drawn only while holding the resource's lock (20_acquire.sql), so
--   a later grant of a resource always carries a larger token.
-- * The lock-table rows are written only by the SECURITY DEFINER functions of
--   002-004; roles.sql grants EXECUTE on those, not table privileges, so an
--   application role cannot rewrite history or drop another owner's lease.

-- Granted locks: one row per (namespace, resource, owner).
CREATE TABLE @schema@.leases (
  namespace        text COLLATE "C" NOT NULL,
  resource         text COLLATE "C" NOT NULL,
  owner            uuid        NOT NULL,
  mode             text        NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            integer     NOT NULL CHECK (slots >= 0),
  token            bigint      NOT NULL,
  depth            integer     NOT NULL CHECK (depth >= 1),
  request_id       text        NOT NULL,
  acquired_at      timestamptz NOT NULL,
  renewed_at       timestamptz NOT NULL,
  expires_at       timestamptz,             -- NULL: --ttl 0, never expires
  ttl              interval    NOT NULL,
  host             text        NOT NULL,
  ip               text        NOT NULL,
  pid              bigint      NOT NULL,
  user_name        text        NOT NULL,
  command          text        NOT NULL,
  owner_started_at timestamptz,
  PRIMARY KEY (namespace, resource, owner)
);
CREATE INDEX leases_by_expiry ON @schema@.leases (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX leases_by_owner ON @schema@.leases (owner);

-- Queued requests in arrival order (position). An entry lives one waiter
-- lifetime past its last refresh (each blocked attempt refreshes it); a dead
-- entry blocks nobody and gc removes it.
CREATE TABLE @schema@.waiters (
  position         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  namespace        text COLLATE "C" NOT NULL,
  resource         text COLLATE "C" NOT NULL,
  owner            uuid        NOT NULL,
  mode             text        NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  slots            integer     NOT NULL CHECK (slots >= 0),
  request_id       text        NOT NULL,
  enqueued_at      timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  host             text        NOT NULL,
  ip               text        NOT NULL,
  pid              bigint      NOT NULL,
  user_name        text        NOT NULL,
  command          text        NOT NULL,
  owner_started_at timestamptz,
  UNIQUE (namespace, resource, owner)
);
CREATE INDEX waiters_by_expiry ON @schema@.waiters (expires_at);
CREATE INDEX waiters_by_owner ON @schema@.waiters (owner);

-- Every grant, release, expiry, forced release and lost lease, until gc
-- prunes it by age. mode and token are NULL only for a 'lost' record of a
-- lease that was already gone when its owner tried to renew it.
CREATE TABLE @schema@.history (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at               timestamptz NOT NULL,
  event            text        NOT NULL
                   CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost')),
  namespace        text COLLATE "C" NOT NULL,
  resource         text COLLATE "C" NOT NULL,
  owner            uuid        NOT NULL,
  mode             text,
  token            bigint,
  held_for         interval,                -- for the end of a lease
  host             text        NOT NULL DEFAULT '',
  ip               text        NOT NULL DEFAULT '',
  pid              bigint      NOT NULL DEFAULT 0,
  user_name        text        NOT NULL DEFAULT '',
  command          text        NOT NULL DEFAULT '',
  forced_by        text        NOT NULL DEFAULT '',  -- forced: user@host, as the client says
  db_user          text        NOT NULL DEFAULT session_user  -- the database role, for audit
);
CREATE INDEX history_by_resource ON @schema@.history (resource, id);
CREATE INDEX history_by_time ON @schema@.history (at);

CREATE SEQUENCE @schema@.tokens AS bigint CACHE 1 NO CYCLE;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
