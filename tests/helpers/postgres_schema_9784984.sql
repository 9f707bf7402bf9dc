-- The clock schema "clock" as migrations 001-006 of commit 9784984 created it,
-- before the functions moved to sql/postgres/functions/: the test data of
-- "a schema created by the old layout upgrades in place" (test_postgres.cpp).
-- Generated once, and never to be edited, by:
--   for f in $(git ls-tree --name-only 9784984 sql/postgres/ | grep '/00'); do
--     git show 9784984:$f | sed 's/@schema@/"clock"/g; s/@schema_name@/clock/g'; done
-- between the bookkeeping below (what schema.cpp's script of that commit did).

BEGIN;
CREATE SCHEMA "clock";
CREATE TABLE "clock".schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- sql/postgres/001_schema.sql
-- clock schema for PostgreSQL, version 1: tables, the token sequence and the
-- small helpers the operation functions (002-004) share.
--
-- "clock" is replaced by the quoted schema name ("clock" by default) and
-- clock by the bare name, validated as [a-z_][a-z0-9_]* by the store
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
CREATE TABLE "clock".leases (
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
CREATE INDEX leases_by_expiry ON "clock".leases (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX leases_by_owner ON "clock".leases (owner);

-- Queued requests in arrival order (position). An entry lives one waiter
-- lifetime past its last refresh (each blocked attempt refreshes it); a dead
-- entry blocks nobody and gc removes it.
CREATE TABLE "clock".waiters (
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
CREATE INDEX waiters_by_expiry ON "clock".waiters (expires_at);
CREATE INDEX waiters_by_owner ON "clock".waiters (owner);

-- Every grant, release, expiry, forced release and lost lease, until gc
-- prunes it by age. mode and token are NULL only for a 'lost' record of a
-- lease that was already gone when its owner tried to renew it.
CREATE TABLE "clock".history (
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
CREATE INDEX history_by_resource ON "clock".history (resource, id);
CREATE INDEX history_by_time ON "clock".history (at);

CREATE SEQUENCE "clock".tokens AS bigint CACHE 1 NO CYCLE;

-- Helpers. They are not SECURITY DEFINER and PUBLIC may not execute them; the
-- operation functions call them with search_path pinned.

-- An instant as integer microseconds since the Unix epoch (what the store reads).
CREATE FUNCTION "clock".usec(p_at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT (extract(epoch FROM p_at) * 1000000)::bigint $$;

-- The strict ancestors of a resource: 'a.b.c' gives {a, a.b}.
CREATE FUNCTION "clock".ancestors(p_resource text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT coalesce(array_agg(array_to_string(parts[1:i], '.') ORDER BY i), '{}')
  FROM string_to_array(p_resource, '.') AS parts, generate_series(1, cardinality(parts) - 1) AS i
$$;

-- The key of the transaction-level advisory lock that serializes every write
-- to one resource hierarchy (a namespace and a first segment): related
-- resources always share their first segment. A hash collision only
-- serializes two unrelated hierarchies; it never lets related ones interleave.
CREATE FUNCTION "clock".lock_key(p_namespace text, p_root text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT hashtextextended('clock' || E'\n' || p_namespace || E'\n' || p_root, 0) $$;

-- Takes the hierarchy locks of a request in one canonical order (by key), so
-- two requests over the same hierarchies never wait for each other in a
-- cycle. Held until the calling transaction ends.
-- With p_wait false (clock acquire -n) the locks are only tried: a
-- hierarchy locked by another open transaction raises lock_not_available
-- at once, which the store reports as "held", not as an outage.
CREATE FUNCTION "clock".lock_hierarchies(p_namespace text, p_resources text[],
                                          p_wait boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_key bigint;
BEGIN
  FOR v_key IN
    SELECT DISTINCT "clock".lock_key(p_namespace, split_part(r, '.', 1))
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
CREATE FUNCTION "clock".check_names(p_namespace text, p_resources text[]) RETURNS void
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
CREATE FUNCTION "clock".notify_change() RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('clock_changed', '') $$;

-- Lease and waiter rows as JSON for the store: instants in microseconds.
CREATE FUNCTION "clock".lease_json(l "clock".leases, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', l.namespace, 'resource', l.resource, 'owner', l.owner, 'mode', l.mode,
  'slots', l.slots, 'token', l.token, 'depth', l.depth,
  'acquired_at', "clock".usec(l.acquired_at), 'renewed_at', "clock".usec(l.renewed_at),
  'expires_at', "clock".usec(l.expires_at), 'expired', coalesce(l.expires_at <= p_now, false),
  'host', l.host, 'ip', l.ip, 'pid', l.pid, 'user', l.user_name, 'command', l.command,
  'started', "clock".usec(l.owner_started_at)) $$;

CREATE FUNCTION "clock".waiter_json(w "clock".waiters) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', w.namespace, 'resource', w.resource, 'owner', w.owner, 'mode', w.mode,
  'slots', w.slots, 'position', w.position, 'since', "clock".usec(w.enqueued_at),
  'host', w.host, 'ip', w.ip, 'pid', w.pid, 'user', w.user_name, 'command', w.command,
  'started', "clock".usec(w.owner_started_at)) $$;

-- Records the end (or start) of a lease in history.
CREATE FUNCTION "clock".record_event(p_event text, p_at timestamptz, l "clock".leases,
                                      p_held_for interval, p_forced_by text DEFAULT '')
RETURNS void
LANGUAGE sql
AS $$
  INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token, held_for,
                                host, ip, pid, user_name, command, forced_by)
  VALUES (p_at, p_event, l.namespace, l.resource, l.owner, l.mode, l.token, p_held_for,
          l.host, l.ip, l.pid, l.user_name, l.command, p_forced_by)
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

-- sql/postgres/002_acquire.sql
-- clock on PostgreSQL, version 2: taking locks. try_acquire() is one round
-- trip and one transaction; another program may call it (and release()) in
-- its own transaction to take a clock lock around its own writes.
--
-- Isolation: READ COMMITTED (the default) is enough and is assumed. Every
-- write to a resource hierarchy (namespace + first segment; related
-- resources always share it) happens while holding that hierarchy's
-- transaction-level advisory lock (lock_hierarchies, 001), taken in key order
-- before anything is read. Under READ COMMITTED each statement of a PL/pgSQL
-- function takes a fresh snapshot, so once the lock is held, every read sees
-- all writes of the previous holder, which committed before releasing it:
-- the check for conflicting leases and the insert that follows cannot
-- interleave with another grant in the hierarchy. Why an advisory lock:
-- before the first grant there is no row to lock, and a request conflicts
-- with rows on other keys (ancestors, descendants), so row locks cannot
-- serialize check-then-insert; SERIALIZABLE could, but fails with
-- serialization errors the caller would have to retry. A transaction-level
-- advisory lock needs no session state (it works through pgbouncer in
-- transaction mode) and cannot outlive the transaction. Taking a request's
-- locks in one order (by key) means two clock calls never deadlock; a
-- program that calls try_acquire twice in one transaction of its own can,
-- like with any two locks (PostgreSQL then aborts one of them).
-- gc (004) does not take these locks; it only deletes rows that are already
-- expired, skips rows another transaction has locked, and records history
-- from DELETE ... RETURNING, so a row is recorded by exactly one deleter.
--
-- Clock: every instant is clock_timestamp() read once, right after the locks
-- are taken. now() is the start of the transaction, which may be long before
-- the locks were granted (or before a caller's own transaction reached us);
-- with now() a lease could be granted already expired, or an expiry be judged
-- against a stale instant. One reading per call keeps a call self-consistent.
--
-- Tokens are drawn from the tokens sequence only after the locks are held, so
-- the grants of one resource, serialized by the lock, get increasing tokens.
--
-- Settings of every operation function (002-004): SECURITY DEFINER with
-- search_path pinned to pg_catalog (every object of ours is qualified), so a
-- caller's search_path cannot redirect it; lock_timeout 5 s, so that a
-- program holding a hierarchy lock in a long transaction of its own makes
-- clock fail (exit 69, retry) instead of hang; jit off: these are
-- millisecond queries, and a JIT compilation triggered by a pessimistic cost
-- estimate would add half a second to them.
--
-- Durability: a grant, renewal or release must survive a crash of the server
-- once its caller has seen it, or a crash would hand a token out a second
-- time (the sequence and the lease roll back together) or let a lease expire
-- earlier than its holder was told. Where the server runs with
-- synchronous_commit = off (a common speed setting), commit_durably() turns
-- it on for the caller's transaction; any stricter setting is kept.
--
-- Waits: a waiter's queue entry (waiters) is written by a blocked attempt
-- with queue = true and refreshed by the next ones; a later conflicting
-- request never overtakes a live earlier entry. Deadlocks (a cycle of owners
-- each waiting for the next) are reported instead of queued.

-- The verdict for one resource, as lock::decide() in src/lock/conflict.cpp
-- gives it: 'again' (this request_id already holds it: a retry), 'reenter',
-- 'grant', 'blocked', 'slots_mismatch' or 'upgrade'. Expired related leases
-- must have been removed before (expire_related). blockers[i] is the owner of
-- the i-th lease or waiter in the way, blocked_on[i] its resource.
CREATE FUNCTION "clock".decide(
  p_namespace text, p_resource text, p_mode text, p_slots integer, p_owner uuid,
  p_request_id text, p_now timestamptz,
  OUT verdict text, OUT other_slots integer, OUT blocking_leases jsonb,
  OUT blocking_waiters jsonb, OUT blockers uuid[], OUT blocked_on text[],
  OUT blocker_hosts text[])
LANGUAGE plpgsql AS $$
DECLARE
  v_up text[] := array_prepend(p_resource, "clock".ancestors(p_resource));
  v_lo text := p_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := p_resource || '/';
  l "clock".leases;
  w "clock".waiters;
  v_holders "clock".leases[] := '{}';  -- other owners' slots of this very semaphore
  v_mine bigint;
  v_queued integer := 0;
BEGIN
  verdict := 'grant'; other_slots := 0; blocking_leases := '[]'; blocking_waiters := '[]';
  blockers := '{}'; blocked_on := '{}'; blocker_hosts := '{}';
  SELECT * INTO l FROM "clock".leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND (expires_at IS NULL OR expires_at > p_now);
  IF FOUND THEN
    verdict := CASE WHEN l.request_id = p_request_id THEN 'again'
                    WHEN l.slots <> p_slots THEN 'slots_mismatch'
                    WHEN l.mode = 'shared' AND p_mode = 'exclusive' THEN 'upgrade'
                    ELSE 'reenter' END;
    other_slots := l.slots;
    RETURN;
  END IF;
  FOR l IN SELECT * FROM "clock".leases
           WHERE namespace = p_namespace AND owner <> p_owner
             AND (expires_at IS NULL OR expires_at > p_now)
             AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi))
           ORDER BY token
  LOOP
    IF l.slots > 0 AND p_slots > 0 AND l.resource = p_resource THEN
      IF l.slots <> p_slots THEN
        verdict := 'slots_mismatch'; other_slots := l.slots;
        RETURN;
      END IF;
      v_holders := v_holders || l;
    ELSIF NOT (l.mode = 'shared' AND p_mode = 'shared') THEN
      blocking_leases := blocking_leases || "clock".lease_json(l, p_now);
      blockers := blockers || l.owner; blocked_on := blocked_on || l.resource;
      blocker_hosts := blocker_hosts || l.host;
    END IF;
  END LOOP;
  IF p_slots > 0 AND cardinality(v_holders) >= p_slots THEN
    FOREACH l IN ARRAY v_holders LOOP
      blocking_leases := blocking_leases || "clock".lease_json(l, p_now);
      blockers := blockers || l.owner; blocked_on := blocked_on || l.resource;
      blocker_hosts := blocker_hosts || l.host;
    END LOOP;
  END IF;
  -- Earlier live waiters of other owners; our own entry counts only while live.
  SELECT position INTO v_mine FROM "clock".waiters
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND expires_at > p_now;
  FOR w IN SELECT * FROM "clock".waiters
           WHERE namespace = p_namespace AND owner <> p_owner AND expires_at > p_now
             AND (v_mine IS NULL OR position < v_mine)
             AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi))
           ORDER BY position
  LOOP
    IF w.slots > 0 AND p_slots > 0 AND w.resource = p_resource THEN
      IF w.slots <> p_slots THEN
        verdict := 'slots_mismatch'; other_slots := w.slots;
        RETURN;
      END IF;
      -- Earlier semaphore waiters go first: only the slots left over are ours.
      v_queued := v_queued + 1;
      CONTINUE WHEN cardinality(v_holders) + v_queued < p_slots;
    ELSIF w.mode = 'shared' AND p_mode = 'shared' THEN
      CONTINUE;
    END IF;
    blocking_waiters := blocking_waiters || "clock".waiter_json(w);
    blockers := blockers || w.owner; blocked_on := blocked_on || w.resource;
    blocker_hosts := blocker_hosts || w.host;
  END LOOP;
  IF cardinality(blockers) > 0 THEN
    verdict := 'blocked';
  END IF;
END $$;

-- Removes the expired leases related to one resource, recording each as
-- expired at the instant it lapsed. Returns how many.
CREATE FUNCTION "clock".expire_related(p_namespace text, p_resource text, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_up text[] := array_prepend(p_resource, "clock".ancestors(p_resource));
  v_count integer;
BEGIN
  WITH gone AS (
    DELETE FROM "clock".leases
    WHERE namespace = p_namespace AND expires_at <= p_now
      AND (resource = ANY (v_up) OR (resource > p_resource || '.' AND resource < p_resource || '/'))
    RETURNING *)
  INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token, held_for,
                                host, ip, pid, user_name, command)
  SELECT expires_at, 'expired', namespace, resource, owner, mode, token, expires_at - acquired_at,
         host, ip, pid, user_name, command
  FROM gone;
  GET DIAGNOSTICS v_count = ROW_COUNT;
  RETURN v_count;
END $$;

-- "Waits for" edges out of a set of owners: an owner with a live queue entry
-- waits for every other owner holding a live conflicting lease on a related
-- resource (for a semaphore: only when it is full), and for every owner with
-- an earlier live conflicting entry (FIFO: it cannot overtake them).
CREATE FUNCTION "clock".waits_for(p_owners uuid[], p_now timestamptz)
RETURNS TABLE (from_owner uuid, to_owner uuid, resource text, to_host text)
LANGUAGE sql STABLE AS $$
  -- Related rows are found per queue entry by primary-key lookups (the entry
  -- and its ancestors) and range scans (its descendants), never by a join
  -- condition the planner could only evaluate row by row.
  SELECT w.owner, l.owner, l.resource, l.host
  FROM "clock".waiters w
  CROSS JOIN LATERAL (
    SELECT * FROM "clock".leases
    WHERE namespace = w.namespace
      AND resource = ANY (array_prepend(w.resource, "clock".ancestors(w.resource)))
    UNION ALL
    SELECT * FROM "clock".leases
    WHERE namespace = w.namespace
      AND resource > w.resource || '.' AND resource < w.resource || '/') AS l
  WHERE w.owner = ANY (p_owners) AND w.expires_at > p_now AND l.owner <> w.owner
    AND (l.expires_at IS NULL OR l.expires_at > p_now)
    AND NOT (w.mode = 'shared' AND l.mode = 'shared')
    AND NOT (w.slots > 0 AND l.slots > 0 AND w.resource = l.resource
             AND (SELECT count(*) FROM "clock".leases h
                  WHERE h.namespace = l.namespace AND h.resource = l.resource
                    AND h.owner <> w.owner AND (h.expires_at IS NULL OR h.expires_at > p_now))
                 < w.slots)
  UNION
  SELECT w.owner, e.owner, e.resource, e.host
  FROM "clock".waiters w
  CROSS JOIN LATERAL (
    SELECT * FROM "clock".waiters
    WHERE namespace = w.namespace
      AND resource = ANY (array_prepend(w.resource, "clock".ancestors(w.resource)))
    UNION ALL
    SELECT * FROM "clock".waiters
    WHERE namespace = w.namespace
      AND resource > w.resource || '.' AND resource < w.resource || '/') AS e
  WHERE w.owner = ANY (p_owners) AND w.expires_at > p_now AND e.expires_at > p_now
    AND e.owner <> w.owner AND e.position < w.position
    AND NOT (w.mode = 'shared' AND e.mode = 'shared')
    AND NOT (w.slots > 0 AND e.slots > 0 AND w.resource = e.resource)
$$;

CREATE FUNCTION "clock".describe_owner(p_owner uuid, p_host text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT 'owner ' || p_owner || CASE WHEN coalesce(p_host, '') = '' THEN ''
                                     ELSE ' (' || p_host || ')' END
$$;

-- Breadth-first search along waits_for from the owners in our way. Reaching
-- the requesting owner closes a cycle: returns it as
-- "owner A (host) -> x -> owner B (host) -> y -> owner A (host)", where each
-- arrow reads "waits for x, held or queued for by"; NULL if there is none.
-- Reads rows of other hierarchies without locking them: a cycle closed by two
-- requests at the same instant is found by the next attempt of either.
CREATE FUNCTION "clock".find_cycle(p_owner uuid, p_host text, p_blockers uuid[],
                                    p_blocked_on text[], p_hosts text[], p_now timestamptz)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_nodes uuid[] := '{}';   -- owners reached, in order
  v_hosts text[] := '{}';
  v_parent integer[] := '{}';  -- index of the owner that waits for this one; 0: the requester
  v_via text[] := '{}';     -- the resource that owner waits for
  v_first integer := 1;     -- the frontier is v_nodes[v_first:v_last]
  v_last integer;
  e record;
  i integer;
  v_path text;
BEGIN
  FOR i IN 1 .. cardinality(p_blockers) LOOP
    IF p_blockers[i] = p_owner THEN
      RETURN NULL;  -- cannot happen: decide() never lists the requester
    END IF;
    IF array_position(v_nodes, p_blockers[i]) IS NULL THEN
      v_nodes := v_nodes || p_blockers[i]; v_hosts := v_hosts || p_hosts[i];
      v_parent := v_parent || 0; v_via := v_via || p_blocked_on[i];
    END IF;
  END LOOP;
  FOR depth IN 1 .. 64 LOOP
    v_last := cardinality(v_nodes);
    EXIT WHEN v_first > v_last;
    FOR e IN SELECT * FROM "clock".waits_for(v_nodes[v_first:v_last], p_now)
             ORDER BY from_owner, to_owner, resource
    LOOP
      IF e.to_owner = p_owner THEN
        v_path := ' -> ' || e.resource || ' -> ' || "clock".describe_owner(p_owner, p_host);
        i := array_position(v_nodes, e.from_owner);
        WHILE i > 0 LOOP
          v_path := ' -> ' || v_via[i] || ' -> ' || "clock".describe_owner(v_nodes[i], v_hosts[i])
                    || v_path;
          i := v_parent[i];
        END LOOP;
        RETURN "clock".describe_owner(p_owner, p_host) || v_path;
      END IF;
      IF array_position(v_nodes, e.to_owner) IS NULL THEN
        v_nodes := v_nodes || e.to_owner; v_hosts := v_hosts || e.to_host;
        v_parent := v_parent || array_position(v_nodes, e.from_owner);
        v_via := v_via || e.resource;
      END IF;
    END LOOP;
    v_first := v_last + 1;
  END LOOP;
  RETURN NULL;
END $$;

-- Enters (or keeps) the owner in the queue of every resource of a blocked
-- request. A live entry keeps its position and is rewritten only when half
-- its lifetime is gone (or the request changed), to spare writes; a dead one
-- is replaced, so a waiter that lapsed goes to the back. The lifetime is
-- store::waiter_lifetime(ttl) of src/store/store.cpp: the TTL clamped to
-- 1..30 s, 30 s for --ttl 0.
CREATE FUNCTION "clock".enqueue(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_host text, p_ip text, p_pid bigint, p_user text,
  p_command text, p_started timestamptz, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_life interval := CASE WHEN p_ttl_ms = 0 THEN interval '30 s'
                          ELSE least(greatest(p_ttl_ms * interval '1 ms', interval '1 s'),
                                     interval '30 s') END;
BEGIN
  DELETE FROM "clock".waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources)
    AND expires_at <= p_now;
  INSERT INTO "clock".waiters AS w (namespace, resource, owner, mode, slots, request_id,
                                     enqueued_at, expires_at, host, ip, pid, user_name, command,
                                     owner_started_at)
  SELECT p_namespace, r, p_owner, p_mode, p_slots, p_request_id, p_now, p_now + v_life,
         p_host, p_ip, p_pid, p_user, p_command, p_started
  FROM unnest(p_resources) WITH ORDINALITY AS t (r, n) ORDER BY n
  ON CONFLICT (namespace, resource, owner) DO UPDATE
    SET expires_at = excluded.expires_at, request_id = excluded.request_id,
        mode = excluded.mode, slots = excluded.slots
    WHERE w.expires_at < p_now + v_life / 2 OR w.request_id <> excluded.request_id
       OR w.mode <> excluded.mode OR w.slots <> excluded.slots;
END $$;

-- Makes the current transaction's commit wait for its WAL to be flushed
-- (see Durability above); lasts until the end of the transaction.
CREATE FUNCTION "clock".commit_durably() RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF current_setting('synchronous_commit') = 'off' THEN
    SET LOCAL synchronous_commit = on;
  END IF;
END $$;

-- One attempt at taking every resource of a request, all or none. Returns
-- {"outcome": "granted", "grants": [{resource, token, depth}…]} (request
-- order), {"outcome": "blocked", "leases": […], "waiters": […]} (who is in
-- the way), {"outcome": "deadlock", "cycle": "…"}, or, refused by the lock
-- model, {"outcome": "slots_mismatch" | "upgrade", "resource", "slots",
-- "other_slots"}; each with "now", the server's clock in microseconds.
-- p_ttl_ms = 0: the lease never expires. p_request_id: a fresh id per
-- acquire; a retried call with the same id returns the grant it made.
CREATE FUNCTION "clock".try_acquire(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_expires timestamptz;
  d record;
  v_verdicts text[] := '{}';
  v_leases jsonb := '[]';
  v_waiters jsonb := '[]';
  v_blockers uuid[] := '{}';
  v_blocked_on text[] := '{}';
  v_hosts text[] := '{}';
  v_expired integer := 0;
  v_cycle text;
  v_grants jsonb := '[]';
  l "clock".leases;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  IF p_mode IS NULL OR p_mode NOT IN ('exclusive', 'shared') OR p_slots IS NULL OR p_slots < 0
     OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_owner IS NULL OR coalesce(p_request_id, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'try_acquire: invalid mode, slots, ttl, owner or request id';
  END IF;
  PERFORM "clock".commit_durably();
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources, p_queue);
  v_now := clock_timestamp();  -- after the locks: see the header
  v_expires := CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_expired := v_expired + "clock".expire_related(p_namespace, p_resources[i], v_now);
    SELECT * INTO d FROM "clock".decide(p_namespace, p_resources[i], p_mode, p_slots, p_owner,
                                         p_request_id, v_now);
    IF d.verdict IN ('slots_mismatch', 'upgrade') THEN
      IF v_expired > 0 THEN PERFORM "clock".notify_change(); END IF;
      RETURN jsonb_build_object('outcome', d.verdict, 'now', "clock".usec(v_now),
                                'resource', p_resources[i], 'slots', p_slots,
                                'other_slots', d.other_slots);
    END IF;
    v_verdicts := v_verdicts || d.verdict;
    v_leases := v_leases || d.blocking_leases;
    v_waiters := v_waiters || d.blocking_waiters;
    v_blockers := v_blockers || d.blockers;
    v_blocked_on := v_blocked_on || d.blocked_on;
    v_hosts := v_hosts || d.blocker_hosts;
  END LOOP;
  IF v_expired > 0 THEN PERFORM "clock".notify_change(); END IF;

  -- Deadlock search only where a cycle can close: the first blocked attempt
  -- of a request (a cycle formed later is closed, and found, by the request
  -- that forms it), by an owner that others can be waiting for (it holds a
  -- live lease or queue entry). Re-attempts of a queued request skip it, so
  -- many waiters polling cost little under the hierarchy lock.
  IF cardinality(v_blockers) > 0
     AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                     WHERE owner = p_owner AND request_id = p_request_id
                       AND expires_at > v_now)
     AND (EXISTS (SELECT 1 FROM "clock".leases
                  WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > v_now))
          OR EXISTS (SELECT 1 FROM "clock".waiters
                     WHERE owner = p_owner AND expires_at > v_now)) THEN
    -- Two owners asking for each other's locks at the same moment hold
    -- different hierarchy locks, so each could search before the other's
    -- queue entry is committed and neither would see the cycle. Searches (and
    -- the enqueue that follows, until commit) take turns under one lock; the
    -- statements after it see every earlier searcher's committed entry.
    PERFORM pg_advisory_xact_lock(hashtextextended('clock' || E'\n' || 'deadlock search', 0));
    v_cycle := "clock".find_cycle(p_owner, p_host, v_blockers, v_blocked_on, v_hosts, v_now);
  END IF;
  IF cardinality(v_blockers) > 0 THEN
    IF v_cycle IS NOT NULL THEN
      -- Not queued, and out of the queue: the others can proceed.
      DELETE FROM "clock".waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
      IF FOUND THEN PERFORM "clock".notify_change(); END IF;
      RETURN jsonb_build_object('outcome', 'deadlock', 'now', "clock".usec(v_now),
                                'cycle', v_cycle);
    END IF;
    IF p_queue THEN
      PERFORM "clock".enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                               p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started,
                               v_now);
    END IF;
    RETURN jsonb_build_object(
      'outcome', 'blocked', 'now', "clock".usec(v_now),
      'leases', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'token')::bigint), '[]')
                 FROM (SELECT DISTINCT x FROM jsonb_array_elements(v_leases) AS x) AS s),
      'waiters', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'position')::bigint), '[]')
                  FROM (SELECT DISTINCT x FROM jsonb_array_elements(v_waiters) AS x) AS s));
  END IF;

  FOR i IN 1 .. cardinality(p_resources) LOOP
    IF v_verdicts[i] = 'again' THEN
      SELECT * INTO l FROM "clock".leases
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner;
    ELSIF v_verdicts[i] = 'reenter' THEN
      -- The longer of the two leases wins; no expiry beats any expiry.
      UPDATE "clock".leases
      SET depth = depth + 1, request_id = p_request_id, renewed_at = v_now,
          expires_at = CASE WHEN expires_at IS NULL OR v_expires IS NULL THEN NULL
                            ELSE greatest(expires_at, v_expires) END
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
      RETURNING * INTO l;
    ELSE
      INSERT INTO "clock".leases (namespace, resource, owner, mode, slots, token, depth,
                                   request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                   ip, pid, user_name, command, owner_started_at)
      VALUES (p_namespace, p_resources[i], p_owner, p_mode, p_slots,
              nextval('"clock".tokens'), 1, p_request_id, v_now, v_now, v_expires,
              p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
              coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started)
      RETURNING * INTO l;
      PERFORM "clock".record_event('acquired', v_now, l, NULL);
    END IF;
    v_grants := v_grants || jsonb_build_object('resource', l.resource, 'token', l.token,
                                               'depth', l.depth);
  END LOOP;
  DELETE FROM "clock".waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
  RETURN jsonb_build_object('outcome', 'granted', 'now', "clock".usec(v_now), 'grants', v_grants);
END $$;

-- Takes a request out of the queue (after a timeout or an interrupt): the
-- owner's entries for these resources made by request p_request_id (any
-- request when NULL). Returns how many; wakes the waiters behind them.
CREATE FUNCTION "clock".leave_queue(p_namespace text, p_resources text[], p_owner uuid,
                                     p_request_id text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_count integer;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  DELETE FROM "clock".waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources)
    AND (p_request_id IS NULL OR request_id = p_request_id);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  IF v_count > 0 THEN PERFORM "clock".notify_change(); END IF;
  RETURN v_count;
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

-- sql/postgres/003_renew_release.sql
-- clock on PostgreSQL, version 3: renewing and releasing leases. Each call
-- is one round trip and one transaction.
--
-- Isolation and clock as in 002: READ COMMITTED, the hierarchy advisory locks
-- taken first in key order, then clock_timestamp() read once. Holding the
-- locks orders every renewal and release with every grant of the hierarchy,
-- so a renewal either commits before an acquirer looks (the acquirer sees the
-- extended lease) or finds the lease already gone. The owner's rows are also
-- locked FOR UPDATE, which makes gc (which skips locked rows) leave them be.
--
-- Safety: a renewal extends only the caller's own live leases carrying the
-- caller's tokens, all or none; a release removes only the caller's own
-- lease, so an owner whose lease lapsed never removes a newer holder's. A
-- renewal is idempotent: repeating it (after a dropped connection left its
-- outcome unknown) moves expires_at to the new clock_timestamp() + ttl or
-- reports the lease lost, which is what the first attempt would have found.

-- Extends the owner's leases to clock_timestamp() + ttl (ttl 0: no expiry;
-- a lease taken with --ttl 0 keeps no expiry), keeping their tokens.
-- p_tokens: the tokens the caller holds, in resource order; empty: any.
-- Returns {"outcome": "renewed", "now", "expires_at"} or, changing nothing,
-- {"outcome": "not_owner", "lost": [{resource, reason}…]} with reason
-- 'gone', 'expired' or 'token' (the owner holds it under another token).
-- Each loss is recorded as 'lost'; a lease found expired is removed.
CREATE FUNCTION "clock".renew(p_namespace text, p_resources text[], p_owner uuid,
                               p_tokens bigint[], p_ttl_ms bigint)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_expires timestamptz;
  v_token bigint;
  v_lost jsonb := '[]';
  v_removed boolean := false;
  l "clock".leases;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  IF p_owner IS NULL OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_tokens IS NULL
     OR (cardinality(p_tokens) > 0 AND cardinality(p_tokens) <> cardinality(p_resources)) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'renew: invalid owner, ttl or tokens (one per resource, or none)';
  END IF;
  PERFORM "clock".commit_durably();  -- see Durability in 002
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  v_expires := CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_token := p_tokens[i];  -- NULL when no tokens were given
    SELECT * INTO l FROM "clock".leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_lost := v_lost || jsonb_build_object('resource', p_resources[i], 'reason', 'gone');
      INSERT INTO "clock".history (at, event, namespace, resource, owner, token)
      VALUES (v_now, 'lost', p_namespace, p_resources[i], p_owner, v_token);
    ELSIF l.token <> v_token THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'token');
      l.token := v_token;
      PERFORM "clock".record_event('lost', v_now, l, NULL);
    ELSIF l.expires_at <= v_now THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      DELETE FROM "clock".leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM "clock".record_event('lost', v_now, l, l.expires_at - l.acquired_at);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM "clock".notify_change(); END IF;
  IF jsonb_array_length(v_lost) > 0 THEN
    RETURN jsonb_build_object('outcome', 'not_owner', 'now', "clock".usec(v_now),
                              'lost', v_lost);
  END IF;
  UPDATE "clock".leases
  SET renewed_at = v_now, expires_at = v_expires, ttl = p_ttl_ms * interval '1 ms'
  WHERE namespace = p_namespace AND resource = ANY (p_resources) AND owner = p_owner
    AND expires_at IS NOT NULL;
  RETURN jsonb_build_object('outcome', 'renewed', 'now', "clock".usec(v_now),
                            'expires_at', "clock".usec(v_expires));
END $$;

-- Undoes one re-entry of each of the owner's leases, removing a lease (and
-- recording 'released') when its depth reaches zero. Returns
-- {"released": [{resource, remaining_depth}…], "refused": [{resource,
-- reason}…]} with reason 'expired' (removed, recorded as expired: it may
-- have been someone else's turn already), 'other_owner' or 'not_held'.
CREATE FUNCTION "clock".release(p_namespace text, p_resources text[], p_owner uuid)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_released jsonb := '[]';
  v_refused jsonb := '[]';
  v_removed boolean := false;
  l "clock".leases;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  IF p_owner IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'release: no owner';
  END IF;
  PERFORM "clock".commit_durably();  -- see Durability in 002
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  FOR i IN 1 .. cardinality(p_resources) LOOP
    SELECT * INTO l FROM "clock".leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_refused := v_refused || jsonb_build_object(
        'resource', p_resources[i],
        'reason', CASE WHEN EXISTS (SELECT 1 FROM "clock".leases
                                    WHERE namespace = p_namespace AND resource = p_resources[i]
                                      AND (expires_at IS NULL OR expires_at > v_now))
                       THEN 'other_owner' ELSE 'not_held' END);
      CONTINUE;
    END IF;
    IF l.expires_at <= v_now THEN
      DELETE FROM "clock".leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM "clock".record_event('expired', l.expires_at, l, l.expires_at - l.acquired_at);
      v_refused := v_refused || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      v_removed := true;
    ELSIF l.depth > 1 THEN
      UPDATE "clock".leases SET depth = depth - 1
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', l.depth - 1);
    ELSE
      DELETE FROM "clock".leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM "clock".record_event('released', v_now, l, v_now - l.acquired_at);
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', 0);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM "clock".notify_change(); END IF;
  RETURN jsonb_build_object('now', "clock".usec(v_now), 'released', v_released,
                            'refused', v_refused);
END $$;

-- Removes every holder of each resource, whoever it is (an operator's
-- `clock release --force`): live leases are recorded as 'forced' with
-- p_forced_by and the database role, expired ones as 'expired'. Waiters stay
-- queued. The next grant draws a new, larger token, so the old holder's
-- fenced writes fail. Returns {"released": [{resource, holders_removed}…]}.
CREATE FUNCTION "clock".force_release(p_namespace text, p_resources text[], p_forced_by text)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_released jsonb := '[]';
  v_count integer;
  v_total integer := 0;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  PERFORM "clock".commit_durably();  -- see Durability in 002
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  FOR i IN 1 .. cardinality(p_resources) LOOP
    WITH gone AS (
      DELETE FROM "clock".leases
      WHERE namespace = p_namespace AND resource = p_resources[i]
      RETURNING *)
    INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token, held_for,
                                  host, ip, pid, user_name, command, forced_by)
    SELECT v_now, CASE WHEN expires_at <= v_now THEN 'expired' ELSE 'forced' END, namespace,
           resource, owner, mode, token, v_now - acquired_at, host, ip, pid, user_name, command,
           CASE WHEN expires_at <= v_now THEN '' ELSE coalesce(p_forced_by, '') END
    FROM gone;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    v_total := v_total + v_count;
    v_released := v_released || jsonb_build_object('resource', p_resources[i],
                                                   'holders_removed', v_count);
  END LOOP;
  IF v_total > 0 THEN PERFORM "clock".notify_change(); END IF;
  RETURN jsonb_build_object('now', "clock".usec(v_now), 'released', v_released);
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

-- sql/postgres/004_status_gc.sql
-- clock on PostgreSQL, version 4: reading the lock table and collecting
-- garbage. Each call is one round trip and one transaction.
--
-- status() and history() only read: one statement each, so one snapshot,
-- consistent at READ COMMITTED, and they take no locks that could delay an
-- acquirer. "now" is clock_timestamp(), the server's clock when the snapshot
-- was taken, against which expiry is judged.
--
-- gc_batch() removes at most p_batch rows of each kind per call (per
-- transaction): the store calls it until a call removes fewer, so acquirers
-- never queue behind a long clean-up. It takes no hierarchy locks: it
-- deletes only rows that are already dead by clock_timestamp(), which no
-- acquirer would count anyway, re-checks that under the row lock (a renewal
-- that committed in between wins), and skips rows another transaction holds
-- (FOR UPDATE SKIP LOCKED) so it never waits and can never be part of a
-- deadlock. An expired lease is recorded by whichever transaction deletes it
-- (DELETE ... RETURNING), so exactly once.

-- Holders (live, or all with p_include_expired) and live waiters in queue
-- order, optionally of one namespace and of a resource and its descendants.
-- Returns {"now", "holders": [lease…], "waiters": [waiter…]}.
CREATE FUNCTION "clock".status(p_namespace text, p_prefix text, p_include_expired boolean)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
BEGIN
  RETURN jsonb_build_object(
    'now', "clock".usec(v_now),
    'holders', (SELECT coalesce(jsonb_agg("clock".lease_json(l, v_now)
                                          ORDER BY l.namespace, l.resource, l.acquired_at), '[]')
                FROM "clock".leases l
                WHERE (p_namespace IS NULL OR l.namespace = p_namespace)
                  AND (p_prefix IS NULL OR l.resource = p_prefix
                       OR (l.resource > p_prefix || '.' AND l.resource < p_prefix || '/'))
                  AND (p_include_expired OR l.expires_at IS NULL OR l.expires_at > v_now)),
    'waiters', (SELECT coalesce(jsonb_agg("clock".waiter_json(w) ORDER BY w.position), '[]')
                FROM "clock".waiters w
                WHERE (p_namespace IS NULL OR w.namespace = p_namespace)
                  AND (p_prefix IS NULL OR w.resource = p_prefix
                       OR (w.resource > p_prefix || '.' AND w.resource < p_prefix || '/'))
                  AND w.expires_at > v_now));
END $$;

-- The newest p_limit events, optionally of one namespace and of a resource
-- and its descendants. Returns a JSON array, newest first.
CREATE FUNCTION "clock".history(p_namespace text, p_prefix text, p_limit integer)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'id', h.id, 'at', "clock".usec(h.at), 'event', h.event, 'namespace', h.namespace,
           'resource', h.resource, 'owner', h.owner, 'mode', h.mode, 'token', h.token,
           'held_for_ms', (extract(epoch FROM h.held_for) * 1000)::bigint, 'host', h.host,
           'ip', h.ip, 'pid', h.pid, 'user', h.user_name, 'command', h.command,
           'by', h.forced_by, 'db_user', h.db_user) ORDER BY h.id DESC), '[]')
  FROM (SELECT * FROM "clock".history
        WHERE (p_namespace IS NULL OR namespace = p_namespace)
          AND (p_prefix IS NULL OR resource = p_prefix
               OR (resource > p_prefix || '.' AND resource < p_prefix || '/'))
        ORDER BY id DESC
        LIMIT greatest(p_limit, 0)) AS h
$$;

-- One batch of garbage collection: up to p_batch expired leases (recorded as
-- expired), dead waiters and, with p_history_older_than_ms, history rows
-- older than that. With p_dry_run, counts everything there is to remove
-- (not limited to a batch) and removes nothing. Returns {"expired_leases",
-- "dead_waiters", "history_rows"}.
CREATE FUNCTION "clock".gc_batch(p_batch integer, p_history_older_than_ms bigint,
                                  p_dry_run boolean)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
  v_cutoff timestamptz := v_now - p_history_older_than_ms * interval '1 ms';  -- NULL: keep all
  v_leases bigint;
  v_waiters bigint;
  v_history bigint;
BEGIN
  IF p_dry_run THEN
    SELECT count(*) INTO v_leases FROM "clock".leases WHERE expires_at <= v_now;
    SELECT count(*) INTO v_waiters FROM "clock".waiters WHERE expires_at <= v_now;
    SELECT count(*) INTO v_history FROM "clock".history WHERE at < v_cutoff;
  ELSE
    WITH batch AS (
      SELECT namespace, resource, owner FROM "clock".leases
      WHERE expires_at <= v_now
      ORDER BY expires_at LIMIT p_batch
      FOR UPDATE SKIP LOCKED),
    gone AS (
      DELETE FROM "clock".leases l USING batch b
      WHERE l.namespace = b.namespace AND l.resource = b.resource AND l.owner = b.owner
        AND l.expires_at <= v_now
      RETURNING l.*)
    INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token, held_for,
                                  host, ip, pid, user_name, command)
    SELECT expires_at, 'expired', namespace, resource, owner, mode, token,
           expires_at - acquired_at, host, ip, pid, user_name, command
    FROM gone;
    GET DIAGNOSTICS v_leases = ROW_COUNT;
    DELETE FROM "clock".waiters
    WHERE position IN (SELECT position FROM "clock".waiters WHERE expires_at <= v_now
                       ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
      AND expires_at <= v_now;
    GET DIAGNOSTICS v_waiters = ROW_COUNT;
    DELETE FROM "clock".history
    WHERE id IN (SELECT id FROM "clock".history WHERE at < v_cutoff
                 ORDER BY id LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_history = ROW_COUNT;
    IF v_leases > 0 OR v_waiters > 0 THEN PERFORM "clock".notify_change(); END IF;
  END IF;
  RETURN jsonb_build_object('expired_leases', v_leases, 'dead_waiters', v_waiters,
                            'history_rows', v_history);
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

-- sql/postgres/005_fast_paths.sql
-- clock on PostgreSQL, version 5: the common cases made cheap, as measured by
-- tests/bench (issue 6). Nothing here changes what a call means; every
-- function keeps its signature, its settings and its grants.
--
-- 1. try_acquire() has a fast path for the common cases: one resource whose
--    related rows (on the resource, an ancestor or a descendant) do not
--    exist at all, but for the caller's own queue entries: no lease, live or
--    expired, and no other owner's queue entry. (The first attempt of a free
--    lock, and the attempt of the only waiter woken by a release.) Then the
--    full logic of 002 (now try_acquire_general) could only say "grant":
--    nothing to expire, no re-entry, no retry of an earlier grant (that would
--    have left this owner's lease), nobody in the way, no deadlock search;
--    the caller's own entry for the resource is deleted, as there. The fast
--    path checks that under the same hierarchy advisory lock, in a statement
--    that starts after the lock is held (READ COMMITTED: a fresh snapshot per
--    statement, as 002 explains), and inserts the lease and its 'acquired'
--    record in one statement. A new
--    backend thus plans four statements instead of some forty (the first
--    call in a connection pays for planning every statement it runs); any
--    other case falls through to try_acquire_general, which re-takes the
--    same advisory lock (advisory locks stack within a transaction).
--
-- 2. Targeted wake-ups. release() and leave_queue() used to notify every
--    waiter of the schema with an empty payload, so each release made every
--    waiter re-attempt, all but one in vain. They now send one notification
--    per waiter that may be granted now: a live queue entry in the
--    hierarchies concerned with no earlier live conflicting entry of another
--    owner before it (FIFO: anyone else is still blocked by that entry), with
--    that waiter's owner id as payload. Semaphore entries of one resource do
--    not count as blocking each other here (each is woken: a superset is
--    safe). Waiters of clock 5 and later re-attempt only on a notification
--    with their owner id or an empty payload (the rarer events still send
--    one: gc, forced release, expiry found by an acquirer); earlier clients
--    wake on every notification, as before. A waiter blocked by something no
--    notification announces (a holder that crashes, a waiter ahead that
--    dies) re-attempts when that lease or entry expires: waiter_json() now
--    carries the entry's expires_at for that.
--
-- 3. status_rows(): status() as rows instead of one jsonb document. With
--    100,000 leases the document was 40 MB, built by 100,000 calls of
--    lease_json() and parsed again by the client: seconds. Same snapshot
--    rule: one statement, so one snapshot; "now" is read once. Instants are
--    UTC timestamps as ISO text, which PostgreSQL writes several times faster
--    than it computes usec() (numeric arithmetic).

-- (1) The general path under another name, keeping its grants, so that the
-- fast path can fall back to it.
ALTER FUNCTION "clock".try_acquire(text, text[], text, integer, uuid, bigint, text, boolean,
                                    text, text, bigint, text, text, timestamptz)
  RENAME TO try_acquire_general;

CREATE FUNCTION "clock".try_acquire(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_resource text := p_resources[1];
  v_key bigint;
  v_up text[];
  v_now timestamptz;
  v_token bigint;
BEGIN
  -- The fast path takes only arguments check_names() and try_acquire_general
  -- would accept; anything else goes there to be refused with their message.
  IF cardinality(p_resources) = 1 AND v_resource IS NOT NULL
     AND octet_length(v_resource) <= 255
     AND v_resource ~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_mode IN ('exclusive', 'shared') AND p_slots >= 0 AND p_ttl_ms >= 0
     AND p_owner IS NOT NULL AND coalesce(p_request_id, '') <> '' AND p_queue IS NOT NULL THEN
    PERFORM "clock".commit_durably();  -- see Durability in 002
    -- lock_hierarchies() of 001 for one resource, inline.
    v_key := "clock".lock_key(p_namespace, split_part(v_resource, '.', 1));
    IF p_queue THEN
      PERFORM pg_advisory_xact_lock(v_key);
    ELSIF NOT pg_try_advisory_xact_lock(v_key) THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = 'another transaction holds locks under the same top-level name';
    END IF;
    v_now := clock_timestamp();  -- after the lock: see 002
    v_up := array_prepend(v_resource, "clock".ancestors(v_resource));
    IF NOT EXISTS (SELECT 1 FROM "clock".leases
                   WHERE namespace = p_namespace AND resource = ANY (v_up))
       AND NOT EXISTS (SELECT 1 FROM "clock".leases
                       WHERE namespace = p_namespace
                         AND resource > v_resource || '.' AND resource < v_resource || '/')
       AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                       WHERE namespace = p_namespace AND resource = ANY (v_up)
                         AND owner <> p_owner)
       AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                       WHERE namespace = p_namespace AND owner <> p_owner
                         AND resource > v_resource || '.' AND resource < v_resource || '/') THEN
      WITH l AS (
        INSERT INTO "clock".leases (namespace, resource, owner, mode, slots, token, depth,
                                     request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                     ip, pid, user_name, command, owner_started_at)
        VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, nextval('"clock".tokens'), 1,
                p_request_id, v_now, v_now,
                CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END,
                p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
                coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started)
        RETURNING *),
      h AS (
        INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token,
                                      held_for, host, ip, pid, user_name, command)
        SELECT v_now, 'acquired', namespace, resource, owner, mode, token, NULL, host, ip, pid,
               user_name, command
        FROM l)
      SELECT token INTO v_token FROM l;
      -- A queued request's own entry goes with the grant, as in the general path.
      DELETE FROM "clock".waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = v_resource;
      RETURN jsonb_build_object('outcome', 'granted', 'now', "clock".usec(v_now),
                                'grants', jsonb_build_array(jsonb_build_object(
                                  'resource', v_resource, 'token', v_token, 'depth', 1)));
    END IF;
  END IF;
  RETURN "clock".try_acquire_general(p_namespace, p_resources, p_mode, p_slots, p_owner,
                                      p_ttl_ms, p_request_id, p_queue, p_host, p_ip, p_pid,
                                      p_user, p_command, p_started);
END $$;

-- The new function gets the grants the old one had (roles.sql, or an
-- administrator's own): the renamed general path kept them.
DO $grants$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.grantee::regrole::text AS role
    FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
    WHERE p.oid = '"clock".try_acquire_general(text, text[], text, integer, uuid, bigint, text,
                                                boolean, text, text, bigint, text, text,
                                                timestamptz)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION "clock".try_acquire(text, text[], text, integer,'
                   ' uuid, bigint, text, boolean, text, text, bigint, text, text, timestamptz)'
                   ' TO %s', g.role);
  END LOOP;
END $grants$;

-- (2) Targeted wake-ups.

-- Queue entries now say when they lapse, so that a waiter stuck behind a dead
-- one knows when to look again.
CREATE OR REPLACE FUNCTION "clock".waiter_json(w "clock".waiters) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', w.namespace, 'resource', w.resource, 'owner', w.owner, 'mode', w.mode,
  'slots', w.slots, 'position', w.position, 'since', "clock".usec(w.enqueued_at),
  'expires_at', "clock".usec(w.expires_at),
  'host', w.host, 'ip', w.ip, 'pid', w.pid, 'user', w.user_name, 'command', w.command,
  'started', "clock".usec(w.owner_started_at)) $$;

-- Notifies each owner with a live queue entry in the hierarchies of
-- p_resources that has no earlier live conflicting entry of another owner on
-- a related resource: the waiters that may be granted now. The payload is the
-- owner id; sent on commit. Returns how many notifications.
CREATE FUNCTION "clock".notify_heads(p_namespace text, p_resources text[], p_now timestamptz)
RETURNS bigint
LANGUAGE sql
AS $$
  SELECT count(pg_notify('clock_changed', heads.owner::text))
  FROM (
    SELECT DISTINCT w.owner
    FROM (SELECT DISTINCT split_part(r, '.', 1) AS root FROM unnest(p_resources) AS r) AS t
    JOIN "clock".waiters w
      ON w.namespace = p_namespace
     AND (w.resource = t.root OR (w.resource > t.root || '.' AND w.resource < t.root || '/'))
    WHERE w.expires_at > p_now
      AND NOT EXISTS (
        SELECT 1 FROM "clock".waiters e
        WHERE e.namespace = w.namespace AND e.position < w.position AND e.expires_at > p_now
          AND e.owner <> w.owner
          AND NOT (e.mode = 'shared' AND w.mode = 'shared')
          AND NOT (e.slots > 0 AND w.slots > 0 AND e.resource = w.resource)
          AND (e.resource = ANY (array_prepend(w.resource, "clock".ancestors(w.resource)))
               OR (e.resource > w.resource || '.' AND e.resource < w.resource || '/')))) AS heads
$$;

-- release() of 003, waking only the waiters that may now be granted.
CREATE OR REPLACE FUNCTION "clock".release(p_namespace text, p_resources text[], p_owner uuid)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_released jsonb := '[]';
  v_refused jsonb := '[]';
  v_removed boolean := false;
  l "clock".leases;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  IF p_owner IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'release: no owner';
  END IF;
  PERFORM "clock".commit_durably();  -- see Durability in 002
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  FOR i IN 1 .. cardinality(p_resources) LOOP
    SELECT * INTO l FROM "clock".leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_refused := v_refused || jsonb_build_object(
        'resource', p_resources[i],
        'reason', CASE WHEN EXISTS (SELECT 1 FROM "clock".leases
                                    WHERE namespace = p_namespace AND resource = p_resources[i]
                                      AND (expires_at IS NULL OR expires_at > v_now))
                       THEN 'other_owner' ELSE 'not_held' END);
      CONTINUE;
    END IF;
    IF l.expires_at <= v_now THEN
      DELETE FROM "clock".leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM "clock".record_event('expired', l.expires_at, l, l.expires_at - l.acquired_at);
      v_refused := v_refused || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      v_removed := true;
    ELSIF l.depth > 1 THEN
      UPDATE "clock".leases SET depth = depth - 1
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', l.depth - 1);
    ELSE
      DELETE FROM "clock".leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM "clock".record_event('released', v_now, l, v_now - l.acquired_at);
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', 0);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM "clock".notify_heads(p_namespace, p_resources, v_now); END IF;
  RETURN jsonb_build_object('now', "clock".usec(v_now), 'released', v_released,
                            'refused', v_refused);
END $$;

-- leave_queue() of 002, waking only the waiters that may now be granted.
CREATE OR REPLACE FUNCTION "clock".leave_queue(p_namespace text, p_resources text[],
                                                p_owner uuid, p_request_id text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_count integer;
BEGIN
  PERFORM "clock".check_names(p_namespace, p_resources);
  PERFORM "clock".lock_hierarchies(p_namespace, p_resources);
  DELETE FROM "clock".waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources)
    AND (p_request_id IS NULL OR request_id = p_request_id);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  IF v_count > 0 THEN
    PERFORM "clock".notify_heads(p_namespace, p_resources, clock_timestamp());
  END IF;
  RETURN v_count;
END $$;

-- (3) Holders (live, or all with p_include_expired) and live waiters, of one
-- namespace (NULL: all) and of a resource and its descendants (NULL: all).
-- The first row has kind 'now' and the server's clock in at1; then one row
-- per holder ('holder': at1 acquired, at2 renewed, at3 expires) and per
-- waiter ('waiter': token is its queue position, at1 since). Instants are
-- UTC, 'YYYY-MM-DD HH:MM:SS[.ffffff]' (DateStyle ISO is set for the casts).
-- Unordered: the client sorts.
CREATE FUNCTION "clock".status_rows(p_namespace text, p_prefix text, p_include_expired boolean)
RETURNS TABLE (kind text, namespace text, resource text, owner uuid, mode text, slots integer,
               token bigint, depth integer, at1 text, at2 text, at3 text, expired boolean,
               host text, ip text, pid bigint, user_name text, command text, started text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET DateStyle = 'ISO, YMD'
AS $$
  WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now)
  SELECT 'now', NULL, NULL, NULL::uuid, NULL, NULL::integer, NULL::bigint, NULL::integer,
         (n.now AT TIME ZONE 'UTC')::text, NULL, NULL, NULL::boolean, NULL, NULL, NULL::bigint,
         NULL, NULL, NULL
  FROM n
  UNION ALL
  SELECT 'holder', l.namespace, l.resource, l.owner, l.mode, l.slots, l.token, l.depth,
         (l.acquired_at AT TIME ZONE 'UTC')::text, (l.renewed_at AT TIME ZONE 'UTC')::text,
         (l.expires_at AT TIME ZONE 'UTC')::text, coalesce(l.expires_at <= n.now, false),
         l.host, l.ip, l.pid, l.user_name, l.command,
         (l.owner_started_at AT TIME ZONE 'UTC')::text
  FROM "clock".leases l, n
  WHERE (p_namespace IS NULL OR l.namespace = p_namespace)
    AND (p_prefix IS NULL OR l.resource = p_prefix
         OR (l.resource > p_prefix || '.' AND l.resource < p_prefix || '/'))
    AND (p_include_expired OR l.expires_at IS NULL OR l.expires_at > n.now)
  UNION ALL
  SELECT 'waiter', w.namespace, w.resource, w.owner, w.mode, w.slots, w.position, NULL,
         (w.enqueued_at AT TIME ZONE 'UTC')::text, NULL, NULL, NULL, w.host, w.ip, w.pid,
         w.user_name, w.command, (w.owner_started_at AT TIME ZONE 'UTC')::text
  FROM "clock".waiters w, n
  WHERE (p_namespace IS NULL OR w.namespace = p_namespace)
    AND (p_prefix IS NULL OR w.resource = p_prefix
         OR (w.resource > p_prefix || '.' AND w.resource < p_prefix || '/'))
    AND w.expires_at > n.now
$$;

-- Whoever may call status() may call status_rows().
DO $grants$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.grantee::regrole::text AS role
    FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
    WHERE p.oid = '"clock".status(text, text, boolean)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION "clock".status_rows(text, text, boolean) TO %s',
                   g.role);
  END LOOP;
END $grants$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

-- sql/postgres/006_more_fast_paths.sql
-- clock on PostgreSQL, version 6: two more fast paths, as measured by
-- tests/bench (issue 6). Nothing here changes what a call means; every
-- function keeps its signature, its settings and its grants.
--
-- 1. release() gets a fast path like 005's try_acquire(), for the common
--    case: one resource, held by the caller once (depth 1) and live. That is
--    every release of `clock run` and most of `clock release`.
-- 2. try_acquire() gets a second one, for a queued exclusive request by an
--    owner holding nothing else: every contender of a busy job (below).
--
-- (1) Why: every `clock run` is a new backend, which plans each statement the
-- first time it runs it. The general release of 005 ran some fifteen
-- (check_names, lock_hierarchies, a SELECT … FOR UPDATE, the DELETE,
-- record_event, notify_heads' query, planned again on every call as a SQL
-- function): 2.0 ms of server time per release (pg_stat_user_functions over
-- 50 `clock run`s), on the hand-over path of every queued job (tests/bench,
-- measurement 3). The fast path runs four statements, each cheap to plan:
-- it deletes the lease, writes its 'released' record, and finds the
-- waiters to wake without notify_heads() in the usual cases (below).
--
-- The same rules as the general path: the arguments are checked as
-- check_names() would (anything else goes there, to be refused with its
-- message), the hierarchy's advisory lock is taken before the clock is read
-- (see 002), only the caller's own lease is removed, and the waiters that may
-- now be granted are notified on commit. Any other case (several resources,
-- re-entered, expired, not held) falls through to release_general, which
-- re-takes the same advisory lock (advisory locks stack within a
-- transaction) and finds the table as the fast path left it: unchanged.

ALTER FUNCTION "clock".release(text, text[], uuid) RENAME TO release_general;

CREATE FUNCTION "clock".release(p_namespace text, p_resources text[], p_owner uuid)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_resource text := p_resources[1];
  v_root text;
  v_now timestamptz;
  l "clock".leases;
  v_queued bigint;
  v_first_owner uuid;
  v_first_mode text;
  v_first_slots integer;
  v_one_resource boolean;
BEGIN
  IF cardinality(p_resources) = 1 AND v_resource IS NOT NULL
     AND octet_length(v_resource) <= 255
     AND v_resource ~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_owner IS NOT NULL THEN
    PERFORM "clock".commit_durably();  -- see Durability in 002
    v_root := split_part(v_resource, '.', 1);
    PERFORM pg_advisory_xact_lock("clock".lock_key(p_namespace, v_root));
    v_now := clock_timestamp();  -- after the lock: see 002
    DELETE FROM "clock".leases
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
      AND depth = 1 AND (expires_at IS NULL OR expires_at > v_now)
    RETURNING * INTO l;  -- (namespace, resource, owner) is the key: one row or none
    IF FOUND THEN
      INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token,
                                    held_for, host, ip, pid, user_name, command, forced_by)
      VALUES (v_now, 'released', l.namespace, l.resource, l.owner, l.mode, l.token,
              v_now - l.acquired_at, l.host, l.ip, l.pid, l.user_name, l.command, '');
      -- The waiters to wake, as notify_heads() finds them, in the two usual
      -- cases without it: one live queue entry in the hierarchy (a job
      -- queued behind this one), or all on one resource with an exclusive
      -- one first (contenders of a busy job). Then the first is the only
      -- head: nothing is ahead of it, and it conflicts with every later one
      -- (an exclusive entry with no slots conflicts with any mode). The
      -- query is cheap to plan, where notify_heads' self-join took 0.4-0.8
      -- ms on every call (EXPLAIN ANALYZE: a SQL function's plan is never
      -- kept).
      SELECT count(*), (array_agg(owner ORDER BY position))[1],
             (array_agg(mode ORDER BY position))[1], (array_agg(slots ORDER BY position))[1],
             min(resource) = max(resource)
      INTO v_queued, v_first_owner, v_first_mode, v_first_slots, v_one_resource
      FROM "clock".waiters
      WHERE namespace = p_namespace
        AND (resource = v_root OR (resource > v_root || '.' AND resource < v_root || '/'))
        AND expires_at > v_now;
      IF v_queued = 1
         OR (v_queued > 1 AND v_one_resource AND v_first_mode = 'exclusive'
             AND v_first_slots = 0) THEN
        PERFORM pg_notify('clock_changed', v_first_owner::text);
      ELSIF v_queued > 1 THEN
        PERFORM "clock".notify_heads(p_namespace, p_resources, v_now);
      END IF;
      RETURN jsonb_build_object('now', "clock".usec(v_now),
                                'released', jsonb_build_array(jsonb_build_object(
                                  'resource', v_resource, 'remaining_depth', 0)),
                                'refused', '[]'::jsonb);
    END IF;
  END IF;
  RETURN "clock".release_general(p_namespace, p_resources, p_owner);
END $$;

-- The new function gets the grants the old one had (roles.sql, or an
-- administrator's own): the renamed general path kept them.
DO $grants$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.grantee::regrole::text AS role
    FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
    WHERE p.oid = '"clock".release_general(text, text[], uuid)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION "clock".release(text, text[], uuid) TO %s',
                   g.role);
  END LOOP;
END $grants$;

-- (2) try_acquire() of 005 with a second fast path: an exclusive request of
-- one resource, queued (a `clock run` or `clock acquire -w` that waits), by
-- an owner that holds no live lease and waits for nothing else, where no
-- expired related lease is left to clear. That is every contender of a busy
-- job. 005's path covered only a hierarchy with no other rows at all, so a
-- contender's first attempt (blocked) and, with others queued behind it, its
-- woken one ran the general path: some forty statements planned on a new
-- backend, 6.8 ms of server time for the blocked attempt (tests/bench,
-- measurement 2).
--
-- For such a request try_acquire_general could only answer two ways, and
-- this path gives the same answer with the same rows:
-- * blocked, by every live related lease of another owner (exclusive
--   conflicts with any mode, and slots = 0 is no semaphore) and every live
--   related queue entry of another owner ahead of the caller's own (FIFO),
--   as decide() lists them; the request is queued by enqueue(). No deadlock
--   search: it runs only for an owner that others can wait for (holding a
--   live lease, or a queue entry of another request), and this one does not.
-- * granted, when nothing is in the way: the lease and its 'acquired' record
--   as in 005's fast path, the caller's own queue entry deleted.
-- Anything else (shared, a semaphore, -n, several resources, re-entry, an
-- expired lease to record) still goes to try_acquire_general.
CREATE OR REPLACE FUNCTION "clock".try_acquire(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_resource text := p_resources[1];
  v_lo text := v_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := v_resource || '/';
  v_key bigint;
  v_up text[];
  v_now timestamptz;
  v_token bigint;
  v_grant boolean := false;
  v_mine bigint;
  v_leases jsonb;
  v_waiters jsonb;
BEGIN
  -- The fast paths take only arguments check_names() and try_acquire_general
  -- would accept; anything else goes there to be refused with their message.
  IF cardinality(p_resources) = 1 AND v_resource IS NOT NULL
     AND octet_length(v_resource) <= 255
     AND v_resource ~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_mode IN ('exclusive', 'shared') AND p_slots >= 0 AND p_ttl_ms >= 0
     AND p_owner IS NOT NULL AND coalesce(p_request_id, '') <> '' AND p_queue IS NOT NULL THEN
    PERFORM "clock".commit_durably();  -- see Durability in 002
    -- lock_hierarchies() of 001 for one resource, inline.
    v_key := "clock".lock_key(p_namespace, split_part(v_resource, '.', 1));
    IF p_queue THEN
      PERFORM pg_advisory_xact_lock(v_key);
    ELSIF NOT pg_try_advisory_xact_lock(v_key) THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = 'another transaction holds locks under the same top-level name';
    END IF;
    v_now := clock_timestamp();  -- after the lock: see 002
    v_up := array_prepend(v_resource, "clock".ancestors(v_resource));
    -- 005's path: no related row at all but the caller's own queue entries.
    v_grant := NOT EXISTS (SELECT 1 FROM "clock".leases
                           WHERE namespace = p_namespace AND resource = ANY (v_up))
               AND NOT EXISTS (SELECT 1 FROM "clock".leases
                               WHERE namespace = p_namespace
                                 AND resource > v_lo AND resource < v_hi)
               AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                               WHERE namespace = p_namespace AND resource = ANY (v_up)
                                 AND owner <> p_owner)
               AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                               WHERE namespace = p_namespace AND owner <> p_owner
                                 AND resource > v_lo AND resource < v_hi);
    IF NOT v_grant AND p_queue AND p_mode = 'exclusive' AND p_slots = 0
       AND NOT EXISTS (SELECT 1 FROM "clock".leases
                       WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > v_now))
       AND NOT EXISTS (SELECT 1 FROM "clock".waiters
                       WHERE owner = p_owner AND expires_at > v_now
                         AND NOT (namespace = p_namespace AND resource = v_resource
                                  AND request_id = p_request_id))
       AND NOT EXISTS (SELECT 1 FROM "clock".leases
                       WHERE namespace = p_namespace AND expires_at <= v_now
                         AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi)))
    THEN
      -- Who is in the way, as decide() of 002 lists them for this request.
      SELECT coalesce(jsonb_agg("clock".lease_json(l, v_now) ORDER BY l.token), '[]')
      INTO v_leases
      FROM "clock".leases l
      WHERE l.namespace = p_namespace AND l.owner <> p_owner
        AND (l.expires_at IS NULL OR l.expires_at > v_now)
        AND (l.resource = ANY (v_up) OR (l.resource > v_lo AND l.resource < v_hi));
      SELECT position INTO v_mine FROM "clock".waiters
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
        AND expires_at > v_now;
      SELECT coalesce(jsonb_agg("clock".waiter_json(w) ORDER BY w.position), '[]')
      INTO v_waiters
      FROM "clock".waiters w
      WHERE w.namespace = p_namespace AND w.owner <> p_owner AND w.expires_at > v_now
        AND (v_mine IS NULL OR w.position < v_mine)
        AND (w.resource = ANY (v_up) OR (w.resource > v_lo AND w.resource < v_hi));
      IF v_leases = '[]' AND v_waiters = '[]' THEN
        v_grant := true;
      ELSE
        PERFORM "clock".enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                 p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                 p_started, v_now);
        RETURN jsonb_build_object('outcome', 'blocked', 'now', "clock".usec(v_now),
                                  'leases', v_leases, 'waiters', v_waiters);
      END IF;
    END IF;
    IF v_grant THEN
      WITH l AS (
        INSERT INTO "clock".leases (namespace, resource, owner, mode, slots, token, depth,
                                     request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                     ip, pid, user_name, command, owner_started_at)
        VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, nextval('"clock".tokens'), 1,
                p_request_id, v_now, v_now,
                CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END,
                p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
                coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started)
        RETURNING *),
      h AS (
        INSERT INTO "clock".history (at, event, namespace, resource, owner, mode, token,
                                      held_for, host, ip, pid, user_name, command)
        SELECT v_now, 'acquired', namespace, resource, owner, mode, token, NULL, host, ip, pid,
               user_name, command
        FROM l)
      SELECT token INTO v_token FROM l;
      -- A queued request's own entry goes with the grant, as in the general path.
      DELETE FROM "clock".waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = v_resource;
      RETURN jsonb_build_object('outcome', 'granted', 'now', "clock".usec(v_now),
                                'grants', jsonb_build_array(jsonb_build_object(
                                  'resource', v_resource, 'token', v_token, 'depth', 1)));
    END IF;
  END IF;
  RETURN "clock".try_acquire_general(p_namespace, p_resources, p_mode, p_slots, p_owner,
                                      p_ttl_ms, p_request_id, p_queue, p_host, p_ip, p_pid,
                                      p_user, p_command, p_started);
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "clock" FROM PUBLIC;

INSERT INTO "clock".schema_migrations (version, name) VALUES
  (1, '001_schema'), (2, '002_acquire'), (3, '003_renew_release'), (4, '004_status_gc'),
  (5, '005_fast_paths'), (6, '006_more_fast_paths');
COMMIT;
