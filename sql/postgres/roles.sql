-- Least-privilege roles for clock on PostgreSQL. Not a migration (clock never
-- runs it): a database administrator runs it once per database, and again
-- after a `clock init` that added migrations, as the owner of the clock
-- schema (or a superuser), after `clock init` created the schema:
--
--   psql -v ON_ERROR_STOP=1 -v schema=clock -f sql/postgres/roles.sql
--
-- (schema defaults to clock; it must match postgres.schema in clock.toml), then
-- gives each host's login role one of the two group roles:
--
--   CREATE ROLE web1 LOGIN PASSWORD '…' IN ROLE clock_app;
--   CREATE ROLE ops  LOGIN PASSWORD '…' IN ROLE clock_operator;
--
-- and the session defaults below (this file gives them to the login members
-- of clock_app that exist when it runs; a group role's own settings do not
-- reach its members):
--
--   ALTER ROLE web1 SET idle_in_transaction_session_timeout = '1s';
--   ALTER ROLE web1 SET statement_timeout = '10s';
--
-- clock_app       what `clock run`, `acquire`, `renew`, `release`, `status`
--                 and `history` need: EXECUTE on try_acquire, leave_queue,
--                 record_missed_run (a run that timed out or was killed),
--                 renew, note_leftovers (what clock run's command left
--                 running, on the caller's own leases, with its secret),
--                 holder_trace and end_dead_lease (a lease whose holder died
--                 on the caller's host: any lease whose recorded facts the
--                 caller names, without the owner's secret;
--                 docs/threat-model.md, "Dead holders"),
--                 release and release2 (of the caller's own leases: the
--                 function only ever touches the lease of the owner id it is
--                 given, and only with that owner's secret; release2 also
--                 records how the run ended),
--                 status_rows, history, history2 and run_results, expect_runs (clock run --once-per
--                 or --every declares the period of a resource it holds,
--                 with the owner's secret) and
--                 expected_rows (status, missed), and SELECT on schema_migrations (the
--                 version check every command makes first). No privilege on
--                 any lock table, the sequence, or CREATE anywhere: the lock
--                 table and history change only through the functions, so
--                 this role cannot run DDL, rewrite or delete history, or
--                 write a lease the rules would refuse.
-- clock_reader    what `clock serve` (and `status`, `history`, `missed`) needs
--                 and no more: EXECUTE on status_rows, history, history2,
--                 run_results and expected_rows, and SELECT on schema_migrations. It can
--                 read who holds what and what happened, never take, renew,
--                 release or declare anything.
-- clock_operator  clock_app, plus force_release (`release --force`, recorded
--                 with who forced it) and gc_batch (`clock gc`: expired leases,
--                 dead waiters, history older than a cut-off).
--
-- Why this works: the operation functions are SECURITY DEFINER, owned by the
-- schema owner, with search_path pinned to pg_catalog and every object
-- qualified, so they act with the owner's rights on exactly the rows their
-- rules allow; EXECUTE on every function of the schema is revoked from PUBLIC
-- when the functions are applied, so only the grants below open them (and
-- re-applying them, CREATE OR REPLACE, keeps these grants). Owner ids are
-- public (status and history show them); every act in an owner's name (a
-- grant, a queue turn or exit, a renewal, a release, a history record) needs
-- the owner's secret, of which the tables keep only a SHA-256 that neither
-- role can read. A refused attempt is recorded in history ('refused', with
-- who asked and the login, db_user). Keep CLOCK_OWNER, which carries the
-- secret, as private as the lock. The functions serialize a hierarchy on
-- row locks of hierarchy_locks (migration 013), not on advisory keys that
-- any login could take: with no privilege on that table, a login without
-- clock's privileges cannot stall a lock, a renewal or a forced release.
--
-- What a clock_app login can hold up, and for how long
-- (docs/threat-model.md, "Bounds of a call"): a function call takes the
-- rows of the hierarchies it names until its transaction ends. Each
-- function refuses more than 64 resources and over-long text (namespace,
-- host and user 255 bytes, ip 64, command 4096, who asked 512), so a call
-- does milliseconds of work, and sets idle_in_transaction_session_timeout =
-- 1s for the rest of the caller's transaction, so a caller that leaves its
-- transaction open after a call (BEGIN; SELECT clock.try_acquire(…); then
-- nothing), which clock never does, loses its session within 1 s. What
-- such a login can still do is hold those rows for as long as it likes by
-- setting that parameter back after the call, or by keeping one statement
-- running after it (a call and pg_sleep() in one SELECT, or a call and a
-- slow statement in one pipeline before its Sync). Renewals, grants and
-- forced releases in the hierarchies it names wait meanwhile (each up to
-- the functions' 5 s lock_timeout); hierarchies it does not name are not
-- affected. The session defaults above end most such sessions too, but a
-- login may change its own settings, so against a deliberately hostile
-- clock_app login they are a safety net, not a bound: give clock_app only
-- to the hosts that run clock. These bounds are this release's functions'
-- (its routine set); release 1.0's, granted below for v1.0.0 hosts, are kept
-- as v1.0.0 installs them and have none: once no host runs v1.0.0, run this
-- file again with -v without_release_1_0=1, which leaves them out.
-- Neither role may create or migrate the schema: a command run as one of
-- them against a missing or older schema fails with exit 78, pointing at
-- `clock init`, which the schema owner runs.

\if :{?schema}
\else
  \set schema clock
\endif

BEGIN;

SELECT 'CREATE ROLE clock_app NOLOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'clock_app') \gexec
SELECT 'CREATE ROLE clock_reader NOLOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'clock_reader') \gexec
SELECT 'CREATE ROLE clock_operator NOLOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'clock_operator') \gexec
GRANT clock_app TO clock_operator;

-- Start from nothing, so a re-run also takes back what an older version gave.
REVOKE ALL ON SCHEMA :"schema" FROM clock_app, clock_operator, clock_reader;
REVOKE ALL ON ALL TABLES IN SCHEMA :"schema" FROM clock_app, clock_operator, clock_reader;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA :"schema" FROM clock_app, clock_operator, clock_reader;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA :"schema" FROM PUBLIC, clock_app, clock_operator, clock_reader;

GRANT USAGE ON SCHEMA :"schema" TO clock_app, clock_reader;
GRANT SELECT ON :"schema".schema_migrations TO clock_app, clock_reader;

-- Release 1.0's functions, in the schema itself, for v1.0.0 hosts. Once no
-- host runs v1.0.0, run this file again with -v without_release_1_0=1:
-- the REVOKE above takes them back and nothing grants them again, so an
-- app login can no longer reach functions that have none of this
-- release's bounds. Clock 1.1 and later call only their own sets (below).
\if :{?without_release_1_0}
\else
GRANT EXECUTE ON FUNCTION
  :"schema".try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text,
                        bigint, text, text, timestamptz, boolean, text, text, bigint),
  :"schema".leave_queue(text, text[], uuid, text, text),
  :"schema".record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text,
                              jsonb, text),
  :"schema".renew(text, text[], uuid, bigint[], bigint, text, text),
  :"schema".note_leftovers(text, text[], uuid, bigint[], jsonb, text, text),
  :"schema".release(text, text[], uuid, text, text, text, bigint[], boolean),
  :"schema".status_rows(text, text, boolean),
  :"schema".history(text, text, integer, text),
  :"schema".expect_runs(text, text[], bigint, uuid, text, text),
  :"schema".expected_rows(text, text, bigint)
TO clock_app;

GRANT EXECUTE ON FUNCTION
  :"schema".status_rows(text, text, boolean),
  :"schema".history(text, text, integer, text),
  :"schema".expected_rows(text, text, bigint)
TO clock_reader;

GRANT EXECUTE ON FUNCTION
  :"schema".force_release(text, text[], text),
  :"schema".gc_batch(integer, bigint, boolean)
TO clock_operator;
\endif

-- Each release from 1.1 on calls its own set of functions, a schema of its
-- own that routine_sets records (docs/upgrades.md; the functions above are
-- release 1.0's, and the ones added since, such as release2, exist only in
-- the sets): the same grants there, by name.
SELECT format('REVOKE ALL ON SCHEMA %1$I FROM clock_app, clock_operator, clock_reader; '
              'REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %1$I '
              'FROM PUBLIC, clock_app, clock_operator, clock_reader; '
              'GRANT USAGE ON SCHEMA %1$I TO clock_app, clock_reader', s.name)
FROM :"schema".routine_sets AS s
WHERE s.name <> :'schema' AND to_regnamespace(quote_ident(s.name)) IS NOT NULL \gexec
SELECT format('GRANT EXECUTE ON FUNCTION %s TO %I', p.oid::regprocedure, g.role)
FROM :"schema".routine_sets AS s
JOIN pg_proc AS p ON p.pronamespace = to_regnamespace(quote_ident(s.name))
JOIN (VALUES ('try_acquire', 'clock_app'), ('leave_queue', 'clock_app'),
             ('record_missed_run', 'clock_app'), ('renew', 'clock_app'),
             ('note_leftovers', 'clock_app'), ('release', 'clock_app'),
             ('status_rows', 'clock_app'), ('history', 'clock_app'),
             ('expect_runs', 'clock_app'), ('expected_rows', 'clock_app'),
             ('holder_trace', 'clock_app'), ('end_dead_lease', 'clock_app'),
             ('release2', 'clock_app'),
             ('history2', 'clock_app'), ('run_results', 'clock_app'),
             ('status_rows', 'clock_reader'), ('history', 'clock_reader'),
             ('history2', 'clock_reader'), ('run_results', 'clock_reader'),
             ('expected_rows', 'clock_reader'),
             ('force_release', 'clock_operator'), ('gc_batch', 'clock_operator'))
  AS g(name, role) ON g.name = p.proname
WHERE s.name <> :'schema' \gexec

-- The session defaults of the login members of clock_app (and so of
-- clock_operator) that exist now; see the top of this file. One that this
-- role may not alter is named in a notice and left as it is.
DO $defaults$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT rolname FROM pg_roles
           WHERE rolcanlogin AND NOT rolsuper AND pg_has_role(oid, 'clock_app', 'MEMBER')
  LOOP
    BEGIN
      EXECUTE format('ALTER ROLE %I SET idle_in_transaction_session_timeout = %L',
                     r.rolname, '1s');
      EXECUTE format('ALTER ROLE %I SET statement_timeout = %L', r.rolname, '10s');
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'could not give % its session defaults (%): run ALTER ROLE % SET '
                   'idle_in_transaction_session_timeout = ''1s'' and statement_timeout = '
                   '''10s'' as a superuser', r.rolname, SQLERRM, r.rolname;
    END;
  END LOOP;
END $defaults$;

COMMIT;
