-- clock on MariaDB: renewing and releasing leases, noting what a holder's
-- command left running, a forced release and leaving the queue, as
-- sql/postgres/functions/30_renew_release.sql (and
-- leave_queue() of 22_queue.sql). Same parameters in the same order; what
-- PostgreSQL takes as an array is a JSON array (LONGTEXT), and what it
-- returns as jsonb is one row of one column (named after the procedure's
-- PostgreSQL function), the same JSON, times in microseconds.
--
-- Each CALL is one transaction: an EXIT HANDLER rolls everything back and
-- re-raises, READ COMMITTED for the one transaction (SET TRANSACTION, no
-- session state), the hierarchy slot rows written first in slot order
-- (clock_rec_lock_hierarchies), then clock_now_us(), the owner's lease rows locked
-- FOR UPDATE, COMMIT, then the one result row. Holding the slot rows orders
-- every renewal and release with every grant of the hierarchy, as the row
-- locks of hierarchy_locks do on PostgreSQL.
--
-- No "rows changed" count decides anything: each lease is read under its
-- row lock and judged (gone, expired, other token, unproven) before the one
-- UPDATE, so a renewal in the same microsecond as the grant is a renewal
-- (and the connection's CLIENT_FOUND_ROWS would count it as matched anyway).
--
-- A MariaDB 10.11 quirk: a BIGINT local variable given to JSON_OBJECT comes
-- out as a JSON string ("now": "1795…"); CAST(v AS SIGNED) makes it a number.
--
-- Differences from PostgreSQL: no NOTIFY (MariaDB has none: the first
-- waiter polls, docs/internals/mariadb.md), so nothing is sent on a release; no
-- fast path in release (one general path; its cost is a bench question).

-- The reply of clock_renew and clock_note_leftovers to a caller whose
-- p_secret does not prove the owner id (clock_rec_owner_refuses): each
-- resource recorded 'refused' with p_by, who asked, and refused as
-- 'not_proven', in request order (owner_not_proven() on PostgreSQL).
CREATE OR REPLACE PROCEDURE clock_rec_owner_not_proven(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  CALL clock_rec_refused(p_now, p_namespace, p_resources, p_owner, NULL, NULL, NULL, NULL, NULL,
                         NULL, p_by);
  SET p_result = JSON_OBJECT(
    'outcome', 'not_owner', 'now', CAST(p_now AS SIGNED),
    'lost', (SELECT JSON_ARRAYAGG(JSON_OBJECT('resource', t.r, 'reason', 'not_proven')
                                  ORDER BY t.n)
             FROM JSON_TABLE(p_resources, '$[*]' COLUMNS (
                    n FOR ORDINALITY,
                    r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS t));
END;

-- The owner's leases of p_resources judged for clock_renew and
-- clock_note_leftovers, each locked FOR UPDATE (judge_leases() on
-- PostgreSQL): p_lost lists those the caller cannot act on, [{resource,
-- reason}…] with reason 'gone', 'token' (held under another token than
-- p_tokens, a JSON array in resource order; [] for any), 'expired' or
-- 'not_proven' (the secret does not prove it: recorded 'refused' with
-- p_by). With p_record_losses (clock_renew) each loss is also recorded
-- 'lost' (a lease already gone only when history shows this owner, proven
-- by p_secret, acquired it) and an expired lease is removed;
-- clock_note_leftovers leaves that to the next renewal.
CREATE OR REPLACE PROCEDURE clock_rec_judge_leases(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_tokens LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  IN p_record_losses BOOLEAN, OUT p_lost LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_token BIGINT;
  DECLARE v_found BOOLEAN;
  DECLARE v_lease_token BIGINT;
  DECLARE v_lease_expires BIGINT;
  DECLARE v_lease_acquired BIGINT;
  DECLARE v_lease_hash VARCHAR(128) CHARACTER SET ascii;
  DECLARE v_held_it BOOLEAN;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  SET p_lost = '[]';
  WHILE v_i < JSON_LENGTH(p_resources) DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    SET v_token = IF(JSON_LENGTH(p_tokens) > 0,
                     CAST(JSON_VALUE(p_tokens, CONCAT('$[', v_i, ']')) AS SIGNED), NULL);
    SET v_found = TRUE;
    SELECT token, expires_us, acquired_us, secret_hash
      INTO v_lease_token, v_lease_expires, v_lease_acquired, v_lease_hash
    FROM leases
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
    FOR UPDATE;
    IF NOT v_found THEN
      SET p_lost = JSON_ARRAY_APPEND(p_lost, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'gone'));
      -- Recorded as lost only for the owner that held it: an 'acquired'
      -- record of this owner's that the secret proves.
      -- (SELECT … INTO reads without locks; see clock_rec_owner_refuses.)
      SELECT p_record_losses
             AND EXISTS (SELECT 1 FROM history h
                         WHERE h.resource = v_resource AND h.namespace = p_namespace
                           AND h.owner = p_owner AND h.event = 'acquired'
                           AND clock_rec_proves(h.secret_hash, p_secret))
        INTO v_held_it;
      IF v_held_it THEN
        INSERT INTO history (at_us, event, namespace, resource, owner, token, db_user)
        VALUES (p_now, 'lost', p_namespace, v_resource, p_owner, v_token, USER());
        CALL clock_rec_count_run(p_namespace, v_resource, 'lost', 1);
      END IF;
    ELSEIF v_lease_token <> v_token THEN
      SET p_lost = JSON_ARRAY_APPEND(p_lost, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'token'));
      IF p_record_losses THEN
        CALL clock_rec_event('lost', p_now, p_namespace, v_resource, p_owner, v_token,
                             NULL, '', NULL, NULL);
      END IF;
    ELSEIF v_lease_expires <= p_now THEN
      SET p_lost = JSON_ARRAY_APPEND(p_lost, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'expired'));
      IF p_record_losses THEN
        CALL clock_rec_event('lost', p_now, p_namespace, v_resource, p_owner, NULL,
                             v_lease_expires - v_lease_acquired, '', NULL, NULL);
        DELETE FROM leases
        WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      END IF;
    ELSEIF NOT clock_rec_proves(v_lease_hash, p_secret) THEN
      SET p_lost = JSON_ARRAY_APPEND(p_lost, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'not_proven'));
      CALL clock_rec_event('refused', p_now, p_namespace, v_resource, p_owner, NULL, NULL,
                           COALESCE(p_by, ''), NULL, NULL);
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
END;

-- renew(p_namespace, p_resources, p_owner, p_tokens, p_ttl_ms, p_secret,
-- p_by) → renew: {"outcome": "renewed", "now", "expires_at"} or, changing
-- nothing but history and leases found expired, {"outcome": "not_owner",
-- "now", "lost": [{resource, reason}…]}, reason 'gone', 'expired', 'token'
-- or 'not_proven'. p_tokens: a JSON array of the tokens held, in resource
-- order, or [] for any.
CREATE OR REPLACE PROCEDURE clock_renew(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_tokens LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_ttl_ms BIGINT,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: renew the owner''s leases (PostgreSQL renew())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_now BIGINT;
  DECLARE v_expires BIGINT;
  DECLARE v_count INT;
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_lost LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  SET v_owner = clock_rec_owner(p_owner);
  SET v_count = JSON_LENGTH(p_resources);
  IF v_owner IS NULL OR p_ttl_ms IS NULL OR p_ttl_ms < 0 OR p_tokens IS NULL
     OR NOT JSON_VALID(p_tokens) OR JSON_TYPE(p_tokens) <> 'ARRAY'
     OR (JSON_LENGTH(p_tokens) > 0 AND JSON_LENGTH(p_tokens) <> v_count) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'renew: invalid owner, ttl or tokens (one per resource, or none)';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  SET v_now = clock_now_us();
  SET v_expires = IF(p_ttl_ms = 0, NULL, v_now + p_ttl_ms * 1000);
  -- The owner's proof first: nothing is renewed, lost or removed in the
  -- name of an id whose secret the caller does not have.
  CALL clock_rec_owner_refuses(v_owner, p_secret, v_refuses);
  IF v_refuses THEN
    CALL clock_rec_owner_not_proven(p_namespace, p_resources, v_owner, p_by, v_now, v_result);
    COMMIT;
    SELECT v_result AS `renew`;
  ELSE
    CALL clock_rec_judge_leases(p_namespace, p_resources, v_owner, p_tokens, p_secret, p_by,
                                v_now, TRUE, v_lost);
    IF JSON_LENGTH(v_lost) > 0 THEN
      SET v_result = JSON_OBJECT('outcome', 'not_owner', 'now', CAST(v_now AS SIGNED),
                                 'lost', JSON_EXTRACT(v_lost, '$'));
    ELSE
      -- One primary-key UPDATE per resource, of rows this transaction
      -- locked above: a join with JSON_TABLE would scan (and lock) the
      -- owner's leases of other hierarchies, whose slot rows it does not
      -- hold, and deadlock with their renewals (seen in the tests).
      SET v_i = 0;
      WHILE v_i < v_count DO
        UPDATE leases
        SET renewed_us = v_now, expires_us = v_expires, ttl_us = p_ttl_ms * 1000
        WHERE namespace = p_namespace AND resource = clock_rec_nth(p_resources, v_i)
          AND owner = v_owner AND expires_us IS NOT NULL;
        SET v_i = v_i + 1;
      END WHILE;
      SET v_result = JSON_OBJECT('outcome', 'renewed', 'now', CAST(v_now AS SIGNED),
                                 'expires_at', CAST(v_expires AS SIGNED));
    END IF;
    COMMIT;
    SELECT v_result AS `renew`;
  END IF;
END;

-- note_leftovers(p_namespace, p_resources, p_owner, p_tokens, p_leftovers,
-- p_secret, p_by) → note_leftovers: {"outcome": "noted", "now"} or, writing
-- nothing but a refusal, {"outcome": "not_owner", "now", "lost":
-- [{resource, reason}…]}. Records on each of the owner's leases of
-- p_resources the processes its command left running (p_leftovers: a JSON
-- array of {"pid", "command", "fate"}, kept as given; NULL or [] clears
-- it), which clock_status_rows shows and the end of the lease copies into
-- history (clock_rec_event, clock_force_release). In the owner's
-- name, as clock_renew: when p_secret does not prove the owner id nothing
-- changes but history ('refused' with p_by) and every resource is refused
-- as 'not_proven'; a lease gone, expired or under another token than
-- p_tokens (a JSON array in resource order, or [] for any) is refused
-- ('gone', 'expired', 'token') and nothing is written: the next renewal
-- records the loss and removes an expired lease. All or none. p_leftovers
-- that is not JSON, or JSON but not an array, is SQLSTATE 22023 with
-- PostgreSQL's message (the array's elements are not checked, as there:
-- the client reads only well-formed ones).
CREATE OR REPLACE PROCEDURE clock_note_leftovers(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_tokens LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_leftovers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: record what the owner''s command left running (PostgreSQL note_leftovers())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_now BIGINT;
  DECLARE v_count INT;
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_leftovers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_lost LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  SET v_owner = clock_rec_owner(p_owner);
  SET v_count = JSON_LENGTH(p_resources);
  IF v_owner IS NULL OR p_tokens IS NULL
     OR NOT JSON_VALID(p_tokens) OR JSON_TYPE(p_tokens) <> 'ARRAY'
     OR (JSON_LENGTH(p_tokens) > 0 AND JSON_LENGTH(p_tokens) <> v_count)
     OR (p_leftovers IS NOT NULL
         AND (NOT JSON_VALID(p_leftovers) OR JSON_TYPE(p_leftovers) <> 'ARRAY')) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'note_leftovers: invalid owner, tokens (one per resource, or none) '
                         'or leftovers (a JSON array)';
  END IF;
  -- status and history show the list to everyone (docs/threat-model.md,
  -- "Bounds of a call"); clock records at most 64, 200 bytes of command each.
  IF LENGTH(p_leftovers) > 131072 OR JSON_LENGTH(p_leftovers) > 64 THEN
    SIGNAL SQLSTATE '54000'
      SET MESSAGE_TEXT = 'too many leftovers: at most 64, in at most 128 KiB of JSON';
  END IF;
  SET v_leftovers = IF(COALESCE(JSON_LENGTH(p_leftovers), 0) = 0, NULL, p_leftovers);
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  SET v_now = clock_now_us();
  CALL clock_rec_owner_refuses(v_owner, p_secret, v_refuses);
  IF v_refuses THEN
    CALL clock_rec_owner_not_proven(p_namespace, p_resources, v_owner, p_by, v_now, v_result);
  ELSE
    CALL clock_rec_judge_leases(p_namespace, p_resources, v_owner, p_tokens, p_secret, p_by,
                                v_now, FALSE, v_lost);
    IF JSON_LENGTH(v_lost) > 0 THEN
      SET v_result = JSON_OBJECT('outcome', 'not_owner', 'now', CAST(v_now AS SIGNED),
                                 'lost', JSON_EXTRACT(v_lost, '$'));
    ELSE
      -- By primary key, one resource at a time (see the UPDATE in clock_renew).
      SET v_i = 0;
      WHILE v_i < v_count DO
        UPDATE leases SET leftovers = v_leftovers
        WHERE namespace = p_namespace AND resource = clock_rec_nth(p_resources, v_i)
          AND owner = v_owner;
        SET v_i = v_i + 1;
      END WHILE;
      SET v_result = JSON_OBJECT('outcome', 'noted', 'now', CAST(v_now AS SIGNED));
    END IF;
  END IF;
  COMMIT;
  SELECT v_result AS `note_leftovers`;
END;

-- release(p_namespace, p_resources, p_owner, p_secret, p_by, p_host,
-- p_lineage, p_succeeded) → release: {"now", "released": [{resource,
-- remaining_depth}…], "refused": [{resource, reason}…]}, reason
-- 'other_owner', 'not_held', 'expired' or 'not_proven'. Only the caller's
-- own lease is touched, and only with its secret; a live lease the secret
-- does not prove is left alone and recorded 'refused' with p_by. A release
-- from outside the holder's process tree (another host, or a pid not in
-- p_lineage, a JSON array of the caller's pid and its ancestors') is
-- recorded with p_by. p_succeeded (no default on MariaDB: pass FALSE): the
-- run exited 0, so a lease ending here is its resource's latest success.
-- clock_release2 (35_run_ends.sql) without a run's exit.
CREATE OR REPLACE PROCEDURE clock_release(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_lineage LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_succeeded BOOLEAN)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: release the owner''s leases (PostgreSQL release())'
BEGIN
  CALL clock_release2(p_namespace, p_resources, p_owner, p_secret, p_by, p_host, p_lineage,
                      p_succeeded, NULL, NULL);
END;

-- The releases of clock_release2, inside its transaction, under its slot
-- rows, at p_now: each resource's lease of p_owner released (a run's exit,
-- when given, written on the record of the release that ends it),
-- made shallower, or refused with its reason; p_result: release's reply.
CREATE OR REPLACE PROCEDURE clock_rec_release_each(
  IN p_namespace VARBINARY(255), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_lineage LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_succeeded BOOLEAN,
  IN p_exit_code INT, IN p_exit_signal INT, IN p_now BIGINT,
  OUT p_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_count INT DEFAULT JSON_LENGTH(p_resources);
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_found BOOLEAN;
  DECLARE v_lease_expires BIGINT;
  DECLARE v_lease_acquired BIGINT;
  DECLARE v_lease_hash VARCHAR(128) CHARACTER SET ascii;
  DECLARE v_lease_depth INT;
  DECLARE v_lease_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_lease_pid BIGINT;
  DECLARE v_released LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_refused LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_other_holds BOOLEAN;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
  WHILE v_i < v_count DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    SET v_found = TRUE;
    SELECT expires_us, acquired_us, secret_hash, depth, host, pid
      INTO v_lease_expires, v_lease_acquired, v_lease_hash, v_lease_depth, v_lease_host,
           v_lease_pid
    FROM leases
    WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner
    FOR UPDATE;
    IF NOT v_found THEN
      SELECT EXISTS (SELECT 1 FROM leases
                     WHERE namespace = p_namespace AND resource = v_resource
                       AND (expires_us IS NULL OR expires_us > p_now))
        INTO v_other_holds;
      SET v_refused = JSON_ARRAY_APPEND(v_refused, '$', JSON_OBJECT(
        'resource', CONVERT(v_resource USING utf8mb4),
        'reason', IF(v_other_holds, 'other_owner', 'not_held')));
    ELSEIF v_lease_expires <= p_now THEN
      CALL clock_rec_event('expired', v_lease_expires, p_namespace, v_resource, p_owner,
                           NULL, v_lease_expires - v_lease_acquired, '', NULL, NULL);
      DELETE FROM leases
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      SET v_refused = JSON_ARRAY_APPEND(v_refused, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'expired'));
    ELSEIF NOT clock_rec_proves(v_lease_hash, p_secret) THEN
      -- Changes nothing but history: the holder keeps its lease.
      CALL clock_rec_event('refused', p_now, p_namespace, v_resource, p_owner, NULL, NULL,
                           COALESCE(p_by, ''), NULL, NULL);
      SET v_refused = JSON_ARRAY_APPEND(v_refused, '$',
        JSON_OBJECT('resource', CONVERT(v_resource USING utf8mb4), 'reason', 'not_proven'));
    ELSEIF v_lease_depth > 1 THEN
      UPDATE leases SET depth = depth - 1
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      SET v_released = JSON_ARRAY_APPEND(v_released, '$', JSON_OBJECT(
        'resource', CONVERT(v_resource USING utf8mb4), 'remaining_depth', v_lease_depth - 1));
    ELSE
      CALL clock_rec_event('released', p_now, p_namespace, v_resource, p_owner, NULL,
        p_now - v_lease_acquired,
        IF(v_lease_host = p_host AND JSON_CONTAINS(p_lineage, CAST(v_lease_pid AS CHAR)), '',
           COALESCE(p_by, '')), p_exit_code, p_exit_signal);
      IF p_succeeded THEN
        CALL clock_rec_success(p_namespace, v_resource, p_owner);
      END IF;
      DELETE FROM leases
      WHERE namespace = p_namespace AND resource = v_resource AND owner = p_owner;
      SET v_released = JSON_ARRAY_APPEND(v_released, '$', JSON_OBJECT(
        'resource', CONVERT(v_resource USING utf8mb4), 'remaining_depth', 0));
    END IF;
    SET v_i = v_i + 1;
  END WHILE;
  SET p_result = JSON_OBJECT('now', CAST(p_now AS SIGNED),
                             'released', JSON_EXTRACT(v_released, '$'),
                             'refused', JSON_EXTRACT(v_refused, '$'));
END;

-- force_release(p_namespace, p_resources, p_forced_by) → force_release:
-- {"now", "released": [{resource, holders_removed}…]}. Removes every holder
-- of each resource, whoever it is (`clock release --force`, operators
-- only: roles.sql): live leases are recorded 'forced' with p_forced_by and
-- the login (db_user), expired ones 'expired', each with the leftovers its
-- holder noted (clock_note_leftovers). Waiters stay queued. The
-- next grant draws a larger token, so the old holder's fenced writes fail;
-- it learns at its next renewal (no LISTEN for --watch-lease here).
CREATE OR REPLACE PROCEDURE clock_force_release(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_forced_by VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: remove every holder of the resources (PostgreSQL force_release())'
BEGIN
  DECLARE v_now BIGINT;
  DECLARE v_count INT;
  DECLARE v_i INT DEFAULT 0;
  DECLARE v_resource VARBINARY(255);
  DECLARE v_removed INT;
  DECLARE v_released LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_result LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  SET v_count = JSON_LENGTH(p_resources);
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  SET v_now = clock_now_us();
  WHILE v_i < v_count DO
    SET v_resource = clock_rec_nth(p_resources, v_i);
    -- Lock the holders' rows first, so the records below and the delete see
    -- the same rows.
    SET v_removed = (SELECT COUNT(*) FROM (SELECT owner FROM leases
                                           WHERE namespace = p_namespace AND resource = v_resource
                                           FOR UPDATE) AS held);
    INSERT INTO history (at_us, event, namespace, resource, owner, mode, token, held_for_us, host,
                         ip, pid, user_name, command, forced_by, db_user, leftovers)
    SELECT v_now, IF(expires_us <= v_now, 'expired', 'forced'), namespace, resource, owner, mode,
           token, v_now - acquired_us, host, ip, pid, user_name, command,
           IF(expires_us <= v_now, '', COALESCE(p_forced_by, '')), USER(), leftovers
    FROM leases
    WHERE namespace = p_namespace AND resource = v_resource
    ORDER BY token;
    CALL clock_rec_count_run(p_namespace, v_resource, 'forced',
                             (SELECT COUNT(*) FROM leases
                              WHERE namespace = p_namespace AND resource = v_resource
                                AND (expires_us IS NULL OR expires_us > v_now)));
    DELETE FROM leases WHERE namespace = p_namespace AND resource = v_resource;
    SET v_released = JSON_ARRAY_APPEND(v_released, '$', JSON_OBJECT(
      'resource', CONVERT(v_resource USING utf8mb4), 'holders_removed', CAST(v_removed AS SIGNED)));
    SET v_i = v_i + 1;
  END WHILE;
  SET v_result = JSON_OBJECT('now', CAST(v_now AS SIGNED),
                             'released', JSON_EXTRACT(v_released, '$'));
  COMMIT;
  SELECT v_result AS `force_release`;
END;

-- leave_queue(p_namespace, p_resources, p_owner, p_request_id, p_secret) →
-- leave_queue: how many of the caller's queue entries were removed (a
-- waiter giving up; p_request_id NULL: any request's); 0 when p_secret does
-- not prove the owner, which is recorded 'refused' instead.
CREATE OR REPLACE PROCEDURE clock_leave_queue(
  IN p_namespace VARBINARY(1024), IN p_resources LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_secret TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'clock: leave the queue (PostgreSQL leave_queue())'
BEGIN
  DECLARE v_owner CHAR(36) CHARACTER SET ascii;
  DECLARE v_refuses BOOLEAN;
  DECLARE v_removed INT DEFAULT 0;
  DECLARE v_i INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  CALL clock_rec_check_names(p_namespace, p_resources);
  SET v_owner = clock_rec_owner(p_owner);
  IF v_owner IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'leave_queue: no owner';
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  CALL clock_rec_lock_hierarchies(p_namespace, p_resources);
  CALL clock_rec_owner_refuses(v_owner, p_secret, v_refuses);
  IF v_refuses THEN
    CALL clock_rec_refused(clock_now_us(), p_namespace, p_resources, v_owner, NULL, NULL, NULL,
                           NULL, NULL, NULL, '');
  ELSE
    -- By unique key, one resource at a time (see the UPDATE in clock_renew).
    WHILE v_i < JSON_LENGTH(p_resources) DO
      DELETE FROM waiters
      WHERE namespace = p_namespace AND resource = clock_rec_nth(p_resources, v_i)
        AND owner = v_owner AND (p_request_id IS NULL OR request_id = p_request_id);
      SET v_removed = v_removed + ROW_COUNT();
      SET v_i = v_i + 1;
    END WHILE;
  END IF;
  COMMIT;
  SELECT v_removed AS `leave_queue`;
END;
