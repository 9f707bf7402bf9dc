-- clock on PostgreSQL, version 19: the sets of functions each release
-- installs beside the others (docs/upgrades.md). From release 1.1 on, a
-- release's functions live in a schema of their own (clock_r<hash>, see
-- src/store/postgres/schema.cpp), created once and never replaced, so that
-- adjacent releases run side by side; release 1.0's stay in the schema
-- itself. One row per set: `clock init` retires the sets of releases older
-- than the previous one, and `clock check` names them.
CREATE TABLE @schema@.routine_sets (
  name         text PRIMARY KEY,  -- the schema holding the set
  release      text NOT NULL,     -- clock --version of the binary that installed it
  stamp        text NOT NULL,     -- its functions' hash
  installed_at timestamptz NOT NULL DEFAULT now()
);
-- Release 1.0's functions, in the schema itself.
INSERT INTO @schema@.routine_sets (name, release, stamp)
VALUES ('@schema_name@', '1.0.0', 'release 1.0');
