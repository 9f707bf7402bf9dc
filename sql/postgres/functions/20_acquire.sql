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
-- request never overtakes a live earlier entry. Deadlocks (a cycle of owners
-- each waiting for the next) are reported instead of queued.

-- The verdict for one resource, as lock::decide() in src/lock/conflict.cpp
-- gives it: 'again' (this request_id already holds it: a retry), 'reenter',
-- 'grant', 'blocked', 'slots_mismatch' or 'upgrade'. Expired related leases
-- must have been removed before (expire_related). blockers[i] is the owner of
-- the i-th lease or waiter in the way, blocked_on[i] its resource.
CREATE OR REPLACE FUNCTION @schema@.decide(
  p_namespace text, p_resource text, p_mode text, p_slots integer, p_owner uuid,
  p_request_id text, p_now timestamptz,
  OUT verdict text, OUT other_slots integer, OUT blocking_leases jsonb,
  OUT blocking_waiters jsonb, OUT blockers uuid[], OUT blocked_on text[],
  OUT blocker_hosts text[])
LANGUAGE plpgsql AS $$
DECLARE
  v_up text[] := array_prepend(p_resource, @schema@.ancestors(p_resource));
  v_lo text := p_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := p_resource || '/';
  l @schema@.leases;
  w @schema@.waiters;
  v_holders @schema@.leases[] := '{}';  -- other owners' slots of this very semaphore
  v_mine bigint;
  v_queued integer := 0;
BEGIN
  verdict := 'grant'; other_slots := 0; blocking_leases := '[]'; blocking_waiters := '[]';
  blockers := '{}'; blocked_on := '{}'; blocker_hosts := '{}';
  SELECT * INTO l FROM @schema@.leases
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
  FOR l IN SELECT * FROM @schema@.leases
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
      blocking_leases := blocking_leases || @schema@.lease_json(l, p_now);
      blockers := blockers || l.owner; blocked_on := blocked_on || l.resource;
      blocker_hosts := blocker_hosts || l.host;
    END IF;
  END LOOP;
  IF p_slots > 0 AND cardinality(v_holders) >= p_slots THEN
    FOREACH l IN ARRAY v_holders LOOP
      blocking_leases := blocking_leases || @schema@.lease_json(l, p_now);
      blockers := blockers || l.owner; blocked_on := blocked_on || l.resource;
      blocker_hosts := blocker_hosts || l.host;
    END LOOP;
  END IF;
  -- Earlier live waiters of other owners; our own entry counts only while live.
  SELECT position INTO v_mine FROM @schema@.waiters
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND expires_at > p_now;
  FOR w IN SELECT * FROM @schema@.waiters
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
    blocking_waiters := blocking_waiters || @schema@.waiter_json(w);
    blockers := blockers || w.owner; blocked_on := blocked_on || w.resource;
    blocker_hosts := blocker_hosts || w.host;
  END LOOP;
  IF cardinality(blockers) > 0 THEN
    verdict := 'blocked';
  END IF;
END $$;

-- Removes the expired leases related to one resource (record_expired).
-- Returns how many.
CREATE OR REPLACE FUNCTION @schema@.expire_related(p_namespace text, p_resource text, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_up text[] := array_prepend(p_resource, @schema@.ancestors(p_resource));
  v_gone @schema@.leases[];
BEGIN
  WITH gone AS (
    DELETE FROM @schema@.leases
    WHERE namespace = p_namespace AND expires_at <= p_now
      AND (resource = ANY (v_up) OR (resource > p_resource || '.' AND resource < p_resource || '/'))
    RETURNING *)
  SELECT array_agg(gone::@schema@.leases) INTO v_gone FROM gone;
  RETURN @schema@.record_expired(v_gone);
END $$;

-- "Waits for" edges out of a set of owners: an owner with a live queue entry
-- waits for every other owner holding a live conflicting lease on a related
-- resource (for a semaphore: only when it is full), and for every owner with
-- an earlier live conflicting entry (FIFO: it cannot overtake them).
CREATE OR REPLACE FUNCTION @schema@.waits_for(p_owners uuid[], p_now timestamptz)
RETURNS TABLE (from_owner uuid, to_owner uuid, resource text, to_host text)
LANGUAGE sql STABLE AS $$
  -- Related rows are found per queue entry by primary-key lookups (the entry
  -- and its ancestors) and range scans (its descendants), never by a join
  -- condition the planner could only evaluate row by row.
  SELECT w.owner, l.owner, l.resource, l.host
  FROM @schema@.waiters w
  CROSS JOIN LATERAL (
    SELECT * FROM @schema@.leases
    WHERE namespace = w.namespace
      AND resource = ANY (array_prepend(w.resource, @schema@.ancestors(w.resource)))
    UNION ALL
    SELECT * FROM @schema@.leases
    WHERE namespace = w.namespace
      AND resource > w.resource || '.' AND resource < w.resource || '/') AS l
  WHERE w.owner = ANY (p_owners) AND w.expires_at > p_now AND l.owner <> w.owner
    AND (l.expires_at IS NULL OR l.expires_at > p_now)
    AND NOT (w.mode = 'shared' AND l.mode = 'shared')
    AND NOT (w.slots > 0 AND l.slots > 0 AND w.resource = l.resource
             AND (SELECT count(*) FROM @schema@.leases h
                  WHERE h.namespace = l.namespace AND h.resource = l.resource
                    AND h.owner <> w.owner AND (h.expires_at IS NULL OR h.expires_at > p_now))
                 < w.slots)
  UNION
  SELECT w.owner, e.owner, e.resource, e.host
  FROM @schema@.waiters w
  CROSS JOIN LATERAL (
    SELECT * FROM @schema@.waiters
    WHERE namespace = w.namespace
      AND resource = ANY (array_prepend(w.resource, @schema@.ancestors(w.resource)))
    UNION ALL
    SELECT * FROM @schema@.waiters
    WHERE namespace = w.namespace
      AND resource > w.resource || '.' AND resource < w.resource || '/') AS e
  WHERE w.owner = ANY (p_owners) AND w.expires_at > p_now AND e.expires_at > p_now
    AND e.owner <> w.owner AND e.position < w.position
    AND NOT (w.mode = 'shared' AND e.mode = 'shared')
    AND NOT (w.slots > 0 AND e.slots > 0 AND w.resource = e.resource)
$$;

-- Breadth-first search along waits_for from the owners in our way. Reaching
-- the requesting owner closes a cycle: returns it as links
-- [{"owner", "host", "resource"}…], the requester first, where each owner
-- waits for the resource, held or queued for by the next link's owner (the
-- last one's by the requester): store::describe(Cycle) words it. NULL if
-- there is none. Reads rows of other hierarchies without locking them: a
-- cycle closed by two requests at the same instant is found by the next
-- attempt of either.
CREATE OR REPLACE FUNCTION @schema@.find_cycle_links(p_owner uuid, p_host text, p_blockers uuid[],
                                    p_blocked_on text[], p_hosts text[], p_now timestamptz)
RETURNS jsonb
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
  v_links jsonb;
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
    FOR e IN SELECT * FROM @schema@.waits_for(v_nodes[v_first:v_last], p_now)
             ORDER BY from_owner, to_owner, resource
    LOOP
      IF e.to_owner = p_owner THEN
        -- From the last link back to the requester's, along the parents.
        i := array_position(v_nodes, e.from_owner);
        v_links := jsonb_build_array(jsonb_build_object(
          'owner', v_nodes[i], 'host', coalesce(v_hosts[i], ''), 'resource', e.resource));
        WHILE i > 0 LOOP
          v_links := jsonb_build_array(jsonb_build_object(
            'owner', CASE WHEN v_parent[i] = 0 THEN p_owner ELSE v_nodes[v_parent[i]] END,
            'host', coalesce(CASE WHEN v_parent[i] = 0 THEN p_host ELSE v_hosts[v_parent[i]] END,
                             ''),
            'resource', v_via[i])) || v_links;
          i := v_parent[i];
        END LOOP;
        RETURN v_links;
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
CREATE OR REPLACE FUNCTION @schema@.enqueue(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_host text, p_ip text, p_pid bigint, p_user text,
  p_command text, p_started timestamptz, p_now timestamptz, p_secret text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_life interval := CASE WHEN p_ttl_ms = 0 THEN interval '30 s'
                          ELSE least(greatest(p_ttl_ms * interval '1 ms', interval '1 s'),
                                     interval '30 s') END;
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

-- --once-per D: a request that would be granted finds its period done when
-- the latest successful run (last_success) of one of its resources was
-- granted at or after now - D on the database's clock (at the boundary it
-- still counts); try_acquire() looks, under the hierarchy locks, in one
-- statement of its own. Then this records the request as skipped naming
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
-- after 64 rows or at the first row.
CREATE OR REPLACE FUNCTION @schema@.in_the_way(
  p_namespace text, p_resource text, p_up text[], p_owner uuid, p_mine bigint,
  p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
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
--
-- Two fast paths come first, for one resource, each answering as the general
-- path below would with the same rows, in four statements instead of some
-- forty (a new backend plans every statement it runs: tests/bench):
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
-- queue). Anything else, or nothing in the way,
-- goes on to the fast paths below.
-- 3. The first attempt (no live entry of the caller's yet) of the request
--    of fast path 2, when a related lease or queue entry of another owner
--    exists (read without a lock): under the hierarchy lock in shared mode
--    (see the top of this file), taken in a subtransaction, it answers as
--    fast path 2 when something is in the way; otherwise the subtransaction
--    is rolled back, which releases the shared lock, and the request goes on
--    to fast paths 1 and 2 under the exclusive lock. A herd's first attempts
--    on a busy resource so enter the queue side by side and return at once
--    (and their processes close their connections), instead of each waiting
--    its turn for the exclusive lock.
-- Anything else (shared, a semaphore, -n, several resources, re-entry, an
-- expired lease to record, arguments to refuse) goes on to the general path,
-- which re-takes the same row lock (a transaction may lock its own row again)
-- and finds the table as the fast paths left it: unchanged.
CREATE OR REPLACE FUNCTION @schema@.try_acquire(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_ttl_ms bigint, p_request_id text, p_queue boolean,
  p_host text, p_ip text, p_pid bigint, p_user text, p_command text, p_started timestamptz,
  p_record_refusal boolean, p_secret text, p_by text, p_once_per_ms bigint DEFAULT NULL)
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
  v_key integer;
  v_up text[];
  v_now timestamptz;
  v_token bigint;
  v_grant boolean := false;
  v_mine bigint;
  v_leases jsonb := '[]';  -- set by fast path 2 only when it returns
  v_waiters jsonb := '[]';
  v_expires timestamptz;
  d record;
  v_verdicts text[] := '{}';
  v_blockers uuid[] := '{}';
  v_blocked_on text[] := '{}';
  v_hosts text[] := '{}';
  v_expired integer := 0;
  v_cycle jsonb;
  v_grants jsonb := '[]';
  v_done jsonb;
  v_way jsonb;  -- fast path 0: in_the_way()
  v_entered boolean := false;  -- fast path 0 found the caller's live queue entry
  v_life interval := CASE WHEN p_ttl_ms IS NULL OR p_ttl_ms = 0 THEN interval '30 s'
                          ELSE least(greatest(p_ttl_ms * interval '1 ms', interval '1 s'),
                                     interval '30 s') END;
  l @schema@.leases;
BEGIN
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
  IF cardinality(p_resources) = 1 AND v_resource IS NOT NULL
     AND octet_length(v_resource) <= 255
     AND v_resource ~ '^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$'
     AND p_namespace IS NOT NULL AND octet_length(p_namespace) <= 255
     AND p_mode IN ('exclusive', 'shared') AND p_slots >= 0 AND p_ttl_ms >= 0
     AND p_owner IS NOT NULL AND coalesce(p_request_id, '') <> '' AND p_queue IS NOT NULL THEN
    v_up := array_prepend(v_resource, @schema@.ancestors(v_resource));
    IF p_queue AND p_mode = 'exclusive' AND p_slots = 0 THEN
      -- Fast path 0, before any lock: see the header.
      v_now := clock_timestamp();
      SELECT position INTO v_mine FROM @schema@.waiters
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
        AND request_id = p_request_id AND expires_at > v_now;
      IF v_mine IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                         WHERE namespace = p_namespace AND resource = v_resource
                           AND owner = p_owner)
         AND NOT EXISTS (SELECT 1 FROM @schema@.leases
                         WHERE namespace = p_namespace AND expires_at <= v_now
                           AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi)))
      THEN
        v_way := @schema@.in_the_way(p_namespace, v_resource, v_up, p_owner, v_mine, v_now);
        IF v_way -> 'leases' <> '[]' OR (v_way ->> 'ahead')::integer > 0 THEN
          -- The refresh enqueue() would make: only this owner's row, only
          -- once half its lifetime is gone.
          UPDATE @schema@.waiters SET expires_at = v_now + v_life
          WHERE position = v_mine AND expires_at < v_now + v_life / 2;
          RETURN v_way || jsonb_build_object('outcome', 'blocked', 'now', @schema@.usec(v_now),
                                             'mine', v_mine);
        END IF;
      END IF;
      v_entered := v_mine IS NOT NULL;
      v_mine := NULL; v_leases := '[]'; v_waiters := '[]';
    END IF;
    v_key := @schema@.hierarchy_slot(p_namespace, split_part(v_resource, '.', 1));
    IF p_queue AND p_mode = 'exclusive' AND p_slots = 0 AND NOT v_entered
       AND (EXISTS (SELECT 1 FROM @schema@.leases
                    WHERE namespace = p_namespace AND owner <> p_owner
                      AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi)))
            OR EXISTS (SELECT 1 FROM @schema@.waiters
                       WHERE namespace = p_namespace AND owner <> p_owner
                         AND (resource = ANY (v_up) OR (resource > v_lo AND resource < v_hi))))
    THEN
      -- Fast path 3: see the header. The subtransaction holds the shared
      -- lock; rolling it back (nothing in the way after all) releases it.
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
        v_done := NULL;
      END;
    END IF;
    PERFORM @schema@.commit_durably();  -- see Durability in 20_acquire.sql
    -- lock_hierarchies() for one resource, inline.
    IF p_queue THEN
      PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = v_key FOR NO KEY UPDATE;
    ELSE
      PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = v_key FOR NO KEY UPDATE NOWAIT;
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
                                     ip, pid, user_name, command, owner_started_at, secret_hash)
        VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, nextval('@schema@.tokens'), 1,
                p_request_id, v_now, v_now,
                CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END,
                p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
                coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started,
                @schema@.secret_hash(p_secret))
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
  END IF;
  -- The general path.
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF p_mode IS NULL OR p_mode NOT IN ('exclusive', 'shared') OR p_slots IS NULL OR p_slots < 0
     OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_owner IS NULL OR coalesce(p_request_id, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'try_acquire: invalid mode, slots, ttl, owner or request id';
  END IF;
  PERFORM @schema@.commit_durably();
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources, p_queue);
  v_now := clock_timestamp();  -- after the locks: see the header
  v_expires := CASE WHEN p_ttl_ms = 0 THEN NULL ELSE v_now + p_ttl_ms * interval '1 ms' END;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_expired := v_expired + @schema@.expire_related(p_namespace, p_resources[i], v_now);
    SELECT * INTO d FROM @schema@.decide(p_namespace, p_resources[i], p_mode, p_slots, p_owner,
                                         p_request_id, v_now);
    IF d.verdict IN ('slots_mismatch', 'upgrade') THEN
      IF v_expired > 0 THEN PERFORM @schema@.notify_change(); END IF;
      RETURN jsonb_build_object('outcome', d.verdict, 'now', @schema@.usec(v_now),
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
  IF v_expired > 0 THEN PERFORM @schema@.notify_change(); END IF;

  -- Deadlock search only where a cycle can close: the first blocked attempt
  -- of a request (a cycle formed later is closed, and found, by the request
  -- that forms it), by an owner that others can be waiting for (it holds a
  -- live lease or queue entry). Re-attempts of a queued request skip it, so
  -- many waiters polling cost little under the hierarchy lock.
  IF cardinality(v_blockers) > 0
     AND NOT EXISTS (SELECT 1 FROM @schema@.waiters
                     WHERE owner = p_owner AND request_id = p_request_id
                       AND expires_at > v_now)
     AND (EXISTS (SELECT 1 FROM @schema@.leases
                  WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > v_now))
          OR EXISTS (SELECT 1 FROM @schema@.waiters
                     WHERE owner = p_owner AND expires_at > v_now)) THEN
    -- Two owners asking for each other's locks at the same moment hold
    -- different hierarchy locks, so each could search before the other's
    -- queue entry is committed and neither would see the cycle. Searches (and
    -- the enqueue that follows, until commit) take turns under one lock; the
    -- statements after it see every earlier searcher's committed entry.
    PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = -1 FOR NO KEY UPDATE;
    v_cycle := @schema@.find_cycle_links(p_owner, p_host, v_blockers, v_blocked_on, v_hosts, v_now);
  END IF;
  IF cardinality(v_blockers) > 0 THEN
    IF v_cycle IS NOT NULL THEN
      -- Not queued, and out of the queue: the others can proceed.
      DELETE FROM @schema@.waiters
      WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
      IF FOUND THEN PERFORM @schema@.notify_change(); END IF;
      RETURN jsonb_build_object('outcome', 'deadlock', 'now', @schema@.usec(v_now),
                                'cycle', v_cycle);
    END IF;
    IF p_queue THEN
      PERFORM @schema@.enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                               p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started,
                               v_now, p_secret);
    ELSIF p_record_refusal THEN
      PERFORM @schema@.record_missed('skipped', v_now, p_namespace, p_resources, p_owner, p_mode,
                                     p_host, p_ip, p_pid, p_user, p_command,
                                     @schema@.first_in_the_way(v_leases, v_waiters));
    END IF;
    RETURN jsonb_build_object(
      'outcome', 'blocked', 'now', @schema@.usec(v_now),
      'leases', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'token')::bigint), '[]')
                 FROM (SELECT DISTINCT x FROM jsonb_array_elements(v_leases) AS x) AS s),
      'waiters', (SELECT coalesce(jsonb_agg(x ORDER BY (x ->> 'position')::bigint), '[]')
                  FROM (SELECT DISTINCT x FROM jsonb_array_elements(v_waiters) AS x) AS s));
  END IF;

  -- Re-entering joins a lease: only its owner may, proven by the secret.
  FOR i IN 1 .. cardinality(p_resources) LOOP
    CONTINUE WHEN v_verdicts[i] <> 'reenter';
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner;
    IF NOT @schema@.proves(l.secret_hash, p_secret) THEN
      PERFORM @schema@.record_event('refused', v_now, l, NULL, coalesce(p_by, ''));
      RETURN jsonb_build_object('outcome', 'not_proven', 'now', @schema@.usec(v_now),
                                'resource', p_resources[i]);
    END IF;
  END LOOP;

  -- --once-per, decided here, under the hierarchy locks that release() holds
  -- while it records a success: a request granted after the run that did
  -- the period finds it. A retry of a grant that took effect is not a new run.
  -- Of several resources done, the first in request (canonical, byte) order.
  IF p_once_per_ms IS NOT NULL AND NOT ('again' = ANY (v_verdicts)) THEN
    SELECT jsonb_build_object('resource', s.resource, 'owner', s.owner, 'host', s.host,
                              'token', s.token, 'started', @schema@.usec(s.started_at))
    INTO v_done
    FROM @schema@.last_success s
    WHERE s.namespace = p_namespace AND s.resource = ANY (p_resources)
      AND s.started_at >= v_now - p_once_per_ms * interval '1 ms'
    ORDER BY s.resource LIMIT 1;
    IF v_done IS NOT NULL THEN
      RETURN @schema@.skip_done_period(v_done, p_namespace, p_resources, v_now, p_owner, p_mode,
                                       p_host, p_ip, p_pid, p_user, p_command);
    END IF;
  END IF;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    IF v_verdicts[i] = 'again' THEN
      SELECT * INTO l FROM @schema@.leases
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner;
    ELSIF v_verdicts[i] = 'reenter' THEN
      -- The longer of the two leases wins; no expiry beats any expiry.
      UPDATE @schema@.leases
      SET depth = depth + 1, request_id = p_request_id, renewed_at = v_now,
          expires_at = CASE WHEN expires_at IS NULL OR v_expires IS NULL THEN NULL
                            ELSE greatest(expires_at, v_expires) END
      WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
      RETURNING * INTO l;
    ELSE
      INSERT INTO @schema@.leases (namespace, resource, owner, mode, slots, token, depth,
                                   request_id, acquired_at, renewed_at, expires_at, ttl, host,
                                   ip, pid, user_name, command, owner_started_at, secret_hash)
      VALUES (p_namespace, p_resources[i], p_owner, p_mode, p_slots,
              nextval('@schema@.tokens'), 1, p_request_id, v_now, v_now, v_expires,
              p_ttl_ms * interval '1 ms', coalesce(p_host, ''), coalesce(p_ip, ''),
              coalesce(p_pid, 0), coalesce(p_user, ''), coalesce(p_command, ''), p_started,
              @schema@.secret_hash(p_secret))
      RETURNING * INTO l;
      PERFORM @schema@.record_event('acquired', v_now, l, NULL);
    END IF;
    v_grants := v_grants || jsonb_build_object('resource', l.resource, 'token', l.token,
                                               'depth', l.depth);
  END LOOP;
  DELETE FROM @schema@.waiters
  WHERE namespace = p_namespace AND owner = p_owner AND resource = ANY (p_resources);
  RETURN jsonb_build_object('outcome', 'granted', 'now', @schema@.usec(v_now), 'grants', v_grants);
END $$;

-- Records a run that did not happen (timed_out after -w, killed at its
-- runtime limit) for each resource of its request: store::record_missed_run.
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
  IF p_event NOT IN ('timed_out', 'killed') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'record_missed_run: the event is timed_out or killed, not ' || p_event;
  END IF;
  PERFORM @schema@.check_names(p_namespace, p_resources);
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    PERFORM @schema@.record_refused(clock_timestamp(), p_namespace, p_resources, p_owner, p_mode,
                                    p_host, p_ip, p_pid, p_user, p_command, '');
    RETURN 0;
  END IF;
  PERFORM @schema@.record_missed(p_event, clock_timestamp(), p_namespace, p_resources, p_owner,
                                 p_mode, p_host, p_ip, p_pid, p_user, p_command, p_in_the_way);
  RETURN cardinality(p_resources);
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
