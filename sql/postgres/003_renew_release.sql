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
CREATE FUNCTION @schema@.renew(p_namespace text, p_resources text[], p_owner uuid,
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
  l @schema@.leases;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF p_owner IS NULL OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_tokens IS NULL
     OR (cardinality(p_tokens) > 0 AND cardinality(p_tokens) <> cardinality(p_resources)) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'renew: invalid owner, ttl or tokens (one per resource, or none)';
  END IF;
  PERFORM @schema@.commit_durably();  -- see Durability in 002
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  v_expires := CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_token := p_tokens[i];  -- NULL when no tokens were given
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_lost := v_lost || jsonb_build_object('resource', p_resources[i], 'reason', 'gone');
      INSERT INTO @schema@.history (at, event, namespace, resource, owner, token)
      VALUES (v_now, 'lost', p_namespace, p_resources[i], p_owner, v_token);
    ELSIF l.token <> v_token THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'token');
      l.token := v_token;
      PERFORM @schema@.record_event('lost', v_now, l, NULL);
    ELSIF l.expires_at <= v_now THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      DELETE FROM @schema@.leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM @schema@.record_event('lost', v_now, l, l.expires_at - l.acquired_at);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM @schema@.notify_change(); END IF;
  IF jsonb_array_length(v_lost) > 0 THEN
    RETURN jsonb_build_object('outcome', 'not_owner', 'now', @schema@.usec(v_now),
                              'lost', v_lost);
  END IF;
  UPDATE @schema@.leases
  SET renewed_at = v_now, expires_at = v_expires, ttl = p_ttl_ms * interval '1 ms'
  WHERE namespace = p_namespace AND resource = ANY (p_resources) AND owner = p_owner
    AND expires_at IS NOT NULL;
  RETURN jsonb_build_object('outcome', 'renewed', 'now', @schema@.usec(v_now),
                            'expires_at', @schema@.usec(v_expires));
END $$;

-- Undoes one re-entry of each of the owner's leases, removing a lease (and
-- recording 'released') when its depth reaches zero. Returns
-- {"released": [{resource, remaining_depth}…], "refused": [{resource,
-- reason}…]} with reason 'expired' (removed, recorded as expired: it may
-- have been someone else's turn already), 'other_owner' or 'not_held'.
CREATE FUNCTION @schema@.release(p_namespace text, p_resources text[], p_owner uuid)
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
  IF v_removed THEN PERFORM @schema@.notify_change(); END IF;
  RETURN jsonb_build_object('now', @schema@.usec(v_now), 'released', v_released,
                            'refused', v_refused);
END $$;

-- Removes every holder of each resource, whoever it is (an operator's
-- `clock release --force`): live leases are recorded as 'forced' with
-- p_forced_by and the database role, expired ones as 'expired'. Waiters stay
-- queued. The next grant draws a new, larger token, so the old holder's
-- fenced writes fail. Returns {"released": [{resource, holders_removed}…]}.
CREATE FUNCTION @schema@.force_release(p_namespace text, p_resources text[], p_forced_by text)
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
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.commit_durably();  -- see Durability in 002
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 002
  FOR i IN 1 .. cardinality(p_resources) LOOP
    WITH gone AS (
      DELETE FROM @schema@.leases
      WHERE namespace = p_namespace AND resource = p_resources[i]
      RETURNING *)
    INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, held_for,
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
  IF v_total > 0 THEN PERFORM @schema@.notify_change(); END IF;
  RETURN jsonb_build_object('now', @schema@.usec(v_now), 'released', v_released);
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
