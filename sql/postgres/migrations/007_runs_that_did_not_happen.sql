-- clock on PostgreSQL, version 7: history also holds the runs that did not
-- happen (skipped, timed_out, killed) and, for skipped and timed_out, who was
-- in the way (owner, host, token: NULL for a queue entry). The constraint is
-- added NOT VALID and then validated, so the scan of existing rows does not
-- hold the table's ACCESS EXCLUSIVE lock; new columns without a default are
-- catalog-only changes.
ALTER TABLE @schema@.history
  DROP CONSTRAINT history_event_check,
  ADD CONSTRAINT history_event_check
    CHECK (event IN ('acquired', 'released', 'expired', 'forced', 'lost',
                     'skipped', 'timed_out', 'killed')) NOT VALID,
  ADD COLUMN in_the_way_owner uuid,
  ADD COLUMN in_the_way_host text,
  ADD COLUMN in_the_way_token bigint;
ALTER TABLE @schema@.history VALIDATE CONSTRAINT history_event_check;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
