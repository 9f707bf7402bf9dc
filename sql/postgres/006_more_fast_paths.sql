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

ALTER FUNCTION @schema@.release(text, text[], uuid) RENAME TO release_general;

CREATE FUNCTION @schema@.release(p_namespace text, p_resources text[], p_owner uuid)
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
  l @schema@.leases;
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
    PERFORM @schema@.commit_durably();  -- see Durability in 002
    v_root := split_part(v_resource, '.', 1);
    PERFORM pg_advisory_xact_lock(@schema@.lock_key(p_namespace, v_root));
    v_now := clock_timestamp();  -- after the lock: see 002
    DELETE FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
      AND depth = 1 AND (expires_at IS NULL OR expires_at > v_now)
    RETURNING * INTO l;  -- (namespace, resource, owner) is the key: one row or none
    IF FOUND THEN
      INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token,
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
      FROM @schema@.waiters
      WHERE namespace = p_namespace
        AND (resource = v_root OR (resource > v_root || '.' AND resource < v_root || '/'))
        AND expires_at > v_now;
      IF v_queued = 1
         OR (v_queued > 1 AND v_one_resource AND v_first_mode = 'exclusive'
             AND v_first_slots = 0) THEN
        PERFORM pg_notify('@schema_name@_changed', v_first_owner::text);
      ELSIF v_queued > 1 THEN
        PERFORM @schema@.notify_heads(p_namespace, p_resources, v_now);
      END IF;
      RETURN jsonb_build_object('now', @schema@.usec(v_now),
                                'released', jsonb_build_array(jsonb_build_object(
                                  'resource', v_resource, 'remaining_depth', 0)),
                                'refused', '[]'::jsonb);
    END IF;
  END IF;
  RETURN @schema@.release_general(p_namespace, p_resources, p_owner);
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
    WHERE p.oid = '@schema@.release_general(text, text[], uuid)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION @schema@.release(text, text[], uuid) TO %s',
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
CREATE OR REPLACE FUNCTION @schema@.try_acquire(
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
    -- 005's path: no related row at all but the caller's own queue entries.
    v_grant := NOT EXISTS (SELECT 1 FROM @schema@.leases
                           WHERE namespace = p_namespace AND resource = ANY (v_up))
               AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                               WHERE namespace = p_namespace
                                 AND resource > v_lo AND resource < v_hi)
               AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                               WHERE namespace = p_namespace AND resource = ANY (v_up)
                                 AND owner <> p_owner)
               AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                               WHERE namespace = p_namespace AND owner <> p_owner
                                 AND resource > v_lo AND resource < v_hi);
    IF NOT v_grant AND p_queue AND p_mode = 'exclusive' AND p_slots = 0
       AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                       WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > v_now))
       AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                       WHERE owner = p_owner AND expires_at > v_now
                         AND NOT (namespace = p_namespace AND resource = v_resource
                                  AND request_id = p_request_id))
       AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                       WHERE namespace = p_namespace AND expires_at <= v_now
                         AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi)))
    THEN
      -- Who is in the way, as decide() of 002 lists them for this request.
      SELECT coalesce(jsonb_agg(@schema@.lease_json(l, v_now) ORDER BY l.token), '[]')
      INTO v_leases
      FROM @schema@.leases l
      WHERE l.namespace = p_namespace AND l.owner <> p_owner
        AND (l.expires_at IS NULL OR l.expires_at > v_now)
        AND (l.resource = ANY (v_up) OR (l.resource > v_lo AND l.resource < v_hi));
      SELECT position INTO v_mine FROM @schema@.waiters
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
        AND expires_at > v_now;
      SELECT coalesce(jsonb_agg(@schema@.waiter_json(w) ORDER BY w.position), '[]')
      INTO v_waiters
      FROM @schema@.waiters w
      WHERE w.namespace = p_namespace AND w.owner <> p_owner AND w.expires_at > v_now
        AND (v_mine IS NULL OR w.position < v_mine)
        AND (w.resource = ANY (v_up) OR (w.resource > v_lo AND w.resource < v_hi));
      IF v_leases = '[]' AND v_waiters = '[]' THEN
        v_grant := true;
      ELSE
        PERFORM @schema@.enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                 p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                 p_started, v_now);
        RETURN jsonb_build_object('outcome', 'blocked', 'now', @schema@.usec(v_now),
                                  'leases', v_leases, 'waiters', v_waiters);
      END IF;
    END IF;
    IF v_grant THEN
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

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
