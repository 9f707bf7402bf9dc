-- clock on MariaDB: how each run of clock run ended (migration 005), and
-- history read with the filters of clock history --since/--host, as
-- sql/postgres/functions/35_run_ends.sql.
--
-- New procedures beside the old ones rather than new parameters on them: an
-- older binary on the same database (a fleet upgraded host by host) keeps
-- calling clock_release and clock_history as it always did.

-- Counts a run that ended at p_at_us after holding its lease p_held_for_us,
-- with p_exit_code or p_exit_signal, in its resource's run results (its
-- `released` record, written by clock_rec_event, carries the same exit).
CREATE OR REPLACE PROCEDURE clock_rec_count_run_result(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255), IN p_at_us BIGINT,
  IN p_held_for_us BIGINT, IN p_exit_code INT, IN p_exit_signal INT)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  INSERT INTO run_results (namespace, resource, succeeded, failed, last_ended_us,
                           last_exit_code, last_exit_signal, last_held_for_us)
  VALUES (p_namespace, p_resource, IF(p_exit_code <=> 0, 1, 0), IF(p_exit_code <=> 0, 0, 1),
          p_at_us, p_exit_code, p_exit_signal, COALESCE(p_held_for_us, 0))
  ON DUPLICATE KEY UPDATE
    succeeded = succeeded + VALUES(succeeded), failed = failed + VALUES(failed),
    last_ended_us = VALUES(last_ended_us), last_exit_code = VALUES(last_exit_code),
    last_exit_signal = VALUES(last_exit_signal), last_held_for_us = VALUES(last_held_for_us);
END;

-- release2(p_namespace, p_resources, p_owner, p_secret, p_by, p_host,
-- p_lineage, p_succeeded, p_exit_code, p_exit_signal) → release:
-- clock_release's reply (30_renew_release.sql), and how clock run's command
-- ended on each lease that ended there (both NULL: not a run of clock run),
-- in one transaction: the release and its exit commit together, so a retry
-- after an error (a deadlock, a certification failure) finds the lease as
-- it was, never released by an attempt that failed afterwards.
CREATE OR REPLACE PROCEDURE clock_release2(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_lineage LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_succeeded BOOLEAN,
  IN p_exit_code INT, IN p_exit_signal INT)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: release, recording how the run ended (PostgreSQL release2())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_now BIGINT;
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  SET v_owner = clock_rec_owner(p_owner);
  IF v_owner IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'release: no owner';
  END IF;
  IF p_lineage IS NULL OR NOT JSON_VALID(p_lineage) THEN
    SET p_lineage = '[]';
  END IF;
  IF JSON_LENGTH(p_lineage) > 64 THEN  -- the caller's pid and its ancestors'
    SIGNAL SQLSTATE '54000' SET MESSAGE_TEXT = 'a lineage of more than 64 pids';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  SET v_now = clock_now_us();
  CALL clock_rec_release_each(p_namespace, p_resources, v_owner, p_secret, p_by, p_host,
                              p_lineage, p_succeeded, p_exit_code, p_exit_signal, v_now,
                              v_result);
  COMMIT;
  SELECT v_result AS `release`;
END;

-- history2(p_namespace, p_prefix, p_limit, p_event, p_since_us, p_within_ms,
-- p_host) → history: clock_history's JSON with each run's exit
-- ("exit_code", "exit_signal"), and two more filters: only events at or
-- after p_since_us (microseconds since the epoch) and at or after the
-- server's now - p_within_ms, and only those of host p_host (NULL: no such
-- filter).
CREATE OR REPLACE PROCEDURE clock_history2(
  IN p_namespace VARBINARY(1024), IN p_prefix VARBINARY(1024), IN p_limit INT,
  IN p_event VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_since_us BIGINT,
  IN p_within_ms BIGINT, IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: history events as JSON, filtered by time and host (PostgreSQL history2())'
BEGIN
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_below VARBINARY(1025) DEFAULT CONCAT(p_prefix, '.');
  DECLARE v_above VARBINARY(1025) DEFAULT CONCAT(p_prefix, '/');
  DECLARE v_limit INT DEFAULT GREATEST(COALESCE(p_limit, 0), 0);
  DECLARE v_from BIGINT;
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
  SET v_from = p_since_us;
  IF p_within_ms IS NOT NULL THEN
    SET v_from = GREATEST(COALESCE(v_from, 0), clock_now_us() - p_within_ms * 1000);
  END IF;
  SELECT COALESCE(JSON_ARRAYAGG(JSON_OBJECT(
             'id', h.id, 'at', h.at_us, 'event', h.event,
             'namespace', CONVERT(h.namespace USING utf8mb4),
             'resource', CONVERT(h.resource USING utf8mb4), 'owner', h.owner, 'mode', h.mode,
             'token', h.token, 'held_for_ms', ROUND(h.held_for_us / 1000), 'host', h.host,
             'ip', h.ip, 'pid', h.pid, 'user', h.user_name, 'command', h.command,
             'by', h.forced_by, 'db_user', h.db_user,
             'leftovers', JSON_EXTRACT(h.leftovers, '$'),
             'exit_code', h.exit_code, 'exit_signal', h.exit_signal,
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
             AND (v_from IS NULL OR at_us >= v_from)
             AND (p_host IS NULL OR host = p_host)
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
             AND (v_from IS NULL OR at_us >= v_from)
             AND (p_host IS NULL OR host = p_host)
           ORDER BY id DESC
           LIMIT v_limit)
          ORDER BY id DESC
          LIMIT v_limit) AS h
    INTO v_result;
  COMMIT;
  SET SESSION group_concat_max_len = v_saved;
  SELECT v_result AS history;
END;

-- run_results(p_namespace, p_prefix) → run_results: each resource's run
-- results, [{namespace, resource, succeeded, failed, last_ended
-- (microseconds), last_exit_code, last_exit_signal, last_held_for_ms}…].
CREATE OR REPLACE PROCEDURE clock_run_results(
  IN p_namespace VARBINARY(1024), IN p_prefix VARBINARY(1024))
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: each resource''s run results as JSON (PostgreSQL run_results())'
BEGIN
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_below VARBINARY(1025) DEFAULT CONCAT(p_prefix, '.');
  DECLARE v_above VARBINARY(1025) DEFAULT CONCAT(p_prefix, '/');
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
  SELECT COALESCE(JSON_ARRAYAGG(JSON_OBJECT(
             'namespace', CONVERT(r.namespace USING utf8mb4),
             'resource', CONVERT(r.resource USING utf8mb4),
             'succeeded', r.succeeded, 'failed', r.failed, 'last_ended', r.last_ended_us,
             'last_exit_code', r.last_exit_code, 'last_exit_signal', r.last_exit_signal,
             'last_held_for_ms', ROUND(r.last_held_for_us / 1000))
             ORDER BY r.namespace, r.resource), '[]')
    FROM run_results r
    WHERE (p_namespace IS NULL OR r.namespace = p_namespace)
      AND (p_prefix IS NULL OR r.resource = p_prefix
           OR (r.resource > v_below AND r.resource < v_above))
    INTO v_result;
  COMMIT;
  SET SESSION group_concat_max_len = v_saved;
  SELECT v_result AS run_results;
END;
