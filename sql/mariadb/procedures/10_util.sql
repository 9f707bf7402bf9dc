-- clock on MariaDB: the helpers of the acquire side (20_acquire.sql …
-- 23_deadlock.sql), as sql/postgres/functions/10_util.sql. Every name starts
-- with clock_acq_; what both sides need (names, owner ids, secrets, the
-- hierarchy slot rows, history records, run counts) is the record-keeping
-- side's clock_rec_* of 15_records_util.sql, used here, not written twice.
-- None is SQL SECURITY DEFINER and no role gets EXECUTE on them (roles.sql).
--
-- The functions here are NO SQL: a stored function that reads a table takes
-- shared row locks on what it reads (15_records_util.sql, at
-- clock_rec_owner_refuses), so rows are read by the procedures themselves,
-- with SELECT … INTO or a FOR loop, and only their columns come here.

-- Whether two resources of one namespace are related: the same, or one an
-- ancestor of the other (the hierarchy rule of man clock, DESCRIPTION: a lock on foo
-- conflicts with foo.bar and foo.bar with foo).
CREATE OR REPLACE FUNCTION clock_acq_related(p_a VARBINARY(255), p_b VARBINARY(255))
  RETURNS BOOLEAN DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN p_a = p_b OR LEFT(p_a, LENGTH(p_b) + 1) = CONCAT(p_b, _binary '.')
         OR LEFT(p_b, LENGTH(p_a) + 1) = CONCAT(p_a, _binary '.');

-- How long a queue entry lives without a refresh, in microseconds: its
-- request TTL clamped to 1..30 s, 30 s for --ttl 0 (waiter_lifetime() on
-- PostgreSQL, store::waiter_lifetime for SQLite).
CREATE OR REPLACE FUNCTION clock_acq_waiter_lifetime(p_ttl_ms BIGINT)
  RETURNS BIGINT DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN IF(p_ttl_ms IS NULL OR p_ttl_ms = 0, 30000000,
            LEAST(GREATEST(p_ttl_ms, 1000), 30000) * 1000);

-- A lease as the JSON PostgreSQL's lease_json() gives (instants in
-- microseconds), from its columns. CAST(… AS SIGNED): a BIGINT variable
-- would come out as a JSON string (30_renew_release.sql).
CREATE OR REPLACE FUNCTION clock_acq_lease_json(
  p_namespace VARBINARY(255), p_resource VARBINARY(255), p_owner CHAR(36) CHARACTER SET ascii,
  p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_slots INT, p_token BIGINT,
  p_depth INT, p_acquired BIGINT, p_renewed BIGINT, p_expires BIGINT, p_now BIGINT,
  p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_pid BIGINT,
  p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_started BIGINT)
  RETURNS LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN JSON_OBJECT(
    'namespace', CONVERT(p_namespace USING utf8mb4), 'resource', CONVERT(p_resource USING utf8mb4),
    'owner', p_owner, 'mode', p_mode, 'slots', CAST(p_slots AS SIGNED),
    'token', CAST(p_token AS SIGNED), 'depth', CAST(p_depth AS SIGNED),
    'acquired_at', CAST(p_acquired AS SIGNED), 'renewed_at', CAST(p_renewed AS SIGNED),
    'expires_at', CAST(p_expires AS SIGNED),
    'expired', IF(COALESCE(p_expires <= p_now, FALSE), JSON_EXTRACT('true', '$'),
                  JSON_EXTRACT('false', '$')),
    'host', p_host, 'ip', p_ip, 'pid', CAST(p_pid AS SIGNED), 'user', p_user,
    'command', p_command, 'started', CAST(p_started AS SIGNED));

-- A queue entry as PostgreSQL's waiter_json() gives it.
CREATE OR REPLACE FUNCTION clock_acq_waiter_json(
  p_namespace VARBINARY(255), p_resource VARBINARY(255), p_owner CHAR(36) CHARACTER SET ascii,
  p_mode VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_slots INT, p_position BIGINT,
  p_since BIGINT, p_expires BIGINT, p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_ip VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_pid BIGINT,
  p_user VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_command TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_started BIGINT)
  RETURNS LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN JSON_OBJECT(
    'namespace', CONVERT(p_namespace USING utf8mb4), 'resource', CONVERT(p_resource USING utf8mb4),
    'owner', p_owner, 'mode', p_mode, 'slots', CAST(p_slots AS SIGNED),
    'position', CAST(p_position AS SIGNED), 'since', CAST(p_since AS SIGNED),
    'expires_at', CAST(p_expires AS SIGNED), 'host', p_host, 'ip', p_ip,
    'pid', CAST(p_pid AS SIGNED), 'user', p_user, 'command', p_command,
    'started', CAST(p_started AS SIGNED));

-- Who was in the way of a blocked attempt, for the record of a run that did
-- not happen: the lease with the smallest token, else the earliest queue
-- entry (first_in_the_way() on PostgreSQL); NULL when neither has one. The
-- arrays are in token and position order (clock_acq_sorted).
CREATE OR REPLACE FUNCTION clock_acq_first_in_the_way(
  p_leases LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_waiters LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  RETURNS LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DETERMINISTIC NO SQL SQL SECURITY INVOKER
  RETURN IF(JSON_LENGTH(p_leases) > 0,
            JSON_OBJECT('owner', JSON_VALUE(p_leases, '$[0].owner'),
                        'host', JSON_VALUE(p_leases, '$[0].host'),
                        'token', CAST(JSON_VALUE(p_leases, '$[0].token') AS SIGNED)),
            IF(JSON_LENGTH(p_waiters) > 0,
               JSON_OBJECT('owner', JSON_VALUE(p_waiters, '$[0].owner'),
                           'host', JSON_VALUE(p_waiters, '$[0].host'), 'token', NULL),
               NULL));

-- The elements of a JSON array of objects, without repeats of the same key
-- and sorted by it (a lease's token, a queue entry's position): the blocked
-- reply lists each lease or entry in the way once, as PostgreSQL's does.
CREATE OR REPLACE FUNCTION clock_acq_sorted(
  p_array LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_key VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  RETURNS LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
    DETERMINISTIC CONTAINS SQL SQL SECURITY INVOKER
  RETURN COALESCE(
    (SELECT CONCAT('[', GROUP_CONCAT(JSON_EXTRACT(p_array, CONCAT('$[', s.n - 1, ']'))
                                     ORDER BY s.k SEPARATOR ','), ']')
     FROM (SELECT MIN(t.n) AS n, t.k
           FROM JSON_TABLE(p_array, '$[*]' COLUMNS (
                  n FOR ORDINALITY,
                  k BIGINT PATH '$.token' DEFAULT '0' ON EMPTY)) AS t
           WHERE p_key = 'token'
           GROUP BY t.k
           UNION ALL
           SELECT MIN(t.n) AS n, t.k
           FROM JSON_TABLE(p_array, '$[*]' COLUMNS (
                  n FOR ORDINALITY,
                  k BIGINT PATH '$.position' DEFAULT '0' ON EMPTY)) AS t
           WHERE p_key = 'position'
           GROUP BY t.k) AS s),
    '[]');

-- Removes the expired leases related to one resource, each recorded
-- 'expired' at the instant it lapsed (expire_related() on PostgreSQL).
-- Runs under the hierarchy slot row. Returns how many in p_count.
CREATE OR REPLACE PROCEDURE clock_acq_expire_related(
  IN p_namespace VARBINARY(255), IN p_resource VARBINARY(255), IN p_now BIGINT,
  OUT p_count INT)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_root VARBINARY(255) DEFAULT SUBSTRING_INDEX(p_resource, '.', 1);
  SET p_count = 0;
  FOR g IN (SELECT resource, owner, acquired_us, expires_us FROM leases
            WHERE namespace = p_namespace AND expires_us <= p_now
              AND (resource = v_root
                   OR (resource > CONCAT(v_root, _binary '.')
                       AND resource < CONCAT(v_root, _binary '/')))
              AND clock_acq_related(resource, p_resource)) DO
    CALL clock_rec_event('expired', g.expires_us, p_namespace, g.resource, g.owner, NULL,
                         g.expires_us - g.acquired_us, '', NULL, NULL);
    DELETE FROM leases
    WHERE namespace = p_namespace AND resource = g.resource AND owner = g.owner;
    SET p_count = p_count + 1;
  END FOR;
END;
