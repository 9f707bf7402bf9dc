-- clock on PostgreSQL: the decision of an acquire, for one resource of a
-- request: can it be granted now? decide() weighs the live leases and
-- (decide_waiters()) the earlier live queue entries on the resource, its
-- ancestors and its descendants (the hierarchy rule: related resources
-- conflict unless both are shared), and a semaphore's slots;
-- expire_related() first removes and records what has expired there;
-- decide_all() does both for every resource of a request. They run inside
-- try_acquire's general path (20_acquire.sql), under the hierarchy locks it
-- holds, with its rights and its one reading of the clock; none is SECURITY
-- DEFINER nor executable by PUBLIC.

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
  v_holders @schema@.leases[] := '{}';  -- other owners' slots of this very semaphore
  q record;
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
  SELECT * INTO q FROM @schema@.decide_waiters(p_namespace, p_resource, p_mode, p_slots, p_owner,
                                               p_now, cardinality(v_holders));
  IF q.mismatch IS NOT NULL THEN
    verdict := 'slots_mismatch'; other_slots := q.mismatch;
    RETURN;
  END IF;
  blocking_waiters := q.blocking_waiters;
  blockers := blockers || q.blockers; blocked_on := blocked_on || q.blocked_on;
  blocker_hosts := blocker_hosts || q.blocker_hosts;
  IF cardinality(blockers) > 0 THEN
    verdict := 'blocked';
  END IF;
END $$;

-- decide()'s second half: the earlier live queue entries of other owners in
-- the way of a request for one resource, when p_holders other owners hold
-- slots of it (a semaphore). Our own entry counts only while live. mismatch:
-- the slots of an entry that disagrees with p_slots (then the rest is
-- partial), NULL when none does. A function of its own so that decide()
-- reads on one screen.
CREATE OR REPLACE FUNCTION @schema@.decide_waiters(
  p_namespace text, p_resource text, p_mode text, p_slots integer, p_owner uuid,
  p_now timestamptz, p_holders integer,
  OUT mismatch integer, OUT blocking_waiters jsonb, OUT blockers uuid[], OUT blocked_on text[],
  OUT blocker_hosts text[])
LANGUAGE plpgsql AS $$
DECLARE
  v_up text[] := array_prepend(p_resource, @schema@.ancestors(p_resource));
  v_lo text := p_resource || '.';  -- descendants sort strictly between v_lo and v_hi
  v_hi text := p_resource || '/';
  w @schema@.waiters;
  v_mine bigint;
  v_queued integer := 0;
BEGIN
  blocking_waiters := '[]'; blockers := '{}'; blocked_on := '{}'; blocker_hosts := '{}';
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
        mismatch := w.slots;
        RETURN;
      END IF;
      -- Earlier semaphore waiters go first: only the slots left over are ours.
      v_queued := v_queued + 1;
      CONTINUE WHEN p_holders + v_queued < p_slots;
    ELSIF w.mode = 'shared' AND p_mode = 'shared' THEN
      CONTINUE;
    END IF;
    blocking_waiters := blocking_waiters || @schema@.waiter_json(w);
    blockers := blockers || w.owner; blocked_on := blocked_on || w.resource;
    blocker_hosts := blocker_hosts || w.host;
  END LOOP;
END $$;

-- Every resource of a request in turn, in request order: its expired
-- related leases removed (expire_related) and its verdict taken (decide).
-- verdicts[i] is the i-th resource's; the leases, queue entries and owners
-- in the way of all of them are gathered as decide() lists them. refusal:
-- try_acquire's reply when the lock model refuses the request
-- ('slots_mismatch' or 'upgrade', at the first resource that does), then
-- the rest is partial; NULL otherwise. Sends the change notification when
-- something expired.
CREATE OR REPLACE FUNCTION @schema@.decide_all(
  p_namespace text, p_resources text[], p_mode text, p_slots integer, p_owner uuid,
  p_request_id text, p_now timestamptz,
  OUT verdicts text[], OUT refusal jsonb, OUT blocking_leases jsonb,
  OUT blocking_waiters jsonb,
  OUT blockers uuid[], OUT blocked_on text[], OUT blocker_hosts text[])
LANGUAGE plpgsql AS $$
DECLARE
  d record;
  v_expired integer := 0;
BEGIN
  verdicts := '{}'; blocking_leases := '[]'; blocking_waiters := '[]';
  blockers := '{}'; blocked_on := '{}'; blocker_hosts := '{}';
  FOR i IN 1 .. cardinality(p_resources) LOOP
    v_expired := v_expired + @schema@.expire_related(p_namespace, p_resources[i], p_now);
    SELECT * INTO d FROM @schema@.decide(p_namespace, p_resources[i], p_mode, p_slots, p_owner,
                                         p_request_id, p_now);
    IF d.verdict IN ('slots_mismatch', 'upgrade') THEN
      IF v_expired > 0 THEN PERFORM @schema@.notify_change(); END IF;
      refusal := jsonb_build_object('outcome', d.verdict, 'now', @schema@.usec(p_now),
                                    'resource', p_resources[i], 'slots', p_slots,
                                    'other_slots', d.other_slots);
      RETURN;
    END IF;
    verdicts := verdicts || d.verdict;
    blocking_leases := blocking_leases || d.blocking_leases;
    blocking_waiters := blocking_waiters || d.blocking_waiters;
    blockers := blockers || d.blockers;
    blocked_on := blocked_on || d.blocked_on;
    blocker_hosts := blocker_hosts || d.blocker_hosts;
  END LOOP;
  IF v_expired > 0 THEN PERFORM @schema@.notify_change(); END IF;
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
