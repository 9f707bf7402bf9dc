-- clock on PostgreSQL: reading the lock table and collecting
-- garbage. Each call is one round trip and one transaction.
--
-- status() and history() only read: one statement each, so one snapshot,
-- consistent at READ COMMITTED, and they take no locks that could delay an
-- acquirer. "now" is clock_timestamp(), the server's clock when the snapshot
-- was taken, against which expiry is judged.
--
-- gc_batch() removes at most p_batch rows of each kind per call (per
-- transaction): the store calls it until a call removes fewer, so acquirers
-- never queue behind a long clean-up. It takes no hierarchy locks: it
-- deletes only rows that are already dead by clock_timestamp(), which no
-- acquirer would count anyway, re-checks that under the row lock (a renewal
-- that committed in between wins), and skips rows another transaction holds
-- (FOR UPDATE SKIP LOCKED) so it never waits and can never be part of a
-- deadlock. An expired lease is recorded by whichever transaction deletes it
-- (DELETE ... RETURNING), so exactly once.

-- (3) Holders (live, or all with p_include_expired), live waiters and run
-- counts, of one
-- namespace (NULL: all) and of a resource and its descendants (NULL: all).
-- The first row has kind 'now' and the server's clock in at1; then one row
-- per holder ('holder': at1 acquired, at2 renewed, at3 expires) and per
-- waiter ('waiter': token is its queue position, at1 since) and per counted
-- outcome of the resource's runs ('runs': mode is the outcome, token the
-- count, from run_counts, which gc does not prune); db_user is the login
-- that wrote a holder's or waiter's row (NULL before migration 012);
-- leftovers, a holder's note_leftovers() list as JSON text. Instants are
-- UTC, 'YYYY-MM-DD HH:MM:SS[.ffffff]' (DateStyle ISO is set for the casts).
-- Unordered: the client sorts.
CREATE OR REPLACE FUNCTION @schema@.status_rows(p_namespace text, p_prefix text, p_include_expired boolean)
RETURNS TABLE (kind text, namespace text, resource text, owner uuid, mode text, slots integer,
               token bigint, depth integer, at1 text, at2 text, at3 text, expired boolean,
               host text, ip text, pid bigint, user_name text, command text, started text,
               db_user text, leftovers text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET DateStyle = 'ISO, YMD'
AS $$
  WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now)
  SELECT 'now', NULL, NULL, NULL::uuid, NULL, NULL::integer, NULL::bigint, NULL::integer,
         (n.now AT TIME ZONE 'UTC')::text, NULL, NULL, NULL::boolean, NULL, NULL, NULL::bigint,
         NULL, NULL, NULL, NULL, NULL
  FROM n
  UNION ALL
  SELECT 'holder', l.namespace, l.resource, l.owner, l.mode, l.slots, l.token, l.depth,
         (l.acquired_at AT TIME ZONE 'UTC')::text, (l.renewed_at AT TIME ZONE 'UTC')::text,
         (l.expires_at AT TIME ZONE 'UTC')::text, coalesce(l.expires_at <= n.now, false),
         l.host, l.ip, l.pid, l.user_name, l.command,
         (l.owner_started_at AT TIME ZONE 'UTC')::text, l.db_user, l.leftovers::text
  FROM @schema@.leases l, n
  WHERE (p_namespace IS NULL OR l.namespace = p_namespace)
    AND (p_prefix IS NULL OR l.resource = p_prefix
         OR (l.resource > p_prefix || '.' AND l.resource < p_prefix || '/'))
    AND (p_include_expired OR l.expires_at IS NULL OR l.expires_at > n.now)
  UNION ALL
  SELECT 'waiter', w.namespace, w.resource, w.owner, w.mode, w.slots, w.position, NULL,
         (w.enqueued_at AT TIME ZONE 'UTC')::text, NULL, NULL, NULL, w.host, w.ip, w.pid,
         w.user_name, w.command, (w.owner_started_at AT TIME ZONE 'UTC')::text, w.db_user, NULL
  FROM @schema@.waiters w, n
  WHERE (p_namespace IS NULL OR w.namespace = p_namespace)
    AND (p_prefix IS NULL OR w.resource = p_prefix
         OR (w.resource > p_prefix || '.' AND w.resource < p_prefix || '/'))
    AND w.expires_at > n.now
  UNION ALL
  SELECT 'runs', c.namespace, c.resource, NULL::uuid, c.outcome, NULL::integer, c.count,
         NULL::integer, NULL, NULL, NULL, NULL::boolean, NULL, NULL, NULL::bigint, NULL, NULL,
         NULL, NULL, NULL
  FROM @schema@.run_counts c
  WHERE (p_namespace IS NULL OR c.namespace = p_namespace)
    AND (p_prefix IS NULL OR c.resource = p_prefix
         OR (c.resource > p_prefix || '.' AND c.resource < p_prefix || '/'))
$$;

-- The newest p_limit events, optionally of one namespace and of a resource
-- and its descendants (history_events). Returns a JSON array, newest
-- first.
CREATE OR REPLACE FUNCTION @schema@.history(p_namespace text, p_prefix text, p_limit integer,
                                            p_event text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'id', h.id, 'at', @schema@.usec(h.at), 'event', h.event, 'namespace', h.namespace,
           'resource', h.resource, 'owner', h.owner, 'mode', h.mode, 'token', h.token,
           'held_for_ms', (extract(epoch FROM h.held_for) * 1000)::bigint, 'host', h.host,
           'ip', h.ip, 'pid', h.pid, 'user', h.user_name, 'command', h.command,
           'by', h.forced_by, 'db_user', h.db_user, 'leftovers', h.leftovers,
           'every_ms', h.every_ms, 'previous_every_ms', h.previous_every_ms,
           'in_the_way', CASE WHEN h.in_the_way_owner IS NOT NULL
                               AND h.done_by_started_at IS NULL THEN jsonb_build_object(
             'owner', h.in_the_way_owner, 'host', h.in_the_way_host,
             'token', h.in_the_way_token) END,
           'done_by', CASE WHEN h.done_by_started_at IS NOT NULL THEN jsonb_build_object(
             'owner', h.in_the_way_owner, 'host', h.in_the_way_host,
             'token', h.in_the_way_token, 'started', @schema@.usec(h.done_by_started_at)) END)
           ORDER BY h.id DESC), '[]')
  FROM @schema@.history_events(p_namespace, p_prefix, p_limit, p_event, NULL, NULL) AS h
$$;

-- One batch of garbage collection: up to p_batch expired leases (recorded as
-- expired), dead waiters and, with p_history_older_than_ms, history rows
-- (and period changes, counted with them) older than that. With p_dry_run, counts everything there is to remove
-- (not limited to a batch) and removes nothing. Returns {"expired_leases",
-- "dead_waiters", "history_rows"}.
CREATE OR REPLACE FUNCTION @schema@.gc_batch(p_batch integer, p_history_older_than_ms bigint,
                                  p_dry_run boolean)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
  v_cutoff timestamptz := v_now - p_history_older_than_ms * interval '1 ms';  -- NULL: keep all
  v_leases bigint;
  v_waiters bigint;
  v_history bigint;
  v_changes bigint;
  v_counters bigint := 0;
  v_gone @schema@.leases[];
BEGIN
  IF p_dry_run THEN
    SELECT count(*) INTO v_leases FROM @schema@.leases WHERE expires_at <= v_now;
    SELECT count(*) INTO v_waiters FROM @schema@.waiters WHERE expires_at <= v_now;
    SELECT count(*) INTO v_history FROM @schema@.history WHERE at < v_cutoff;
    v_history := v_history + (SELECT count(*) FROM @schema@.period_changes WHERE at < v_cutoff);
    IF v_cutoff IS NOT NULL THEN
      SELECT count(*) INTO v_counters FROM @schema@.run_counts c
      WHERE NOT EXISTS (SELECT 1 FROM @schema@.history h
                        WHERE h.resource = c.resource AND h.namespace = c.namespace
                          AND h.at >= v_cutoff)
        AND NOT EXISTS (SELECT 1 FROM @schema@.leases l
                        WHERE l.namespace = c.namespace AND l.resource = c.resource)
        AND NOT EXISTS (SELECT 1 FROM @schema@.waiters w
                        WHERE w.namespace = c.namespace AND w.resource = c.resource);
    END IF;
  ELSE
    WITH batch AS (
      SELECT namespace, resource, owner FROM @schema@.leases
      WHERE expires_at <= v_now
      ORDER BY expires_at LIMIT p_batch
      FOR UPDATE SKIP LOCKED),
    gone AS (
      DELETE FROM @schema@.leases l USING batch b
      WHERE l.namespace = b.namespace AND l.resource = b.resource AND l.owner = b.owner
        AND l.expires_at <= v_now
      RETURNING l.*)
    SELECT array_agg(gone::@schema@.leases) INTO v_gone FROM gone;
    v_leases := @schema@.record_expired(v_gone);
    DELETE FROM @schema@.waiters
    WHERE position IN (SELECT position FROM @schema@.waiters WHERE expires_at <= v_now
                       ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
      AND expires_at <= v_now;
    GET DIAGNOSTICS v_waiters = ROW_COUNT;
    DELETE FROM @schema@.history
    WHERE id IN (SELECT id FROM @schema@.history WHERE at < v_cutoff
                 ORDER BY id LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_history = ROW_COUNT;
    DELETE FROM @schema@.period_changes
    WHERE id IN (SELECT id FROM @schema@.period_changes WHERE at < v_cutoff
                 ORDER BY id LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_changes = ROW_COUNT;
    v_history := v_history + v_changes;
    -- The run counters of resources nobody has used for longer than the
    -- history kept: no history, lease or queue entry left. A grant racing
    -- this delete may see its counter start again from 1, a counter reset
    -- Prometheus takes in its stride.
    IF v_cutoff IS NOT NULL THEN
      DELETE FROM @schema@.run_counts
      WHERE (namespace, resource, outcome) IN (
        SELECT c.namespace, c.resource, c.outcome FROM @schema@.run_counts c
        WHERE NOT EXISTS (SELECT 1 FROM @schema@.history h
                          WHERE h.resource = c.resource AND h.namespace = c.namespace)
          AND NOT EXISTS (SELECT 1 FROM @schema@.leases l
                          WHERE l.namespace = c.namespace AND l.resource = c.resource)
          AND NOT EXISTS (SELECT 1 FROM @schema@.waiters w
                          WHERE w.namespace = c.namespace AND w.resource = c.resource)
        LIMIT p_batch FOR UPDATE SKIP LOCKED);
      GET DIAGNOSTICS v_counters = ROW_COUNT;
    END IF;
    IF v_leases > 0 OR v_waiters > 0 THEN PERFORM @schema@.notify_change(); END IF;
  END IF;
  RETURN jsonb_build_object('expired_leases', v_leases, 'dead_waiters', v_waiters,
                            'history_rows', v_history, 'idle_counters', v_counters);
END $$;
