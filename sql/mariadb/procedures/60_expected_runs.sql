-- clock on MariaDB: missed runs (man clock, COMMANDS), as
-- sql/postgres/functions/60_expected_runs.sql, over the tables of
-- migration 002 (expected_runs, successes). The arithmetic of periods is
-- the client's (src/store/expected.cpp), on instants from the server's
-- clock. successes is written by clock_release (clock_rec_success in
-- 15_records_util.sql) where PostgreSQL has a trigger on last_success.

-- expect_runs(p_namespace, p_resources, p_every_ms, p_owner, p_secret,
-- p_by): one row, expect_runs = 1 when declared, 0 when refused. Declares
-- that each of p_resources (a JSON array) must run successfully every
-- p_every_ms: inserts the expectation or updates its period, keeping
-- declared_us; a row already right is not written. Each declaration or
-- change is recorded as 'period_changed' (see PostgreSQL's expect_runs()
-- for when clock run declares). Only the holder
-- declares (a period silences or raises the alarm of a job): p_owner must hold
-- a live lease on every resource that p_secret proves; an owner id whose
-- secret the caller lacks is recorded as 'refused', with p_by. Takes no
-- hierarchy slot (it decides nothing about who runs); rows are written in
-- resource order, one order of row locks for every caller.
CREATE OR REPLACE PROCEDURE clock_expect_runs(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_every_ms BIGINT, IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: declare the expected period of runs (PostgreSQL expect_runs())'
BEGIN
  DECLARE v_now BIGINT;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_unheld BIGINT;
  DECLARE v_hash VARCHAR(128) CHARACTER SET ascii DEFAULT clock_rec_secret_hash(p_secret);
  DECLARE v_count INT;
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(1024);
  DECLARE v_declared BIGINT;
  DECLARE v_was BIGINT;
  DECLARE v_id BIGINT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  IF p_every_ms IS NULL OR p_every_ms <= 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'expect_runs: the period must be longer than 0';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_now = clock_now_us();
  CALL clock_rec_owner_refuses(p_owner, p_secret, v_refuses);
  IF p_owner IS NULL THEN
    SET v_refuses = TRUE;
  ELSEIF v_refuses THEN
    CALL clock_rec_refused(v_now, p_namespace, p_resources, p_owner, NULL, NULL, NULL, NULL,
                           NULL, NULL, p_by);
  END IF;
  -- Only the holder declares: a live lease of p_owner on every resource,
  -- proven by p_secret (a plain SELECT … INTO: no shared row locks).
  SELECT COUNT(*) INTO v_unheld
  FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
         r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
  LEFT JOIN leases l
    ON l.namespace = p_namespace AND l.resource = CAST(t.r AS BINARY) AND l.owner = p_owner
       AND (l.expires_us IS NULL OR l.expires_us > v_now)
       AND (l.secret_hash IS NULL OR l.secret_hash <=> v_hash)
  WHERE l.owner IS NULL;
  IF NOT v_refuses AND v_unheld = 0 THEN
    -- Each period declared or changed is history ('period_changed', in
    -- period_changes: migration 007), with the declaring lease's facts, who
    -- asked and the login (USER()), read before the upsert below changes it.
    -- Its id is one of history's AUTO_INCREMENT: a row inserted and deleted
    -- again in this transaction, which no other session ever sees.
    SET v_count = JSON_LENGTH(p_resources);
    WHILE v_i < v_count DO
      SET v_resource = clock_rec_nth(p_resources, v_i);
      SELECT COUNT(*), MAX(every_ms) INTO v_declared, v_was FROM expected_runs
      WHERE namespace = p_namespace AND resource = v_resource;
      IF v_declared = 0 OR v_was <> p_every_ms THEN
        INSERT INTO history (at_us, event, namespace, resource, owner)
        VALUES (v_now, 'refused', p_namespace, v_resource, p_owner);
        SET v_id = LAST_INSERT_ID();
        DELETE FROM history WHERE id = v_id;
        INSERT INTO period_changes (id, at_us, namespace, resource, owner, mode, token, host, ip,
                                    pid, user_name, command, forced_by, db_user, every_ms,
                                    previous_every_ms)
        SELECT v_id, v_now, p_namespace, l.resource, p_owner, l.mode, l.token, l.host, l.ip,
               l.pid, l.user_name, l.command, COALESCE(p_by, ''), USER(), p_every_ms,
               IF(v_declared = 0, NULL, v_was)
        FROM leases l
        WHERE l.namespace = p_namespace AND l.resource = v_resource AND l.owner = p_owner;
      END IF;
      SET v_i = v_i + 1;
    END WHILE;
    -- IF(): an unchanged row is left alone (no new row version, no write).
    INSERT INTO expected_runs (namespace, resource, every_ms, declared_us)
    SELECT p_namespace, CAST(t.r AS BINARY), p_every_ms, v_now
    FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
           r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
    ORDER BY CAST(t.r AS BINARY)
    ON DUPLICATE KEY UPDATE every_ms = VALUES(every_ms);
  END IF;
  COMMIT;
  SELECT NOT v_refuses AND v_unheld = 0 AS expect_runs;
END;

-- expected_rows(p_namespace, p_prefix, p_since_usec): a result set of
-- kind, namespace, resource, every_ms, declared_usec, at_usec, as on
-- PostgreSQL: first 'now' (at_usec: the server's clock); 'expected' per
-- resource of the namespace (NULL: all) and prefix (NULL: all); 'success'
-- per start of a successful run at or after since (NULL: now) minus the
-- period, and the latest one before that.
CREATE OR REPLACE PROCEDURE clock_expected_rows(
  IN p_namespace VARBINARY(1024), IN p_prefix VARBINARY(1024), IN p_since_usec BIGINT)
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: expected runs and successes (PostgreSQL expected_rows())'
BEGIN
  DECLARE v_now BIGINT;
  DECLARE v_below VARBINARY(1025) DEFAULT CONCAT(p_prefix, '.');
  DECLARE v_above VARBINARY(1025) DEFAULT CONCAT(p_prefix, '/');
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION READ ONLY;
  SET v_now = clock_now_us();
  WITH e AS (
    SELECT x.namespace, x.resource, x.every_ms, x.declared_us,
           COALESCE(p_since_usec, v_now) - x.every_ms * 1000 AS floor_us
    FROM expected_runs x
    WHERE (p_namespace IS NULL OR x.namespace = p_namespace)
      AND (p_prefix IS NULL OR x.resource = p_prefix
           OR (x.resource > v_below AND x.resource < v_above)))
  SELECT 'now' AS kind, NULL AS namespace, NULL AS resource, NULL AS every_ms,
         NULL AS declared_usec, v_now AS at_usec
  UNION ALL
  SELECT 'expected', e.namespace, e.resource, e.every_ms, e.declared_us, NULL FROM e
  UNION ALL
  SELECT 'success', e.namespace, e.resource, NULL, NULL, s.started_us
  FROM e JOIN successes s
    ON s.namespace = e.namespace AND s.resource = e.resource AND s.started_us >= e.floor_us
  UNION ALL
  SELECT 'success', e.namespace, e.resource, NULL, NULL,
         (SELECT MAX(s.started_us) FROM successes s
          WHERE s.namespace = e.namespace AND s.resource = e.resource
            AND s.started_us < e.floor_us)
  FROM e
  WHERE EXISTS (SELECT 1 FROM successes s
                WHERE s.namespace = e.namespace AND s.resource = e.resource
                  AND s.started_us < e.floor_us);
  COMMIT;
END;
