-- clock on PostgreSQL, version 13: the locks that serialize a resource
-- hierarchy are row locks on a table of clock's own, not advisory locks.
--
-- Until 012 every write to a hierarchy took a transaction-level advisory
-- lock whose key anyone could compute (hashtextextended of the schema,
-- namespace and first segment), and pg_advisory_lock is granted to PUBLIC:
-- any login to the database, with no privilege on this schema, could take
-- it, stall every renewal under it until the holder was killed, time out an
-- operator's release --force, and (through pgbouncer) leave it held on a
-- pooled backend after disconnecting. A row lock needs UPDATE or SELECT
-- privilege on the table, which no role has (roles.sql); only clock's
-- SECURITY DEFINER functions take them, and a row lock ends with its
-- transaction.
--
-- One row per slot: a hierarchy locks slot hierarchy_slot(namespace, root)
-- (10_util.sql), a hash of its namespace and first segment into 0..16383.
-- Two hierarchies in one slot only take turns, as two advisory keys with
-- one hash did; related resources always share theirs. Slot -1 is the
-- deadlock search's. The table never changes after this migration: rows are
-- locked (FOR NO KEY UPDATE, FOR SHARE), never updated, so it stays 16,385
-- rows in about 70 pages whatever the number of resources.
CREATE TABLE @schema@.hierarchy_locks (
  slot integer PRIMARY KEY CHECK (slot BETWEEN -1 AND 16383)
);
INSERT INTO @schema@.hierarchy_locks (slot) SELECT generate_series(-1, 16383);

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
