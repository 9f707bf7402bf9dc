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
--                 clock_status_rows, clock_history, clock_history2,
--                 clock_run_results and clock_expected_rows,
--                 SELECT on schema_migrations and procedures_stamp (the
--                 version check every command makes first). Nothing that writes.
-- clock_app       clock_reader, plus what `clock run`, `acquire`, `renew` and
--                 `release` need: EXECUTE on clock_try_acquire,
--                 clock_leave_queue, clock_record_missed_run, clock_renew,
--                 clock_note_leftovers (what clock run's command left
--                 running), clock_release and clock_release2 (each only ever of the
--                 owner id it is given, and only with that owner's secret;
--                 clock_release2 also records how the run ended),
--                 clock_expect_runs, and clock_holder_trace and
--                 clock_end_dead_lease (a lease whose holder died on the
--                 caller's host: any lease whose recorded facts the caller
--                 names, without the owner's secret; docs/threat-model.md,
--                 "Dead holders").
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
-- sets innodb_lock_wait_timeout (5 s) for its own sessions. These bounds are
-- this release's procedures' (its suffixed set); release 1.0's unsuffixed
-- ones, granted below for v1.0.0 hosts, are kept as v1.0.0 installs them
-- and have none: once no host runs v1.0.0, run this file again with
-- @without_release_1_0 set (below), which leaves them out.
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

-- Release 1.0's procedures (unsuffixed), for v1.0.0 hosts. Once no host
-- runs v1.0.0, run this file again with the variable without_release_1_0
-- set, in the same session:
--
--   { echo 'SET @without_release_1_0 = 1;'; cat sql/mariadb/roles.sql; } | mariadb clockdb
--
-- The REVOKE above takes them back and nothing grants them again, so an
-- app login can no longer reach procedures that have none of this
-- release's bounds. Clock 1.1 and later call only their own sets (below).
DELIMITER $$
BEGIN NOT ATOMIC
  IF @without_release_1_0 IS NULL THEN
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
  END IF;
END$$
DELIMITER ;

-- Each release from 1.1 on calls its own set of routines, named with the
-- set's suffix (docs/upgrades.md): the same grants on every set that
-- routine_sets records (the unsuffixed ones above are release 1.0's; the
-- routines added since, such as clock_release2, exist only in the sets).
DELIMITER $$
BEGIN NOT ATOMIC
  DECLARE v_done INT DEFAULT 0;
  DECLARE v_suffix VARCHAR(16);
  DECLARE v_sets CURSOR FOR SELECT suffix FROM routine_sets WHERE suffix <> '';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;
  OPEN v_sets;
  each_set: LOOP
    FETCH v_sets INTO v_suffix;
    IF v_done THEN
      LEAVE each_set;
    END IF;
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_status_rows', v_suffix, ' TO clock_reader');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_history', v_suffix, ' TO clock_reader');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_expected_rows', v_suffix, ' TO clock_reader');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_try_acquire', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_leave_queue', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_record_missed_run', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_renew', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_note_leftovers', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_release', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_expect_runs', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_force_release', v_suffix, ' TO clock_operator');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_gc_batch', v_suffix, ' TO clock_operator');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_history2', v_suffix, ' TO clock_reader');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_run_results', v_suffix, ' TO clock_reader');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_holder_trace', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_end_dead_lease', v_suffix, ' TO clock_app');
    EXECUTE IMMEDIATE CONCAT('GRANT EXECUTE ON PROCEDURE clock_release2', v_suffix, ' TO clock_app');
  END LOOP;
  CLOSE v_sets;
END$$
DELIMITER ;
