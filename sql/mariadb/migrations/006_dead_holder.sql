-- clock schema for MariaDB, version 6: what shows, on a lease holder's own
-- host, that the holder died (docs/dead-holder.md), as PostgreSQL's
-- migration 017 and SQLite's 012 have it.
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
-- Written by clock_note_holder, read by clock_holder_trace, and a lease is
-- ended by clock_end_dead_lease (sql/mariadb/procedures/70_dead_holder.sql).
-- Nullable, no default, added last: InnoDB adds such columns in place, and
-- an older binary, which never names them, keeps working. IF NOT EXISTS
-- makes the file safe to run again, as 001 explains.
ALTER TABLE leases ADD COLUMN IF NOT EXISTS holder_boot_id VARCHAR(64) CHARACTER SET ascii NULL,
                   ADD COLUMN IF NOT EXISTS holder_pid_ns BIGINT NULL,
                   ADD COLUMN IF NOT EXISTS holder_pid_start BIGINT NULL,
                   ADD COLUMN IF NOT EXISTS job_group BIGINT NULL,
                   ADD COLUMN IF NOT EXISTS job_cgroup VARCHAR(4096) NULL;
