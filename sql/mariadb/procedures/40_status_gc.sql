-- clock on MariaDB: reading the lock table and collecting garbage, as
-- sql/postgres/functions/40_status_gc.sql. Same parameters in the same
-- order; results as there, with these differences (MariaDB has no
-- timestamptz, arrays or composite types):
-- * clock_status_rows returns its rows as a result set with PostgreSQL's
--   columns in PostgreSQL's order, but every instant (at1, at2, at3,
--   started) is BIGINT microseconds since 1970 UTC, not text, and expired
--   is 0/1; the rows come in a fixed order (now, holders by resource and
--   token, waiters by resource and queue position, runs), which the client
--   may ignore (it sorts). leftovers (the 20th) is JSON text as there, kept
--   as the holder sent it where jsonb reorders keys.
-- * clock_history and clock_gc_batch return one row of one column holding
--   the same JSON as the PostgreSQL function.
--
-- Each is one transaction (EXIT HANDLER, READ COMMITTED). status and history
-- read in one statement each (one snapshot) and lock nothing. gc_batch
-- removes at most p_batch rows of each kind per call, takes no hierarchy
-- slot, deletes only rows already dead by clock_now_us() (re-checked under
-- the row lock) and skips rows another transaction holds (FOR UPDATE SKIP
-- LOCKED, MariaDB 10.6+), so it never waits for an acquirer; an expired
-- lease is recorded by whichever transaction deletes it, so exactly once.

-- status_rows(p_namespace, p_prefix, p_include_expired): holders (live, or
-- all with p_include_expired), live waiters and run counts of one
-- namespace (NULL: all) and of a resource and its descendants (NULL: all).
-- Columns: kind, namespace, resource, owner, mode, slots, token, depth,
-- at1, at2, at3, expired, host, ip, pid, user_name, command, started,
-- db_user, leftovers. 'now': at1 the server's clock; 'holder': at1
-- acquired, at2 renewed, at3 expires (NULL: never), leftovers the holder's
-- clock_note_leftovers list as JSON text (NULL: none); 'waiter': token its
-- queue position, at1 since; 'runs': mode the outcome, token the count.
-- leftovers is NULL on every row but a holder's, as on PostgreSQL.
CREATE OR REPLACE PROCEDURE clock_status_rows(
  IN p_namespace VARBINARY(1024), IN p_prefix VARBINARY(1024), IN p_include_expired BOOLEAN)
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: holders, waiters and run counts (PostgreSQL status_rows())'
BEGIN
  DECLARE v_now BIGINT;
  DECLARE v_below VARBINARY(1025) DEFAULT CONCAT(p_prefix, '.');
  DECLARE v_above VARBINARY(1025) DEFAULT CONCAT(p_prefix, '/');
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION READ ONLY;
  SET v_now = clock_now_us();
  SELECT kind, namespace, resource, owner, mode, slots, token, depth, at1, at2, at3, expired, host,
         ip, pid, user_name, command, started, db_user, leftovers
  FROM (
  SELECT 'now' AS kind, NULL AS namespace, NULL AS resource, NULL AS owner, NULL AS mode,
         NULL AS slots, NULL AS token, NULL AS depth, v_now AS at1, NULL AS at2, NULL AS at3,
         NULL AS expired, NULL AS host, NULL AS ip, NULL AS pid, NULL AS user_name,
         NULL AS command, NULL AS started, NULL AS db_user, NULL AS leftovers, 0 AS part,
         0 AS k1, 0 AS k2
  UNION ALL
  SELECT 'holder', l.namespace, l.resource, l.owner, l.mode, l.slots, l.token, l.depth,
         l.acquired_us, l.renewed_us, l.expires_us, COALESCE(l.expires_us <= v_now, 0), l.host,
         l.ip, l.pid, l.user_name, l.command, l.owner_started_us, l.db_user, l.leftovers, 1,
         l.resource, l.token
  FROM leases l
  WHERE (p_namespace IS NULL OR l.namespace = p_namespace)
    AND (p_prefix IS NULL OR l.resource = p_prefix
         OR (l.resource > v_below AND l.resource < v_above))
    AND (p_include_expired OR l.expires_us IS NULL OR l.expires_us > v_now)
  UNION ALL
  SELECT 'waiter', w.namespace, w.resource, w.owner, w.mode, w.slots, w.position, NULL,
         w.enqueued_us, NULL, NULL, NULL, w.host, w.ip, w.pid, w.user_name, w.command,
         w.owner_started_us, w.db_user, NULL, 2, w.resource, w.position
  FROM waiters w
  WHERE (p_namespace IS NULL OR w.namespace = p_namespace)
    AND (p_prefix IS NULL OR w.resource = p_prefix
         OR (w.resource > v_below AND w.resource < v_above))
    AND w.expires_us > v_now
  UNION ALL
  SELECT 'runs', c.namespace, c.resource, NULL, c.outcome, NULL, c.count, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 3, c.resource, 0
  FROM run_counts c
  WHERE (p_namespace IS NULL OR c.namespace = p_namespace)
    AND (p_prefix IS NULL OR c.resource = p_prefix
         OR (c.resource > v_below AND c.resource < v_above))
  ) AS s
  ORDER BY part, k1, k2;
  COMMIT;
END;

-- history(p_namespace, p_prefix, p_limit, p_event) → history: a JSON array
-- of the newest p_limit events (newest first), optionally of one namespace,
-- of a resource and its descendants, of one event; each {"id", "at",
-- "event", "namespace", "resource", "owner", "mode", "token",
-- "held_for_ms", "host", "ip", "pid", "user", "command", "by", "db_user",
-- "leftovers", "every_ms", "previous_every_ms", "in_the_way", "done_by"} as
-- on PostgreSQL: "leftovers" is
-- the array the lease ended with (released, forced, expired, lost), null on
-- any other event or a lease that left nothing, the key always there, as
-- PostgreSQL's jsonb_build_object writes it. JSON_EXTRACT(…, '$') hands
-- JSON_OBJECT the column as JSON, never as a quoted string. JSON_ARRAYAGG
-- is bounded by group_concat_max_len, so the procedure raises it for its
-- own statement and puts the caller's value back (no session state is left
-- behind).
CREATE OR REPLACE PROCEDURE clock_history(
  IN p_namespace VARBINARY(1024), IN p_prefix VARBINARY(1024), IN p_limit INT,
  IN p_event VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: the newest history events as JSON (PostgreSQL history())'
BEGIN
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_below VARBINARY(1025) DEFAULT CONCAT(p_prefix, '.');
  DECLARE v_above VARBINARY(1025) DEFAULT CONCAT(p_prefix, '/');
  DECLARE v_limit INT DEFAULT GREATEST(COALESCE(p_limit, 0), 0);
  DECLARE v_saved BIGINT UNSIGNED DEFAULT @@SESSION.group_concat_max_len;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    SET SESSION group_concat_max_len = v_saved;
    ROLLBACK;
    RESIGNAL;
  END;
  SET SESSION group_concat_max_len = 4294967295;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION READ ONLY;
  -- SELECT … INTO, not SET v = (SELECT …), which would read with shared
  -- row locks (see clock_rec_owner_refuses in 15_records_util.sql).
  SELECT COALESCE(JSON_ARRAYAGG(JSON_OBJECT(
             'id', h.id, 'at', h.at_us, 'event', h.event,
             'namespace', CONVERT(h.namespace USING utf8mb4),
             'resource', CONVERT(h.resource USING utf8mb4), 'owner', h.owner, 'mode', h.mode,
             'token', h.token, 'held_for_ms', ROUND(h.held_for_us / 1000), 'host', h.host,
             'ip', h.ip, 'pid', h.pid, 'user', h.user_name, 'command', h.command,
             'by', h.forced_by, 'db_user', h.db_user,
             'leftovers', JSON_EXTRACT(h.leftovers, '$'),
             'every_ms', h.every_ms, 'previous_every_ms', h.previous_every_ms,
             'in_the_way', IF(h.in_the_way_owner IS NOT NULL AND h.done_by_started_us IS NULL,
                              JSON_OBJECT('owner', h.in_the_way_owner,
                                          'host', h.in_the_way_host,
                                          'token', h.in_the_way_token), NULL),
             'done_by', IF(h.done_by_started_us IS NOT NULL,
                           JSON_OBJECT('owner', h.in_the_way_owner, 'host', h.in_the_way_host,
                                       'token', h.in_the_way_token,
                                       'started', h.done_by_started_us), NULL))
             ORDER BY h.id DESC), '[]')
    FROM ((SELECT id, at_us, event, namespace, resource, owner, mode, token, held_for_us, host,
                  ip, pid, user_name, command, forced_by, db_user, leftovers, exit_code,
                  exit_signal, in_the_way_owner, in_the_way_host, in_the_way_token,
                  done_by_started_us, NULL AS every_ms, NULL AS previous_every_ms
           FROM history
           WHERE (p_namespace IS NULL OR namespace = p_namespace)
             AND (p_prefix IS NULL OR resource = p_prefix
                  OR (resource > v_below AND resource < v_above))
             AND (p_event IS NULL OR event = p_event)
           ORDER BY id DESC
           LIMIT v_limit)
          UNION ALL
          (SELECT id, at_us, 'period_changed', namespace, resource, owner, mode, token, NULL,
                  host, ip, pid, user_name, command, forced_by, db_user, NULL, NULL, NULL, NULL,
                  NULL, NULL, NULL, every_ms, previous_every_ms
           FROM period_changes
           WHERE (p_namespace IS NULL OR namespace = p_namespace)
             AND (p_prefix IS NULL OR resource = p_prefix
                  OR (resource > v_below AND resource < v_above))
             AND (p_event IS NULL OR p_event = 'period_changed')
           ORDER BY id DESC
           LIMIT v_limit)
          ORDER BY id DESC
          LIMIT v_limit) AS h
    INTO v_result;
  COMMIT;
  SET SESSION group_concat_max_len = v_saved;
  SELECT v_result AS history;
END;

-- gc_batch(p_batch, p_history_older_than_ms, p_dry_run) → gc_batch:
-- {"expired_leases", "dead_waiters", "history_rows", "idle_counters"}. One
-- batch: up to p_batch expired leases (recorded 'expired' at the instant
-- they lapsed), dead waiters and, with p_history_older_than_ms, history rows
-- (period changes too, counted with them) older than that and the run
-- counters of resources with no history, lease
-- or queue entry left. p_dry_run counts everything there is (not one batch)
-- and removes nothing. A lease counts as expired p_expiry_margin_ms after
-- its expiry (clock_try_acquire says why; 0 off Galera).
CREATE OR REPLACE PROCEDURE clock_gc_batch(
  IN p_batch INT, IN p_history_older_than_ms BIGINT, IN p_dry_run BOOLEAN,
  IN p_expiry_margin_ms BIGINT)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: one batch of garbage collection (PostgreSQL gc_batch())'
BEGIN
  DECLARE v_now BIGINT;
  DECLARE v_judged BIGINT;  -- the instant leases are judged expired at
  DECLARE v_cutoff BIGINT;
  DECLARE v_leases BIGINT DEFAULT 0;
  DECLARE v_waiters BIGINT DEFAULT 0;
  DECLARE v_history BIGINT DEFAULT 0;
  DECLARE v_counters BIGINT DEFAULT 0;
  DECLARE v_batch INT DEFAULT GREATEST(COALESCE(p_batch, 0), 0);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_now = clock_now_us();
  SET v_judged = v_now - GREATEST(COALESCE(p_expiry_margin_ms, 0), 0) * 1000;
  SET v_cutoff = v_now - p_history_older_than_ms * 1000;  -- NULL: keep all history
  IF p_dry_run THEN
    -- SELECT … INTO reads without locks (see clock_rec_owner_refuses).
    SELECT COUNT(*) INTO v_leases FROM leases WHERE expires_us <= v_judged;
    SELECT COUNT(*) INTO v_waiters FROM waiters WHERE expires_us <= v_now;
    SELECT COUNT(*) INTO v_history FROM history WHERE at_us < v_cutoff;
    SELECT v_history + COUNT(*) INTO v_history FROM period_changes WHERE at_us < v_cutoff;
    IF v_cutoff IS NOT NULL THEN
      SELECT COUNT(*) INTO v_counters FROM run_counts c
        WHERE NOT EXISTS (SELECT 1 FROM history h
                          WHERE h.resource = c.resource AND h.namespace = c.namespace
                            AND h.at_us >= v_cutoff)
          AND NOT EXISTS (SELECT 1 FROM leases l
                          WHERE l.namespace = c.namespace AND l.resource = c.resource)
          AND NOT EXISTS (SELECT 1 FROM waiters w
                          WHERE w.namespace = c.namespace AND w.resource = c.resource);
    END IF;
  ELSE
    FOR g IN (SELECT namespace, resource, owner, expires_us FROM leases
              WHERE expires_us <= v_judged
              ORDER BY expires_us LIMIT v_batch
              FOR UPDATE SKIP LOCKED) DO
      CALL clock_rec_event('expired', g.expires_us, g.namespace, g.resource, g.owner, NULL,
        (SELECT g.expires_us - acquired_us FROM leases
         WHERE namespace = g.namespace AND resource = g.resource AND owner = g.owner), '',
        NULL, NULL);
      DELETE FROM leases
      WHERE namespace = g.namespace AND resource = g.resource AND owner = g.owner
        AND expires_us <= v_judged;
      SET v_leases = v_leases + ROW_COUNT();
    END FOR;
    FOR g IN (SELECT position FROM waiters WHERE expires_us <= v_now
              ORDER BY expires_us LIMIT v_batch FOR UPDATE SKIP LOCKED) DO
      DELETE FROM waiters WHERE position = g.position AND expires_us <= v_now;
      SET v_waiters = v_waiters + ROW_COUNT();
    END FOR;
    IF v_cutoff IS NOT NULL THEN
      FOR g IN (SELECT id FROM history WHERE at_us < v_cutoff
                ORDER BY id LIMIT v_batch FOR UPDATE SKIP LOCKED) DO
        DELETE FROM history WHERE id = g.id;
        SET v_history = v_history + ROW_COUNT();
      END FOR;
      FOR g IN (SELECT id FROM period_changes WHERE at_us < v_cutoff
                ORDER BY id LIMIT v_batch FOR UPDATE SKIP LOCKED) DO
        DELETE FROM period_changes WHERE id = g.id;
        SET v_history = v_history + ROW_COUNT();
      END FOR;
      -- The run counters of resources nobody has used for longer than the
      -- history kept. A grant racing this delete may see its counter start
      -- again from 1, a counter reset Prometheus takes in its stride.
      FOR g IN (SELECT c.namespace, c.resource, c.outcome FROM run_counts c
                WHERE NOT EXISTS (SELECT 1 FROM history h
                                  WHERE h.resource = c.resource AND h.namespace = c.namespace)
                  AND NOT EXISTS (SELECT 1 FROM leases l
                                  WHERE l.namespace = c.namespace AND l.resource = c.resource)
                  AND NOT EXISTS (SELECT 1 FROM waiters w
                                  WHERE w.namespace = c.namespace AND w.resource = c.resource)
                LIMIT v_batch FOR UPDATE SKIP LOCKED) DO
        DELETE FROM run_counts
        WHERE namespace = g.namespace AND resource = g.resource AND outcome = g.outcome;
        SET v_counters = v_counters + ROW_COUNT();
      END FOR;
    END IF;
  END IF;
  COMMIT;
  SELECT JSON_OBJECT('expired_leases', CAST(v_leases AS SIGNED),
                     'dead_waiters', CAST(v_waiters AS SIGNED),
                     'history_rows', CAST(v_history AS SIGNED),
                     'idle_counters', CAST(v_counters AS SIGNED)) AS gc_batch;
END;
