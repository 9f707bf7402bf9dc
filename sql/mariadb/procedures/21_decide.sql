-- clock on MariaDB: the decision of an acquire, for one resource of a
-- request, as sql/postgres/functions/21_decide.sql: can it be granted now?
-- clock_acq_decide weighs the live leases and the earlier live queue
-- entries of other owners on the resource, its ancestors and its
-- descendants (related resources conflict unless both are shared), and a
-- semaphore's slots, the queue entries by clock_acq_decide_waiters;
-- clock_acq_decide_all does it for every resource of a request, each after
-- its expired related leases are removed (clock_acq_expire_related). They
-- run inside clock_try_acquire (20_acquire.sql), under the hierarchy slot
-- rows it wrote, with its one reading of the clock.
-- Every read is a plain SELECT (INTO, or a FOR loop): at READ COMMITTED it
-- takes no row locks and sees what the previous holder of the slot row
-- committed. A FOR loop's rows are copied into a temporary table first (a
-- stored procedure's cursor is materialised): its columns leave out the
-- TEXT command, which would put that table on disk, and the command of a
-- row in the way is read by its key.

-- p_verdict: 'again' (this request id already holds it: a retry),
-- 'reenter', 'grant', 'blocked', 'slots_mismatch' or 'upgrade';
-- p_other_slots: the slots of the lease or entry that disagrees. The leases
-- and queue entries in the way are appended (as lease/waiter JSON) to
-- p_leases and p_waiters, and {owner, resource, host} of each to
-- p_blockers, the deadlock search's starting points.
CREATE OR REPLACE PROCEDURE clock_acq_decide(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_verdict VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, OUT p_other_slots INT,
  INOUT p_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  INOUT p_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  INOUT p_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  DECLARE v_found BOOLEAN DEFAULT TRUE;
  DECLARE v_request VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_slots INT;
  DECLARE v_holders INT DEFAULT 0;       -- other owners' slots of this very semaphore
  DECLARE v_holder_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_holder_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_blocked BOOLEAN DEFAULT FALSE;
  DECLARE v_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  SET p_verdict = 'grant';
  SET p_other_slots = 0;
  SELECT request_id, mode, slots INTO v_request, v_mode, v_slots FROM leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND (expires_us IS NULL OR expires_us > p_now);
  IF v_found THEN
    SET p_verdict = CASE WHEN v_request = p_request_id THEN 'again'
                         WHEN v_slots <> p_slots THEN 'slots_mismatch'
                         WHEN v_mode = 'shared' AND p_mode = 'exclusive' THEN 'upgrade'
                         ELSE 'reenter' END;
    SET p_other_slots = v_slots;
  ELSE
    -- The hierarchy is the root and the keys strictly between 'root.' and
    -- 'root/' (VARBINARY byte order, 001_schema.sql): a primary-key range.
    for_l: FOR l IN (SELECT namespace, resource, owner, mode, slots, token, depth, acquired_us, renewed_us,
                     expires_us, host, ip, pid, user_name, owner_started_us FROM leases
              WHERE namespace = p_namespace AND owner <> p_owner
                AND (expires_us IS NULL OR expires_us > p_now)
                AND (resource = v_root
                     OR (resource > CONCAT(v_root, _binary '.')
                         AND resource < CONCAT(v_root, _binary '/')))
                AND clock_acq_related(resource, p_resource)
              ORDER BY token) DO
      IF p_verdict = 'slots_mismatch' THEN
        ITERATE for_l;
      END IF;
      IF l.slots > 0 AND p_slots > 0 AND l.resource = p_resource THEN
        IF l.slots <> p_slots THEN
          SET p_verdict = 'slots_mismatch', p_other_slots = l.slots;
        ELSE
          SET v_holders = v_holders + 1;
          SELECT command INTO v_command FROM leases
          WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
          SET v_holder_leases = JSON_ARRAY_APPEND(v_holder_leases, '$', JSON_EXTRACT(
            clock_acq_lease_json(l.namespace, l.resource, l.owner, l.mode, l.slots, l.token,
                                 l.depth, l.acquired_us, l.renewed_us, l.expires_us, p_now,
                                 l.host, l.ip, l.pid, l.user_name, v_command,
                                 l.owner_started_us), '$'));
          SET v_holder_blockers = JSON_ARRAY_APPEND(v_holder_blockers, '$', JSON_OBJECT(
            'owner', l.owner, 'resource', CONVERT(l.resource USING utf8mb4), 'host', l.host));
        END IF;
      ELSEIF NOT (l.mode = 'shared' AND p_mode = 'shared') THEN
        SET v_blocked = TRUE;
        SELECT command INTO v_command FROM leases
        WHERE namespace = l.namespace AND resource = l.resource AND owner = l.owner;
        SET p_leases = JSON_ARRAY_APPEND(p_leases, '$', JSON_EXTRACT(
          clock_acq_lease_json(l.namespace, l.resource, l.owner, l.mode, l.slots, l.token,
                               l.depth, l.acquired_us, l.renewed_us, l.expires_us, p_now,
                               l.host, l.ip, l.pid, l.user_name, v_command,
                               l.owner_started_us), '$'));
        SET p_blockers = JSON_ARRAY_APPEND(p_blockers, '$', JSON_OBJECT(
          'owner', l.owner, 'resource', CONVERT(l.resource USING utf8mb4), 'host', l.host));
      END IF;
    END FOR for_l;
  END IF;
  IF p_verdict = 'grant' THEN
    IF p_slots > 0 AND v_holders >= p_slots THEN
      SET v_blocked = TRUE;
      SET p_leases = JSON_MERGE_PRESERVE(p_leases, v_holder_leases);
      SET p_blockers = JSON_MERGE_PRESERVE(p_blockers, v_holder_blockers);
    END IF;
    CALL clock_acq_decide_waiters(p_namespace, p_resource, p_mode, p_slots, p_owner, p_now,
                                  v_holders, p_verdict, p_other_slots, p_waiters, p_blockers,
                                  v_blocked);
    IF v_blocked AND p_verdict = 'grant' THEN
      SET p_verdict = 'blocked';
    END IF;
  END IF;
END;

-- clock_acq_decide's second half (decide_waiters() on PostgreSQL): the
-- earlier live queue entries of other owners in the way of a request for
-- one resource, when p_holders other owners hold slots of it (a
-- semaphore); our own entry counts only while live. Each is appended to
-- p_waiters and p_blockers and sets p_blocked; an entry whose slots
-- disagree with p_slots makes p_verdict 'slots_mismatch' (p_other_slots
-- its slots). A procedure of its own so that clock_acq_decide reads on one
-- screen.
CREATE OR REPLACE PROCEDURE clock_acq_decide_waiters(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_now BIGINT, IN p_holders INT,
  INOUT p_verdict VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, INOUT p_other_slots INT,
  INOUT p_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  INOUT p_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, INOUT p_blocked BOOLEAN)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  DECLARE v_found BOOLEAN DEFAULT TRUE;
  DECLARE v_mine BIGINT;
  DECLARE v_queued INT DEFAULT 0;
  DECLARE v_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  SELECT position INTO v_mine FROM waiters
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND expires_us > p_now;
  IF NOT v_found THEN
    SET v_mine = NULL;
  END IF;
  for_w: FOR w IN (SELECT namespace, resource, owner, mode, slots, position, enqueued_us, expires_us,
                   host, ip, pid, user_name, owner_started_us FROM waiters
            WHERE namespace = p_namespace AND owner <> p_owner AND expires_us > p_now
              AND (v_mine IS NULL OR position < v_mine)
              AND (resource = v_root
                   OR (resource > CONCAT(v_root, _binary '.')
                       AND resource < CONCAT(v_root, _binary '/')))
              AND clock_acq_related(resource, p_resource)
            ORDER BY position) DO
    IF p_verdict = 'slots_mismatch' THEN
      ITERATE for_w;
    END IF;
    IF w.slots > 0 AND p_slots > 0 AND w.resource = p_resource THEN
      IF w.slots <> p_slots THEN
        SET p_verdict = 'slots_mismatch', p_other_slots = w.slots;
        ITERATE for_w;
      END IF;
      -- Earlier semaphore waiters go first: only the slots left are ours.
      SET v_queued = v_queued + 1;
      IF p_holders + v_queued < p_slots THEN
        ITERATE for_w;
      END IF;
    ELSEIF w.mode = 'shared' AND p_mode = 'shared' THEN
      ITERATE for_w;
    END IF;
    SET p_blocked = TRUE;
    SELECT command INTO v_command FROM waiters WHERE position = w.position;
    SET p_waiters = JSON_ARRAY_APPEND(p_waiters, '$', JSON_EXTRACT(
      clock_acq_waiter_json(w.namespace, w.resource, w.owner, w.mode, w.slots, w.position,
                            w.enqueued_us, w.expires_us, w.host, w.ip, w.pid, w.user_name,
                            v_command, w.owner_started_us), '$'));
    SET p_blockers = JSON_ARRAY_APPEND(p_blockers, '$', JSON_OBJECT(
      'owner', w.owner, 'resource', CONVERT(w.resource USING utf8mb4), 'host', w.host));
  END FOR for_w;
END;

-- Every resource of a request in turn, in request order: its expired
-- related leases removed (clock_acq_expire_related) and its verdict taken
-- (clock_acq_decide), both judged at p_judged (the Galera margin), as
-- decide_all() on PostgreSQL. p_verdicts: their JSON array; p_leases,
-- p_waiters and p_blockers gather what is in the way of all of them.
-- p_refusal: try_acquire's reply (at p_now) when the lock model refuses the
-- request ('slots_mismatch' or 'upgrade', at the first resource that does),
-- then the rest is partial; NULL otherwise.
CREATE OR REPLACE PROCEDURE clock_acq_decide_all(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_slots INT,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_judged BIGINT,
  IN p_now BIGINT, OUT p_verdicts LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  OUT p_refusal LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  OUT p_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  OUT p_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  OUT p_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_expired INT;
  DECLARE v_verdict VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_other_slots INT;
  SET p_verdicts = '[]', p_refusal = NULL, p_leases = '[]', p_waiters = '[]', p_blockers = '[]';
  each_resource: WHILE v_i < JSON_LENGTH(p_resources) DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    CALL clock_acq_expire_related(p_namespace, v_resource, p_judged, v_expired);
    CALL clock_acq_decide(p_namespace, v_resource, p_mode, p_slots, p_owner, p_request_id,
                          p_judged, v_verdict, v_other_slots, p_leases, p_waiters, p_blockers);
    IF v_verdict IN ('slots_mismatch', 'upgrade') THEN
      SET p_refusal = JSON_OBJECT('outcome', v_verdict, 'now', CAST(p_now AS SIGNED),
                                  'resource', CONVERT(v_resource USING utf8mb4),
                                  'slots', CAST(p_slots AS SIGNED),
                                  'other_slots', CAST(v_other_slots AS SIGNED));
      LEAVE each_resource;
    END IF;
    SET p_verdicts = JSON_ARRAY_APPEND(p_verdicts, '$', v_verdict);
    SET v_i = v_i + 1;
  END WHILE;
END;
