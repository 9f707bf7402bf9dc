-- clock on PostgreSQL: the helpers every operation function uses (names,
-- hierarchy locks, JSON of rows, history records, notifications). None is
-- SECURITY DEFINER and PUBLIC may not execute them (the REVOKE at the end of
-- the functions script): they run inside the operation functions of
-- 20_acquire.sql … 40_status_gc.sql, with those functions' rights, isolation
-- (READ COMMITTED) and locks. SQL-language helpers are validated when
-- created, so this file comes first.
--
-- A helper that every run calls is PL/pgSQL unless the planner inlines it
-- (a single expression, no FROM, no volatility above its label): PostgreSQL
-- 15 parses and plans an SQL function it does not inline on every call in
-- every transaction (the cache lives in the calling expression, which a
-- PL/pgSQL caller builds anew per transaction), where PL/pgSQL keeps its
-- plans for the life of the backend. On a warm backend (pgbouncer) the SQL
-- owner_refuses and usec cost 0.1 ms more per call than the same bodies in
-- PL/pgSQL (docs/performance.md).

-- An instant as integer microseconds since the Unix epoch (what the store reads).
CREATE OR REPLACE FUNCTION @schema@.usec(p_at timestamptz) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$ BEGIN RETURN (extract(epoch FROM p_at) * 1000000)::bigint; END $$;

-- The strict ancestors of a resource: 'a.b.c' gives {a, a.b}. A loop over
-- the dots, not a query: every request computes them, and a query's
-- executor start costs 15-20 us a call where the loop takes 1-2 us.
CREATE OR REPLACE FUNCTION @schema@.ancestors(p_resource text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  v_ancestors text[] := '{}';
  v_dot integer := strpos(p_resource, '.');
  v_next integer;
BEGIN
  WHILE v_dot > 0 LOOP
    v_ancestors := v_ancestors || left(p_resource, v_dot - 1);
    v_next := strpos(substr(p_resource, v_dot + 1), '.');
    v_dot := CASE WHEN v_next = 0 THEN 0 ELSE v_dot + v_next END;
  END LOOP;
  RETURN v_ancestors;
END $$;

-- The slot of hierarchy_locks (migration 013) whose row lock serializes
-- every write to one resource hierarchy (a namespace and a first segment):
-- related resources always share their first segment. Two hierarchies in one
-- slot only take turns; related ones never interleave.
CREATE OR REPLACE FUNCTION @schema@.hierarchy_slot(p_namespace text, p_root text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT (hashtextextended(p_namespace || E'\n' || p_root, 0) & 16383)::integer $$;

-- Takes the hierarchy locks of a request in one canonical order (by slot),
-- so two requests over the same hierarchies never wait for each other in a
-- cycle. Held until the calling transaction ends. Row locks on a table no
-- role but the schema owner may read: nobody outside clock's functions can
-- take one (migration 013).
-- With p_wait false (clock acquire -n) the locks are waited for 2 s at
-- most (lock_timeout, this statement only): other clock calls hold them for
-- milliseconds, and a sibling's grant or renewal must never look like a
-- holder to -n. Only a session that keeps them in an open transaction of its
-- own outlasts that: lock_not_available, which the store reports as
-- "held" by that transaction (recorded as a skip), not as an outage.
CREATE OR REPLACE FUNCTION @schema@.lock_hierarchies(p_namespace text, p_resources text[],
                                          p_wait boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_patience text := current_setting('lock_timeout');
BEGIN
  IF NOT p_wait THEN
    PERFORM set_config('lock_timeout', '2s', true);
  END IF;
  PERFORM 1 FROM @schema@.hierarchy_locks
  WHERE slot IN (SELECT @schema@.hierarchy_slot(p_namespace, split_part(r, '.', 1))
                 FROM unnest(p_resources) AS r)
  ORDER BY slot FOR NO KEY UPDATE;
  IF NOT p_wait THEN
    PERFORM set_config('lock_timeout', v_patience, true);
  END IF;
END $$;

-- The resource name rule (man clock, DESCRIPTION), written here once: dotted segments of
-- [A-Za-z0-9_-]+, at most 16 of them, at most 255 bytes in all (as
-- lock::Resource::parse in src/lock/resource.cpp). NULL is no name.
CREATE OR REPLACE FUNCTION @schema@.is_resource_name(p_name text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT p_name IS NOT NULL AND octet_length(p_name) <= 255
         AND p_name ~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
$$;

-- Bounds how long a caller may keep the rows a call takes: the hierarchy
-- rows stay locked until the caller's transaction ends, and a caller that
-- keeps its transaction open (BEGIN; SELECT clock.try_acquire(…); then
-- nothing) would hold up every grant, renewal and forced release of those
-- hierarchies. So the rest of the caller's transaction gets
-- idle_in_transaction_session_timeout = 1s: set_config(…, true) lasts until
-- the transaction ends, beyond the function (none of clock's functions sets
-- this parameter in its SET clause, which would undo it at the function's
-- exit), and PostgreSQL ends a session left idle in its transaction that
-- long, which releases its locks. 1 s, under the 2 s that a -n request
-- waits for a hierarchy row (lock_hierarchies): a sibling's run -n is not
-- refused because a login left its transaction idle. clock's client sends
-- each call as one autocommit statement, which is never idle in a
-- transaction. What a login can still do (docs/threat-model.md, "Bounds of a call"): set the
-- parameter back, or keep one statement running. The schema owner (or a
-- superuser, a member of every role) is left alone: it could lock these
-- rows directly anyway. Inside a SECURITY DEFINER function current_user is
-- the schema owner and session_user the login. (A call cannot tell whether
-- an earlier statement opened its transaction: with the extended query
-- protocol, which clock uses, the statement's start is the Execute
-- message's, later than the transaction's.)
CREATE OR REPLACE FUNCTION @schema@.bound_caller_transaction() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
    PERFORM set_config('idle_in_transaction_session_timeout', '1s', true);
  END IF;
END $$;

-- The bounds of a call (docs/threat-model.md, "Bounds of a call"), for the
-- fast paths that come before check_names(): the caller's transaction
-- (bound_caller_transaction), at most 64 resources, and bounded text. What
-- the caller says about itself is shown by status and history to everyone,
-- so none of it may be unbounded; the client cuts its facts to these
-- lengths (src/lock/limits.hpp) before it sends them. NULL text is left to
-- the callers' own checks.
CREATE OR REPLACE FUNCTION @schema@.check_bounds(p_resources text[], p_host text, p_ip text,
                                                 p_user text, p_command text, p_by text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM @schema@.bound_caller_transaction();
  IF cardinality(p_resources) > 64 THEN
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
      MESSAGE = format('%s resources in one call: at most 64', cardinality(p_resources));
  END IF;
  IF octet_length(p_host) > 255 OR octet_length(p_ip) > 64 OR octet_length(p_user) > 255
     OR octet_length(p_command) > 4096 OR octet_length(p_by) > 512 THEN
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
      MESSAGE = 'too long: host and user at most 255 bytes, ip 64, command 4096, '
                'who asked 512';
  END IF;
END $$;

-- Refuses arguments the lock model forbids (man clock, DESCRIPTION), so that a program
-- calling the functions directly cannot store a name clock would reject,
-- and more than 64 resources in one call (a call's work and the time it
-- holds its hierarchy rows grow with its resources: docs/threat-model.md).
-- Every operation function calls it or check_bounds() first, so it also
-- bounds the caller's transaction (bound_caller_transaction).
CREATE OR REPLACE FUNCTION @schema@.check_names(p_namespace text, p_resources text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_bad text;
BEGIN
  PERFORM @schema@.bound_caller_transaction();
  IF p_namespace IS NULL OR octet_length(p_namespace) > 255 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'invalid namespace: at most 255 bytes, not NULL';
  END IF;
  IF p_resources IS NULL OR cardinality(p_resources) = 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'no resource given';
  END IF;
  IF cardinality(p_resources) > 64 THEN
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
      MESSAGE = format('%s resources in one call: at most 64', cardinality(p_resources));
  END IF;
  SELECT r INTO v_bad FROM unnest(p_resources) AS r
  WHERE NOT @schema@.is_resource_name(r)
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
CREATE OR REPLACE FUNCTION @schema@.notify_change() RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('@schema_name@_changed', '') $$;

-- Tells each owner in p_owners that a lease of its was removed by someone
-- else (forced, or found expired): `clock run --watch-lease` LISTENs on this
-- channel and stops its command within a second instead of at its next
-- renewal. Sent on commit, one notification per owner (the payload is the
-- owner id, which is public: it lets nobody act on the lease). Returns how
-- many.
CREATE OR REPLACE FUNCTION @schema@.notify_lost(p_owners uuid[]) RETURNS bigint
LANGUAGE sql
AS $$
  SELECT count(pg_notify('@schema_name@_lost', o::text))
  FROM (SELECT DISTINCT o FROM unnest(p_owners) AS t(o)) AS owners
$$;

-- Records leases removed because they had expired: an 'expired' event each,
-- at the instant it lapsed, and a notice to each owner (notify_lost).
-- Returns how many.
CREATE OR REPLACE FUNCTION @schema@.record_expired(p_gone @schema@.leases[]) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(cardinality(p_gone), 0) = 0 THEN RETURN 0; END IF;
  INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, held_for,
                                host, ip, pid, user_name, command, leftovers)
  SELECT expires_at, 'expired', namespace, resource, owner, mode, token,
         expires_at - acquired_at, host, ip, pid, user_name, command, leftovers
  FROM unnest(p_gone);
  PERFORM @schema@.notify_lost(array(SELECT owner FROM unnest(p_gone)));
  RETURN cardinality(p_gone);
END $$;

-- Lease and waiter rows as JSON for the store: instants in microseconds.
CREATE OR REPLACE FUNCTION @schema@.lease_json(l @schema@.leases, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', l.namespace, 'resource', l.resource, 'owner', l.owner, 'mode', l.mode,
  'slots', l.slots, 'token', l.token, 'depth', l.depth,
  'acquired_at', @schema@.usec(l.acquired_at), 'renewed_at', @schema@.usec(l.renewed_at),
  'expires_at', @schema@.usec(l.expires_at), 'expired', coalesce(l.expires_at <= p_now, false),
  'host', l.host, 'ip', l.ip, 'pid', l.pid, 'user', l.user_name, 'command', l.command,
  'started', @schema@.usec(l.owner_started_at)) $$;

-- Queue entries now say when they lapse, so that a waiter stuck behind a dead
-- one knows when to look again.
CREATE OR REPLACE FUNCTION @schema@.waiter_json(w @schema@.waiters) RETURNS jsonb
LANGUAGE sql STABLE
AS $$ SELECT jsonb_build_object(
  'namespace', w.namespace, 'resource', w.resource, 'owner', w.owner, 'mode', w.mode,
  'slots', w.slots, 'position', w.position, 'since', @schema@.usec(w.enqueued_at),
  'expires_at', @schema@.usec(w.expires_at),
  'host', w.host, 'ip', w.ip, 'pid', w.pid, 'user', w.user_name, 'command', w.command,
  'started', @schema@.usec(w.owner_started_at)) $$;

-- The hash a lease keeps of its owner's secret (leases.secret_hash): the
-- SHA-256 of its text as 64 hex digits, as util::sha256_hex computes it for
-- SQLite. NULL for no secret.
CREATE OR REPLACE FUNCTION @schema@.secret_hash(p_secret text) RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  RETURN CASE WHEN coalesce(p_secret, '') = '' THEN NULL
              ELSE encode(sha256(convert_to(p_secret, 'UTF8')), 'hex') END;
END $$;

-- Whether p_secret proves ownership of a lease keeping p_hash: it matches,
-- or the lease keeps none (granted before owner secrets: its id alone is
-- enough until it is released or expires).
CREATE OR REPLACE FUNCTION @schema@.proves(p_hash text, p_secret text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  RETURN p_hash IS NULL OR coalesce(p_hash = @schema@.secret_hash(p_secret), false);
END $$;

-- Whether p_secret fails to prove that its caller is the owner p_owner:
-- a row of the owner's, a lease or a queue entry (live, or expired and not
-- yet collected), keeps a hash that p_secret does not match. The proof
-- belongs to the id, not to one row: once an id holds or waits for
-- anything, every act in its name needs the secret. An id with no such row
-- is free (a new owner, or rows from before secrets), as before.
CREATE OR REPLACE FUNCTION @schema@.owner_refuses(p_owner uuid, p_secret text) RETURNS boolean
LANGUAGE plpgsql STABLE
AS $$
DECLARE
  v_hash text := @schema@.secret_hash(p_secret);
BEGIN
  RETURN EXISTS (SELECT 1 FROM @schema@.leases
                 WHERE owner = p_owner AND secret_hash IS NOT NULL
                   AND secret_hash IS DISTINCT FROM v_hash)
      OR EXISTS (SELECT 1 FROM @schema@.waiters
                 WHERE owner = p_owner AND secret_hash IS NOT NULL
                   AND secret_hash IS DISTINCT FROM v_hash);
END $$;

-- Records an act refused for want of the owner's secret (owner_refuses):
-- one 'refused' per resource, with the owner's lease there if it has one
-- (its facts and token), else the facts the caller claims, and in
-- forced_by, who asked. db_user says which login it really was.
CREATE OR REPLACE FUNCTION @schema@.record_refused(
  p_at timestamptz, p_namespace text, p_resources text[], p_owner uuid, p_mode text,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_by text)
RETURNS void
LANGUAGE sql
AS $$
  INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, host, ip,
                                pid, user_name, command, forced_by)
  SELECT p_at, 'refused', p_namespace, r, p_owner, coalesce(l.mode, p_mode), l.token,
         coalesce(l.host, p_host, ''), coalesce(l.ip, p_ip, ''), coalesce(l.pid, p_pid, 0),
         coalesce(l.user_name, p_user, ''), coalesce(l.command, p_command, ''),
         coalesce(p_by, '')
  FROM unnest(p_resources) WITH ORDINALITY AS t (r, n)
  LEFT JOIN @schema@.leases l
    ON l.namespace = p_namespace AND l.resource = t.r AND l.owner = p_owner
  ORDER BY t.n
$$;

-- Records the end (or start) of a lease in history. An 'acquired' record
-- keeps the lease's secret hash, so that a renewal that finds the lease gone
-- later records 'lost' only for the owner that held it (renew()); the end
-- of a lease keeps what its holder reported its command left
-- (note_leftovers()), and a release by clock run how its command ended
-- (p_exit_code or p_exit_signal; NULL for every other record).
CREATE OR REPLACE FUNCTION @schema@.record_event(p_event text, p_at timestamptz, l @schema@.leases,
                                      p_held_for interval, p_forced_by text DEFAULT '',
                                      p_exit_code integer DEFAULT NULL,
                                      p_exit_signal integer DEFAULT NULL)
RETURNS void
LANGUAGE sql
AS $$
  INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, held_for,
                                host, ip, pid, user_name, command, forced_by, secret_hash,
                                leftovers, exit_code, exit_signal)
  VALUES (p_at, p_event, l.namespace, l.resource, l.owner, l.mode, l.token, p_held_for,
          l.host, l.ip, l.pid, l.user_name, l.command, p_forced_by,
          CASE WHEN p_event = 'acquired' THEN l.secret_hash END,
          CASE WHEN p_event IN ('released', 'forced', 'expired', 'lost') THEN l.leftovers END,
          p_exit_code, p_exit_signal)
$$;

-- Who was in the way of a blocked attempt, for the record of a run that did
-- not happen: the lease with the smallest token, else the earliest queue
-- entry (store::in_the_way); NULL when neither list has one.
CREATE OR REPLACE FUNCTION @schema@.first_in_the_way(p_leases jsonb, p_waiters jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
  SELECT coalesce(
    (SELECT jsonb_build_object('owner', x -> 'owner', 'host', x -> 'host', 'token', x -> 'token')
     FROM jsonb_array_elements(p_leases) AS x ORDER BY (x ->> 'token')::bigint LIMIT 1),
    (SELECT jsonb_build_object('owner', x -> 'owner', 'host', x -> 'host', 'token', NULL)
     FROM jsonb_array_elements(p_waiters) AS x ORDER BY (x ->> 'position')::bigint LIMIT 1))
$$;

-- One history record per resource of a run that did not happen (skipped,
-- timed_out, killed): the requester's facts, no token (none was drawn), and
-- who was in the way (first_in_the_way), if anyone, or (--once-per) the run
-- that did the period, whose "started" (microseconds) is then recorded too.
CREATE OR REPLACE FUNCTION @schema@.record_missed(
  p_event text, p_at timestamptz, p_namespace text, p_resources text[], p_owner uuid,
  p_mode text, p_host text, p_ip text, p_pid bigint, p_user text, p_command text,
  p_in_the_way jsonb)
RETURNS void
LANGUAGE sql
AS $$
  INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, host, ip, pid,
                                user_name, command, in_the_way_owner, in_the_way_host,
                                in_the_way_token, done_by_started_at)
  SELECT p_at, p_event, p_namespace, r, p_owner, p_mode, coalesce(p_host, ''),
         coalesce(p_ip, ''), coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''),
         (p_in_the_way ->> 'owner')::uuid, p_in_the_way ->> 'host',
         (p_in_the_way ->> 'token')::bigint,
         'epoch'::timestamptz + (p_in_the_way ->> 'started')::bigint * interval '1 microsecond'
  FROM unnest(p_resources) AS r
$$;

-- The lease of a run whose command exited 0 ends (release): it is its
-- resource's latest success, what --once-per looks for, unless one granted
-- later already ended (shared locks and semaphores run side by side).
CREATE OR REPLACE FUNCTION @schema@.record_success(l @schema@.leases)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO @schema@.last_success AS s (namespace, resource, started_at, owner, host, token)
  VALUES (l.namespace, l.resource, l.acquired_at, l.owner, l.host, l.token)
  ON CONFLICT (namespace, resource) DO UPDATE
  SET started_at = EXCLUDED.started_at, owner = EXCLUDED.owner, host = EXCLUDED.host,
      token = EXCLUDED.token
  WHERE s.started_at <= EXCLUDED.started_at;
END $$;

-- Makes the current transaction's commit wait for its WAL to be flushed
-- (see Durability above); lasts until the end of the transaction.
CREATE OR REPLACE FUNCTION @schema@.commit_durably() RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF current_setting('synchronous_commit') = 'off' THEN
    SET LOCAL synchronous_commit = on;
  END IF;
END $$;

-- Notifies each owner with a live queue entry in the hierarchies of
-- p_resources that has no earlier live conflicting entry of another owner on
-- a related resource: the waiters that may be granted now. The payload is the
-- owner id; sent on commit. Returns how many notifications.
CREATE OR REPLACE FUNCTION @schema@.notify_heads(p_namespace text, p_resources text[], p_now timestamptz)
RETURNS bigint
LANGUAGE sql
AS $$
  SELECT count(pg_notify('@schema_name@_changed', heads.owner::text))
  FROM (
    SELECT DISTINCT w.owner
    FROM (SELECT DISTINCT split_part(r, '.', 1) AS root FROM unnest(p_resources) AS r) AS t
    JOIN @schema@.waiters w
      ON w.namespace = p_namespace
     AND (w.resource = t.root OR (w.resource > t.root || '.' AND w.resource < t.root || '/'))
    WHERE w.expires_at > p_now
      AND NOT EXISTS (
        SELECT 1 FROM @schema@.waiters e
        WHERE e.namespace = w.namespace AND e.position < w.position AND e.expires_at > p_now
          AND e.owner <> w.owner
          AND NOT (e.mode = 'shared' AND w.mode = 'shared')
          AND NOT (e.slots > 0 AND w.slots > 0 AND e.resource = w.resource)
          AND (e.resource = ANY (array_prepend(w.resource, @schema@.ancestors(w.resource)))
               OR (e.resource > w.resource || '.' AND e.resource < w.resource || '/')))) AS heads
$$;

-- The newest p_limit events of history and of period_changes (migration
-- 018: each declared or changed expected period, as 'period_changed'), in one
-- order of ids, optionally of one namespace, of a resource and its
-- descendants, of one event, at or after p_from and of host p_host (NULL: no
-- such filter). What history() (40_status_gc.sql) and history2()
-- (35_run_ends.sql) build their JSON from.
CREATE OR REPLACE FUNCTION @schema@.history_events(p_namespace text, p_prefix text,
                                                   p_limit integer, p_event text,
                                                   p_from timestamptz, p_host text)
RETURNS TABLE (id bigint, at timestamptz, event text, namespace text, resource text,
               owner uuid, mode text, token bigint, held_for interval, host text, ip text,
               pid bigint, user_name text, command text, forced_by text, db_user text,
               leftovers jsonb, exit_code integer, exit_signal integer,
               in_the_way_owner uuid, in_the_way_host text, in_the_way_token bigint,
               done_by_started_at timestamptz, every_ms bigint, previous_every_ms bigint)
LANGUAGE sql STABLE
AS $$
  SELECT * FROM (
    (SELECT h.id, h.at, h.event, h.namespace, h.resource, h.owner, h.mode, h.token, h.held_for,
            h.host, h.ip, h.pid, h.user_name, h.command, h.forced_by, h.db_user, h.leftovers,
            h.exit_code, h.exit_signal, h.in_the_way_owner, h.in_the_way_host,
            h.in_the_way_token, h.done_by_started_at, NULL::bigint, NULL::bigint
     FROM @schema@.history h
     WHERE (p_namespace IS NULL OR h.namespace = p_namespace)
       AND (p_prefix IS NULL OR h.resource = p_prefix
            OR (h.resource > p_prefix || '.' AND h.resource < p_prefix || '/'))
       AND (p_event IS NULL OR h.event = p_event)
       AND (p_from IS NULL OR h.at >= p_from)
       AND (p_host IS NULL OR h.host = p_host)
     ORDER BY h.id DESC
     LIMIT greatest(p_limit, 0))
    UNION ALL
    (SELECT c.id, c.at, 'period_changed', c.namespace, c.resource, c.owner, c.mode, c.token,
            NULL::interval, c.host, c.ip, c.pid, c.user_name, c.command, c.forced_by, c.db_user,
            NULL::jsonb, NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::bigint,
            NULL::timestamptz, c.every_ms, c.previous_every_ms
     FROM @schema@.period_changes c
     WHERE (p_namespace IS NULL OR c.namespace = p_namespace)
       AND (p_prefix IS NULL OR c.resource = p_prefix
            OR (c.resource > p_prefix || '.' AND c.resource < p_prefix || '/'))
       AND (p_event IS NULL OR p_event = 'period_changed')
       AND (p_from IS NULL OR c.at >= p_from)
       AND (p_host IS NULL OR c.host = p_host)
     ORDER BY c.id DESC
     LIMIT greatest(p_limit, 0))) AS e
  ORDER BY e.id DESC
  LIMIT greatest(p_limit, 0)
$$;
