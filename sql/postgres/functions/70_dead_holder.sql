-- clock on PostgreSQL: a lease whose holder died on its own host
-- (docs/dead-holder.md). The server cannot see processes: clock run sends
-- what identifies its process and its job with its request, written on each
-- lease its grant inserts (try_acquire's p_holder, 20_acquire.sql), a
-- requester on the same host reads it (holder_trace), judges there that
-- nothing of it is left, and asks end_dead_lease() to end exactly that
-- lease. READ COMMITTED; every write under the hierarchy lock its
-- resource's other writers take.

-- The trace recorded on the live lease of p_owner on p_resource under
-- p_token: {"boot_id", "pid_ns", "pid", "pid_start", "job_group",
-- "job_cgroup"}, or JSON null when there is none. Only to a caller that
-- names the recorded boot id and pid namespace: the boot id is readable on
-- the holder's host alone, so no other host learns what end_dead_lease()
-- needs (docs/threat-model.md, "Dead holders").
CREATE OR REPLACE FUNCTION @schema@.holder_trace(p_namespace text, p_resource text,
                                                 p_owner uuid, p_token bigint,
                                                 p_boot_id text, p_pid_ns bigint)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  SELECT coalesce(
    (SELECT jsonb_build_object('boot_id', holder_boot_id, 'pid_ns', holder_pid_ns, 'pid', pid,
                               'pid_start', holder_pid_start, 'job_group', job_group,
                               'job_cgroup', job_cgroup)
     FROM @schema@.leases
     WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
       AND token = p_token AND holder_boot_id = p_boot_id AND holder_pid_ns = p_pid_ns
       AND (expires_at IS NULL OR expires_at > clock_timestamp())),
    'null')
$$;

-- Ends the lease of p_owner on p_resource under p_token as 'expired'
-- (forced_by p_by: "user@host pid N (holder died)", who claimed it) and wakes its waiters, only
-- when its recorded boot id, pid namespace, pid and start time are the
-- ones given: the claimer judged that exact process gone on its host.
-- Returns true when it ended the lease, false when no such lease is there
-- (already ended, renewed into another trace, another token).
-- What a login can do with it: end a lease of any owner whose trace it
-- knows, without the owner's secret (docs/threat-model.md, "Dead holders").
CREATE OR REPLACE FUNCTION @schema@.end_dead_lease(p_namespace text, p_resource text,
                                                   p_owner uuid, p_token bigint,
                                                   p_boot_id text, p_pid_ns bigint,
                                                   p_pid bigint, p_pid_start bigint,
                                                   p_by text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  l @schema@.leases;
BEGIN
  PERFORM @schema@.check_names(p_namespace, ARRAY[p_resource]);
  PERFORM @schema@.check_bounds(ARRAY[p_resource], NULL, NULL, NULL, NULL, p_by);
  IF p_owner IS NULL OR p_token IS NULL OR p_boot_id IS NULL OR p_pid_ns IS NULL
     OR p_pid IS NULL OR p_pid_start IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'end_dead_lease: the owner, token, boot id, pid namespace, pid and start time '
                'are all needed';
  END IF;
  PERFORM @schema@.lock_hierarchies(p_namespace, ARRAY[p_resource]);
  v_now := clock_timestamp();  -- after the lock: see 20_acquire.sql
  DELETE FROM @schema@.leases
  WHERE namespace = p_namespace AND resource = p_resource AND owner = p_owner
    AND token = p_token AND holder_boot_id = p_boot_id AND holder_pid_ns = p_pid_ns
    AND pid = p_pid AND holder_pid_start = p_pid_start
  RETURNING * INTO l;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM @schema@.record_event('expired', v_now, l, v_now - l.acquired_at, coalesce(p_by, ''));
  PERFORM @schema@.notify_change();
  RETURN true;
END $$;
