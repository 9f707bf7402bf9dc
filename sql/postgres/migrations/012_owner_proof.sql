-- clock on PostgreSQL, version 12: the proof belongs to the owner id, not to
-- one lease (man clock, Owners and re-entry), as the SQLite schema's migration 007 has it.
--
-- waiters.secret_hash: a queue entry keeps the hash of its owner's secret as
-- a lease does (010), so that an id that only waits is bound to its proof
-- too: a caller that knows the id (status prints it) but not the secret
-- cannot take its turn, refresh its entry or remove it (owner_refuses() in
-- sql/postgres/functions/10_util.sql).
--
-- history.secret_hash: an 'acquired' record keeps its lease's hash, so that
-- a renewal that finds the lease already gone records 'lost' only for the
-- owner that held it. No role may read the table (roles.sql).
--
-- leases.db_user and waiters.db_user: the login that wrote the row
-- (session_user, which a SECURITY DEFINER function does not change), shown
-- by status beside the facts a caller claims; history has had it since 001.
-- The columns are added without a default, so the rows already there say
-- NULL (unknown) rather than the name of whoever runs this migration, and
-- the default is set afterwards for new rows. Each step is a catalog-only
-- change: live leases and queue entries keep working through the upgrade,
-- and a row without a hash (from before 010 or 012) needs no proof, as
-- before.
ALTER TABLE @schema@.waiters ADD COLUMN secret_hash text;
ALTER TABLE @schema@.history ADD COLUMN secret_hash text;
ALTER TABLE @schema@.leases ADD COLUMN db_user text;
ALTER TABLE @schema@.leases ALTER COLUMN db_user SET DEFAULT session_user;
ALTER TABLE @schema@.waiters ADD COLUMN db_user text;
ALTER TABLE @schema@.waiters ALTER COLUMN db_user SET DEFAULT session_user;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
