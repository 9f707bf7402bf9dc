-- clock schema for SQLite, version 12: what shows, on a lease holder's own
-- host, that the holder died (docs/dead-holder.md), as the PostgreSQL
-- schema has it (its migration 017).
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
-- Written by clock run in the owner's name once its command runs
-- (note_holder); a lease without them (an older binary's, `clock acquire`'s)
-- waits for its TTL as before. Nullable columns: live leases keep working.
ALTER TABLE leases ADD COLUMN holder_boot_id TEXT;
ALTER TABLE leases ADD COLUMN holder_pid_ns INTEGER;
ALTER TABLE leases ADD COLUMN holder_pid_start INTEGER;
ALTER TABLE leases ADD COLUMN job_group INTEGER;
ALTER TABLE leases ADD COLUMN job_cgroup TEXT;
