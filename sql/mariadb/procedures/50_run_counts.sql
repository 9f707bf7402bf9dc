-- clock on MariaDB: counting runs and recording runs that did not happen.
--
-- run_counts (001_schema.sql) counts runs per resource by outcome apart
-- from history, so gc's pruning never makes clock_runs_total go down. On
-- PostgreSQL a trigger on history counts (50_run_counts.sql there); here
-- the procedure that writes a counted history row also counts it, in the
-- same transaction (clock_rec_count_run, clock_rec_event and
-- clock_rec_missed in 15_records_util.sql): one place writes both, as
-- docs/internals/mariadb.md decides. So every procedure that inserts history rows of
-- the counted outcomes ('acquired', 'skipped', 'timed_out', 'lost',
-- 'killed', 'forced') must go through those helpers (or call
-- clock_rec_count_run itself) — the acquire side included.

-- record_missed_run(p_event, p_namespace, p_resources, p_owner, p_mode,
-- p_host, p_ip, p_pid, p_user, p_command, p_in_the_way, p_secret) →
-- record_missed_run: the number of records written (one per resource) of a
-- run that did not happen, 'timed_out' (after -w) or 'killed' (at its
-- runtime limit), counted in run_counts. p_in_the_way: JSON {"owner",
-- "host", "token"} of who held or awaited the lock, or NULL. 0 when
-- p_secret does not prove the owner (a lease or queue entry of the owner's
-- keeps another hash), recorded 'refused' instead. Takes no hierarchy slot:
-- it decides nothing about who runs (as on PostgreSQL).
CREATE OR REPLACE PROCEDURE clock_record_missed_run(
  IN p_event VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_namespace VARBINARY(1024),
  IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_in_the_way LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: record a run that timed out or was killed (PostgreSQL record_missed_run())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_now BIGINT;
  DECLARE v_written INT DEFAULT 0;
  DECLARE v_message VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  IF p_event IS NULL OR p_event NOT IN ('timed_out', 'killed') THEN
    SET v_message = CONCAT('record_missed_run: the event is timed_out or killed, not ',
                           COALESCE(LEFT(p_event, 32), 'NULL'));
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = v_message;
  END IF;
  CALL clock_rec_check_names(p_namespace, p_resources);
  CALL clock_rec_check_command(p_command);
  SET v_owner = clock_rec_owner(p_owner);
  IF v_owner IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'record_missed_run: no owner';
  END IF;
  IF p_in_the_way IS NOT NULL AND NOT JSON_VALID(p_in_the_way) THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'record_missed_run: in_the_way is not JSON';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_now = clock_now_us();
  CALL clock_rec_owner_refuses(v_owner, p_secret, v_refuses);
  IF v_refuses THEN
    CALL clock_rec_refused(v_now, p_namespace, p_resources, v_owner, p_mode, p_host, p_ip, p_pid,
                           p_user, p_command, '');
  ELSE
    CALL clock_rec_missed(p_event, v_now, p_namespace, p_resources, v_owner, p_mode, p_host,
                          p_ip, p_pid, p_user, p_command, p_in_the_way);
    SET v_written = JSON_LENGTH(p_resources);
  END IF;
  COMMIT;
  SELECT v_written AS record_missed_run;
END;
