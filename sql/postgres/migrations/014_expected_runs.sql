-- clock on PostgreSQL, version 14: missed runs (man clock, COMMANDS), as the SQLite
-- schema has it (its migration 008).
--
-- expected_runs holds, per resource, the period within which a successful
-- run is expected: declared by `clock run --once-per D` or `--every D` at
-- each run that is granted (expect_runs(),
-- sql/postgres/functions/60_expected_runs.sql; written only when missing or
-- changed), so a resource whose runs stop keeps its row and shows as
-- overdue. declared_at is the first declaration.
--
-- successes keeps the start of each successful run (last_success keeps only
-- the latest), so that the periods missed since a time can be listed. A
-- trigger on last_success (created by the functions script) writes it in the
-- release's own transaction and keeps the newest 1000 per resource.
--
-- Written only by SECURITY DEFINER functions; no role has a privilege on
-- either table (roles.sql). New tables only: live leases, queue entries and
-- history are untouched.
CREATE TABLE @schema@.expected_runs (
  namespace   text COLLATE "C" NOT NULL,
  resource    text COLLATE "C" NOT NULL,
  every_ms    bigint      NOT NULL CHECK (every_ms > 0),
  declared_at timestamptz NOT NULL,
  PRIMARY KEY (namespace, resource)
);

CREATE TABLE @schema@.successes (
  namespace  text COLLATE "C" NOT NULL,
  resource   text COLLATE "C" NOT NULL,
  started_at timestamptz NOT NULL,
  PRIMARY KEY (namespace, resource, started_at)
);

LOCK TABLE @schema@.last_success IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO @schema@.successes (namespace, resource, started_at)
  SELECT namespace, resource, started_at FROM @schema@.last_success;
