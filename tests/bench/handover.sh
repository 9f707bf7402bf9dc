#!/usr/bin/env bash
# Measurement 3, hand-over latency: a holder's child stamps CLOCK_MONOTONIC as
# its last act and exits; a waiter queued behind it stamps as the first act of
# its own child. The difference is what a queued job loses to clock: noticing
# the exit, releasing, waking the waiter, its attempt, fork and exec. One
# holder and one waiter at a time; p50 and p99 per backend (tests/bench/bench.py
# handover; samples whose waiter had not queued in time are discarded).
source "$(dirname "$0")/lib.sh"

samples=$(reps 100 15)
say "3. hand-over latency: $samples samples per backend (pgbouncer: $(reps 20 5))"

sq=$(sqlite_url m3)
init_store "$sq"
mkdir -p "$BENCH_WORK/m3"

bench handover --key m3.sqlite --samples "$samples" --clock "$(clock_cmd "$sq")" \
  --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m3"
bench handover --key m3.pg --samples "$samples" --clock "$(clock_cmd "$BENCH_PG_URL")" \
  --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m3"
bench handover --key m3.pgbouncer --samples "$(reps 20 5)" \
  --clock "$(clock_cmd "$BENCH_PGB_URL")" --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m3"
