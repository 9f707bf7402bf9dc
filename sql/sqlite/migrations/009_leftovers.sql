-- clock schema for SQLite, version 9: the processes a holder's command left
-- running (clock run --leftovers, docs/whole-job.md), as the PostgreSQL
-- schema has them (its migration 015).
--
-- leases.leftovers: what the holder last reported of them (a JSON array of
-- {"pid", "command", "fate"}, store/leftovers_json.hpp), written only in the
-- owner's name with its proof (note_leftovers): `clock status` shows the
-- running ones while --leftovers wait keeps the lock for them.
--
-- history.leftovers: the lease's list as it ended (released, forced,
-- expired, lost), each with its fate: waited for, or ended by clock.
--
-- Nullable columns: the tables' schema changes only, live leases and queue
-- entries keep working, and rows written before this version have none.
ALTER TABLE leases ADD COLUMN leftovers TEXT;
ALTER TABLE history ADD COLUMN leftovers TEXT;
