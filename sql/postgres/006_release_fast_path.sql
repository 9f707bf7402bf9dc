-- clock on PostgreSQL, version 6: release() gets the fast path try_acquire()
-- got in 005, for the common case: one resource, held by the caller once
-- (depth 1) and live. That is every release of `clock run` and most of
-- `clock release`. Nothing here changes what a call means; the function
-- keeps its signature, its settings and its grants.
--
-- Why: every `clock run` is a new backend, which plans each statement the
-- first time it runs it. The general release of 005 ran some fifteen
-- (check_names, lock_hierarchies, a SELECT … FOR UPDATE, the DELETE,
-- record_event, notify_heads' query, planned again on every call as a SQL
-- function): 2.0 ms of server time per release (pg_stat_user_functions over
-- 50 `clock run`s), on the hand-over path of every queued job (tests/bench,
-- measurement 3). The fast path runs four statements, each cheap to plan:
-- it deletes the lease, writes its 'released' record, and looks for the
-- waiters to wake without notify_heads() when the queue has one entry.
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
  v_heads uuid[];
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
      -- The waiters to wake, as notify_heads() finds them. When the hierarchy
      -- has one live queue entry (a job queued behind this one: the usual
      -- hand-over), that one, as nothing is ahead of it; its query is cheap
      -- to plan, where notify_heads' self-join took 0.4-0.8 ms on every
      -- call (EXPLAIN ANALYZE: a SQL function's plan is never kept).
      v_heads := ARRAY(SELECT owner FROM @schema@.waiters
                       WHERE namespace = p_namespace
                         AND (resource = v_root
                              OR (resource > v_root || '.' AND resource < v_root || '/'))
                         AND expires_at > v_now
                       LIMIT 2);
      IF cardinality(v_heads) = 1 THEN
        PERFORM pg_notify('@schema_name@_changed', v_heads[1]::text);
      ELSIF cardinality(v_heads) > 1 THEN
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

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
