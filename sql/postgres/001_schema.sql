-- clock schema for PostgreSQL, version 1: tables, the token sequence and the
-- small helpers the operation functions (002-004) share.
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
-- Guarantees this file sets up, relied on by 002-004:
-- * Resource and namespace columns are text COLLATE "C" (byte order), so the
--   descendants of 'a' are exactly the keys strictly between 'a.' and 'a/'
--   ('/' follows '.' and no segment holds either): a primary-key range scan.
--   The database's default collation (often en_US) sorts punctuation
--   differently and would break that trick; LIKE on user text is never used.
-- * Fencing tokens come from one sequence with CACHE 1: nextval() is
--   monotonic across sessions (a per-session cache would hand out values out
--   of order), survives gc and restarts, and a value is never handed out
--   twice. Tokens are drawn only while holding the resource's lock (002), so
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

-- Helpers. They are not SECURITY DEFINER and PUBLIC may not execute them; the
-- operation functions call them with search_path pinned.

-- An instant as integer microseconds since the Unix epoch (what the store reads).
CREATE FUNCTION @schema@.usec(p_at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT (extract(epoch FROM p_at) * 1000000)::bigint $$;

-- The strict ancestors of a resource: 'a.b.c' gives {a, a.b}.
CREATE FUNCTION @schema@.ancestors(p_resource text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT coalesce(array_agg(array_to_string(parts[1:i], '.') ORDER BY i), '{}')
  FROM string_to_array(p_resource, '.') AS parts, generate_series(1, cardinality(parts) - 1) AS i
$$;

-- The key of the transaction-level advisory lock that serializes every write
-- to one resource hierarchy (a namespace and a first segment): related
-- resources always share their first segment. A hash collision only
-- serializes two unrelated hierarchies; it never lets related ones interleave.
CREATE FUNCTION @schema@.lock_key(p_namespace text, p_root text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT hashtextextended('@schema_name@' || E'\n' || p_namespace || E'\n' || p_root, 0) $$;

-- Takes the hierarchy locks of a request in one canonical order (by key), so
-- two requests over the same hierarchies never wait for each other in a
-- cycle. Held until the calling transaction ends.
-- With p_wait false (clock acquire -n) the locks are only tried: a
-- hierarchy locked by another open transaction raises lock_not_available
-- at once, which the store reports as "held", not as an outage.
CREATE FUNCTION @schema@.lock_hierarchies(p_namespace text, p_resources text[],
                                          p_wait boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_key bigint;
BEGIN
  FOR v_key IN
    SELECT DISTINCT @schema@.lock_key(p_namespace, split_part(r, '.', 1))
    FROM unnest(p_resources) AS r ORDER BY 1
  LOOP
    IF p_wait THEN
      PERFORM pg_advisory_xact_lock(v_key);
    ELSIF NOT pg_try_advisory_xact_lock(v_key) THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = 'another transaction holds locks under the same top-level name';
    END IF;
  END LOOP;
END $$;

-- Refuses arguments the lock model forbids (SPEC §1), so that a program
-- calling the functions directly cannot store a name clock would reject.
CREATE FUNCTION @schema@.check_names(p_namespace text, p_resources text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_bad text;
BEGIN
  IF p_namespace IS NULL OR octet_length(p_namespace) > 255 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'invalid namespace: at most 255 bytes, not NULL';
  END IF;
  IF p_resources IS NULL OR cardinality(p_resources) = 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'no resource given';
  END IF;
  SELECT r INTO v_bad FROM unnest(p_resources) AS r
  WHERE r IS NULL OR octet_length(r) > 255 OR r !~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('invalid resource name %L', left(v_bad, 64));
  END IF;
  IF (SELECT count(DISTINCT r) FROM unnest(p_resources) AS r) <> cardinality(p_resources) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'a resource is named twice in one request';
  END IF;
END $$;

-- Wakes every waiter of this schema: sent on commit, so a woken waiter's next
-- attempt sees the change. One channel per schema; the payload is empty so
-- that PostgreSQL folds the notifications of one transaction into one.
CREATE FUNCTION @schema@.notify_change() RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('@schema_name@_changed', '') $$;

-- Lease and waiter rows as JSON for the store: instants in microseconds.
CREATE FUNCTION @schema@.lease_json(l @schema@.leases, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', l.namespace, 'resource', l.resource, 'owner', l.owner, 'mode', l.mode,
  'slots', l.slots, 'token', l.token, 'depth', l.depth,
  'acquired_at', @schema@.usec(l.acquired_at), 'renewed_at', @schema@.usec(l.renewed_at),
  'expires_at', @schema@.usec(l.expires_at), 'expired', coalesce(l.expires_at <= p_now, false),
  'host', l.host, 'ip', l.ip, 'pid', l.pid, 'user', l.user_name, 'command', l.command,
  'started', @schema@.usec(l.owner_started_at)) $$;

CREATE FUNCTION @schema@.waiter_json(w @schema@.waiters) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', w.namespace, 'resource', w.resource, 'owner', w.owner, 'mode', w.mode,
  'slots', w.slots, 'position', w.position, 'since', @schema@.usec(w.enqueued_at),
  'host', w.host, 'ip', w.ip, 'pid', w.pid, 'user', w.user_name, 'command', w.command,
  'started', @schema@.usec(w.owner_started_at)) $$;

-- Records the end (or start) of a lease in history.
CREATE FUNCTION @schema@.record_event(p_event text, p_at timestamptz, l @schema@.leases,
                                      p_held_for interval, p_forced_by text DEFAULT '')
RETURNS void
LANGUAGE sql
AS $$
  INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, held_for,
                                host, ip, pid, user_name, command, forced_by)
  VALUES (p_at, p_event, l.namespace, l.resource, l.owner, l.mode, l.token, p_held_for,
          l.host, l.ip, l.pid, l.user_name, l.command, p_forced_by)
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
