-- clock on MariaDB: the fast path of clock_try_acquire (20_acquire.sql), as
-- fast path 0 of sql/postgres/functions/24_fast_paths.sql: the re-attempt of
-- an exclusive, queued request of one resource whose live queue entry (same
-- request id) is in place, by an owner the secret proves that does not hold
-- the resource, with no expired related lease to record. When a live
-- related lease of another owner or a live earlier related queue entry of
-- another owner is in the way, the general path could only answer blocked
-- (re-attempts skip the deadlock search) and refresh the entry; this answers
-- so from plain SELECTs without writing the hierarchy's slot row, refreshing
-- only the caller's own queue entry, so that a queue's polls neither take
-- turns on the slot row with one another nor hold up a grant or a release,
-- and each costs a few statements however long the queue (clock_acq_in_the_way
-- lists the first entry ahead and counts up to 64). A change committed after
-- these reads is not missed: waiters poll and look again. Its reply lists
-- the leases in the way, the first queue entry ahead with "ahead", and
-- "mine", the caller's own entry's position. Anything else, or nothing in
-- the way, answers NULL, having written nothing, and the request goes on to
-- the general path. PostgreSQL's fast paths 2 and 3 are not carried over
-- as such: they decide under a shared or a row-level lock of the hierarchy,
-- where MariaDB writes the slot row so that Galera's certification sees
-- every decision (docs/internals/mariadb.md); the general path queues a
-- herd by clock_acq_queue_behind instead.
--
-- Fast path 1 (clock_acq_fast_path_free, below) runs inside the general
-- path, under its slot row, once the owner is proven: a request of one
-- resource, without --once-per, where nothing related exists (no lease,
-- live or expired, on the resource, an ancestor or a descendant, and no
-- other owner's queue entry there) could only be granted, with nothing to
-- expire, no re-entry, no retry of an earlier grant (that would have left
-- this owner's lease) and no deadlock search. It grants in a few
-- statements, and a new session (every `clock run` opens one) then parses
-- none of the general path's other pieces: MariaDB parses each routine a
-- session calls the first time it is called.

-- Fast path 0: p_reply is try_acquire's blocked reply, or NULL to go on.
-- One transaction of its own (READ COMMITTED), before the general path's.
CREATE OR REPLACE PROCEDURE clock_acq_fast_path_waiting(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_expiry_margin_ms BIGINT,
  OUT p_reply LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  DECLARE v_life BIGINT DEFAULT clock_acq_waiter_lifetime(p_ttl_ms);
  DECLARE v_now BIGINT;
  DECLARE v_judged BIGINT;     -- the instant other leases are judged expired at
  DECLARE v_mine BIGINT DEFAULT NULL;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_holds BOOLEAN;
  DECLARE v_expired BOOLEAN;
  DECLARE v_way LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_mine = NULL;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET p_reply = NULL;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_now = clock_now_us();
  SET v_judged = v_now - GREATEST(COALESCE(p_expiry_margin_ms, 0), 0) * 1000;
  SELECT position INTO v_mine FROM waiters
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND request_id = p_request_id AND expires_us > v_now;
  IF v_mine IS NOT NULL THEN
    CALL clock_rec_owner_refuses(p_owner, p_secret, v_refuses);
    SELECT EXISTS (SELECT 1 FROM leases
                   WHERE namespace = p_namespace AND resource = p_resource
                     AND owner = p_owner),
           EXISTS (SELECT 1 FROM leases
                   WHERE namespace = p_namespace AND expires_us <= v_judged
                     AND (resource = v_root
                          OR (resource > CONCAT(v_root, _binary '.')
                              AND resource < CONCAT(v_root, _binary '/')))
                     AND clock_acq_related(resource, p_resource))
      INTO v_holds, v_expired;
    IF NOT v_refuses AND NOT v_holds AND NOT v_expired THEN
      CALL clock_acq_in_the_way(p_namespace, p_resource, p_owner, v_mine, v_judged, v_way);
      IF JSON_LENGTH(v_way, '$.leases') > 0 OR JSON_VALUE(v_way, '$.ahead') > 0 THEN
        -- The refresh clock_acq_enqueue would make: only this owner's
        -- entry, only once half its lifetime is gone.
        UPDATE waiters SET expires_us = v_now + v_life
        WHERE position = v_mine AND expires_us < v_now + v_life DIV 2;
        SET p_reply = JSON_INSERT(v_way, '$.outcome', 'blocked', '$.now', CAST(v_now AS SIGNED),
                                  '$.mine', CAST(v_mine AS SIGNED));
      END IF;
    END IF;
  END IF;
  COMMIT;
END;

-- Fast path 1 (see the top of this file), called by
-- clock_acq_acquire_general under the request's slot row, with p_now its
-- instant: p_result is try_acquire's granted reply, or NULL, having written
-- nothing, for the general path to decide.
CREATE OR REPLACE PROCEDURE clock_acq_fast_path_free(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_ttl_ms BIGINT,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_started BIGINT,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_once_per_ms BIGINT,
  IN p_holder LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_resource VARBINARY(255) DEFAULT clock_rec_nth(p_resources, 0);
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(v_resource, '.', 1);
  DECLARE v_related BOOLEAN DEFAULT TRUE;
  DECLARE v_token BIGINT;
  SET p_result = NULL;
  IF JSON_LENGTH(p_resources) = 1 AND p_once_per_ms IS NULL THEN
    SELECT EXISTS (SELECT 1 FROM leases
                   WHERE namespace = p_namespace
                     AND (resource = v_root
                          OR (resource > CONCAT(v_root, _binary '.')
                              AND resource < CONCAT(v_root, _binary '/')))
                     AND clock_acq_related(resource, v_resource))
        OR EXISTS (SELECT 1 FROM waiters
                   WHERE namespace = p_namespace AND owner <> p_owner
                     AND (resource = v_root
                          OR (resource > CONCAT(v_root, _binary '.')
                              AND resource < CONCAT(v_root, _binary '/')))
                     AND clock_acq_related(resource, v_resource))
      INTO v_related;
  END IF;
  IF NOT v_related THEN
    -- As clock_acq_grant_all for one verdict 'grant': the tokens row last.
    UPDATE tokens SET last = last + 1 WHERE id = 1;
    SELECT last INTO v_token FROM tokens WHERE id = 1;
    INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                        acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid,
                        user_name, command, owner_started_us, secret_hash, db_user,
                        holder_boot_id, holder_pid_ns, holder_pid_start, job_group, job_cgroup)
    VALUES (p_namespace, v_resource, p_owner, p_mode, p_slots, v_token, 1, p_request_id,
            p_now, p_now, IF(p_ttl_ms = 0, NULL, p_now + p_ttl_ms * 1000), p_ttl_ms * 1000,
            COALESCE(p_host, ''), COALESCE(p_ip, ''), COALESCE(p_pid, 0), COALESCE(p_user, ''),
            COALESCE(p_command, ''), p_started, clock_rec_secret_hash(p_secret), USER(),
            JSON_VALUE(p_holder, '$.boot_id'), JSON_VALUE(p_holder, '$.pid_ns'),
            JSON_VALUE(p_holder, '$.pid_start'),
            NULLIF(CAST(JSON_VALUE(p_holder, '$.job_group') AS SIGNED), 0),
            NULLIF(JSON_VALUE(p_holder, '$.job_cgroup'), ''));
    CALL clock_rec_event('acquired', p_now, p_namespace, v_resource, p_owner, NULL, NULL, '',
                         NULL, NULL);
    DELETE FROM waiters
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
    SET p_result = JSON_OBJECT('outcome', 'granted', 'now', CAST(p_now AS SIGNED),
                               'grants', JSON_ARRAY(JSON_OBJECT(
                                 'resource', CONVERT(v_resource USING utf8mb4),
                                 'token', CAST(v_token AS SIGNED), 'depth', 1)));
  END IF;
END;
