-- clock on PostgreSQL: missed runs (man clock, COMMANDS). A resource's expected period
-- (expected_runs, migration 014) and the starts of its successful runs
-- (successes) let the client tell which periods passed with no successful
-- run; the arithmetic of periods is the client's (src/store/expected.cpp),
-- on instants read from the server's clock.
--
-- expect_runs() is a single upsert per resource, at READ COMMITTED: it takes
-- no hierarchy lock (it decides nothing about who runs), so it can neither
-- delay nor be delayed by an acquirer beyond the row lock of its own rows.
-- Only the holder declares: a period is what silences or raises the alarm
-- of a job, so a login that read an owner id from status must not be able
-- to lengthen it.
-- expected_rows() only reads, in one statement (one snapshot).

-- Each new latest success (record_success() in 10_util.sql inserts or
-- updates last_success) is kept in successes too, by a trigger of the
-- schema's own (migration 020), newest 1000 per resource.

-- Declares that each of p_resources must run successfully every p_every_ms
-- (clock run --once-per or --every): inserts the expectation, or updates its
-- period, keeping declared_at; a row already right is not written. Each
-- declaration or change is recorded as 'period_changed'. clock run declares
-- a resource that has no period when its command starts, and changes one
-- only after its command exited 0 (docs/threat-model.md, "Expected
-- periods"); a holder calling this directly can change it at any time, and
-- the change names its login. Only for
-- p_owner holding a live lease on every resource that p_secret proves:
-- otherwise nothing is written and the answer is false (and, for an owner
-- id whose secret the caller lacks, 'refused' is recorded, with p_by).
CREATE OR REPLACE FUNCTION @schema@.expect_runs(p_namespace text, p_resources text[],
                                                p_every_ms bigint, p_owner uuid,
                                                p_secret text, p_by text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, NULL, NULL, NULL, NULL, p_by);
  IF p_every_ms IS NULL OR p_every_ms <= 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'expect_runs: the period must be longer than 0';
  END IF;
  IF p_owner IS NULL THEN
    RETURN false;
  END IF;
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    PERFORM @schema@.record_refused(clock_timestamp(), p_namespace, p_resources, p_owner, NULL,
                                    NULL, NULL, NULL, NULL, NULL, p_by);
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(p_resources) AS r
             WHERE NOT EXISTS (
               SELECT 1 FROM @schema@.leases l
               WHERE l.namespace = p_namespace AND l.resource = r AND l.owner = p_owner
                 AND (l.expires_at IS NULL OR l.expires_at > clock_timestamp())
                 AND @schema@.proves(l.secret_hash, p_secret))) THEN
    RETURN false;
  END IF;
  -- Each period declared or changed is history ('period_changed', in
  -- period_changes: migration 018), with the declaring lease's facts, who
  -- asked and the login (db_user): the period decides what `clock missed`
  -- reports, so its changes are kept. Numbered from history's sequence.
  WITH before AS (
    SELECT r, e.every_ms AS was
    FROM unnest(p_resources) AS r
    LEFT JOIN @schema@.expected_runs e ON e.namespace = p_namespace AND e.resource = r),
  changed AS (
    INSERT INTO @schema@.expected_runs AS e (namespace, resource, every_ms, declared_at)
    SELECT p_namespace, r, p_every_ms, clock_timestamp()
    FROM unnest(p_resources) AS r
    ORDER BY r  -- one order of row locks for every caller
    ON CONFLICT (namespace, resource) DO UPDATE
    SET every_ms = EXCLUDED.every_ms
    WHERE e.every_ms <> EXCLUDED.every_ms
    RETURNING e.resource)
  INSERT INTO @schema@.period_changes (id, at, namespace, resource, owner, mode, token, host, ip,
                                       pid, user_name, command, forced_by, every_ms,
                                       previous_every_ms)
  SELECT nextval(pg_get_serial_sequence('@schema@.history', 'id')), clock_timestamp(),
         p_namespace, c.resource, p_owner, l.mode, l.token, l.host, l.ip, l.pid, l.user_name,
         l.command, coalesce(p_by, ''), p_every_ms, b.was
  FROM changed c
  JOIN before b ON b.r = c.resource
  JOIN @schema@.leases l
    ON l.namespace = p_namespace AND l.resource = c.resource AND l.owner = p_owner
  ORDER BY c.resource;
  RETURN true;
END $$;

-- The expected runs of one namespace (NULL: all) and of a resource and its
-- descendants (NULL: all), with what the client needs to find missed
-- periods since p_since_usec (NULL: now). Rows: first 'now' (at_usec: the
-- server's clock); 'expected' per resource (every_ms, declared_usec);
-- 'success' per start of a successful run at or after since minus
-- the period, and the latest before that (at_usec). Unordered.
CREATE OR REPLACE FUNCTION @schema@.expected_rows(p_namespace text, p_prefix text,
                                                  p_since_usec bigint)
RETURNS TABLE (kind text, namespace text, resource text, every_ms bigint,
               declared_usec bigint, at_usec bigint)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
  e AS MATERIALIZED (
    SELECT x.namespace, x.resource, x.every_ms, x.declared_at,
           coalesce('epoch'::timestamptz + p_since_usec * interval '1 microsecond', n.now)
             - x.every_ms * interval '1 millisecond' AS floor
    FROM @schema@.expected_runs x, n
    WHERE (p_namespace IS NULL OR x.namespace = p_namespace)
      AND (p_prefix IS NULL OR x.resource = p_prefix
           OR (x.resource > p_prefix || '.' AND x.resource < p_prefix || '/')))
  SELECT 'now', NULL, NULL, NULL::bigint, NULL::bigint, @schema@.usec(n.now) FROM n
  UNION ALL
  SELECT 'expected', e.namespace, e.resource, e.every_ms, @schema@.usec(e.declared_at), NULL
  FROM e
  UNION ALL
  SELECT 'success', e.namespace, e.resource, NULL, NULL, @schema@.usec(s.started_at)
  FROM e JOIN @schema@.successes s
    ON s.namespace = e.namespace AND s.resource = e.resource AND s.started_at >= e.floor
  UNION ALL
  SELECT 'success', e.namespace, e.resource, NULL, NULL, @schema@.usec(p.started_at)
  FROM e CROSS JOIN LATERAL (
    SELECT s.started_at FROM @schema@.successes s
    WHERE s.namespace = e.namespace AND s.resource = e.resource AND s.started_at < e.floor
    ORDER BY s.started_at DESC LIMIT 1) p
$$;
