-- clock on MariaDB: a lease whose holder died on its own host
-- (docs/dead-holder.md), as PostgreSQL's 70_dead_holder.sql. The server
-- cannot see processes: clock run sends what identifies its process and its
-- job with its request, written on each lease its grant inserts
-- (clock_try_acquire's p_holder, 20_acquire.sql), a requester on the same
-- host reads it (clock_holder_trace), judges there that nothing of it is
-- left, and asks clock_end_dead_lease to end exactly that lease. READ
-- COMMITTED; every write under the hierarchy slots its resources' other
-- writers take.

-- holder_trace(p_namespace, p_resource, p_owner, p_token, p_boot_id,
-- p_pid_ns) → holder_trace: {"boot_id", "pid_ns", "pid", "pid_start",
-- "job_group", "job_cgroup"} of the live lease of p_owner on p_resource
-- under p_token, only when it names that boot id and pid namespace (the
-- boot id is readable on the holder's host alone), else JSON null.
CREATE OR REPLACE PROCEDURE clock_holder_trace(
  IN p_namespace VARBINARY(1024), IN p_resource VARBINARY(1024),
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_token BIGINT,
  IN p_boot_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid_ns BIGINT)
  READS SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: the process facts recorded on one lease (PostgreSQL holder_trace())'
BEGIN
  SELECT COALESCE(
    (SELECT JSON_OBJECT('boot_id', holder_boot_id, 'pid_ns', holder_pid_ns, 'pid', pid,
                        'pid_start', holder_pid_start, 'job_group', job_group,
                        'job_cgroup', job_cgroup)
     FROM leases
     WHERE namespace = p_namespace AND resource = p_resource AND owner = clock_rec_owner(p_owner)
       AND token = p_token AND holder_boot_id = p_boot_id AND holder_pid_ns = p_pid_ns
       AND (expires_us IS NULL OR expires_us > clock_now_us())),
    'null') AS `holder_trace`;
END;

-- end_dead_lease(p_namespace, p_resource, p_owner, p_token, p_boot_id,
-- p_pid_ns, p_pid, p_pid_start, p_by) → end_dead_lease: 1 when the lease of
-- p_owner on p_resource under p_token, with that recorded boot id, pid
-- namespace, pid and start time, was ended ('expired', forced_by p_by:
-- "user@host pid N (holder died)", db_user the login); 0 when there is no such
-- lease. What a login can do with it: docs/threat-model.md, "Dead holders".
CREATE OR REPLACE PROCEDURE clock_end_dead_lease(
  IN p_namespace VARBINARY(1024), IN p_resource VARBINARY(1024),
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_token BIGINT,
  IN p_boot_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid_ns BIGINT,
  IN p_pid BIGINT, IN p_pid_start BIGINT,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: end a lease whose holder died on its host (PostgreSQL end_dead_lease())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_now BIGINT;
  DECLARE v_acquired BIGINT;
  DECLARE v_ended INT DEFAULT 0;
  DECLARE v_found BOOLEAN DEFAULT TRUE;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET v_resources = JSON_ARRAY(CONVERT(p_resource USING utf8mb4));
  CALL clock_rec_check_names(p_namespace, v_resources);
  SET v_owner = clock_rec_owner(p_owner);
  IF v_owner IS NULL OR p_token IS NULL OR p_boot_id IS NULL OR p_pid_ns IS NULL
     OR p_pid IS NULL OR p_pid_start IS NULL THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'end_dead_lease: the owner, token, boot id, pid namespace, pid and '
                         'start time are all needed';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, v_resources);
  SET v_now = clock_now_us();
  SELECT acquired_us INTO v_acquired FROM leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = v_owner
    AND token = p_token AND holder_boot_id = p_boot_id AND holder_pid_ns = p_pid_ns
    AND pid = p_pid AND holder_pid_start = p_pid_start
  FOR UPDATE;
  IF v_found THEN
    CALL clock_rec_event('expired', v_now, p_namespace, p_resource, v_owner, NULL,
                         v_now - v_acquired, COALESCE(p_by, ''), NULL, NULL);
    DELETE FROM leases
    WHERE namespace = p_namespace AND resource = p_resource AND owner = v_owner;
    SET v_ended = 1;
  END IF;
  COMMIT;
  SELECT v_ended AS `end_dead_lease`;
END;
