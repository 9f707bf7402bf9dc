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
-- the general path. PostgreSQL's fast paths 1 to 3 are not carried over:
-- they decide under a shared or a row-level lock of the hierarchy, where
-- MariaDB writes the slot row so that Galera's certification sees every
-- decision (docs/internals/mariadb.md).

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
