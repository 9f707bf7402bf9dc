-- clock on MariaDB: the queue, as sql/postgres/functions/22_queue.sql. A
-- request that cannot be granted waits in a first-come, first-served queue
-- per resource (waiters): its entry is written by the first blocked attempt
-- (clock_acq_enqueue), refreshed by the next ones, and leaves with the
-- grant, a deadlock, a done --once-per period, the waiter giving up
-- (clock_leave_queue, 30_renew_release.sql) or, once it lapses, whoever
-- meets it. A later conflicting request never overtakes a live earlier
-- entry (clock_acq_decide, 21_decide.sql). Entry lifetime:
-- clock_acq_waiter_lifetime (10_util.sql).
--
-- Queue order is the AUTO_INCREMENT position: every insert into a
-- hierarchy's queue happens under its slot row and commits before the row
-- is released, so on one server positions follow the order in which grants
-- see entries (on Galera too, where order matters: docs/internals/mariadb.md).

-- Enters (or keeps) the owner in the queue of every resource of a blocked
-- request. A live entry keeps its position and is rewritten only when half
-- its lifetime is gone or the request changed (fewer writes); a dead one is
-- replaced, so a waiter that lapsed goes to the back.
CREATE OR REPLACE PROCEDURE clock_acq_enqueue(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT, IN p_now BIGINT,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_life BIGINT DEFAULT clock_acq_waiter_lifetime(p_ttl_ms);
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_found BOOLEAN;
  DECLARE v_expires BIGINT;
  DECLARE v_request VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_slots INT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  WHILE v_i < JSON_LENGTH(p_resources) DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    SET v_found = TRUE;
    SELECT expires_us, request_id, mode, slots INTO v_expires, v_request, v_mode, v_slots
    FROM waiters WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
    IF v_found AND v_expires <= p_now THEN
      DELETE FROM waiters
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      SET v_found = FALSE;
    END IF;
    IF NOT v_found THEN
      INSERT INTO waiters (namespace, resource, owner, mode, slots, request_id, enqueued_us,
                           expires_us, host, ip, pid, user_name, command, owner_started_us,
                           secret_hash, db_user)
      VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, p_request_id, p_now,
              p_now + v_life, COALESCE(p_host, ''), COALESCE(p_ip, ''), COALESCE(p_pid, 0),
              COALESCE(p_user, ''), COALESCE(p_command, ''), p_started,
              clock_rec_secret_hash(p_secret), USER());
    ELSEIF v_expires < p_now + v_life DIV 2 OR v_request <> p_request_id OR v_mode <> p_mode
           OR v_slots <> p_slots THEN
      UPDATE waiters
      SET expires_us = p_now + v_life, request_id = p_request_id, mode = p_mode,
          slots = p_slots
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
END;

-- A blocked request of clock_try_acquire: queued (clock_acq_enqueue) or,
-- with -n, recorded as skipped (p_record_refusal) naming the first in the
-- way. p_result: try_acquire's blocked reply, the leases in the way by
-- token, the queue entries by position, each once (queue_blocked() on
-- PostgreSQL).
CREATE OR REPLACE PROCEDURE clock_acq_queue_blocked(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_queue BOOLEAN,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_record_refusal BOOLEAN, IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DEFAULT clock_acq_sorted(p_leases, 'token');
  DECLARE v_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DEFAULT clock_acq_sorted(p_waiters, 'position');
  IF p_queue THEN
    CALL clock_acq_enqueue(p_namespace, p_resources, p_mode, p_slots, p_owner, p_ttl_ms,
                           p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started, p_now,
                           p_secret);
  ELSEIF p_record_refusal THEN
    CALL clock_rec_missed('skipped', p_now, p_namespace, p_resources, p_owner, p_mode, p_host,
                          p_ip, p_pid, p_user, p_command,
                          clock_acq_first_in_the_way(v_leases, v_waiters));
  END IF;
  SET p_result = JSON_OBJECT('outcome', 'blocked', 'now', CAST(p_now AS SIGNED),
                             'leases', JSON_EXTRACT(v_leases, '$'),
                             'waiters', JSON_EXTRACT(v_waiters, '$'));
END;

-- Removes the owner queue entries for the resources of a request (granted,
-- deadlocked, or its period done). No wake-up to send: MariaDB has no
-- NOTIFY; waiters poll (docs/internals/mariadb.md).
CREATE OR REPLACE PROCEDURE clock_acq_dequeue(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_i INT DEFAULT 0;
  WHILE v_i < JSON_LENGTH(p_resources) DO
    DELETE FROM waiters
    WHERE namespace = p_namespace AND resource = clock_rec_nth(p_resources, v_i)
      AND owner = p_owner;
    SET v_i = v_i + 1;
  END WHILE;
END;

-- What stands in the way of a queued exclusive request of one resource,
-- for the blocked replies of fast path 0 and clock_acq_queue_behind
-- (in_the_way() on PostgreSQL): p_way is {"leases": the live related
-- leases of other owners by token, "ahead": how many live related queue
-- entries of other owners come before position p_mine (all of them when it
-- is NULL), counted up to 64, "waiters": the first of them}, not the whole
-- queue: a herd's attempts would each cost the queue's length. Live as
-- judged at p_now. Plain SELECTs: at READ COMMITTED they take no row locks.
CREATE OR REPLACE PROCEDURE clock_acq_in_the_way(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_mine BIGINT, IN p_now BIGINT,
  OUT p_way LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  DECLARE v_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_first LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL;
  DECLARE v_ahead INT DEFAULT 0;
  DECLARE v_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  -- A row read by its key may have gone since (nothing is locked): then
  -- its command is NULL, or the first entry ahead is left out.
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_command = NULL;
  -- The hierarchy is the root and the keys strictly between 'root.' and
  -- 'root/' (as clock_acq_decide reads it); the command of a lease is read
  -- by its key (the FOR loop's copy leaves TEXT out).
  FOR l IN (SELECT namespace, resource, owner, mode, slots, token, depth, acquired_us, renewed_us,
                   expires_us, host, ip, pid, user_name, owner_started_us FROM leases
            WHERE namespace = p_namespace AND owner <> p_owner
              AND (expires_us IS NULL OR expires_us > p_now)
              AND (resource = v_root
                   OR (resource > CONCAT(v_root, _binary '.')
                       AND resource < CONCAT(v_root, _binary '/')))
              AND clock_acq_related(resource, p_resource)
            ORDER BY token) DO
    SET v_command = NULL;
    SELECT command INTO v_command FROM leases
    WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
    SET v_leases = JSON_ARRAY_APPEND(v_leases, '$', JSON_EXTRACT(
      clock_acq_lease_json(l.namespace, l.resource, l.owner, l.mode, l.slots, l.token, l.depth,
                           l.acquired_us, l.renewed_us, l.expires_us, p_now, l.host, l.ip,
                           l.pid, l.user_name, v_command, l.owner_started_us), '$'));
  END FOR;
  SELECT COUNT(*) INTO v_ahead
  FROM (SELECT 1 FROM waiters
        WHERE namespace = p_namespace AND owner <> p_owner AND expires_us > p_now
          AND (p_mine IS NULL OR position < p_mine)
          AND (resource = v_root
               OR (resource > CONCAT(v_root, _binary '.')
                   AND resource < CONCAT(v_root, _binary '/')))
          AND clock_acq_related(resource, p_resource)
        LIMIT 64) AS ahead;
  IF v_ahead > 0 THEN
    SELECT clock_acq_waiter_json(namespace, resource, owner, mode, slots, position, enqueued_us,
                                 expires_us, host, ip, pid, user_name, command, owner_started_us)
    INTO v_first
    FROM waiters
    WHERE namespace = p_namespace AND owner <> p_owner AND expires_us > p_now
      AND (p_mine IS NULL OR position < p_mine)
      AND (resource = v_root
           OR (resource > CONCAT(v_root, _binary '.')
               AND resource < CONCAT(v_root, _binary '/')))
      AND clock_acq_related(resource, p_resource)
    ORDER BY position LIMIT 1;
  END IF;
  SET p_way = JSON_OBJECT('leases', JSON_EXTRACT(v_leases, '$'),
                          'ahead', CAST(v_ahead AS SIGNED),
                          'waiters', JSON_EXTRACT(IF(v_first IS NULL, '[]',
                                                     CONCAT('[', v_first, ']')), '$'));
END;

-- May the first blocked attempt of an exclusive, queued request of one
-- resource be answered by clock_acq_queue_behind (may_queue_fast() on
-- PostgreSQL)? Only when its owner holds no live lease and waits for nothing
-- else (so nobody can wait for it and no deadlock search is due) and no
-- expired related lease is left to record. Judged at p_now (the general
-- path's instant for other owners' rows: more count as live, fewer take
-- this path). A procedure, not a function: a function's subqueries would
-- take shared row locks (15_records_util.sql).
CREATE OR REPLACE PROCEDURE clock_acq_may_queue_fast(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_may BOOLEAN)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  SELECT NOT EXISTS (SELECT 1 FROM leases
                     WHERE owner = p_owner AND (expires_us IS NULL OR expires_us > p_now))
     AND NOT EXISTS (SELECT 1 FROM waiters
                     WHERE owner = p_owner AND expires_us > p_now
                       AND NOT (namespace = p_namespace AND resource = p_resource
                                AND request_id = p_request_id))
     AND NOT EXISTS (SELECT 1 FROM leases
                     WHERE namespace = p_namespace AND expires_us <= p_now
                       AND (resource = v_root
                            OR (resource > CONCAT(v_root, _binary '.')
                                AND resource < CONCAT(v_root, _binary '/')))
                       AND clock_acq_related(resource, p_resource))
    INTO p_may;
END;

-- The general path's shortcut for a herd's first attempts (queue_behind()
-- on PostgreSQL, its fast path 2), under the request's slot row: an
-- exclusive, queued request of one resource that clock_acq_may_queue_fast
-- lets through, with a live related lease of another owner or a live
-- related queue entry of another owner ahead of the caller's own in the
-- way, is queued (clock_acq_enqueue), and p_reply is try_acquire's blocked
-- reply: the leases in the way, the first entry ahead with "ahead", counted
-- up to 64, and "mine", not the whole queue, which each arrival would
-- otherwise walk. NULL, having written nothing, for any other request or
-- when nothing is in the way (the general path then grants). p_now: the
-- call's instant; p_judged: the one other owners' rows are judged at.
CREATE OR REPLACE PROCEDURE clock_acq_queue_behind(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_queue BOOLEAN,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT, IN p_judged BIGINT,
  OUT p_reply LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_resource VARBINARY(255) DEFAULT clock_rec_nth(p_resources, 0);
  DECLARE v_may BOOLEAN DEFAULT FALSE;
  DECLARE v_mine BIGINT DEFAULT NULL;
  DECLARE v_way LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_mine = NULL;
  SET p_reply = NULL;
  IF JSON_LENGTH(p_resources) = 1 AND p_queue AND p_mode = 'exclusive' AND p_slots = 0 THEN
    CALL clock_acq_may_queue_fast(p_namespace, v_resource, p_owner, p_request_id, p_judged,
                                  v_may);
  END IF;
  IF v_may THEN
    SELECT position INTO v_mine FROM waiters
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
      AND expires_us > p_now;
    CALL clock_acq_in_the_way(p_namespace, v_resource, p_owner, v_mine, p_judged, v_way);
    IF JSON_LENGTH(v_way, '$.leases') > 0 OR JSON_VALUE(v_way, '$.ahead') > 0 THEN
      CALL clock_acq_enqueue(p_namespace, p_resources, 'exclusive', 0, p_owner, p_ttl_ms,
                             p_request_id, p_host, p_ip, p_pid, p_user, p_command, p_started,
                             p_now, p_secret);
      SET v_mine = NULL;
      SELECT position INTO v_mine FROM waiters
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      SET p_reply = JSON_INSERT(v_way, '$.outcome', 'blocked', '$.now', CAST(p_now AS SIGNED),
                                '$.mine', CAST(v_mine AS SIGNED));
    END IF;
  END IF;
END;
