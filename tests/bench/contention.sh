#!/usr/bin/env bash
# Measurement 2, contended throughput: 8 processes each take the same lock 25
# times in a row around an empty critical section (`true`); the total wall
# time until the last one is done. clock on SQLite and PostgreSQL beside
# `etcdctl lock` and flock(1); medians of repeated rounds, tools interleaved.
# clock through pgbouncer is shown too, in fewer rounds: there a waiter cannot
# LISTEN (transaction pooling) and falls back to polling, which is slow.
source "$(dirname "$0")/lib.sh"

rounds=$(reps 3 1)
say "2. contended throughput: 8 x 25 turns, $rounds round(s) per tool (pgbouncer: 1)"

sq=$(sqlite_url m2)
init_store "$sq"

bench contend --procs 8 --turns 25 --reps "$rounds" \
  --cmd m2.flock "flock $BENCH_WORK/m2.flock true" \
  --cmd m2.sqlite "$(clock_cmd "$sq") run -r bench.m2 -- true" \
  --cmd m2.pg "$(clock_cmd "$BENCH_PG_URL") run -r bench.m2 -- true" \
  --cmd m2.etcd "$(etcd_cmd) lock bench.m2 true"

bench contend --procs 8 --turns 25 --reps 1 \
  --cmd m2.pgbouncer "$(clock_cmd "$BENCH_PGB_URL") run -r bench.m2b -- true"
