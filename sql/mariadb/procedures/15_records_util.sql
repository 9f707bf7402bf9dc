-- clock on MariaDB: the helpers of the record-keeping procedures (renew,
-- release, force release, status, history, gc, leave_queue, missed runs,
-- expected runs: 30_renew_release.sql … 60_expected_runs.sql). Every name
-- starts with clock_rec_ so that it cannot clash with the acquire side's
-- helpers (10_util.sql). None is SQL SECURITY DEFINER and no role gets
-- EXECUTE on them (roles.sql): they run inside the operation procedures,
-- with those procedures' rights, transaction and locks.
--
-- How the files are applied: each file is sent whole, as one multi-statement
-- query (the server's parser finds the end of each BEGIN … END), with no
-- DELIMITER lines; the mariadb client does the same with a delimiter that
-- never occurs (tests/mariadb/test_procedures.sh: --delimiter='#@!').
-- Every statement is CREATE OR REPLACE, so a file applies again unchanged.
--
-- Arguments that are arrays on PostgreSQL (text[], bigint[]) are JSON arrays
-- here (LONGTEXT), read with JSON_TABLE / JSON_VALUE; resources keep the
-- caller's order (FOR ORDINALITY). Names are VARBINARY (001_schema.sql):
-- a JSON string is turned into its bytes with CAST(… AS BINARY).

-- The slot of hierarchy_locks whose row serialises every write to one
-- resource hierarchy (a namespace and a first segment), as PostgreSQL's
-- hierarchy_slot(): any stable hash will do as long as the acquire side uses
-- the same one (it must: renewals and releases take turns with grants on it).
CREATE OR REPLACE FUNCTION clock_rec_hierarchy_slot(p_namespace VARBINARY(255),
                                                    p_root VARBINARY(255))
  RETURNS INT DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN CRC32(CONCAT(p_namespace, _binary 0x0a, p_root)) & 16383;

-- The resource name rule (man clock, DESCRIPTION): dotted segments of [A-Za-z0-9_-]+, at
-- most 16, at most 255 bytes (lock::Resource::parse). No backslash in the
-- pattern, so the NO_BACKSLASH_ESCAPES sql_mode cannot change it.
CREATE OR REPLACE FUNCTION clock_rec_is_resource_name(p_name VARBINARY(1024))
  RETURNS BOOLEAN DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN p_name IS NOT NULL AND LENGTH(p_name) <= 255
         AND CONVERT(p_name USING latin1) REGEXP '^[A-Za-z0-9_-]+([.][A-Za-z0-9_-]+){0,15}$';

-- Element i (from 0) of a JSON array of names, as bytes.
CREATE OR REPLACE FUNCTION clock_rec_nth(p_array LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
                                         p_i INT)
  RETURNS VARBINARY(1024) DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN CAST(JSON_VALUE(p_array, CONCAT('$[', p_i, ']')) AS BINARY);

-- Refuses arguments the lock model forbids (check_names() on PostgreSQL):
-- a namespace of at most 255 bytes, a non-empty JSON array of valid,
-- distinct resource names, at most 64 of them (a call's work and the time
-- it holds its hierarchy slot rows grow with its resources:
-- docs/threat-model.md, "Bounds of a call"). Every procedure that takes
-- slot rows calls it before its START TRANSACTION, so it also refuses a
-- call made inside the caller's own transaction: that START TRANSACTION
-- would silently commit the caller's work, and clock's client calls each
-- procedure with autocommit on and no transaction open.
CREATE OR REPLACE PROCEDURE clock_rec_check_names(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  NO SQL SQL SECURITY INVOKER
BEGIN
  DECLARE v_message VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_name LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_count INT;
  DECLARE v_i INT DEFAULT 0;
  IF @@in_transaction THEN
    SIGNAL SQLSTATE '25001'
      SET MESSAGE_TEXT = 'clock''s procedures run as one statement of their own (autocommit), '
                         'not inside a transaction the caller opened';
  END IF;
  IF p_namespace IS NULL OR LENGTH(p_namespace) > 255 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'invalid namespace: at most 255 bytes, not NULL';
  END IF;
  IF p_resources IS NULL OR NOT JSON_VALID(p_resources) OR JSON_TYPE(p_resources) <> 'ARRAY'
     OR JSON_LENGTH(p_resources) = 0 THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'no resource given (resources are a JSON array of names)';
  END IF;
  SET v_count = JSON_LENGTH(p_resources);
  IF v_count > 64 THEN
    SET v_message = CONCAT(v_count, ' resources in one call: at most 64');
    SIGNAL SQLSTATE '54000' SET MESSAGE_TEXT = v_message;
  END IF;
  -- Name by name, not a query over JSON_TABLE: a query materializes its
  -- rows in a temporary table, which cost about a seventh of a run's
  -- server time (docs/performance.md).
  WHILE v_i < v_count DO
    SET v_name = JSON_VALUE(p_resources, CONCAT('$[', v_i, ']'));
    IF v_name IS NULL OR LENGTH(v_name) > 255
       OR NOT clock_rec_is_resource_name(CAST(v_name AS BINARY)) THEN
      SET v_message = CONCAT('invalid resource name ', QUOTE(LEFT(COALESCE(v_name, 'null'), 64)));
      SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = v_message;
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
  -- Valid names are ASCII of at most 255 bytes: a key that short keeps the
  -- DISTINCT in memory, where a longer one made a temporary table on disk.
  IF v_count > 1
     AND (SELECT COUNT(DISTINCT t.r)
          FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
                 r VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin PATH '$')) AS t)
         <> v_count THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'a resource is named twice in one request';
  END IF;
END;

-- A caller's command line is shown by status and history to everyone: at
-- most 4096 bytes (check_bounds() on PostgreSQL; the client cuts it to that,
-- src/lock/limits.hpp). Host, ip, user and who asked are bounded by the
-- procedures' VARCHAR parameters (255, 64, 255, 512), which a strict
-- sql_mode refuses to overfill and any other truncates.
CREATE OR REPLACE PROCEDURE clock_rec_check_command(
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  NO SQL SQL SECURITY INVOKER
BEGIN
  IF LENGTH(p_command) > 4096 THEN
    SIGNAL SQLSTATE '54000' SET MESSAGE_TEXT = 'too long: a command at most 4096 bytes';
  END IF;
END;

-- An owner id: a UUID, lower case (PostgreSQL's uuid type reads any case and
-- writes lower case; the CHAR(36) ascii_bin columns compare bytes).
CREATE OR REPLACE FUNCTION clock_rec_owner(
  p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  RETURNS CHAR(36) CHARACTER SET ascii DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN IF(LOWER(p_owner) REGEXP '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
            LOWER(p_owner), NULL);

-- Writes (locks) the hierarchy_locks rows of a request's hierarchies, one at
-- a time in slot order, so that two calls never wait for each other in a
-- cycle; held until the transaction ends (docs/internals/mariadb.md: the slot row is
-- written first).
CREATE OR REPLACE PROCEDURE clock_rec_lock_hierarchies(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  FOR s IN (SELECT DISTINCT
              clock_rec_hierarchy_slot(p_namespace, SUBSTRING_INDEX(CAST(t.r AS BINARY), '.', 1))
                AS slot
            FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
                   r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
            ORDER BY slot) DO
    UPDATE hierarchy_locks SET writes = writes + 1 WHERE slot = s.slot;
  END FOR;
END;

-- The hash a lease keeps of its owner's secret: SHA-256 as 64 lower-case hex
-- digits of the secret's UTF-8 bytes (util::sha256_hex, PostgreSQL's
-- secret_hash()); NULL for no secret.
CREATE OR REPLACE FUNCTION clock_rec_secret_hash(
  p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  RETURNS VARCHAR(128) CHARACTER SET ascii DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN IF(COALESCE(p_secret, '') = '', NULL, SHA2(CONVERT(p_secret USING utf8mb4), 256));

-- Whether p_secret proves ownership of a row keeping p_hash: it matches, or
-- the row keeps none (granted before owner secrets).
CREATE OR REPLACE FUNCTION clock_rec_proves(p_hash VARCHAR(128) CHARACTER SET ascii,
                                            p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  RETURNS BOOLEAN DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN p_hash IS NULL OR COALESCE(p_hash = clock_rec_secret_hash(p_secret), FALSE);

-- Whether p_secret fails to prove that its caller is p_owner: a lease or a
-- queue entry of the owner's keeps a hash p_secret does not match (the
-- proof belongs to the id, not to one row: PostgreSQL's owner_refuses()).
-- A plain SELECT … INTO, in a procedure: InnoDB reads the tables of a
-- subquery in any other statement (a stored function's body, SET v =
-- (SELECT …), IF EXISTS (…)) with shared row locks, which here were held
-- on the owner's leases of other hierarchies, whose slot rows the caller
-- does not hold, and deadlocked (1213) two renewals (the concurrent force
-- releases and renewals of tests/integration/test_record_calls.cpp); a
-- SELECT at READ COMMITTED reads without locks.
CREATE OR REPLACE PROCEDURE clock_rec_owner_refuses(
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, OUT p_refuses BOOLEAN)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_hash VARCHAR(128) CHARACTER SET ascii DEFAULT clock_rec_secret_hash(p_secret);
  SELECT EXISTS (SELECT 1 FROM leases
                 WHERE owner = p_owner AND secret_hash IS NOT NULL
                   AND NOT (secret_hash <=> v_hash))
      OR EXISTS (SELECT 1 FROM waiters
                 WHERE owner = p_owner AND secret_hash IS NOT NULL
                   AND NOT (secret_hash <=> v_hash))
    INTO p_refuses;
END;

-- Counts p_count runs of an outcome in run_counts (what PostgreSQL's trigger
-- on history does): only the outcomes clock_runs_total has. Called beside
-- every history insert of those events, in the same transaction.
CREATE OR REPLACE PROCEDURE clock_rec_count_run(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_outcome VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_count BIGINT)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  IF p_count > 0
     AND p_outcome IN ('acquired', 'skipped', 'timed_out', 'lost', 'killed', 'forced') THEN
    INSERT INTO run_counts (namespace, resource, outcome, count)
    VALUES (p_namespace, p_resource, p_outcome, p_count)
    ON DUPLICATE KEY UPDATE count = count + VALUES(count);
  END IF;
END;

-- Records an event of the owner's lease on one resource (record_event() on
-- PostgreSQL), from the lease row, so it must run before the row is
-- deleted. p_token: the token to record instead of the lease's (a renewal
-- under another token), or NULL. An 'acquired' record keeps the secret hash;
-- the end of a lease (released, forced, expired, lost) keeps what its holder
-- reported its command left running (leases.leftovers, clock_note_leftovers),
-- and a release by clock run how its command ended (p_exit_code or
-- p_exit_signal; NULL for every other record), which is also counted in the
-- resource's run results (clock_rec_count_run_result).
-- db_user is USER(), the login (a DEFINER procedure does not change it).
CREATE OR REPLACE PROCEDURE clock_rec_event(
  IN p_event VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_at BIGINT,
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255),
  IN p_owner CHAR(36) CHARACTER SET ascii, IN p_token BIGINT, IN p_held_for_us BIGINT,
  IN p_forced_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_exit_code INT, IN p_exit_signal INT)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_recorded BIGINT;
  INSERT INTO history (at_us, event, namespace, resource, owner, mode, token, held_for_us, host,
                       ip, pid, user_name, command, forced_by, db_user, secret_hash, leftovers,
                       exit_code, exit_signal)
  SELECT p_at, p_event, namespace, resource, owner, mode, COALESCE(p_token, token), p_held_for_us,
         host, ip, pid, user_name, command, COALESCE(p_forced_by, ''), USER(),
         IF(p_event = 'acquired', secret_hash, NULL),
         IF(p_event IN ('released', 'forced', 'expired', 'lost'), leftovers, NULL),
         p_exit_code, p_exit_signal
  FROM leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner;
  SET v_recorded = ROW_COUNT();
  CALL clock_rec_count_run(p_namespace, p_resource, p_event, v_recorded);
  IF v_recorded > 0 AND (p_exit_code IS NOT NULL OR p_exit_signal IS NOT NULL) THEN
    CALL clock_rec_count_run_result(p_namespace, p_resource, p_at, p_held_for_us, p_exit_code,
                                    p_exit_signal);
  END IF;
END;

-- Records an act refused for want of the owner's secret: one 'refused' per
-- resource, with the owner's lease there if it has one, else the facts the
-- caller claims, and in forced_by who asked (record_refused()).
CREATE OR REPLACE PROCEDURE clock_rec_refused(
  IN p_at BIGINT, IN p_namespace VARBINARY(255),
  IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  INSERT INTO history (at_us, event, namespace, resource, owner, mode, token, host, ip, pid,
                       user_name, command, forced_by, db_user)
  SELECT p_at, 'refused', p_namespace, CAST(t.r AS BINARY), p_owner, COALESCE(l.mode, p_mode),
         l.token, COALESCE(l.host, p_host, ''), COALESCE(l.ip, p_ip, ''),
         COALESCE(l.pid, p_pid, 0), COALESCE(l.user_name, p_user, ''),
         COALESCE(l.command, p_command, ''), COALESCE(p_by, ''), USER()
  FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
         n FOR ORDINALITY, r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
  LEFT JOIN leases l
    ON l.namespace = p_namespace AND l.resource = CAST(t.r AS BINARY) AND l.owner = p_owner
  ORDER BY t.n;
END;

-- One record per resource of a run that did not happen (skipped, timed_out,
-- killed): the requester's facts, no token, and who was in the way
-- (p_in_the_way: JSON {"owner", "host", "token"} or, for --once-per, also
-- "started" in microseconds), counted in run_counts (record_missed()).
CREATE OR REPLACE PROCEDURE clock_rec_missed(
  IN p_event VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_at BIGINT,
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_pid BIGINT,
  IN p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_in_the_way LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  INSERT INTO history (at_us, event, namespace, resource, owner, mode, host, ip, pid, user_name,
                       command, db_user, in_the_way_owner, in_the_way_host, in_the_way_token,
                       done_by_started_us)
  SELECT p_at, p_event, p_namespace, CAST(t.r AS BINARY), p_owner, p_mode, COALESCE(p_host, ''),
         COALESCE(p_ip, ''), COALESCE(p_pid, 0), COALESCE(p_user, ''), COALESCE(p_command, ''),
         USER(), clock_rec_owner(JSON_VALUE(p_in_the_way, '$.owner')),
         JSON_VALUE(p_in_the_way, '$.host'),
         CAST(JSON_VALUE(p_in_the_way, '$.token') AS SIGNED),
         CAST(JSON_VALUE(p_in_the_way, '$.started') AS SIGNED)
  FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
         n FOR ORDINALITY, r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
  ORDER BY t.n;
  IF p_event IN ('skipped', 'timed_out', 'killed') THEN
    INSERT INTO run_counts (namespace, resource, outcome, count)
    SELECT p_namespace, CAST(t.r AS BINARY), p_event, 1
    FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
           r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t
    ON DUPLICATE KEY UPDATE count = count + 1;
  END IF;
END;

-- The owner's lease of a resource whose run exited 0 is ending: it becomes
-- its resource's latest success (--once-per), unless one granted later
-- already ended, and its start is kept in successes, newest 1000 per
-- resource (record_success() and the trigger of migration 020 on
-- PostgreSQL).
-- Runs before the lease row is deleted, under the hierarchy's slot row.
CREATE OR REPLACE PROCEDURE clock_rec_success(IN p_namespace VARBINARY(255),
                                              IN p_resource VARBINARY(255),
                                              IN p_owner CHAR(36) CHARACTER SET ascii)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_started BIGINT;
  DECLARE v_latest BIGINT;
  DECLARE v_oldest_kept BIGINT;
  DECLARE v_ordinal BIGINT;
  SET v_started = (SELECT acquired_us FROM leases
                   WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner);
  SET v_latest = (SELECT started_us FROM last_success
                  WHERE namespace = p_namespace AND resource = p_resource FOR UPDATE);
  IF v_started IS NOT NULL AND (v_latest IS NULL OR v_latest <= v_started) THEN
    INSERT INTO last_success (namespace, resource, started_us, owner, host, token)
    SELECT namespace, resource, acquired_us, owner, host, token FROM leases
    WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    ON DUPLICATE KEY UPDATE started_us = VALUES(started_us), owner = VALUES(owner),
                            host = VALUES(host), token = VALUES(token);
    SET v_ordinal = COALESCE((SELECT ordinal FROM successes
                              WHERE namespace = p_namespace AND resource = p_resource
                              ORDER BY started_us DESC LIMIT 1), 0) + 1;
    INSERT IGNORE INTO successes (namespace, resource, started_us, ordinal)
    VALUES (p_namespace, p_resource, v_started, v_ordinal);
    -- Pruned in steps (migration 009): finding the 1000th newest walks the
    -- log, which every 50th success does.
    IF v_ordinal MOD 50 = 0 THEN
      SET v_oldest_kept = (SELECT started_us FROM successes
                           WHERE namespace = p_namespace AND resource = p_resource
                           ORDER BY started_us DESC LIMIT 1 OFFSET 999);
      IF v_oldest_kept IS NOT NULL THEN
        DELETE FROM successes
        WHERE namespace = p_namespace AND resource = p_resource AND started_us < v_oldest_kept;
      END IF;
    END IF;
  END IF;
END;
