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
ALTER FUNCTION @schema@.try_acquire(text, text[], text, integer, uuid, bigint, text, boolean,
                                    text, text, bigint, text, text, timestamptz)
  RENAME TO try_acquire_general;

CREATE FUNCTION @schema@.try_acquire(
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
    PERFORM @schema@.commit_durably();  -- see Durability in 002
    -- lock_hierarchies() of 001 for one resource, inline.
    v_key := @schema@.lock_key(p_namespace, split_part(v_resource, '.', 1));
    IF p_queue THEN
      PERFORM pg_advisory_xact_lock(v_key);
    ELSIF NOT pg_try_advisory_xact_lock(v_key) THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = 'another transaction holds locks under the same top-level name';
    END IF;
    v_now := clock_timestamp();  -- after the lock: see 002
    v_up := array_prepend(v_resource, @schema@.ancestors(v_resource));
    IF NOT EXISTS (SELECT 1 FROM @schema@.leases
                   WHERE namespace = p_namespace AND resource = ANY (v_up))
       AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                       WHERE namespace = p_namespace
                         AND resource > v_resource || '.' AND resource < v_resource || '/')
       AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                       WHERE namespace = p_namespace AND resource = ANY (v_up)
                         AND owner <> p_owner)
       AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                       WHERE namespace = p_namespace AND owner <> p_owner
                         AND resource > v_resource || '.' AND resource < v_resource || '/') THEN
      WITH l AS (
        INSERT INTO @schema@.leases (namespace, resource, owner, mode, slots, token, depth,
                                     request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                     ip, pid, user_name, command, owner_started_at)
        VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, nextval('@schema@.tokens'), 1,
                p_request_id, v_now, v_now,
                CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END,
                p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
                coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started)
        RETURNING *),
      h AS (
        INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token,
                                      held_for, host, ip, pid, user_name, command)
        SELECT v_now, 'acquired', namespace, resource, owner, mode, token, NULL, host, ip, pid,
               user_name, command
        FROM l)
      SELECT token INTO v_token FROM l;
      -- A queued request's own entry goes with the grant, as in the general path.
      DELETE FROM @schema@.waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = v_resource;
      RETURN jsonb_build_object('outcome', 'granted', 'now', @schema@.usec(v_now),
                                'grants', jsonb_build_array(jsonb_build_object(
                                  'resource', v_resource, 'token', v_token, 'depth', 1)));
    END IF;
  END IF;
  RETURN @schema@.try_acquire_general(p_namespace, p_resources, p_mode, p_slots, p_owner,
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
    WHERE p.oid = '@schema@.try_acquire_general(text, text[], text, integer, uuid, bigint, text,
                                                boolean, text, text, bigint, text, text,
                                                timestamptz)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION @schema@.try_acquire(text, text[], text, integer,'
                   ' uuid, bigint, text, boolean, text, text, bigint, text, text, timestamptz)'
                   ' TO %s', g.role);
  END LOOP;
END $grants$;

-- (2) Targeted wake-ups.

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

-- Notifies each owner with a live queue entry in the hierarchies of
-- p_resources that has no earlier live conflicting entry of another owner on
-- a related resource: the waiters that may be granted now. The payload is the
-- owner id; sent on commit. Returns how many notifications.
CREATE FUNCTION @schema@.notify_heads(p_namespace text, p_resources text[], p_now timestamptz)
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

-- release() of 003, waking only the waiters that may now be granted.
CREATE OR REPLACE FUNCTION @schema@.release(p_namespace text, p_resources text[], p_owner uuid)
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
  l @schema@.leases;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF p_owner IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'release: no owner';
  END IF;
  PERFORM @schema@.commit_durably();  -- see Durability in 002
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  FOR i IN 1 .. cardinality(p_resources) LOOP
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_refused := v_refused || jsonb_build_object(
        'resource', p_resources[i],
        'reason', CASE WHEN EXISTS (SELECT 1 FROM @schema@.leases
                                    WHERE namespace = p_namespace AND resource = p_resources[i]
                                      AND (expires_at IS NULL OR expires_at > v_now))
                       THEN 'other_owner' ELSE 'not_held' END);
      CONTINUE;
    END IF;
    IF l.expires_at <= v_now THEN
      DELETE FROM @schema@.leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM @schema@.record_event('expired', l.expires_at, l, l.expires_at - l.acquired_at);
      v_refused := v_refused || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      v_removed := true;
    ELSIF l.depth > 1 THEN
      UPDATE @schema@.leases SET depth = depth - 1
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', l.depth - 1);
    ELSE
      DELETE FROM @schema@.leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM @schema@.record_event('released', v_now, l, v_now - l.acquired_at);
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', 0);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM @schema@.notify_heads(p_namespace, p_resources, v_now); END IF;
  RETURN jsonb_build_object('now', @schema@.usec(v_now), 'released', v_released,
                            'refused', v_refused);
END $$;

-- leave_queue() of 002, waking only the waiters that may now be granted.
CREATE OR REPLACE FUNCTION @schema@.leave_queue(p_namespace text, p_resources text[],
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
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  DELETE FROM @schema@.waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources)
    AND (p_request_id IS NULL OR request_id = p_request_id);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  IF v_count > 0 THEN
    PERFORM @schema@.notify_heads(p_namespace, p_resources, clock_timestamp());
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
CREATE FUNCTION @schema@.status_rows(p_namespace text, p_prefix text, p_include_expired boolean)
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
  FROM @schema@.leases l, n
  WHERE (p_namespace IS NULL OR l.namespace = p_namespace)
    AND (p_prefix IS NULL OR l.resource = p_prefix
         OR (l.resource > p_prefix || '.' AND l.resource < p_prefix || '/'))
    AND (p_include_expired OR l.expires_at IS NULL OR l.expires_at > n.now)
  UNION ALL
  SELECT 'waiter', w.namespace, w.resource, w.owner, w.mode, w.slots, w.position, NULL,
         (w.enqueued_at AT TIME ZONE 'UTC')::text, NULL, NULL, NULL, w.host, w.ip, w.pid,
         w.user_name, w.command, (w.owner_started_at AT TIME ZONE 'UTC')::text
  FROM @schema@.waiters w, n
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
    WHERE p.oid = '@schema@.status(text, text, boolean)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION @schema@.status_rows(text, text, boolean) TO %s',
                   g.role);
  END LOOP;
END $grants$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
