-- clock on PostgreSQL: the deadlock search. An owner that holds one resource
-- and waits for another held by an owner waiting for the first is told at
-- once (exit 76) instead of queued. waits_for() gives the "waits for" edges
-- of the lock model, find_cycle_links() walks them breadth-first from the
-- owners in a request's way. try_acquire's general path (20_acquire.sql)
-- calls search_deadlock(), which runs it for the first blocked attempt of an
-- owner others can wait for, under a lock that makes searches take turns.

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

-- The deadlock search of a blocked request (the cycle as find_cycle_links
-- gives it, or NULL), only where a cycle can close: the first blocked
-- attempt of a request (a cycle formed later is closed, and found, by the
-- request that forms it), by an owner that others can be waiting for (it
-- holds a live lease or queue entry). Re-attempts of a queued request skip
-- it, so many waiters polling cost little under the hierarchy lock.
CREATE OR REPLACE FUNCTION @schema@.search_deadlock(p_owner uuid, p_request_id text, p_host text,
                                                    p_blockers uuid[], p_blocked_on text[],
                                                    p_hosts text[], p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM @schema@.waiters
             WHERE owner = p_owner AND request_id = p_request_id AND expires_at > p_now)
     OR NOT (EXISTS (SELECT 1 FROM @schema@.leases
                     WHERE owner = p_owner AND (expires_at IS NULL OR expires_at > p_now))
             OR EXISTS (SELECT 1 FROM @schema@.waiters
                        WHERE owner = p_owner AND expires_at > p_now)) THEN
    RETURN NULL;
  END IF;
  -- Two owners asking for each other's locks at the same moment hold
  -- different hierarchy locks, so each could search before the other's
  -- queue entry is committed and neither would see the cycle. Searches (and
  -- the enqueue that follows, until commit) take turns under one lock; the
  -- statements after it see every earlier searcher's committed entry.
  PERFORM 1 FROM @schema@.hierarchy_locks WHERE slot = -1 FOR NO KEY UPDATE;
  RETURN @schema@.find_cycle_links(p_owner, p_host, p_blockers, p_blocked_on, p_hosts, p_now);
END $$;
