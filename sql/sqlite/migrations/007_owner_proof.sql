-- clock schema for SQLite, version 7: the proof belongs to the owner id, not
-- to one lease (as the PostgreSQL schema's migration 012 has it).
--
-- waiters.secret_hash: a queue entry keeps the hash of its owner's secret as
-- a lease does, so that an id that only waits is bound to its proof too: a
-- caller that knows the id (status prints it) but not the secret cannot take
-- its turn, refresh its entry or remove it.
--
-- history.secret_hash: an 'acquired' record keeps its lease's hash, so that
-- a renewal that finds the lease already gone records 'lost' only for the
-- owner that held it (the hash is never read out of the table).
--
-- db_user: who really wrote a row. On SQLite the login is the operating
-- system user whose process wrote the file (the store fills it in); host,
-- pid, user and command stay what the caller claims. Rows written before
-- this version say ''.
--
-- Adding nullable columns, or columns with a constant default, changes the
-- tables' schema only: live leases and queue entries keep working, and a
-- row without a hash (written before version 6 or 7) needs no proof, as
-- before.
ALTER TABLE waiters ADD COLUMN secret_hash TEXT;
ALTER TABLE history ADD COLUMN secret_hash TEXT;
ALTER TABLE history ADD COLUMN db_user TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN db_user TEXT NOT NULL DEFAULT '';
ALTER TABLE waiters ADD COLUMN db_user TEXT NOT NULL DEFAULT '';
