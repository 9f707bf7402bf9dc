#!/usr/bin/env bash
# Measurement 1, uncontended latency of `X -- true`: one process that takes a
# free lock, runs `true` and releases it, end to end as a shell sees it.
# clock on SQLite, on PostgreSQL (unix socket) and through pgbouncer, beside
# flock(1), `etcdctl lock`, psql holding an advisory lock around `\! true`,
# and the bare cost of one PostgreSQL connection plus one query
# (`pgbench -C`). Round-robin over the commands, median of the runs.
source "$(dirname "$0")/lib.sh"

runs=$(reps 30 8)
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
