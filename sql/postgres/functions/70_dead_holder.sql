-- clock on PostgreSQL: a lease whose holder died on its own host
-- (docs/dead-holder.md). The server cannot see processes: clock run records
-- what identifies its process and its job (note_holder), a requester on the
-- same host reads it (holder_trace), judges there that nothing of it is
-- left, and asks end_dead_lease() to end exactly that lease. READ COMMITTED;
-- every write under the hierarchy lock its resource's other writers take.

-- Records on each of the owner's leases of p_resources the holder's trace:
-- its host's boot id and pid namespace, clock's start time, the job's
-- process group and cgroup (NULL: none), on the leases whose pid is p_pid
-- only: a clock run nested in another on the same resource re-enters the
-- outer one's lease, which keeps the outer one's pid and trace. In the owner's
-- name, as note_leftovers(): a caller whose p_secret does not prove the
-- owner changes nothing but history ('refused', p_by); a lease gone,
-- expired or under another token is refused and nothing is written.
-- Returns {"outcome": "noted", "now"} or {"outcome": "not_owner", "lost", "now"}.
CREATE OR REPLACE FUNCTION @schema@.note_holder(p_namespace text, p_resources text[],
                                                p_owner uuid, p_tokens bigint[],
                                                p_boot_id text, p_pid_ns bigint, p_pid bigint,
                                                p_pid_start bigint, p_job_group bigint,
                                                p_job_cgroup text, p_secret text, p_by text)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET lock_timeout = '5s'
AS $$
DECLARE
  v_now timestamptz;
  v_lost jsonb := '[]';
  l @schema@.leases;
BEGIN
  PERFORM @schema@.check_names(p_namespace, p_resources);
  PERFORM @schema@.check_bounds(p_resources, NULL, NULL, NULL, NULL, p_by);
  IF p_owner IS NULL OR p_tokens IS NULL
     OR (cardinality(p_tokens) > 0 AND cardinality(p_tokens) <> cardinality(p_resources))
     OR p_boot_id IS NULL OR octet_length(p_boot_id) > 64
     OR p_pid_ns IS NULL OR p_pid IS NULL OR p_pid_start IS NULL OR p_pid_start < 0
     OR octet_length(p_job_cgroup) > 4096 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'note_holder: invalid owner, tokens (one per resource, or none) or trace '
                '(boot id up to 64 bytes, pid namespace, start time, cgroup up to 4096 bytes)';
  END IF;
  PERFORM @schema@.lock_hierarchies(p_namespace, p_resources);
  v_now := clock_timestamp();  -- after the locks: see 20_acquire.sql
  IF @schema@.owner_refuses(p_owner, p_secret) THEN
    RETURN @schema@.owner_not_proven(p_namespace, p_resources, p_owner, p_by, v_now);
  END IF;
  FOR i IN 1 .. cardinality(p_resources) LOOP
    SELECT * INTO l FROM @schema@.leases
    WHERE namespace = p_namespace AND resource = p_resources[i] AND owner = p_owner
    FOR UPDATE;
    IF NOT FOUND THEN
      v_lost := v_lost || jsonb_build_object('resource', p_resources[i], 'reason', 'gone');
    ELSIF cardinality(p_tokens) > 0 AND l.token <> p_tokens[i] THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'token');
    ELSIF l.expires_at <= v_now THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'expired');
    ELSIF NOT @schema@.proves(l.secret_hash, p_secret) THEN
      v_lost := v_lost || jsonb_build_object('resource', l.resource, 'reason', 'not_proven');
      PERFORM @schema@.record_event('refused', v_now, l, NULL, coalesce(p_by, ''));
    END IF;
  END LOOP;
  IF jsonb_array_length(v_lost) > 0 THEN
    RETURN jsonb_build_object('outcome', 'not_owner', 'now', @schema@.usec(v_now),
                              'lost', v_lost);
  END IF;
  UPDATE @schema@.leases
  SET holder_boot_id = p_boot_id, holder_pid_ns = p_pid_ns, holder_pid_start = p_pid_start,
      job_group = nullif(p_job_group, 0), job_cgroup = nullif(p_job_cgroup, '')
  WHERE namespace = p_namespace AND resource = ANY (p_resources) AND owner = p_owner
    AND pid = p_pid;
  RETURN jsonb_build_object('outcome', 'noted', 'now', @schema@.usec(v_now));
END $$;

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
