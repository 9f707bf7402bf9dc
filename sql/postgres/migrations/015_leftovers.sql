-- clock on PostgreSQL, version 15: the processes a holder's command left
-- running (clock run --leftovers, docs/whole-job.md), as the SQLite schema
-- has them (its migration 009).
--
-- leases.leftovers: what the holder last reported of them (a JSON array of
-- {"pid", "command", "fate"}), written only by note_leftovers()
-- (sql/postgres/functions/30_renew_release.sql) in the owner's name with
-- its proof: `clock status` shows the running ones while --leftovers wait
-- keeps the lock for them.
--
-- history.leftovers: the lease's list as it ended (released, forced,
-- expired, lost), each with its fate: waited for, or ended by clock.
--
-- Nullable columns without a default: a catalog change only (no table
-- rewrite), live leases and queue entries keep working, and rows written
-- before this version have none.
ALTER TABLE @schema@.leases ADD COLUMN leftovers jsonb;
ALTER TABLE @schema@.history ADD COLUMN leftovers jsonb;
