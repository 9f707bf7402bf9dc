-- clock on PostgreSQL, version 17: what shows, on a lease holder's own host,
-- that the holder died (docs/dead-holder.md), as the SQLite schema has it
-- (its migration 012).
--
-- leases.holder_boot_id, holder_pid_ns: the holder's host boot
-- (/proc/sys/kernel/random/boot_id) and pid namespace (the inode of
-- /proc/self/ns/pid): only a requester with both alike may judge its pids.
-- leases.holder_pid_start: when clock's process (leases.pid) started, in
-- clock ticks after boot (/proc/PID/stat field 22): the pid with its start
-- time names one process, never a later one that reuses the pid.
-- leases.job_group, job_cgroup: where the job's processes are (the guard's
-- process group; the job's cgroup directory, or NULL).
--
-- Written by note_holder() (sql/postgres/functions/70_dead_holder.sql) in
-- the owner's name once clock run's command runs; read by holder_trace();
-- a lease ended by end_dead_lease() is recorded as 'expired' with
-- forced_by "user@host pid N (holder died)". A lease without them (an older
-- binary's, `clock acquire`'s) waits for its TTL as before.
--
-- Nullable columns without a default: a catalog change only (no table
-- rewrite), and an older binary, which never names them, keeps working.
ALTER TABLE @schema@.leases ADD COLUMN holder_boot_id text;
ALTER TABLE @schema@.leases ADD COLUMN holder_pid_ns bigint;
ALTER TABLE @schema@.leases ADD COLUMN holder_pid_start bigint;
ALTER TABLE @schema@.leases ADD COLUMN job_group bigint;
ALTER TABLE @schema@.leases ADD COLUMN job_cgroup text;
