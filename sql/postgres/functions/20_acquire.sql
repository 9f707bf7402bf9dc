-- clock on PostgreSQL: taking locks. try_acquire() is one round
-- trip and one transaction; another program may call it (and release()) in
-- its own transaction to take a clock lock around its own writes.
--
-- Isolation: READ COMMITTED (the default) is enough and is assumed. Every
-- write to a resource hierarchy (namespace + first segment; related
-- resources always share it) happens while holding that hierarchy's lock: a
-- row lock on its slot of hierarchy_locks (lock_hierarchies, 10_util.sql;
-- migration 013), taken in slot order before anything is read. Under READ COMMITTED each statement of a PL/pgSQL
-- function takes a fresh snapshot, so once the lock is held, every read sees
-- all writes of the previous holder, which committed before releasing it:
-- the check for conflicting leases and the insert that follows cannot
-- interleave with another grant in the hierarchy. Why a row of its own:
-- before the first grant there is no lease row to lock, and a request
-- conflicts with rows on other keys (ancestors, descendants), so locks on
-- the leases cannot serialize check-then-insert; SERIALIZABLE could, but
-- fails with serialization errors the caller would have to retry. A row lock
-- needs no session state (it works through pgbouncer in transaction mode),
-- cannot outlive the transaction, and, unlike an advisory lock (which any
-- login may take, on a key anyone can compute), can be taken only by a role
-- that may update the table: none but the schema owner, so only through
-- these functions. Taking a request's locks in one order (by slot) means two
-- clock calls never deadlock; a
-- program that calls try_acquire twice in one transaction of its own can,
-- like with any two locks (PostgreSQL then aborts one of them).
-- One exception: try_acquire's fast path 3 enters a request in the queue
-- holding that lock in shared mode only, so that a herd's first attempts do
-- not take turns (each holds a connection while it waits for the lock). A
-- queue entry behind others cannot make anything grantable, and every grant,
-- release and departure still takes the lock exclusively, so each of them
-- sees either all or none of such an entry's writes: queue positions (drawn
-- from a sequence) still follow the order in which grants see entries.
-- gc (40_status_gc.sql) does not take these locks; it only deletes rows that are already
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
-- Settings of every operation function (here and in the other files): SECURITY DEFINER with
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
-- request never overtakes a live earlier entry (22_queue.sql). Deadlocks (a
-- cycle of owners each waiting for the next) are reported instead of queued
-- (23_deadlock.sql).
--
-- The acquire, in files: this one holds the entry point (try_acquire), its
-- general path (acquire_general) and the general path's re-entry check and
-- grant (reentry_refused, grant_all); 21_decide.sql whether a request can be
-- granted now (conflicts, slots, hierarchy); 22_queue.sql the FIFO queue
-- entry, its lifetime and its leaving; 23_deadlock.sql the deadlock search;
-- 24_fast_paths.sql the shortcuts try_acquire takes for one resource.

-- One attempt at taking every resource of a request, all or none. Returns
-- {"outcome": "granted", "grants": [{resource, token, depth}…]} (request
-- order), {"outcome": "blocked", "leases": […], "waiters": […]} (who is in
-- the way), {"outcome": "deadlock", "cycle": [the links of
-- find_cycle_links]}, or, refused by the lock model, {"outcome": "slots_mismatch" | "upgrade", "resource", "slots",
-- "other_slots"}; each with "now", the server's clock in microseconds.
-- p_ttl_ms = 0: the lease never expires. p_request_id: a fresh id per
-- acquire; a retried call with the same id returns the grant it made.
-- p_once_per_ms: --once-per D, NULL for none; a request that would be granted
-- when its period is done gets skip_done_period()'s {"outcome": "done"}.
-- p_secret: the owner's secret; a new lease or queue entry keeps only its
-- hash (secret_hash()). When the id's rows keep another hash
-- (owner_refuses()), nothing is granted, queued or refreshed: the reply is
-- {"outcome": "not_proven", "resource"}, recorded as 'refused' with p_by.
-- p_holder: clock run's trace (70_dead_holder.sql), {"boot_id", "pid_ns",
-- "pid_start", "job_group", "job_cgroup"}, written on each lease the grant
-- inserts (a re-entered lease keeps its own); NULL for none.
--
-- It composes the pieces: the owner's proof, then, for a request of one
-- resource, the fast paths (24_fast_paths.sql), each of which answers or
-- writes nothing, then the general path (acquire_general, below).
CREATE OR REPLACE FUNCTION @schema@.try_acquire(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz,
  p_record_refusal boolean, p_secret text, p_by text, p_once_per_ms bigint DEFAULT NULL,
  p_holder jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_reply jsonb;
  v_entered boolean := false;  -- fast path 0 found the caller's live queue entry
  v_up text[];                 -- a single resource and its ancestors
BEGIN
  PERFORM @schema@.check_bounds(p_resources, p_host, p_ip, p_user, p_command, p_by);
  IF p_holder IS NOT NULL AND NOT coalesce(
       jsonb_typeof(p_holder->'boot_id') = 'string' AND octet_length(p_holder->>'boot_id') <= 64
       AND jsonb_typeof(p_holder->'pid_ns') = 'number'
       AND jsonb_typeof(p_holder->'pid_start') = 'number'
       AND (p_holder->>'pid_start')::numeric >= 0
       AND jsonb_typeof(p_holder->'job_group') = 'number'
       AND jsonb_typeof(p_holder->'job_cgroup') = 'string'
       AND octet_length(p_holder->>'job_cgroup') <= 4096, false) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'try_acquire: invalid holder trace (boot id up to 64 bytes, pid namespace, '
                'start time, job group, cgroup up to 4096 bytes)';
  END IF;
  -- The owner's proof first: an id bound to another secret (owner_refuses)
  -- is granted nothing, queued nowhere and keeps its queue entries; the
  -- refusal is recorded with who asked.
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    PERFORM @schema@.check_names(p_namespace, p_resources);
    v_now := clock_timestamp();
    PERFORM @schema@.record_refused(v_now, p_namespace, p_resources, p_owner, p_mode, p_host,
                                    p_ip, p_pid, p_user, p_command, p_by);
    RETURN jsonb_build_object('outcome', 'not_proven', 'now', @schema@.usec(v_now),
                              'resource', p_resources[1]);
  END IF;
  -- The fast paths take only arguments check_names() and the general path
  -- would accept; anything else goes there to be refused with their message.
  IF cardinality(p_resources) = 1 AND @schema@.is_resource_name(p_resources[1])
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_mode IN ('exclusive', 'shared') AND p_slots >= 0 AND p_ttl_ms >= 0
     AND p_owner IS NOT NULL AND coalesce(p_request_id, '') <> '' AND p_queue IS NOT NULL THEN
    v_up := array_prepend(p_resources[1], @schema@.ancestors(p_resources[1]));
    -- Fast paths 0 and 3 answer only when another owner's related lease or
    -- queue entry exists (read without a lock): on a free resource, the
    -- usual first attempt, neither is run (nor compiled, on a new backend).
    IF p_queue AND p_mode = 'exclusive' AND p_slots = 0
       AND (EXISTS (SELECT 1 FROM @schema@.leases
                    WHERE namespace = p_namespace AND owner <> p_owner
                      AND (resource = ANY (v_up)
                           OR (resource > p_resources[1] || '.'
                               AND resource < p_resources[1] || '/')))
            OR EXISTS (SELECT 1 FROM @schema@.waiters
                       WHERE namespace = p_namespace AND owner <> p_owner
                         AND (resource = ANY (v_up)
                              OR (resource > p_resources[1] || '.'
                                  AND resource < p_resources[1] || '/')))) THEN
      SELECT * INTO v_reply, v_entered
      FROM @schema@.fast_path_waiting(p_namespace, p_resources[1], p_owner, p_ttl_ms,
                                      p_request_id);
      IF v_reply IS NOT NULL THEN
        RETURN v_reply;
      END IF;
      IF NOT v_entered THEN
        v_reply := @schema@.fast_path_herd(p_namespace, p_resources, p_owner, p_ttl_ms,
                                           p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                           p_started, p_secret);
        IF v_reply IS NOT NULL THEN
          RETURN v_reply;
        END IF;
      END IF;
    END IF;
    v_reply := @schema@.fast_path_free(p_namespace, p_resources, p_mode, p_slots, p_owner,
                                       p_ttl_ms, p_request_id, p_queue, p_host, p_ip, p_pid,
                                       p_user, p_command, p_started, p_secret, p_once_per_ms,
                                       p_holder);
    IF v_reply IS NOT NULL THEN
      RETURN v_reply;
    END IF;
  END IF;
  RETURN @schema@.acquire_general(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                  p_request_id, p_queue, p_host, p_ip, p_pid, p_user, p_command,
                                  p_started, p_record_refusal, p_secret, p_by, p_once_per_ms,
                                  p_holder);
END $$;

-- The general path of try_acquire (same arguments and replies), for any
-- request: under its hierarchy locks, each resource's expired related
-- leases are removed and its verdict taken (decide_all(), 21_decide.sql); a
-- blocked request is searched for a deadlock (search_deadlock(),
-- 23_deadlock.sql) and otherwise queued or, with -n, recorded as skipped
-- (queue_blocked(), 22_queue.sql); a grantable one is checked for the
-- owner's proof on re-entry (reentry_refused()) and for a done --once-per
-- period, then granted, all or none (grant_all()).
CREATE OR REPLACE FUNCTION @schema@.acquire_general(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz,
  p_record_refusal boolean, p_secret text, p_by text, p_once_per_ms bigint, p_holder jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
  d record;
  v_cycle jsonb;
  v_refused jsonb;
  v_done jsonb;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF p_mode IS NULL OR p_mode NOT IN ('exclusive', 'shared') OR p_slots IS NULL OR p_slots < 0
     OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_owner IS NULL OR coalesce(p_request_id, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'try_acquire: invalid mode, slots, ttl, owner or request id';
  END IF;
  PERFORM @schema@.commit_durably();
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources, p_queue);
  v_now := clock_timestamp();  -- after the locks: see the header
  SELECT * INTO d FROM @schema@.decide_all(p_namespace, p_resources, p_mode, p_slots, p_owner,
                                           p_request_id, v_now);
  IF d.refusal IS NOT NULL THEN
    RETURN d.refusal;
  END IF;

  IF cardinality(d.blockers) > 0 THEN
    v_cycle := @schema@.search_deadlock(p_owner, p_request_id, p_host, d.blockers, d.blocked_on,
                                        d.blocker_hosts, v_now);
    IF v_cycle IS NOT NULL THEN
      -- Not queued, and out of the queue: the others can proceed.
      DELETE FROM @schema@.waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
      IF FOUND THEN PERFORM @schema@.notify_change(); END IF;
      RETURN jsonb_build_object('outcome', 'deadlock', 'now', @schema@.usec(v_now),
                                'cycle', v_cycle);
    END IF;
    RETURN @schema@.queue_blocked(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                  p_request_id, p_queue, p_host, p_ip, p_pid, p_user, p_command,
                                  p_started, p_record_refusal, p_secret, d.blocking_leases,
                                  d.blocking_waiters, v_now);
  END IF;

  v_refused := @schema@.reentry_refused(p_namespace, p_resources, d.verdicts, p_owner, p_secret,
                                        p_by, v_now);
  IF v_refused IS NOT NULL THEN
    RETURN v_refused;
  END IF;

  -- --once-per, decided here, under the hierarchy locks that release() holds
  -- while it records a success: a request granted after the run that did
  -- the period finds it. A retry of a grant that took effect is not a new run.
  IF p_once_per_ms IS NOT NULL AND NOT ('again' = ANY (d.verdicts)) THEN
    v_done := @schema@.period_done(p_namespace, p_resources, p_once_per_ms, v_now);
    IF v_done IS NOT NULL THEN
      RETURN @schema@.skip_done_period(v_done, p_namespace, p_resources, v_now, p_owner, p_mode,
                                       p_host, p_ip, p_pid, p_user, p_command);
    END IF;
  END IF;
  RETURN @schema@.grant_all(p_namespace, p_resources, d.verdicts, p_mode, p_slots, p_owner,
                            p_ttl_ms, p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                            p_started, p_secret, p_holder, v_now);
END $$;

-- Re-entering joins a lease: only its owner may, proven by the secret. Of
-- the resources whose verdict (p_verdicts, as decide_all() gives them) is
-- 'reenter', the first whose lease p_secret does not prove is recorded as
-- 'refused' with p_by and named in try_acquire's not_proven reply; NULL
-- when the secret proves them all.
CREATE OR REPLACE FUNCTION @schema@.reentry_refused(
  p_namespace text, p_resources text[], p_verdicts text[], p_owner uuid, p_secret text,
  p_by text, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  l @schema@.leases;
BEGIN
  FOR i IN 1 .. cardinality(p_resources) LOOP
    CONTINUE WHEN p_verdicts[i] <> 'reenter';
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner;
    -- Not implied by the owner's proof: that ran before the hierarchy lock,
    -- and another caller naming the same owner id with another secret may
    -- have committed this lease since (SQLite, serialised, needs no check).
    IF NOT @schema@.proves(l.secret_hash, p_secret) THEN
      PERFORM @schema@.record_event('refused', p_now, l, NULL, coalesce(p_by, ''));
      RETURN jsonb_build_object('outcome', 'not_proven', 'now', @schema@.usec(p_now),
                                'resource', p_resources[i]);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- The grant of a request that nothing is in the way of, all or none, by
-- each resource's verdict (p_verdicts): 'again' (a retry) returns the lease
-- it made, 'reenter' deepens the owner's lease, 'grant' inserts a new one
-- (recorded 'acquired') with the next token and p_holder's trace. The
-- request leaves the queue.
-- Returns try_acquire's granted reply, its grants in request order.
CREATE OR REPLACE FUNCTION @schema@.grant_all(
  p_namespace text, p_resources text[], p_verdicts text[], p_mode text, p_slots integer,
  p_owner uuid, p_ttl_ms bigint, p_request_id text, p_host text, p_ip text, p_pid bigint,
  p_user text, p_command text, p_started timestamptz, p_secret text, p_holder jsonb,
  p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_expires timestamptz := CASE WHEN p_ttl_ms = 0 THEN NULL
                                ELSE p_now + p_ttl_ms * interval '1 ms' END;
  v_grants jsonb := '[]';
  l @schema@.leases;
BEGIN
  FOR i IN 1 .. cardinality(p_resources) LOOP
    IF p_verdicts[i] = 'again' THEN
      SELECT * INTO l FROM @schema@.leases
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner;
    ELSIF p_verdicts[i] = 'reenter' THEN
      -- The longer of the two leases wins; no expiry beats any expiry.
      UPDATE @schema@.leases
      SET depth = depth + 1, request_id = p_request_id, renewed_at = p_now,
          expires_at = CASE WHEN expires_at IS NULL OR v_expires IS NULL THEN NULL
                            ELSE greatest(expires_at, v_expires) END
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
      RETURNING * INTO l;
    ELSE
      INSERT INTO @schema@.leases (namespace, resource, owner, mode, slots, token, depth,
                                   request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                   ip, pid, user_name, command, owner_started_at, secret_hash,
                                   holder_boot_id, holder_pid_ns, holder_pid_start, job_group,
                                   job_cgroup)
      VALUES (p_namespace, p_resources[i], p_owner, p_mode, p_slots,
              nextval('@schema@.tokens'), 1, p_request_id, p_now, p_now, v_expires,
              p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
              coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started,
              @schema@.secret_hash(p_secret), p_holder->>'boot_id',
              (p_holder->>'pid_ns')::bigint, (p_holder->>'pid_start')::bigint,
              nullif((p_holder->>'job_group')::bigint, 0), nullif(p_holder->>'job_cgroup', ''))
      RETURNING * INTO l;
      PERFORM @schema@.record_event('acquired', p_now, l, NULL);
    END IF;
    v_grants := v_grants || jsonb_build_object('resource', l.resource, 'token', l.token,
                                               'depth', l.depth);
  END LOOP;
  DELETE FROM @schema@.waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
  RETURN jsonb_build_object('outcome', 'granted', 'now', @schema@.usec(p_now), 'grants', v_grants);
END $$;

-- --once-per D: the latest successful run (last_success) of one of
-- p_resources granted at or after p_now - D (at the boundary it still
-- counts), as {resource, owner, host, token, started}; of several resources
-- done, the first in request (canonical, byte) order. NULL when the period
-- is not done.
CREATE OR REPLACE FUNCTION @schema@.period_done(p_namespace text, p_resources text[],
                                                p_once_per_ms bigint, p_now timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('resource', s.resource, 'owner', s.owner, 'host', s.host,
                            'token', s.token, 'started', @schema@.usec(s.started_at))
  FROM @schema@.last_success s
  WHERE s.namespace = p_namespace AND s.resource = ANY (p_resources)
    AND s.started_at >= p_now - p_once_per_ms * interval '1 ms'
  ORDER BY s.resource LIMIT 1
$$;

-- --once-per D: a request that would be granted finds its period done when
-- the latest successful run (last_success) of one of its resources was
-- granted at or after now - D on the database's clock (at the boundary it
-- still counts); try_acquire() looks, under the hierarchy locks
-- (period_done()). Then this records the request as skipped naming
-- that run (p_done: {resource, owner, host, token, started}), takes it out
-- of the queue (waking those it was ahead of) and returns try_acquire's
-- reply {"outcome": "done", "done_by": p_done}.
CREATE OR REPLACE FUNCTION @schema@.skip_done_period(
  p_done jsonb, p_namespace text, p_resources text[], p_now timestamptz, p_owner uuid,
  p_mode text, p_host text, p_ip text, p_pid bigint, p_user text, p_command text)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM @schema@.record_missed('skipped', p_now, p_namespace, p_resources, p_owner, p_mode,
                                 p_host, p_ip, p_pid, p_user, p_command, p_done);
  DELETE FROM @schema@.waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
  IF FOUND THEN
    PERFORM @schema@.notify_heads(p_namespace, p_resources, p_now);
  END IF;
  RETURN jsonb_build_object('outcome', 'done', 'now', @schema@.usec(p_now), 'done_by', p_done);
END $$;

-- Records a run that did not happen (timed_out after -w, killed at its
-- runtime limit, skipped by -n where try_acquire was rolled back: see
-- lock_hierarchies) for each resource of its request: store::record_missed_run.
-- p_in_the_way: {"owner", "host", "token"} of who held or awaited the lock,
-- or NULL. Returns the number of records: 0 when p_secret does not prove
-- the owner (owner_refuses()), which is recorded as 'refused' instead.
CREATE OR REPLACE FUNCTION @schema@.record_missed_run(
  p_event text, p_namespace text, p_resources text[], p_owner uuid, p_mode text,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_in_the_way jsonb,
  p_secret text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
  IF p_event NOT IN ('timed_out', 'killed', 'skipped') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'record_missed_run: the event is timed_out, killed or skipped, not ' || p_event;
  END IF;
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, p_host, p_ip, p_user, p_command, NULL);
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    PERFORM @schema@.record_refused(clock_timestamp(), p_namespace, p_resources, p_owner, p_mode,
                                    p_host, p_ip, p_pid, p_user, p_command, '');
    RETURN 0;
  END IF;
  PERFORM @schema@.record_missed(p_event, clock_timestamp(), p_namespace, p_resources, p_owner,
                                 p_mode, p_host, p_ip, p_pid, p_user, p_command, p_in_the_way);
  RETURN cardinality(p_resources);
END $$;
