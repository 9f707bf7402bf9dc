#!/usr/bin/env bash
# Measurement 6, memory: the peak resident set (VmHWM of /proc/PID/status) of
# `clock run` one second into its child's run, with a heartbeat every 100 ms
# so that renewals have happened by then; flock(1) and `etcdctl lock` doing
# the same, for reference. Median of three runs.
source "$(dirname "$0")/lib.sh"

say "6. peak RSS while the child runs"

sq=$(sqlite_url m6)
init_store "$sq"
run_args="run -r bench.m6 --heartbeat 100ms -- sleep 1.5"

bench rss --reps 3 --at 1.0 \
  --cmd m6.sqlite "$(clock_cmd "$sq") $run_args" \
  --cmd m6.pg "$(clock_cmd "$BENCH_PG_URL") $run_args" \
  --cmd m6.pgbouncer "$(clock_cmd "$BENCH_PGB_URL") $run_args" \
  --cmd m6.flock "flock $BENCH_WORK/m6.flock sleep 1.5" \
  --cmd m6.etcd "$(etcd_cmd) lock bench.m6 sleep 1.5"
