-- clock on PostgreSQL: how each run of clock run ended (migration 016), and
-- history read with the filters of clock history --since/--host.
--
-- release2() and history2() are new names rather than new parameters of
-- release() and history(): a role granted only those before exits were
-- recorded keeps working (the store falls back to release()), and each
-- release's set is its own, so an older binary keeps calling its own
-- (docs/upgrades.md).

-- Counts a run that ended at p_at after holding its lease p_held_for, with
-- p_exit_code or p_exit_signal, in its resource's run results.
CREATE OR REPLACE FUNCTION @schema@.count_run_result(p_namespace text, p_resource text,
                                                     p_at timestamptz, p_held_for interval,
                                                     p_exit_code integer, p_exit_signal integer)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO @schema@.run_results AS r (namespace, resource, succeeded, failed, last_ended_at,
                                         last_exit_code, last_exit_signal, last_held_for)
  VALUES (p_namespace, p_resource, CASE WHEN p_exit_code = 0 THEN 1 ELSE 0 END,
          CASE WHEN p_exit_code = 0 THEN 0 ELSE 1 END, p_at, p_exit_code, p_exit_signal,
          coalesce(p_held_for, interval '0'))
  ON CONFLICT (namespace, resource) DO UPDATE
  SET succeeded = r.succeeded + EXCLUDED.succeeded, failed = r.failed + EXCLUDED.failed,
      last_ended_at = EXCLUDED.last_ended_at, last_exit_code = EXCLUDED.last_exit_code,
      last_exit_signal = EXCLUDED.last_exit_signal, last_held_for = EXCLUDED.last_held_for;
END $$;

-- release() (30_renew_release.sql) with how clock run's command ended
-- (p_exit_code, or p_exit_signal; both NULL: not a run of clock run),
-- written on each lease that ends: the name clock calls (the header above
-- says why it is a name of its own).
CREATE OR REPLACE FUNCTION @schema@.release2(p_namespace text, p_resources text[], p_owner uuid,
                                             p_secret text, p_by text, p_host text,
                                             p_lineage bigint[], p_succeeded boolean,
                                             p_exit_code integer, p_exit_signal integer)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
BEGIN
  RETURN @schema@.release(p_namespace, p_resources, p_owner, p_secret, p_by, p_host, p_lineage,
                          p_succeeded, p_exit_code, p_exit_signal);
END $$;

-- history() with two more filters and the exit of each run (and, as in
-- history(), a period_changed event's every_ms and previous_every_ms): only
-- events at or after p_since_us (microseconds since the epoch) and at or
-- after now - p_within_ms (the server's clock), and only those of host
-- p_host; NULL: no such filter.
CREATE OR REPLACE FUNCTION @schema@.history2(p_namespace text, p_prefix text, p_limit integer,
                                             p_event text, p_since_us bigint,
                                             p_within_ms bigint, p_host text)
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
           'exit_code', h.exit_code, 'exit_signal', h.exit_signal,
           'every_ms', h.every_ms, 'previous_every_ms', h.previous_every_ms,
           'in_the_way', CASE WHEN h.in_the_way_owner IS NOT NULL
                               AND h.done_by_started_at IS NULL THEN jsonb_build_object(
             'owner', h.in_the_way_owner, 'host', h.in_the_way_host,
             'token', h.in_the_way_token) END,
           'done_by', CASE WHEN h.done_by_started_at IS NOT NULL THEN jsonb_build_object(
             'owner', h.in_the_way_owner, 'host', h.in_the_way_host,
             'token', h.in_the_way_token, 'started', @schema@.usec(h.done_by_started_at)) END)
           ORDER BY h.id DESC), '[]')
  FROM @schema@.history_events(
         p_namespace, p_prefix, p_limit, p_event,
         greatest('epoch'::timestamptz + p_since_us * interval '1 microsecond',
                  clock_timestamp() - p_within_ms * interval '1 ms'),
         p_host) AS h
$$;

-- Each resource's run results (migration 016), of one namespace (NULL: all)
-- and of a resource and its descendants (NULL: all): a JSON array of
-- {namespace, resource, succeeded, failed, last_ended (microseconds),
-- last_exit_code, last_exit_signal, last_held_for_ms}.
CREATE OR REPLACE FUNCTION @schema@.run_results(p_namespace text, p_prefix text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'namespace', r.namespace, 'resource', r.resource, 'succeeded', r.succeeded,
           'failed', r.failed, 'last_ended', @schema@.usec(r.last_ended_at),
           'last_exit_code', r.last_exit_code, 'last_exit_signal', r.last_exit_signal,
           'last_held_for_ms', (extract(epoch FROM r.last_held_for) * 1000)::bigint)
           ORDER BY r.namespace, r.resource), '[]')
  FROM @schema@.run_results r
  WHERE (p_namespace IS NULL OR r.namespace = p_namespace)
    AND (p_prefix IS NULL OR r.resource = p_prefix
         OR (r.resource > p_prefix || '.' AND r.resource < p_prefix || '/'))
$$;
