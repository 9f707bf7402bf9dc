#!/usr/bin/env bash
# tests/bench/first_acquire.sh: what the first try_acquire costs a fresh
# PostgreSQL backend (its PL/pgSQL compiled, its plans and catalog caches
# cold), for several clock binaries. Each `clock run -r R -- true` opens a
# new connection, so each run's try_acquire is the first of its backend. The
# server logs every statement's duration (log_min_duration_statement = 0);
# the script sums, per run, the parse, bind and execute durations of the
# try_acquire call, and times the whole run beside it. Runs are interleaved
# (binary 1, 2, … then again), each binary on a database of its own (its
# functions differ), after 3 warm-up runs each. Two cases: exclusive (an
# uncontended run takes fast path 1) and shared (-s: the general path).
# Prints medians; nothing fails on a number.
#
#   CI=true tests/helpers/with-postgres.sh tests/bench/first_acquire.sh [-n RUNS] BINARY...
#
# Copy each build's clock and clock-postgres.so into a folder of their own
# first: a binary measured here must not be rebuilt while it runs.
set -euo pipefail
runs=50
if [[ ${1:-} == -n ]]; then
  runs=$2
  shift 2
fi
if [[ $# -lt 1 || -z ${CLOCK_TEST_PG_URL:-} || -z ${CLOCK_TEST_PG_LOG:-} ]]; then
  echo "usage: tests/helpers/with-postgres.sh tests/bench/first_acquire.sh [-n RUNS] BINARY..." >&2
  exit 2
fi
psql=("${CLOCK_TEST_PG_BIN:+$CLOCK_TEST_PG_BIN/}psql" -X -q -At -v ON_ERROR_STOP=1)
# Statements logged without their parameters (owner secrets): clock warns
# otherwise, and the log is all this script reads.
"${psql[@]}" "$CLOCK_TEST_PG_URL" -c "ALTER SYSTEM SET log_min_duration_statement = 0" \
  -c "ALTER SYSTEM SET log_parameter_max_length = 0" -c "SELECT pg_reload_conf()" >/dev/null
work=$(mktemp -d /tmp/clock-first-acquire.XXXXXX)
trap '"${psql[@]}" "$CLOCK_TEST_PG_URL" -c "ALTER SYSTEM RESET log_min_duration_statement" \
  -c "ALTER SYSTEM RESET log_parameter_max_length" -c "SELECT pg_reload_conf()" >/dev/null ||
  true; rm -rf "$work"' EXIT
i=0
for binary in "$@"; do
  i=$((i + 1))
  "${psql[@]}" "$CLOCK_TEST_PG_URL" -c "DROP DATABASE IF EXISTS clock_first_$i" \
    -c "CREATE DATABASE clock_first_$i" >/dev/null 2>&1
  "$binary" --database "$CLOCK_TEST_PG_URL dbname=clock_first_$i" init >/dev/null
done
sleep 1  # the reload reaches every backend

# one BINARY_INDEX BINARY CASE ROUND: one run; appends "binary case server_ms wall_ms".
one() {
  local index=$1 binary=$2 case=$3 flags=()
  [[ $case == shared ]] && flags=(-s)
  local before after start end
  before=$(wc -c <"$CLOCK_TEST_PG_LOG")
  start=$(date +%s%N)
  "$binary" --database "$CLOCK_TEST_PG_URL dbname=clock_first_$index" run "${flags[@]}" \
    -r "first.$case" -- true
  end=$(date +%s%N)
  sleep 0.05  # the server's log lines of the run are written
  after=$(wc -c <"$CLOCK_TEST_PG_LOG")
  local server
  server=$(tail -c +"$((before + 1))" "$CLOCK_TEST_PG_LOG" | head -c "$((after - before))" |
    awk '/duration: [0-9.]+ ms/ && /try_acquire/ {
           for (f = 1; f <= NF; f++) if ($f == "duration:") s += $(f + 1)
         } END { printf "%.3f", s }')
  echo "$index $case $server $(((end - start) / 1000))" >>"$work/samples"
}

for case in exclusive shared; do
  for ((round = 0; round < 3; round++)); do
    i=0
    for binary in "$@"; do i=$((i + 1)); one "$i" "$binary" "$case"; done
  done
done
: >"$work/samples"
for ((round = 0; round < runs; round++)); do
  for case in exclusive shared; do
    i=0
    for binary in "$@"; do i=$((i + 1)); one "$i" "$binary" "$case"; done
  done
done
python3 - "$work/samples" "$@" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
binaries = sys.argv[2:]
print(f"first try_acquire on a fresh backend: medians of {len(rows) // (2 * len(binaries))} runs")
print(f"{'binary':<40} {'case':<10} {'server ms':>10} {'run wall ms':>12}")
for case in ("exclusive", "shared"):
    for i, binary in enumerate(binaries, 1):
        mine = [r for r in rows if r[0] == str(i) and r[1] == case]
        server = statistics.median(float(r[2]) for r in mine)
        wall = statistics.median(int(r[3]) for r in mine) / 1000
        print(f"{binary:<40} {case:<10} {server:>10.2f} {wall:>12.2f}")
PY
