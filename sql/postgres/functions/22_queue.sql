-- clock on PostgreSQL: the queue. A request that cannot be granted waits in
-- a first-come, first-served queue per resource (waiters): its entry is
-- written by the first blocked attempt (enqueue), refreshed by the next ones,
-- and leaves with the grant, a deadlock, a done --once-per period, the
-- waiter giving up (leave_queue), or, once it lapses, whoever meets it. A
-- later conflicting request never overtakes a live earlier entry (decide(),
-- 21_decide.sql). queue_blocked() answers a blocked request of the general
-- path; in_the_way(), queue_behind() and may_queue_fast() answer the fast
-- paths of try_acquire (24_fast_paths.sql).
--
-- The waiter lifetime rule, written here once (waiter_lifetime): an entry
-- lives as long as its request's TTL, clamped to 1..30 s, 30 s for --ttl 0
-- (store::waiter_lifetime(ttl) of src/store/store.cpp, the same rule for
-- SQLite). A waiter that dies so leaves the queue within one TTL (man clock, DESCRIPTION)
-- and at most 30 s, and a live one refreshes its entry once half of it is
-- gone. Every function here runs under the hierarchy locks its caller took
-- (20_acquire.sql), but for leave_queue(), an operation of its own.

-- How long a queue entry lives without a refresh: see the top of this file.
CREATE OR REPLACE FUNCTION @schema@.waiter_lifetime(p_ttl_ms bigint) RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN p_ttl_ms IS NULL OR p_ttl_ms = 0 THEN interval '30 s'
              ELSE least(greatest(p_ttl_ms * interval '1 ms', interval '1 s'), interval '30 s')
         END
$$;

-- Enters (or keeps) the owner in the queue of every resource of a blocked
-- request. A live entry keeps its position and is rewritten only when half
-- its lifetime is gone (or the request changed), to spare writes; a dead one
-- is replaced, so a waiter that lapsed goes to the back. Its lifetime:
-- waiter_lifetime(), at the top of this file.
CREATE OR REPLACE FUNCTION @schema@.enqueue(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_host text, p_ip text, p_pid bigint, p_user text,
  p_command text, p_started timestamptz, p_now timestamptz, p_secret text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_life interval := @schema@.waiter_lifetime(p_ttl_ms);
BEGIN
  DELETE FROM @schema@.waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources)
    AND expires_at <= p_now;
  INSERT INTO @schema@.waiters AS w (namespace, resource, owner, mode, slots, request_id,
                                     enqueued_at, expires_at, host, ip, pid, user_name, command,
                                     owner_started_at, secret_hash)
  SELECT p_namespace, r, p_owner, p_mode, p_slots, p_request_id, p_now, p_now + v_life,
         p_host, p_ip, p_pid, p_user, p_command, p_started, @schema@.secret_hash(p_secret)
  FROM unnest(p_resources) WITH ORDINALITY AS t (r, n) ORDER BY n
  ON CONFLICT (namespace, resource, owner) DO UPDATE
    SET expires_at = excluded.expires_at, request_id = excluded.request_id,
        mode = excluded.mode, slots = excluded.slots
    WHERE w.expires_at < p_now + v_life / 2 OR w.request_id <> excluded.request_id
       OR w.mode <> excluded.mode OR w.slots <> excluded.slots;
END $$;

-- A blocked request of try_acquire's general path: queued (enqueue()) or,
-- with -n, recorded as skipped (p_record_refusal) naming the first in the
-- way. Returns try_acquire's blocked reply: the leases in the way by token,
-- the queue entries in the way by position, each once.
CREATE OR REPLACE FUNCTION @schema@.queue_blocked(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean, p_host text, p_ip text, p_pid bigint,
  p_user text, p_command text, p_started timestamptz, p_record_refusal boolean, p_secret text,
  p_leases jsonb, p_waiters jsonb, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF p_queue THEN
    PERFORM @schema@.enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                             p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started,
                             p_now, p_secret);
  ELSIF p_record_refusal THEN
    PERFORM @schema@.record_missed('skipped', p_now, p_namespace, p_resources, p_owner, p_mode,
                                   p_host, p_ip, p_pid, p_user, p_command,
                                   @schema@.first_in_the_way(p_leases, p_waiters));
  END IF;
  RETURN jsonb_build_object(
    'outcome', 'blocked', 'now', @schema@.usec(p_now),
    'leases', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'token')::bigint), '[]')
               FROM (SELECT DISTINCT x FROM jsonb_array_elements(p_leases) AS x) AS s),
    'waiters', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'position')::bigint), '[]')
                FROM (SELECT DISTINCT x FROM jsonb_array_elements(p_waiters) AS x) AS s));
END $$;

-- Removes the caller's queue entries (a waiter giving up), waking only the
-- waiters that may now be granted. Returns how many were removed: none when
-- p_secret does not prove the owner (owner_refuses()), recorded as 'refused'.
CREATE OR REPLACE FUNCTION @schema@.leave_queue(p_namespace text, p_resources text[],
                                                p_owner uuid, p_request_id text, p_secret text)
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
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    PERFORM @schema@.record_refused(clock_timestamp(), p_namespace, p_resources, p_owner, NULL,
                                    NULL, NULL, NULL, NULL, NULL, '');
    RETURN 0;
  END IF;
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

-- Fast paths 2 and 3 of try_acquire (see there): may this exclusive, queued
-- request of one resource be answered by queue_behind()? Only when its owner
-- holds no live lease and waits for nothing else (so nobody can wait for it
-- and no deadlock search is due) and no expired related lease is left to
-- record.
CREATE OR REPLACE FUNCTION @schema@.may_queue_fast(
  p_namespace text, p_resource text, p_up text[], p_owner uuid, p_request_id text,
  p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (SELECT 1 FROM @schema@.leases
                     WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > p_now))
     AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                     WHERE owner = p_owner AND expires_at > p_now
                       AND NOT (namespace = p_namespace AND resource = p_resource
                                AND request_id = p_request_id))
     AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                     WHERE namespace = p_namespace AND expires_at <= p_now
                       AND (resource = ANY (p_up)
                            OR (resource > p_resource || '.' AND resource < p_resource || '/')))
$$;

-- What stands in the way of a queued exclusive request of one resource, for
-- the blocked replies of try_acquire's fast paths: {"leases": the live
-- related leases of other owners, "ahead": how many live related queue
-- entries of other owners come before position p_mine (all of them when it
-- is NULL), counted up to 64, "waiters": the first of them} (not the whole
-- queue: a herd's attempts would each cost the queue's length). Per related
-- name, entries in queue order (waiters_in_order), so that each scan stops
-- after 64 rows or at the first row. A waiter's every look calls it on the
-- connection the waiter keeps: its three statements take a generic plan at
-- once, instead of being planned again for each of the first five calls and
-- for every call after them where the generic plan looks dearer (8 × 25
-- contended runs: its own time 3.3 -> 2.15 ms a section).
CREATE OR REPLACE FUNCTION @schema@.in_the_way(
  p_namespace text, p_resource text, p_up text[], p_owner uuid, p_mine bigint,
  p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_lo text := p_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := p_resource || '/';
  v_leases jsonb;
  v_waiters jsonb := '[]';
  v_ahead integer;
BEGIN
  SELECT coalesce(jsonb_agg(@schema@.lease_json(o, p_now) ORDER BY o.token), '[]')
  INTO v_leases
  FROM @schema@.leases o
  WHERE o.namespace = p_namespace AND o.owner <> p_owner
    AND (o.expires_at IS NULL OR o.expires_at > p_now)
    AND (o.resource = ANY (p_up) OR (o.resource > v_lo AND o.resource < v_hi));
  SELECT count(*) INTO v_ahead
  FROM (SELECT 1 FROM unnest(p_up) AS r (name)
        CROSS JOIN LATERAL (
          SELECT 1 FROM @schema@.waiters w
          WHERE w.namespace = p_namespace AND w.resource = r.name
            AND (p_mine IS NULL OR w.position < p_mine) AND w.owner <> p_owner
            AND w.expires_at > p_now
          ORDER BY w.position LIMIT 64) AS x
        UNION ALL
        (SELECT 1 FROM @schema@.waiters w
         WHERE w.namespace = p_namespace AND w.resource > v_lo AND w.resource < v_hi
           AND (p_mine IS NULL OR w.position < p_mine) AND w.owner <> p_owner
           AND w.expires_at > p_now
         LIMIT 64)
        LIMIT 64) AS ahead;
  IF v_ahead > 0 THEN
    SELECT coalesce(jsonb_agg(@schema@.waiter_json(f)), '[]') INTO v_waiters
    FROM (SELECT * FROM (
            SELECT x.* FROM unnest(p_up) AS r (name)
            CROSS JOIN LATERAL (
              SELECT * FROM @schema@.waiters w
              WHERE w.namespace = p_namespace AND w.resource = r.name
                AND (p_mine IS NULL OR w.position < p_mine) AND w.owner <> p_owner
                AND w.expires_at > p_now
              ORDER BY w.position LIMIT 1) AS x
            UNION ALL
            (SELECT * FROM @schema@.waiters w
             WHERE w.namespace = p_namespace AND w.resource > v_lo AND w.resource < v_hi
               AND (p_mine IS NULL OR w.position < p_mine) AND w.owner <> p_owner
               AND w.expires_at > p_now
             ORDER BY w.position LIMIT 1)) AS c
          ORDER BY c.position LIMIT 1) AS f;
  END IF;
  RETURN jsonb_build_object('leases', v_leases, 'ahead', v_ahead, 'waiters', v_waiters);
END $$;

-- Fast paths 2 and 3 of try_acquire: when a live related lease of another
-- owner or a live related queue entry of another owner ahead of the caller's
-- own is in the way (as decide() lists them), queues the request (enqueue())
-- and returns try_acquire's blocked reply: the leases in the way and, as fast
-- path 0's, the first queue entry ahead with "ahead", how many, counted up to
-- 64, and "mine" (not the whole queue: a herd's first attempts would each
-- cost the queue's length). NULL when nothing is in the way (nothing written).
CREATE OR REPLACE FUNCTION @schema@.queue_behind(
  p_namespace text, p_resources text[], p_up text[], p_owner uuid, p_ttl_ms bigint,
  p_request_id text, p_host text, p_ip text, p_pid bigint, p_user text, p_command text,
  p_started timestamptz, p_now timestamptz, p_secret text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_resource text := p_resources[1];
  v_mine bigint;
  v_way jsonb;
BEGIN
  SELECT position INTO v_mine FROM @schema@.waiters
  WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
    AND expires_at > p_now;
  v_way := @schema@.in_the_way(p_namespace, v_resource, p_up, p_owner, v_mine, p_now);
  IF v_way -> 'leases' = '[]' AND (v_way ->> 'ahead')::integer = 0 THEN
    RETURN NULL;
  END IF;
  PERFORM @schema@.enqueue(p_namespace, p_resources, 'exclusive', 0, p_owner, p_ttl_ms,
                           p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started, p_now,
                           p_secret);
  SELECT position INTO v_mine FROM @schema@.waiters
  WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
  RETURN v_way || jsonb_build_object('outcome', 'blocked', 'now', @schema@.usec(p_now),
                                     'mine', v_mine);
END $$;
