-- clock on PostgreSQL: the fast paths of try_acquire (20_acquire.sql), for
-- a request of one resource. Each answers as the general path
-- (acquire_general) would with the same rows, in a few statements instead of
-- some forty (a new backend plans every statement it runs), or returns NULL,
-- having written nothing, and the request goes on: fast path 0
-- (fast_path_waiting), then 3 (fast_path_herd), then 1 and 2
-- (fast_path_free), then the general path, which re-takes the same row lock
-- (a transaction may lock its own row again) and finds the table as the
-- fast paths left it: unchanged. try_acquire calls them only with arguments
-- check_names() and the general path would accept.
--
-- Fast paths 1 and 2 (fast_path_free), in four statements:
-- 1. Nothing related (on the resource, an ancestor or a descendant) exists
--    but the caller's own queue entries: no lease, live or expired, and no
--    other owner's queue entry (the first attempt at a free lock, the
--    attempt of the only waiter woken by a release). The general path could
--    only say "grant": nothing to expire, no re-entry, no retry of an earlier
--    grant (that would have left this owner's lease), nobody in the way, no
--    deadlock search. The lease and its 'acquired' record are inserted in one
--    statement and the caller's own queue entry deleted.
-- 2. An exclusive request, queued, by an owner that holds no live lease and
--    waits for nothing else, where no expired related lease is left to clear
--    (every contender of a busy job). The general path could only answer
--    blocked (by every live related lease of another owner and every live
--    related queue entry of another owner ahead of the caller's own, as
--    decide() lists them; the request queued by enqueue(); no deadlock search,
--    which runs only for an owner others can wait for) or granted, as in 1.
--    Its reply lists the leases in the way and, as fast path 0's, the first
--    queue entry ahead with "ahead", how many, counted up to 64, and "mine".
-- Both check it under the hierarchy's lock, in statements that start
-- after the lock is held (READ COMMITTED: a fresh snapshot per statement).
-- Fast path 0 comes before them and takes no lock at all: the re-attempt of
-- an exclusive request whose live queue entry (same request id) is already
-- in place, by an owner that does not hold the resource, with no expired
-- related lease to record. When a live related lease of another owner or a
-- live earlier related queue entry of another owner is in the way, the
-- general path could only answer blocked (re-attempts skip the deadlock
-- search) and refresh the entry; fast path 0 answers so from one snapshot,
-- refreshing only the caller's own row, so waiters' attempts neither queue
-- behind one another on the hierarchy lock nor make a release wait. A change
-- committed after that snapshot is not missed: a release or departure
-- notifies the new first waiters (notify_heads) and pollers look again. Its
-- reply lists the leases in the way but only the first queue entry ahead,
-- with "ahead": how many live entries are ahead, counted up to 64, so its
-- cost does not grow with the queue, and "mine": the caller's own entry's
-- position (with the first entry's, how far back it is, however long the
-- queue). Anything else, or nothing in the way, goes on to fast path 3
-- (for a request with no live entry yet), then to fast paths 1 and 2.
-- try_acquire runs fast paths 0 and 3 only when a read without a lock finds
-- another owner's related lease or queue entry: otherwise neither could
-- answer, and a free resource's first attempt goes straight to 1.
-- 3. The first attempt (no live entry of the caller's yet) of the request
--    of fast path 2, when a related lease or queue entry of another owner
--    exists (read without a lock): under the hierarchy lock in shared mode
--    (see the top of 20_acquire.sql), taken in a subtransaction, it answers as
--    fast path 2 when something is in the way; otherwise the subtransaction
--    is rolled back, which releases the shared lock, and the request goes on
--    to fast paths 1 and 2 under the exclusive lock. A herd's first attempts
--    on a busy resource so enter the queue side by side and return at once
--    (and their processes close their connections), instead of each waiting
--    its turn for the exclusive lock.
-- Anything else (shared, a semaphore, -n, several resources, re-entry, an
-- expired lease to record) goes on to the general path.

-- Fast path 0, before any lock (see the top of this file): reply is
-- try_acquire's blocked reply, or NULL to go on; entered says whether the
-- caller's live queue entry for this request was found.
CREATE OR REPLACE FUNCTION @schema@.fast_path_waiting(
  p_namespace text, p_resource text, p_owner uuid, p_ttl_ms bigint, p_request_id text,
  OUT reply jsonb, OUT entered boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_lo text := p_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := p_resource || '/';
  v_up text[] := array_prepend(p_resource, @schema@.ancestors(p_resource));
  v_life interval := @schema@.waiter_lifetime(p_ttl_ms);
  v_now timestamptz := clock_timestamp();
  v_mine bigint;
  v_way jsonb;
BEGIN
  SELECT position INTO v_mine FROM @schema@.waiters
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND request_id = p_request_id AND expires_at > v_now;
  entered := v_mine IS NOT NULL;
  IF v_mine IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                     WHERE namespace = p_namespace AND resource = p_resource
                       AND owner = p_owner)
     AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                     WHERE namespace = p_namespace AND expires_at <= v_now
                       AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi)))
  THEN
    v_way := @schema@.in_the_way(p_namespace, p_resource, v_up, p_owner, v_mine, v_now);
    IF v_way -> 'leases' <> '[]' OR (v_way ->> 'ahead')::integer > 0 THEN
      -- The refresh enqueue() would make: only this owner's row, only
      -- once half its lifetime is gone.
      UPDATE @schema@.waiters SET expires_at = v_now + v_life
      WHERE position = v_mine AND expires_at < v_now + v_life / 2;
      reply := v_way || jsonb_build_object('outcome', 'blocked', 'now', @schema@.usec(v_now),
                                           'mine', v_mine);
    END IF;
  END IF;
END $$;

-- Fast path 3 (see the top of this file): the first attempt of an
-- exclusive, queued request of one resource that has no live queue entry
-- yet, called when another owner's related lease or queue entry exists
-- (try_acquire read it without a lock). try_acquire's blocked reply, or
-- NULL to go on. The subtransaction holds the shared lock; rolling it back
-- (nothing in the way after all) releases it.
CREATE OR REPLACE FUNCTION @schema@.fast_path_herd(
  p_namespace text, p_resources text[], p_owner uuid, p_ttl_ms bigint, p_request_id text,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz,
  p_secret text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_resource text := p_resources[1];
  v_up text[] := array_prepend(v_resource, @schema@.ancestors(v_resource));
  v_key integer := @schema@.hierarchy_slot(p_namespace, split_part(v_resource, '.', 1));
  v_now timestamptz;
  v_done jsonb;
BEGIN
  BEGIN
    PERFORM @schema@.commit_durably();
    PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = v_key FOR SHARE;
    v_now := clock_timestamp();  -- after the lock: see 20_acquire.sql
    IF @schema@.may_queue_fast(p_namespace, v_resource, v_up, p_owner, p_request_id,
                               v_now) THEN
      v_done := @schema@.queue_behind(p_namespace, p_resources, v_up, p_owner, p_ttl_ms,
                                      p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                      p_started, v_now, p_secret);
      IF v_done IS NOT NULL THEN
        RETURN v_done;
      END IF;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'CKFP3';
  EXCEPTION WHEN SQLSTATE 'CKFP3' THEN
    RETURN NULL;
  END;
END $$;

-- Fast paths 1 and 2 (see the top of this file), under the hierarchy's
-- lock, exclusive: try_acquire's granted, blocked or done reply, or NULL to
-- go on to the general path.
CREATE OR REPLACE FUNCTION @schema@.fast_path_free(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz,
  p_secret text, p_once_per_ms bigint, p_holder jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_resource text := p_resources[1];
  v_lo text := v_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := v_resource || '/';
  v_up text[] := array_prepend(v_resource, @schema@.ancestors(v_resource));
  v_key integer := @schema@.hierarchy_slot(p_namespace, split_part(v_resource, '.', 1));
  v_now timestamptz;
  v_token bigint;
  v_grant boolean := false;
  v_done jsonb;
  v_patience text;
BEGIN
  PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
  -- lock_hierarchies() for one resource, inline (-n waits 2 s at most).
  IF NOT p_queue THEN
    v_patience := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
  END IF;
  PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = v_key FOR NO KEY UPDATE;
  IF NOT p_queue THEN
    PERFORM set_config('lock_timeout', v_patience, true);
  END IF;
  v_now := clock_timestamp();  -- after the lock: see 20_acquire.sql
  -- Fast path 1: no related row at all but the caller's own queue entries.
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
     AND @schema@.may_queue_fast(p_namespace, v_resource, v_up, p_owner, p_request_id, v_now)
  THEN
    -- Fast path 2: queued behind whoever is in the way, or granted as in 1.
    v_done := @schema@.queue_behind(p_namespace, p_resources, v_up, p_owner, p_ttl_ms,
                                    p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                    p_started, v_now, p_secret);
    IF v_done IS NOT NULL THEN
      RETURN v_done;
    END IF;
    v_grant := true;
  END IF;
  IF v_grant AND p_once_per_ms IS NOT NULL THEN
    -- --once-per: is the period done? (skip_done_period)
    SELECT jsonb_build_object('resource', s.resource, 'owner', s.owner, 'host', s.host,
                              'token', s.token, 'started', @schema@.usec(s.started_at))
    INTO v_done
    FROM @schema@.last_success s
    WHERE s.namespace = p_namespace AND s.resource = v_resource
      AND s.started_at >= v_now - p_once_per_ms * interval '1 ms';
    IF v_done IS NOT NULL THEN
      RETURN @schema@.skip_done_period(v_done, p_namespace, p_resources, v_now, p_owner, p_mode,
                                       p_host, p_ip, p_pid, p_user, p_command);
    END IF;
  END IF;
  IF v_grant THEN
    WITH g AS (
      INSERT INTO @schema@.leases (namespace, resource, owner, mode, slots, token, depth,
                                   request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                   ip, pid, user_name, command, owner_started_at, secret_hash,
                                   holder_boot_id, holder_pid_ns, holder_pid_start, job_group,
                                   job_cgroup)
      VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, nextval('@schema@.tokens'), 1,
              p_request_id, v_now, v_now,
              CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END,
              p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
              coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started,
              @schema@.secret_hash(p_secret), p_holder->>'boot_id',
              (p_holder->>'pid_ns')::bigint, (p_holder->>'pid_start')::bigint,
              nullif((p_holder->>'job_group')::bigint, 0), nullif(p_holder->>'job_cgroup', ''))
      RETURNING *),
    h AS (
      INSERT INTO @schema@.history (at, event, namespace, resource, owner, mode, token,
                                    held_for, host, ip, pid, user_name, command, secret_hash)
      SELECT v_now, 'acquired', namespace, resource, owner, mode, token, NULL, host, ip, pid,
             user_name, command, secret_hash
      FROM g)
    SELECT token INTO v_token FROM g;
    -- A queued request's own entry goes with the grant, as in the general path.
    DELETE FROM @schema@.waiters
    WHERE namespace = p_namespace AND owner = p_owner AND resource = v_resource;
    RETURN jsonb_build_object('outcome', 'granted', 'now', @schema@.usec(v_now),
                              'grants', jsonb_build_array(jsonb_build_object(
                                'resource', v_resource, 'token', v_token, 'depth', 1)));
  END IF;
  RETURN NULL;
END $$;
