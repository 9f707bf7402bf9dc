-- clock on MariaDB: the deadlock search, as sql/postgres/functions/
-- 23_deadlock.sql. An owner that holds one resource and waits for another
-- held by an owner waiting for the first is told at once (exit 76) instead
-- of queued. clock_try_acquire (20_acquire.sql) calls
-- clock_acq_search_deadlock, which runs the search for the first blocked
-- attempt of an owner others can wait for, holding slot -1 of
-- hierarchy_locks, so searches (and the enqueue that follows, until commit)
-- take turns.
--
-- The "waits for" edges (waits_for() on PostgreSQL): an owner with a live
-- queue entry waits for every other owner holding a live conflicting lease
-- on a related resource (for a semaphore: only when it is full), and for
-- every owner with an earlier live conflicting entry (FIFO). Read with plain
-- SELECTs in FOR loops: rows of other hierarchies, whose slot rows the
-- caller does not hold, are read without locks; a cycle closed by two
-- requests at the same instant is found by the next attempt of either.

-- Breadth-first search along the edges from the owners in the way
-- (p_blockers: [{owner, resource, host}…] from clock_acq_decide). Reaching
-- p_owner closes a cycle: p_cycle is its links [{"owner", "host",
-- "resource"}…], the requester first, each owner waiting for the resource
-- held or queued for by the next link owner (the last one by the
-- requester's), as store::describe(Cycle) words it; NULL if there is none.
CREATE OR REPLACE PROCEDURE clock_acq_find_cycle_links(
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_cycle LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  -- Owners reached, in order; each {owner, host, parent, via}: parent is
  -- the index (from 1) of the owner that waits for this one, 0 for the
  -- requester; via, the resource it waits for. v_owners: their owners alone.
  DECLARE v_nodes, v_owners LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '[]';
  DECLARE v_first INT DEFAULT 1;            -- the frontier is v_nodes[v_first..v_last]
  DECLARE v_depth INT DEFAULT 0;
  DECLARE v_last, v_i, v_parent INT;
  SET p_cycle = NULL;
  FOR b IN (SELECT t.o, t.r, t.h
            FROM JSON_TABLE(p_blockers, '$[*]' COLUMNS (n FOR ORDINALITY,
                   o CHAR(36) CHARACTER SET ascii COLLATE ascii_bin PATH '$.owner',
                   r VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.resource',
                   h VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.host')) AS t
            ORDER BY t.n) DO
    IF b.o <> p_owner AND NOT JSON_CONTAINS(v_owners, JSON_QUOTE(b.o)) THEN
      SET v_owners = JSON_ARRAY_APPEND(v_owners, '$', b.o);
      SET v_nodes = JSON_ARRAY_APPEND(v_nodes, '$',
                                      JSON_OBJECT('owner', b.o, 'host', COALESCE(b.h, ''),
                                                  'parent', 0, 'via', b.r));
    END IF;
  END FOR;
  search: WHILE v_depth < 64 AND p_cycle IS NULL DO
    SET v_last = JSON_LENGTH(v_owners);
    IF v_first > v_last THEN LEAVE search; END IF;
    edges: FOR e IN (
        SELECT w.owner AS from_owner, l.owner AS to_owner, l.resource, l.host AS to_host
        FROM JSON_TABLE(v_owners, '$[*]' COLUMNS (
               k FOR ORDINALITY, o CHAR(36) CHARACTER SET ascii COLLATE ascii_bin PATH '$')) AS f
        JOIN waiters w ON w.owner = f.o AND f.k BETWEEN v_first AND v_last
        JOIN leases l ON l.namespace = w.namespace
                     AND l.resource >= SUBSTRING_INDEX(w.resource, '.', 1)
                     AND l.resource < CONCAT(SUBSTRING_INDEX(w.resource, '.', 1), _binary '/')
                     AND clock_acq_related(l.resource, w.resource)
        WHERE w.expires_us > p_now AND l.owner <> w.owner
          AND (l.expires_us IS NULL OR l.expires_us > p_now)
          AND NOT (w.mode = 'shared' AND l.mode = 'shared')
          AND NOT (w.slots > 0 AND l.slots > 0 AND w.resource = l.resource
                   AND (SELECT COUNT(*) FROM leases h
                        WHERE h.namespace = l.namespace AND h.resource = l.resource
                          AND h.owner <> w.owner
                          AND (h.expires_us IS NULL OR h.expires_us > p_now)) < w.slots)
        UNION
        SELECT w.owner, x.owner, x.resource, x.host
        FROM JSON_TABLE(v_owners, '$[*]' COLUMNS (
               k FOR ORDINALITY, o CHAR(36) CHARACTER SET ascii COLLATE ascii_bin PATH '$')) AS f
        JOIN waiters w ON w.owner = f.o AND f.k BETWEEN v_first AND v_last
        JOIN waiters x ON x.namespace = w.namespace
                      AND x.resource >= SUBSTRING_INDEX(w.resource, '.', 1)
                      AND x.resource < CONCAT(SUBSTRING_INDEX(w.resource, '.', 1), _binary '/')
                      AND clock_acq_related(x.resource, w.resource)
        WHERE w.expires_us > p_now AND x.expires_us > p_now AND x.owner <> w.owner
          AND x.position < w.position
          AND NOT (w.mode = 'shared' AND x.mode = 'shared')
          AND NOT (w.slots > 0 AND x.slots > 0 AND w.resource = x.resource)
        ORDER BY 1, 2, 3) DO
      IF e.to_owner = p_owner THEN
        -- From the last link back to the requester, along the parents.
        SET v_i = JSON_LENGTH(v_owners) - 1;
        WHILE JSON_VALUE(v_owners, CONCAT('$[', v_i, ']')) <> e.from_owner DO
          SET v_i = v_i - 1;
        END WHILE;
        SET v_i = v_i + 1;
        SET p_cycle = JSON_ARRAY(JSON_OBJECT(
          'owner', e.from_owner,
          'host', JSON_VALUE(v_nodes, CONCAT('$[', v_i - 1, '].host')),
          'resource', CONVERT(e.resource USING utf8mb4)));
        WHILE v_i > 0 DO
          SET v_parent = JSON_VALUE(v_nodes, CONCAT('$[', v_i - 1, '].parent'));
          SET p_cycle = JSON_ARRAY_INSERT(p_cycle, '$[0]', JSON_OBJECT(
            'owner', IF(v_parent = 0, p_owner,
                        JSON_VALUE(v_nodes, CONCAT('$[', v_parent - 1, '].owner'))),
            'host', IF(v_parent = 0, COALESCE(p_host, ''),
                       JSON_VALUE(v_nodes, CONCAT('$[', v_parent - 1, '].host'))),
            'resource', JSON_VALUE(v_nodes, CONCAT('$[', v_i - 1, '].via'))));
          SET v_i = v_parent;
        END WHILE;
        LEAVE edges;
      END IF;
      IF NOT JSON_CONTAINS(v_owners, JSON_QUOTE(e.to_owner)) THEN
        SET v_i = JSON_LENGTH(v_owners) - 1;
        WHILE JSON_VALUE(v_owners, CONCAT('$[', v_i, ']')) <> e.from_owner DO
          SET v_i = v_i - 1;
        END WHILE;
        SET v_owners = JSON_ARRAY_APPEND(v_owners, '$', e.to_owner);
        SET v_nodes = JSON_ARRAY_APPEND(v_nodes, '$', JSON_OBJECT(
          'owner', e.to_owner, 'host', e.to_host, 'parent', v_i + 1,
          'via', CONVERT(e.resource USING utf8mb4)));
      END IF;
    END FOR edges;
    SET v_first = v_last + 1;
    SET v_depth = v_depth + 1;
  END WHILE search;
END;

-- The deadlock search of a blocked request (p_cycle as clock_acq_find_cycle_links
-- gives it, or NULL), only where a cycle can close: the first blocked
-- attempt of a request (re-attempts of a queued request skip it), by an
-- owner others can be waiting for (a live lease or queue entry), as
-- search_deadlock() on PostgreSQL.
CREATE OR REPLACE PROCEDURE clock_acq_search_deadlock(
  IN p_owner CHAR(36) CHARACTER SET ascii,
  IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_host VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_blockers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now BIGINT,
  OUT p_cycle LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
  MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_queued_here BOOLEAN;
  DECLARE v_others_can_wait BOOLEAN;
  SET p_cycle = NULL;
  SELECT EXISTS (SELECT 1 FROM waiters
                 WHERE owner = p_owner AND request_id = p_request_id AND expires_us > p_now),
         EXISTS (SELECT 1 FROM leases
                 WHERE owner = p_owner AND (expires_us IS NULL OR expires_us > p_now))
         OR EXISTS (SELECT 1 FROM waiters WHERE owner = p_owner AND expires_us > p_now)
    INTO v_queued_here, v_others_can_wait;
  IF NOT v_queued_here AND v_others_can_wait THEN
    -- Two owners asking for each other's locks at once hold different slot
    -- rows; searches (and the enqueue after them, until commit) take turns
    -- on slot -1, so the second sees the first's entry.
    UPDATE hierarchy_locks SET writes = writes + 1 WHERE slot = -1;
    CALL clock_acq_find_cycle_links(p_owner, p_host, p_blockers, p_now, p_cycle);
  END IF;
END;
