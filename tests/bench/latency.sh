#!/usr/bin/env bash
# Measurement 1, uncontended latency of `X -- true`: one process that takes a
# free lock, runs `true` and releases it, end to end as a shell sees it.
# clock on SQLite, on PostgreSQL (unix socket) and through pgbouncer, beside
# flock(1), `etcdctl lock`, psql holding an advisory lock around `\! true`,
# and the bare cost of one PostgreSQL connection plus one query
# (`pgbench -C`). Round-robin over the commands, median of the runs.
source "$(dirname "$0")/lib.sh"

runs=$(reps 100 8)  # medians of 30 moved ±10 % between calls
say "1. uncontended latency: $runs interleaved runs of each command"

sq=$(sqlite_url m1)
init_store "$sq"
init_store "$BENCH_PG_URL"

bench latency --runs "$runs" --warmup 3 \
  --cmd m1.flock "flock $BENCH_WORK/m1.flock true" \
  --cmd m1.sqlite "$(clock_cmd "$sq") run -r bench.m1 -- true" \
  --cmd m1.pg "$(clock_cmd "$BENCH_PG_URL") run -r bench.m1 -- true" \
  --cmd m1.pgbouncer "$(clock_cmd "$BENCH_PGB_URL") run -r bench.m1 -- true" \
  --cmd m1.etcd "$(etcd_cmd) lock bench.m1 true" \
  --cmd m1.psql "psql -X -q -d '$BENCH_PG_URL' -c 'SELECT pg_advisory_lock(1)' -c '\\! true' -c 'SELECT pg_advisory_unlock(1)'" \
  --cmd m1.version "$BENCH_CLOCK --version"

# pgbench -C: a new connection for every transaction of one `SELECT 1`; its
# "latency average" then includes the connection (tps is "including
# reconnection times"). Median of three runs.
echo 'SELECT 1;' >"$BENCH_WORK/select1.sql"
latencies=() connects=()
for _ in 1 2 3; do
  out=$(pgbench -n -C -t "$(reps 300 50)" -f "$BENCH_WORK/select1.sql" "$BENCH_PG_URL" 2>&1) || {
    echo "$out" >&2
    exit 1
  }
  latencies+=("$(sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p' <<<"$out")")
  connects+=("$(sed -n 's/^average connection time = \([0-9.]*\) ms$/\1/p' <<<"$out")")
done
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }
bench record m1.pgbench "$(median "${latencies[@]}")" --unit ms \
  --extra "{\"connect_ms\": $(median "${connects[@]}")}"

# Isolated runs, as cron starts them: 0.2 s idle before each. As root, clock
# starts the job in a cgroup of its own (docs/whole-job.md); an unprivileged
# user's clock makes none (the cgroup is not delegated to it), so the same
# runs as `nobody`, beside flock as `nobody`, give the cgroup's cost: what
# root's clock spends over root's flock, less what nobody's clock spends over
# nobody's flock. Back-to-back runs (above) hide it: the kernel's grace
# period that moving a process into a cgroup waits for is cheap right after
# another one.
isolated=(--cmd m1i.flock "flock $BENCH_WORK/m1.flock true"
  --cmd m1i.sqlite "$(clock_cmd "$sq") run -r bench.m1 -- true")
if [[ $(id -u) == 0 ]]; then
  # nobody may pass through the work directory (not list it) to a folder of
  # its own, with its own copy of the empty config file suite.sh names.
  chmod o+x "$BENCH_WORK"
  install -d -o 65534 "$BENCH_WORK/nobody"
  install -m 644 "$CLOCK_CONFIG" "$BENCH_WORK/nobody/empty.toml"
  as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=$BENCH_WORK/nobody"
  as_nobody+=" CLOCK_CONFIG=$BENCH_WORK/nobody/empty.toml"
  nobody_sq="sqlite:$BENCH_WORK/nobody/m1.db"
  $as_nobody "$BENCH_CLOCK" --database "$nobody_sq" run -r bench.m1 -- true
  isolated+=(--cmd m1i.nobody.flock "$as_nobody flock $BENCH_WORK/nobody/m1.flock true"
    --cmd m1i.nobody.sqlite "$as_nobody $(clock_cmd "$nobody_sq") run -r bench.m1 -- true")
fi
say "1. isolated runs: $(reps 40 10) of each command, 0.2 s idle before each"
bench latency --runs "$(reps 40 10)" --warmup 2 --gap 0.2 "${isolated[@]}"
