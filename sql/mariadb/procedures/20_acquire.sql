-- clock on MariaDB: taking locks, as sql/postgres/functions/20_acquire.sql.
-- One CALL clock_try_acquire(…) is one attempt and one transaction.
--
-- The call: PostgreSQL's try_acquire parameters in PostgreSQL's order,
--   clock_try_acquire(p_namespace, p_resources JSON array, p_mode
--     'exclusive'|'shared', p_slots INT, p_owner uuid text, p_ttl_ms BIGINT
--     (0: never expires), p_request_id, p_queue BOOLEAN, p_host, p_ip,
--     p_pid, p_user, p_command, p_started BIGINT microseconds or NULL,
--     p_record_refusal BOOLEAN, p_secret, p_by, p_once_per_ms BIGINT or NULL,
--     p_holder JSON or NULL, p_expiry_margin_ms BIGINT)
-- (a MariaDB procedure has no parameter defaults: pass NULL for no
-- --once-per and no holder trace, 0 for no margin). p_holder: clock run's
-- trace, written on each lease the grant inserts (70_dead_holder.sql).
-- p_expiry_margin_ms is MariaDB's own: on a Galera node another owner's
-- lease counts as expired only that long after its expiry, by this node's
-- clock (the client measures how far the nodes' clocks are apart:
-- src/store/mariadb/node_clocks.hpp).
--
-- The result: one result set of one row and one column, `try_acquire`,
-- holding the JSON document PostgreSQL's try_acquire returns, instants in
-- microseconds since 1970 UTC ("now" is the server clock of the decision):
--   {"outcome": "granted", "now", "grants": [{resource, token, depth}…]}
--     in request order;
--   {"outcome": "blocked", "now", "leases": [lease…], "waiters": [entry…]}
--     who is in the way, leases by token, queue entries by position (as
--     lease_json()/waiter_json(): namespace, resource, owner, mode, slots,
--     token, depth, acquired_at, renewed_at, expires_at, expired, host, ip,
--     pid, user, command, started / … position, since, expires_at …);
--   {"outcome": "deadlock", "now", "cycle": [{owner, host, resource}…]};
--   {"outcome": "slots_mismatch" | "upgrade", "now", "resource", "slots",
--     "other_slots"};
--   {"outcome": "done", "now", "done_by": {resource, owner, host, token,
--     started}} (--once-per: the period is done);
--   {"outcome": "not_proven", "now", "resource"} (the secret does not
--     prove the owner: recorded 'refused' with p_by).
-- Then the status packet. Bad arguments: SQLSTATE 22023 with PostgreSQL's
-- message, as the other procedures.
--
-- How one CALL serialises with the others (docs/internals/mariadb.md): READ
-- COMMITTED for its one transaction; the slot rows of the request's
-- hierarchies (clock_rec_hierarchy_slot, the same slots as renew and release) written
-- first, in slot order, so two calls never wait for each other in a cycle;
-- then clock_now_us() read once; every read is a plain SELECT (INTO or a FOR
-- loop), which takes no row locks at READ COMMITTED and sees all that the
-- previous holder of the slot row committed (15_records_util.sql explains
-- the shared locks of the other forms and the deadlocks they caused); the
-- tokens row is written last, just before the leases it numbers, so the
-- one row all grants share is held for the inserts and the commit only.
-- Tokens are then strictly increasing in commit order, across hierarchies.
-- An EXIT HANDLER rolls the whole call back and re-raises on any error.
--
-- The pieces, as on PostgreSQL: clock_acq_decide_all (21_decide.sql), then
-- for a blocked request clock_acq_search_deadlock (23_deadlock.sql) and
-- clock_acq_queue_blocked (22_queue.sql), for a grantable one
-- clock_acq_reentry_refused, a done --once-per period (clock_acq_period_done,
-- clock_acq_skip_done_period) and clock_acq_grant_all (below).
--
-- Differences from PostgreSQL: of its fast paths (24_fast_paths.sql) fast
-- path 0, a queued request's re-attempt answered without the slot row, and
-- fast path 1, a request nothing related stands in the way of, granted
-- under the slot rows inside the general path; every other request takes
-- the general path, clock_acq_acquire_general below, under its slot rows
-- written exclusively (PostgreSQL's fast path 3 queues a herd under a
-- shared lock, which Galera would not see); no NOTIFY (waiters poll); -n
-- does not use NOWAIT on the slot rows (a hierarchy held by a long
-- transaction of another program is waited for up to
-- innodb_lock_wait_timeout, error 1205, which the store retries).
CREATE OR REPLACE PROCEDURE clock_try_acquire(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_queue BOOLEAN,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_record_refusal BOOLEAN, IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_once_per_ms BIGINT,
  IN p_holder LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_expiry_margin_ms BIGINT)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: one attempt at taking every resource of a request (PostgreSQL try_acquire())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL;
  CALL clock_rec_check_names(p_namespace, p_resources);
  CALL clock_rec_check_command(p_command);
  SET v_owner = clock_rec_owner(p_owner);
  IF p_mode IS NULL OR p_mode NOT IN ('exclusive', 'shared') OR p_slots IS NULL OR p_slots < 0
     OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR v_owner IS NULL
     OR COALESCE(p_request_id, '') = '' OR LENGTH(p_request_id) > 64 OR p_queue IS NULL THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'try_acquire: invalid mode, slots, ttl, owner or request id';
  END IF;
  IF p_holder IS NOT NULL AND NOT COALESCE(
       JSON_VALID(p_holder) AND JSON_TYPE(JSON_EXTRACT(p_holder, '$.boot_id')) = 'STRING'
       AND LENGTH(JSON_VALUE(p_holder, '$.boot_id')) <= 64
       AND JSON_TYPE(JSON_EXTRACT(p_holder, '$.pid_ns')) = 'INTEGER'
       AND JSON_TYPE(JSON_EXTRACT(p_holder, '$.pid_start')) = 'INTEGER'
       AND CAST(JSON_VALUE(p_holder, '$.pid_start') AS SIGNED) >= 0
       AND JSON_TYPE(JSON_EXTRACT(p_holder, '$.job_group')) = 'INTEGER'
       AND JSON_TYPE(JSON_EXTRACT(p_holder, '$.job_cgroup')) = 'STRING'
       AND LENGTH(JSON_VALUE(p_holder, '$.job_cgroup')) <= 4096, FALSE) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'try_acquire: invalid holder trace (boot id up to 64 bytes, pid '
                         'namespace, start time, job group, cgroup up to 4096 bytes)';
  END IF;
  IF JSON_LENGTH(p_resources) = 1 AND p_queue AND p_mode = 'exclusive' AND p_slots = 0 THEN
    CALL clock_acq_fast_path_waiting(p_namespace, clock_rec_nth(p_resources, 0), v_owner,
                                     p_ttl_ms, p_request_id, p_secret, p_expiry_margin_ms,
                                     v_result);
  END IF;
  IF v_result IS NULL THEN
    CALL clock_acq_acquire_general(p_namespace, p_resources, p_mode, p_slots, v_owner, p_ttl_ms,
                                   p_request_id, p_queue, p_host, p_ip, p_pid, p_user, p_command,
                                   p_started, p_record_refusal, p_secret, p_by, p_once_per_ms,
                                   p_holder, p_expiry_margin_ms, v_result);
  END IF;
  SELECT v_result AS try_acquire;
END;

-- The general path of clock_try_acquire (acquire_general() on PostgreSQL),
-- for any request, with its arguments checked and the owner id parsed:
-- p_result is try_acquire's reply. Under the request's slot rows, each
-- resource's expired related leases are removed and its verdict taken
-- (clock_acq_decide_all, 21_decide.sql); a blocked request is searched for
-- a deadlock (clock_acq_search_deadlock, 23_deadlock.sql) and otherwise
-- queued or, with -n, recorded as skipped (clock_acq_queue_blocked,
-- 22_queue.sql); a grantable one is checked for the owner's proof on
-- re-entry and for a done --once-per period, then granted, all or none
-- (clock_acq_grant_all).
CREATE OR REPLACE PROCEDURE clock_acq_acquire_general(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_queue BOOLEAN,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_record_refusal BOOLEAN, IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_once_per_ms BIGINT,
  IN p_holder LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_expiry_margin_ms BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_refuses BOOLEAN;
  DECLARE v_now BIGINT;
  DECLARE v_judged BIGINT;     -- the instant other leases are judged expired at
  DECLARE v_verdicts, v_leases, v_waiters, v_blockers, v_cycle, v_done LONGTEXT
    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET p_result = NULL;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  SET v_now = clock_now_us();  -- after the slot rows: one reading per call
  -- A lease is expired a margin past its expiry (a Galera node's clock may run ahead).
  SET v_judged = v_now - GREATEST(COALESCE(p_expiry_margin_ms, 0), 0) * 1000;
  -- The owner proof first: an id bound to another secret is granted nothing,
  -- queued nowhere and keeps its queue entries; recorded with who asked.
  CALL clock_rec_owner_refuses(p_owner, p_secret, v_refuses);
  IF v_refuses THEN
    CALL clock_rec_refused(v_now, p_namespace, p_resources, p_owner, p_mode, p_host, p_ip, p_pid,
                           p_user, p_command, p_by);
    SET p_result = JSON_OBJECT('outcome', 'not_proven', 'now', CAST(v_now AS SIGNED),
                               'resource', JSON_VALUE(p_resources, '$[0]'));
  ELSE
    main: BEGIN
      -- Nothing related at all: granted in a few statements (fast path 1,
      -- 24_fast_paths.sql). Else a herd's first attempts at a busy
      -- resource: queued without a walk of the whole queue (22_queue.sql).
      CALL clock_acq_fast_path_free(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                    p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                                    p_started, p_secret, p_once_per_ms, p_holder, v_now, p_result);
      IF p_result IS NULL THEN
        CALL clock_acq_queue_behind(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                    p_request_id, p_queue, p_host, p_ip, p_pid, p_user,
                                    p_command, p_started, p_secret, v_now, v_judged, p_result);
      END IF;
      IF p_result IS NOT NULL THEN
        LEAVE main;
      END IF;
      CALL clock_acq_decide_all(p_namespace, p_resources, p_mode, p_slots, p_owner, p_request_id,
                                v_judged, v_now, v_verdicts, p_result, v_leases, v_waiters,
                                v_blockers);
      IF p_result IS NOT NULL THEN
        LEAVE main;
      END IF;

      IF JSON_LENGTH(v_blockers) > 0 THEN
        CALL clock_acq_search_deadlock(p_owner, p_request_id, p_host, v_blockers, v_now, v_cycle);
        IF v_cycle IS NOT NULL THEN
          -- Not queued, and out of the queue: the others can proceed.
          CALL clock_acq_dequeue(p_namespace, p_resources, p_owner);
          SET p_result = JSON_OBJECT('outcome', 'deadlock', 'now', CAST(v_now AS SIGNED),
                                     'cycle', JSON_EXTRACT(v_cycle, '$'));
          LEAVE main;
        END IF;
        CALL clock_acq_queue_blocked(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                                     p_request_id, p_queue, p_host, p_ip, p_pid, p_user,
                                     p_command, p_started, p_record_refusal, p_secret, v_leases,
                                     v_waiters, v_now, p_result);
        LEAVE main;
      END IF;

      CALL clock_acq_reentry_refused(p_namespace, p_resources, v_verdicts, p_owner, p_secret,
                                     p_by, v_now, p_result);
      IF p_result IS NOT NULL THEN
        LEAVE main;
      END IF;

      -- --once-per, under the slot rows that release holds while it records
      -- a success. A retry of a grant that took effect is not a new run.
      IF p_once_per_ms IS NOT NULL AND NOT JSON_CONTAINS(v_verdicts, '"again"') THEN
        CALL clock_acq_period_done(p_namespace, p_resources, p_once_per_ms, v_now, v_done);
        IF v_done IS NOT NULL THEN
          CALL clock_acq_skip_done_period(v_done, p_namespace, p_resources, v_now, p_owner,
                                          p_mode, p_host, p_ip, p_pid, p_user, p_command,
                                          p_result);
          LEAVE main;
        END IF;
      END IF;

      CALL clock_acq_grant_all(p_namespace, p_resources, v_verdicts, p_mode, p_slots, p_owner,
                               p_ttl_ms, p_request_id, p_host, p_ip, p_pid, p_user, p_command,
                               p_started, p_secret, p_holder, v_now, p_result);
    END main;
  END IF;
  COMMIT;
END;

-- Re-entering joins a lease: only its owner may, proven by the secret. Of
-- the resources whose verdict (p_verdicts, a JSON array as
-- clock_acq_decide_all gives them) is 'reenter', the first whose lease
-- p_secret does not prove is recorded 'refused' with p_by and named in
-- try_acquire's not_proven reply, p_result; NULL when the secret proves
-- them all (reentry_refused() on PostgreSQL).
CREATE OR REPLACE PROCEDURE clock_acq_reentry_refused(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_verdicts LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_hash VARCHAR(128) CHARACTER SET ascii;
  DECLARE v_found BOOLEAN;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  SET p_result = NULL;
  each_resource: WHILE v_i < JSON_LENGTH(p_resources) DO
    IF JSON_VALUE(p_verdicts, CONCAT('$[', v_i, ']')) = 'reenter' THEN
      SET v_resource = clock_rec_nth(p_resources, v_i);
      SELECT secret_hash INTO v_hash FROM leases
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      -- Not implied by the owner's proof: that ran before the hierarchy
      -- lock, and another caller naming the same owner id with another
      -- secret may have committed this lease since.
      IF NOT clock_rec_proves(v_hash, p_secret) THEN
        CALL clock_rec_event('refused', p_now, p_namespace, v_resource, p_owner, NULL,
                             NULL, COALESCE(p_by, ''), NULL, NULL);
        SET p_result = JSON_OBJECT('outcome', 'not_proven', 'now', CAST(p_now AS SIGNED),
                                   'resource', CONVERT(v_resource USING utf8mb4));
        LEAVE each_resource;
      END IF;
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
END;

-- --once-per D: whether a request that would be granted finds its period
-- done, p_done: the latest successful run (last_success) of one of its
-- resources granted at or after p_now - D (at the boundary it still
-- counts), as {resource, owner, host, token, started}, of several the first
-- in byte order; NULL when there is none (period_done() on PostgreSQL).
-- Read under the slot rows that clock_release holds while it records a
-- success, so a request granted after the run that did the period finds it.
CREATE OR REPLACE PROCEDURE clock_acq_period_done(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_once_per_ms BIGINT, IN p_now BIGINT,
  OUT p_done LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET p_done = NULL;
  SET p_done = NULL;
  SELECT JSON_OBJECT('resource', CONVERT(s.resource USING utf8mb4), 'owner', s.owner,
                     'host', s.host, 'token', CAST(s.token AS SIGNED),
                     'started', CAST(s.started_us AS SIGNED))
    INTO p_done
  FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
         r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
  JOIN last_success s ON s.namespace = p_namespace AND s.resource = CAST(t.r AS BINARY)
  WHERE s.started_us >= p_now - p_once_per_ms * 1000
  ORDER BY s.resource LIMIT 1;
END;

-- --once-per D: the request's period is done (p_done: {resource, owner,
-- host, token, started} of the run that did it, as clock_acq_period_done
-- found it). Records the request as
-- skipped naming that run, takes it out of the queue and sets p_result to
-- try_acquire's reply {"outcome": "done", "done_by": p_done}
-- (skip_done_period() on PostgreSQL).
CREATE OR REPLACE PROCEDURE clock_acq_skip_done_period(
  IN p_done LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_namespace VARBINARY(255),
  IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  CALL clock_rec_missed('skipped', p_now, p_namespace, p_resources, p_owner, p_mode, p_host, p_ip,
                        p_pid, p_user, p_command, p_done);
  CALL clock_acq_dequeue(p_namespace, p_resources, p_owner);
  SET p_result = JSON_OBJECT('outcome', 'done', 'now', CAST(p_now AS SIGNED),
                             'done_by', JSON_EXTRACT(p_done, '$'));
END;

-- The grant of a request that nothing is in the way of, all or none, by
-- each resource's verdict (p_verdicts): 'again' (a retry) reports the lease
-- it made, 'reenter' deepens the owner's lease, 'grant' inserts a new one
-- (recorded 'acquired', with p_holder's trace). The request leaves the
-- queue. p_result:
-- try_acquire's granted reply, its grants in request order (grant_all()
-- on PostgreSQL). The tokens row last: one write draws the tokens of every
-- new lease of the request, in request order, and the row all grants share
-- is held for the inserts and the commit only.
CREATE OR REPLACE PROCEDURE clock_acq_grant_all(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_verdicts LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_holder LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_expires BIGINT DEFAULT IF(p_ttl_ms = 0, NULL, p_now + p_ttl_ms * 1000);
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_verdict VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_new INT;
  DECLARE v_next BIGINT;       -- the last token drawn
  DECLARE v_token BIGINT;
  DECLARE v_depth INT;
  DECLARE v_grants LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_found BOOLEAN;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  SELECT COUNT(*) INTO v_new
  FROM JSON_TABLE(p_verdicts, '$[*]' COLUMNS (
         v VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
  WHERE t.v = 'grant';
  IF v_new > 0 THEN
    UPDATE tokens SET last = last + v_new WHERE id = 1;
    SELECT last - v_new INTO v_next FROM tokens WHERE id = 1;
  END IF;
  WHILE v_i < JSON_LENGTH(p_resources) DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    SET v_verdict = JSON_VALUE(p_verdicts, CONCAT('$[', v_i, ']'));
    IF v_verdict = 'reenter' THEN
      -- The longer of the two leases wins; no expiry beats any expiry.
      UPDATE leases
      SET depth = depth + 1, request_id = p_request_id, renewed_us = p_now,
          expires_us = IF(expires_us IS NULL OR v_expires IS NULL, NULL,
                          GREATEST(expires_us, v_expires))
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
    ELSEIF v_verdict = 'grant' THEN
      SET v_next = v_next + 1;
      INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                          acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid,
                          user_name, command, owner_started_us, secret_hash, db_user,
                          holder_boot_id, holder_pid_ns, holder_pid_start, job_group, job_cgroup)
      VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, v_next, 1, p_request_id,
              p_now, p_now, v_expires, p_ttl_ms * 1000, COALESCE(p_host, ''),
              COALESCE(p_ip, ''), COALESCE(p_pid, 0), COALESCE(p_user, ''),
              COALESCE(p_command, ''), p_started, clock_rec_secret_hash(p_secret), USER(),
              JSON_VALUE(p_holder, '$.boot_id'), JSON_VALUE(p_holder, '$.pid_ns'),
              JSON_VALUE(p_holder, '$.pid_start'),
              NULLIF(CAST(JSON_VALUE(p_holder, '$.job_group') AS SIGNED), 0),
              NULLIF(JSON_VALUE(p_holder, '$.job_cgroup'), ''));
      CALL clock_rec_event('acquired', p_now, p_namespace, v_resource, p_owner, NULL,
                           NULL, '', NULL, NULL);
    END IF;
    SELECT token, depth INTO v_token, v_depth FROM leases
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
    SET v_grants = JSON_ARRAY_APPEND(v_grants, '$', JSON_OBJECT(
      'resource', CONVERT(v_resource USING utf8mb4), 'token', CAST(v_token AS SIGNED),
      'depth', CAST(v_depth AS SIGNED)));
    SET v_i = v_i + 1;
  END WHILE;
  CALL clock_acq_dequeue(p_namespace, p_resources, p_owner);
  SET p_result = JSON_OBJECT('outcome', 'granted', 'now', CAST(p_now AS SIGNED),
                             'grants', JSON_EXTRACT(v_grants, '$'));
END;
