-- clock on PostgreSQL: renewing and releasing leases. Each call
-- is one round trip and one transaction.
--
-- Isolation and clock as in 20_acquire.sql: READ COMMITTED, the hierarchy row locks
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

-- The reply of renew() and note_leftovers() to a caller whose p_secret does
-- not prove the owner id (owner_refuses()): each resource recorded as
-- 'refused' with p_by, who asked, and refused as 'not_proven', in request
-- order.
CREATE OR REPLACE FUNCTION @schema@.owner_not_proven(p_namespace text, p_resources text[],
                                                     p_owner uuid, p_by text, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM @schema@.record_refused(p_now, p_namespace, p_resources, p_owner, NULL, NULL, NULL,
                                  NULL, NULL, NULL, p_by);
  RETURN jsonb_build_object('outcome', 'not_owner', 'now', @schema@.usec(p_now),
                            'lost', (SELECT jsonb_agg(jsonb_build_object('resource', r,
                                                                         'reason', 'not_proven')
                                                      ORDER BY n)
                                     FROM unnest(p_resources) WITH ORDINALITY AS t (r, n)));
END $$;

-- The owner's leases of p_resources judged for renew() and note_leftovers(),
-- each locked FOR UPDATE: the list of those the caller cannot act on,
-- [{resource, reason}…] with reason 'gone', 'token' (held under another
-- token than p_tokens[i]; no tokens: any), 'expired' or 'not_proven' (the
-- secret does not prove it: recorded as 'refused' with p_by). With
-- p_record_losses (renew) each loss is also recorded as 'lost' (a lease
-- already gone only when history shows this owner, proven by p_secret,
-- acquired it) and an expired lease is removed; note_leftovers leaves that
-- to the next renewal.
CREATE OR REPLACE FUNCTION @schema@.judge_leases(p_namespace text, p_resources text[],
                                                 p_owner uuid, p_tokens bigint[], p_secret text,
                                                 p_by text, p_now timestamptz,
                                                 p_record_losses boolean)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_token bigint;
  v_lost jsonb := '[]';
  v_removed boolean := false;
  l @schema@.leases;
BEGIN
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_token := p_tokens[i];  -- NULL when no tokens were given
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_lost := v_lost || jsonb_build_object('resource', p_resources[i], 'reason', 'gone');
      -- Recorded as lost only for the owner that held it: an 'acquired'
      -- record of this owner's that the secret proves (a record from before
      -- secrets keeps no hash and proves nothing wrong).
      IF p_record_losses
         AND EXISTS (SELECT 1 FROM @schema@.history h
                     WHERE h.resource = p_resources[i] AND h.namespace = p_namespace
                       AND h.owner = p_owner AND h.event = 'acquired'
                       AND @schema@.proves(h.secret_hash, p_secret)) THEN
        INSERT INTO @schema@.history (at, event, namespace, resource, owner, token)
        VALUES (p_now, 'lost', p_namespace, p_resources[i], p_owner, v_token);
      END IF;
    ELSIF l.token <> v_token THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'token');
      IF p_record_losses THEN
        l.token := v_token;
        PERFORM @schema@.record_event('lost', p_now, l, NULL);
      END IF;
    ELSIF l.expires_at <= p_now THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'expired');
      IF p_record_losses THEN
        DELETE FROM @schema@.leases
        WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
        PERFORM @schema@.record_event('lost', p_now, l, l.expires_at - l.acquired_at);
        v_removed := true;
      END IF;
    ELSIF NOT @schema@.proves(l.secret_hash, p_secret) THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'not_proven');
      PERFORM @schema@.record_event('refused', p_now, l, NULL, coalesce(p_by, ''));
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM @schema@.notify_change(); END IF;
  RETURN v_lost;
END $$;

-- Extends the owner's leases to clock_timestamp() + ttl (ttl 0: no expiry;
-- a lease taken with --ttl 0 keeps no expiry), keeping their tokens.
-- p_tokens: the tokens the caller holds, in resource order; empty: any.
-- Returns {"outcome": "renewed", "now", "expires_at"} or, changing nothing,
-- {"outcome": "not_owner", "lost": [{resource, reason}…]} with reason
-- 'gone', 'expired' or 'token' (the owner holds it under another token), or
-- 'not_proven' (p_secret does not prove ownership: see proves()).
-- Each loss is recorded as 'lost' (a lease already gone only when history
-- shows this owner, proven by p_secret, acquired it); a lease found expired
-- is removed. When p_secret does not prove the owner id (owner_refuses()),
-- nothing changes but history: 'refused' for each resource, with p_by, who
-- asked ("user@host pid N"), and every resource is refused as 'not_proven'.
CREATE OR REPLACE FUNCTION @schema@.renew(p_namespace text, p_resources text[], p_owner uuid,
                               p_tokens bigint[], p_ttl_ms bigint, p_secret text,
                               p_by text)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_expires timestamptz;
  v_lost jsonb;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, NULL, NULL, NULL, NULL, p_by);
  IF p_owner IS NULL OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_tokens IS NULL
     OR (cardinality(p_tokens) > 0 AND cardinality(p_tokens) <> cardinality(p_resources)) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'renew: invalid owner, ttl or tokens (one per resource, or none)';
  END IF;
  PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 20_acquire.sql
  v_expires := CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END;
  -- The owner's proof first (owner_refuses): nothing is renewed, lost or
  -- removed in the name of an id whose secret the caller does not have.
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    RETURN @schema@.owner_not_proven(p_namespace, p_resources, p_owner, p_by, v_now);
  END IF;
  v_lost := @schema@.judge_leases(p_namespace, p_resources, p_owner, p_tokens, p_secret, p_by,
                                  v_now, true);
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

-- Records on each of the owner's leases of p_resources the processes its
-- command left running (p_leftovers: a JSON array of {"pid", "command",
-- "fate"}; NULL or [] clears it), which status_rows() shows and the lease's
-- end copies into history (record_event). In the owner's name, as renew():
-- when p_secret does not prove the owner id (owner_refuses()) nothing
-- changes but history ('refused' with p_by) and every resource is refused
-- as 'not_proven'; a lease gone, expired or under another token than
-- p_tokens is refused ('gone', 'expired', 'token') and nothing is written
-- (the next renewal records the loss). All or none. Returns
-- {"outcome": "noted", "now"} or {"outcome": "not_owner", "lost", "now"}.
CREATE OR REPLACE FUNCTION @schema@.note_leftovers(p_namespace text, p_resources text[],
                                                   p_owner uuid, p_tokens bigint[],
                                                   p_leftovers jsonb, p_secret text, p_by text)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_lost jsonb;
  v_leftovers jsonb;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, NULL, NULL, NULL, NULL, p_by);
  IF p_owner IS NULL OR p_tokens IS NULL
     OR (cardinality(p_tokens) > 0 AND cardinality(p_tokens) <> cardinality(p_resources))
     OR (p_leftovers IS NOT NULL AND jsonb_typeof(p_leftovers) <> 'array') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'note_leftovers: invalid owner, tokens (one per resource, or none) or leftovers '
                '(a JSON array)';
  END IF;
  -- status and history show the list to everyone (docs/threat-model.md,
  -- "Bounds of a call"); clock records at most 64, 200 bytes of command each.
  IF jsonb_array_length(coalesce(p_leftovers, '[]')) > 64
     OR octet_length(p_leftovers::text) > 131072 THEN
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
      MESSAGE = 'too many leftovers: at most 64, in at most 128 KiB of JSON';
  END IF;
  v_leftovers := CASE WHEN jsonb_array_length(coalesce(p_leftovers, '[]')) = 0 THEN NULL
                      ELSE p_leftovers END;
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 20_acquire.sql
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    RETURN @schema@.owner_not_proven(p_namespace, p_resources, p_owner, p_by, v_now);
  END IF;
  v_lost := @schema@.judge_leases(p_namespace, p_resources, p_owner, p_tokens, p_secret, p_by,
                                  v_now, false);
  IF jsonb_array_length(v_lost) > 0 THEN
    RETURN jsonb_build_object('outcome', 'not_owner', 'now', @schema@.usec(v_now),
                              'lost', v_lost);
  END IF;
  UPDATE @schema@.leases SET leftovers = v_leftovers
  WHERE namespace = p_namespace AND resource = ANY (p_resources) AND owner = p_owner;
  RETURN jsonb_build_object('outcome', 'noted', 'now', @schema@.usec(v_now));
END $$;

-- release()'s fast path: one resource, held by the caller once (depth 1)
-- and live, proven by p_secret, which is every release of `clock run`:
-- removed and recorded as release() would, with one cheap query for whom to
-- wake instead of notify_heads() in the usual cases. How clock run's
-- command ended (p_exit_code or p_exit_signal; both NULL: not a run of
-- clock run) goes on the same record and into the run results, as on
-- the general path. Returns release()'s
-- reply, or NULL, having written nothing, for release() to go on. Its
-- arguments are ones check_names() would accept (release() checks).
CREATE OR REPLACE FUNCTION @schema@.release_fast_path(p_namespace text, p_resource text,
                                                      p_owner uuid, p_secret text, p_by text,
                                                      p_host text, p_lineage bigint[],
                                                      p_succeeded boolean, p_exit_code integer,
                                                      p_exit_signal integer)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_root text := split_part(p_resource, '.', 1);
  v_now timestamptz;
  l @schema@.leases;
  v_queued bigint;
  v_first_owner uuid;
  v_first_mode text;
  v_first_slots integer;
  v_one_resource boolean;
BEGIN
  PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
  PERFORM 1 FROM @schema@.hierarchy_locks
  WHERE slot = @schema@.hierarchy_slot(p_namespace, v_root) FOR NO KEY UPDATE;
  v_now := clock_timestamp();  -- after the lock: see 20_acquire.sql
  DELETE FROM @schema@.leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND depth = 1 AND (expires_at IS NULL OR expires_at > v_now)
    AND @schema@.proves(secret_hash, p_secret)
  RETURNING * INTO l;  -- (namespace, resource, owner) is the key: one row or none
  IF FOUND THEN
    INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token,
                                  held_for, host, ip, pid, user_name, command, forced_by,
                                  leftovers, exit_code, exit_signal)
    VALUES (v_now, 'released', l.namespace, l.resource, l.owner, l.mode, l.token,
            v_now - l.acquired_at, l.host, l.ip, l.pid, l.user_name, l.command,
            CASE WHEN l.host = p_host AND l.pid = ANY (coalesce(p_lineage, '{}')) THEN ''
                 ELSE coalesce(p_by, '') END,
            l.leftovers, p_exit_code, p_exit_signal);
    IF p_exit_code IS NOT NULL OR p_exit_signal IS NOT NULL THEN
      PERFORM @schema@.count_run_result(l.namespace, l.resource, v_now, v_now - l.acquired_at,
                                        p_exit_code, p_exit_signal);
    END IF;
    IF p_succeeded THEN PERFORM @schema@.record_success(l); END IF;
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
      PERFORM @schema@.notify_heads(p_namespace, ARRAY[p_resource], v_now);
    END IF;
    RETURN jsonb_build_object('now', @schema@.usec(v_now),
                              'released', jsonb_build_array(jsonb_build_object(
                                'resource', p_resource, 'remaining_depth', 0)),
                              'refused', '[]'::jsonb);
  END IF;
  RETURN NULL;
END $$;

-- Releases the caller's own leases of p_resources: each held once is removed
-- and recorded as 'released', each re-entered has its depth decreased; a
-- lease found expired is removed, recorded as 'expired' and refused. Wakes
-- only the waiters that may now be granted (notify_heads, or the first
-- waiter where that is the only head). Returns {"released": [{resource,
-- remaining_depth}…], "refused": [{resource, reason}…], "now"}.
-- p_secret must prove ownership (proves()); a live lease it does not prove
-- is left alone, refused as 'not_proven' and recorded as 'refused' with
-- p_by. A release from outside the holder's process tree (another host, or
-- a caller whose lineage p_lineage, its pid and its ancestors', lacks the
-- lease's pid: store::by_of) is recorded with p_by, who asked.
-- p_succeeded: the lease was clock run's and its command exited 0; a lease
-- that ends here is then its resource's latest success (record_success), in
-- this transaction, under the hierarchy lock that try_acquire() of a
-- --once-per request takes before it looks. p_exit_code or p_exit_signal:
-- how clock run's command ended, written on each 'released' record and
-- counted in the run results (release2(), 35_run_ends.sql).
CREATE OR REPLACE FUNCTION @schema@.release(p_namespace text, p_resources text[], p_owner uuid,
                                            p_secret text, p_by text, p_host text,
                                            p_lineage bigint[],
                                            p_succeeded boolean DEFAULT false,
                                            p_exit_code integer DEFAULT NULL,
                                            p_exit_signal integer DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_resource text := p_resources[1];
  v_reply jsonb;
  v_now timestamptz;
  l @schema@.leases;
  v_released jsonb := '[]';
  v_refused jsonb := '[]';
  v_removed boolean := false;
BEGIN
  PERFORM @schema@.check_bounds(p_resources, p_host, NULL, NULL, NULL, p_by);
  IF cardinality(p_lineage) > 64 THEN  -- the caller's pid and its ancestors'
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
      MESSAGE = format('a lineage of %s pids: at most 64', cardinality(p_lineage));
  END IF;
  -- The fast path (release_fast_path) first, for arguments check_names()
  -- would accept; anything else, and any case it leaves (several resources,
  -- re-entered, expired, not held), goes on to the general path below, which
  -- re-takes the same row lock (a transaction may lock its own row again)
  -- and finds the table as the fast path left it: unchanged.
  IF cardinality(p_resources) = 1 AND @schema@.is_resource_name(v_resource)
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_owner IS NOT NULL THEN
    v_reply := @schema@.release_fast_path(p_namespace, v_resource, p_owner, p_secret, p_by, p_host,
                                          p_lineage, p_succeeded, p_exit_code, p_exit_signal);
    IF v_reply IS NOT NULL THEN
      RETURN v_reply;
    END IF;
  END IF;
  -- The general path: each resource in turn, all under the hierarchy locks.
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF p_owner IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = 'release: no owner';
  END IF;
  PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 20_acquire.sql
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
    ELSIF NOT @schema@.proves(l.secret_hash, p_secret) THEN
      -- Changes nothing but history: the holder keeps its lease.
      PERFORM @schema@.record_event('refused', v_now, l, NULL, coalesce(p_by, ''));
      v_refused := v_refused || jsonb_build_object('resource', l.resource,
                                                   'reason', 'not_proven');
    ELSIF l.depth > 1 THEN
      UPDATE @schema@.leases SET depth = depth - 1
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', l.depth - 1);
    ELSE
      DELETE FROM @schema@.leases
      WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
      PERFORM @schema@.record_event('released', v_now, l, v_now - l.acquired_at,
        CASE WHEN l.host = p_host AND l.pid = ANY (coalesce(p_lineage, '{}')) THEN ''
             ELSE coalesce(p_by, '') END, p_exit_code, p_exit_signal);
      IF p_exit_code IS NOT NULL OR p_exit_signal IS NOT NULL THEN
        PERFORM @schema@.count_run_result(p_namespace, l.resource, v_now, v_now - l.acquired_at,
                                          p_exit_code, p_exit_signal);
      END IF;
      IF p_succeeded THEN PERFORM @schema@.record_success(l); END IF;
      v_released := v_released || jsonb_build_object('resource', l.resource,
                                                     'remaining_depth', 0);
      v_removed := true;
    END IF;
  END LOOP;
  IF v_removed THEN PERFORM @schema@.notify_heads(p_namespace, p_resources, v_now); END IF;
  RETURN jsonb_build_object('now', @schema@.usec(v_now), 'released', v_released,
                            'refused', v_refused);
END $$;

-- Removes every holder of each resource, whoever it is (an operator's
-- `clock release --force`): live leases are recorded as 'forced' with
-- p_forced_by and the database role, expired ones as 'expired'. Waiters stay
-- queued. The next grant draws a new, larger token, so the old holder's
-- fenced writes fail; the old holders are notified (notify_lost). Returns {"released": [{resource, holders_removed}…]}.
CREATE OR REPLACE FUNCTION @schema@.force_release(p_namespace text, p_resources text[], p_forced_by text)
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
  v_owners uuid[];
  v_removed uuid[] := '{}';
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, NULL, NULL, NULL, NULL, p_forced_by);
  PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 20_acquire.sql
  FOR i IN 1 .. cardinality(p_resources) LOOP
    WITH gone AS (
      DELETE FROM @schema@.leases
      WHERE namespace = p_namespace AND resource = p_resources[i]
      RETURNING *),
    recorded AS (
      INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token, held_for,
                                    host, ip, pid, user_name, command, forced_by, leftovers)
      SELECT v_now, CASE WHEN expires_at <= v_now THEN 'expired' ELSE 'forced' END, namespace,
             resource, owner, mode, token, v_now - acquired_at, host, ip, pid, user_name, command,
             CASE WHEN expires_at <= v_now THEN '' ELSE coalesce(p_forced_by, '') END, leftovers
      FROM gone
      RETURNING owner)
    SELECT count(*), array_agg(owner) INTO v_count, v_owners FROM recorded;
    v_removed := v_removed || coalesce(v_owners, '{}');
    v_total := v_total + v_count;
    v_released := v_released || jsonb_build_object('resource', p_resources[i],
                                                   'holders_removed', v_count);
  END LOOP;
  IF v_total > 0 THEN
    PERFORM @schema@.notify_change();
    PERFORM @schema@.notify_lost(v_removed);
  END IF;
  RETURN jsonb_build_object('now', @schema@.usec(v_now), 'released', v_released);
END $$;
