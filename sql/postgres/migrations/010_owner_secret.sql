-- clock on PostgreSQL, version 10: proof of ownership (man clock, Owners and re-entry).
--
-- leases.secret_hash is the SHA-256 (64 hex digits, secret_hash() in
-- sql/postgres/functions/10_util.sql) of the owner's secret: renewing,
-- releasing and re-entering a lease that has one needs the secret. It is
-- NULL for a lease granted before this version, so a live lease of the old
-- format is not stranded: it stays renewable and releasable by its owner id
-- alone until it is released or expires. No role has a privilege on the
-- table (roles.sql), so the hash is readable only by its owner and
-- superusers; a new nullable column without a default is a catalog-only
-- change.
--
-- history also holds 'refused': a renew, release or re-entry refused for
-- want of the secret, with the holder's lease and, in forced_by, who asked.
-- The constraint is replaced NOT VALID and then validated, as in 007.
ALTER TABLE @schema@.leases ADD COLUMN secret_hash text;

ALTER TABLE @schema@.history
  DROP CONSTRAINT history_event_check,
  ADD CONSTRAINT history_event_check
    CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                     'skipped', 'timed_out', 'killed', 'refused')) NOT VALID;
ALTER TABLE @schema@.history VALIDATE CONSTRAINT history_event_check;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
