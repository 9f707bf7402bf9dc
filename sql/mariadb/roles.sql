-- Least-privilege roles for clock on MariaDB (10.6+), as
-- sql/postgres/roles.sql on PostgreSQL. Not a migration (clock never runs
-- it): an administrator runs it in the clock database, after `clock init`
-- created the tables and procedures, and again after an init that added
-- procedures (CREATE OR REPLACE keeps a procedure's grants: tested by
-- tests/mariadb/test_procedures.sh):
--
--   mariadb clockdb < sql/mariadb/roles.sql
--
-- (GRANT … ON PROCEDURE name resolves name in the current database: the
-- one on the command line.) Then each host's login gets one role, as its
-- default role (MariaDB activates a role only when told to):
--
--   CREATE USER 'web1'@'%' IDENTIFIED BY '…';
--   GRANT clock_app TO 'web1'@'%';  SET DEFAULT ROLE clock_app FOR 'web1'@'%';
--
-- clock_reader    what `clock status`, `history`, `status --missed` and a
--                 read-only page (clock serve) need: EXECUTE on
--                 clock_status_rows, clock_history and clock_expected_rows,
--                 SELECT on schema_migrations and procedures_stamp (the
--                 version check every command makes first). Nothing that writes.
-- clock_app       clock_reader, plus what `clock run`, `acquire`, `renew` and
--                 `release` need: EXECUTE on clock_try_acquire,
--                 clock_leave_queue, clock_record_missed_run, clock_renew,
--                 clock_note_leftovers (what clock run's command left
--                 running), clock_release (each only ever of the owner id
--                 it is given, and only with that owner's secret) and
--                 clock_expect_runs.
-- clock_operator  clock_app, plus clock_force_release (`release --force`,
--                 recorded with who forced it and the login) and
--                 clock_gc_batch (`clock gc`).
--
-- None of them has a privilege on any table but schema_migrations (read),
-- nor CREATE, nor EXECUTE on the clock_rec_* helpers: the lock table and
-- history change only through the procedures, which are SQL SECURITY
-- DEFINER and so act with their definer's rights (the account that ran
-- `clock init`) on exactly the rows their rules allow. So these roles cannot
-- run DDL, rewrite or delete history, write a lease the rules would refuse,
-- or lock hierarchy_locks rows outside the procedures. `clock init` is run by
-- the database's owner account (ALL PRIVILEGES on the database: it creates
-- the tables and, as definer, the procedures); an operator who also runs
-- init uses that account for it. db_user in history is USER(), the login,
-- which the definer's rights do not change.
--
-- What a clock_app login can hold up, and for how long
-- (docs/threat-model.md, "Bounds of a call"): a procedure takes the slot
-- rows of the hierarchies it names inside its own START TRANSACTION and
-- commits before it returns. Each refuses more than 64 resources and
-- over-long text (namespace, host and user 255 bytes, ip 64, command 4096,
-- who asked 512), so a CALL does milliseconds of work, and refuses to run
-- while the caller's own transaction is open (@@in_transaction), where its
-- START TRANSACTION would silently commit the caller's work. A login cannot
-- run a procedure of clock's inside a statement of its own (no CREATE
-- ROUTINE, and a stored function may not call a procedure that commits), so
-- it holds those rows only while one of its CALLs runs: a renewal, a grant
-- or a forced release waits for at most that (well under a second), and
-- never for a hierarchy the CALL does not name. max_statement_time does not
-- apply to stored procedures, and clock does not rely on it; clock's client
-- sets innodb_lock_wait_timeout (5 s) for its own sessions.
--
-- The roles are per server, not per database: this file starts by taking
-- every privilege back from them (so a re-run also takes back what an older
-- version gave), which would take back another clock database's grants on
-- the same server too; for a second database, use a copy with other role
-- names.
--
-- clock_try_acquire is the acquire side's procedure (sql/mariadb/procedures/
-- 20_acquire.sql): it must exist before this file runs.

CREATE ROLE IF NOT EXISTS clock_reader;
CREATE ROLE IF NOT EXISTS clock_app;
CREATE ROLE IF NOT EXISTS clock_operator;

REVOKE ALL PRIVILEGES, GRANT OPTION FROM clock_reader, clock_app, clock_operator;

GRANT clock_reader TO clock_app;
GRANT clock_app TO clock_operator;

GRANT SELECT ON schema_migrations TO clock_reader;
GRANT SELECT ON procedures_stamp TO clock_reader;
GRANT EXECUTE ON PROCEDURE clock_status_rows TO clock_reader;
GRANT EXECUTE ON PROCEDURE clock_history TO clock_reader;
GRANT EXECUTE ON PROCEDURE clock_expected_rows TO clock_reader;

GRANT EXECUTE ON PROCEDURE clock_try_acquire TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_leave_queue TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_record_missed_run TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_renew TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_note_leftovers TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_release TO clock_app;
GRANT EXECUTE ON PROCEDURE clock_expect_runs TO clock_app;

GRANT EXECUTE ON PROCEDURE clock_force_release TO clock_operator;
GRANT EXECUTE ON PROCEDURE clock_gc_batch TO clock_operator;
