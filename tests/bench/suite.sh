#!/usr/bin/env bash
# The measurements, run by tests/bench/run.sh inside with-postgres.sh (a
# PostgreSQL 15 on a unix socket and pgbouncer in transaction mode) and
# with-etcd.sh (etcd on 127.0.0.1). Prepares the database, runs each family
# script in turn (BENCH_ONLY="latency handover" runs only those; galera
# inside tests/helpers/with-galera.sh, a three-node cluster), and prints
# the table. A family that fails is reported and the others still run; the
# exit status is then 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

for var in CLOCK_TEST_PG_URL CLOCK_TEST_PGBOUNCER_URL BENCH_ETCD BENCH_CLOCK BENCH_OUT BENCH_WORK; do
  [[ -n ${!var:-} ]] || { echo "bench: $var is not set (PostgreSQL, pgbouncer or etcd missing?)" >&2; exit 1; }
done

say() { printf '==> %s\n' "$*" >&2; }

# clock must see only what the benchmark gives it: no owner, namespace or
# database from the caller's environment, and an empty configuration file.
unset CLOCK_OWNER CLOCK_NAMESPACE CLOCK_DATABASE_URL CLOCK_LOG_LEVEL
export CLOCK_CONFIG=$BENCH_WORK/empty.toml
: >"$CLOCK_CONFIG"

# pg_stat_statements (measurement 5) must be preloaded: set it and restart
# once, before anything is measured.
psql -X -q -At -v ON_ERROR_STOP=1 -d "$CLOCK_TEST_PG_URL" \
  -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
  -c "CREATE DATABASE clock_bench" >/dev/null
"$repo/tests/helpers/pg-ctl.sh" restart >/dev/null
export BENCH_PG_URL=${CLOCK_TEST_PG_URL/dbname=postgres/dbname=clock_bench}
export BENCH_PGB_URL=${CLOCK_TEST_PGBOUNCER_URL/dbname=postgres/dbname=clock_bench}
psql -X -q -v ON_ERROR_STOP=1 -d "$BENCH_PG_URL" -c "CREATE EXTENSION pg_stat_statements"
# pgbouncer lost its server connections in the restart; wait until it serves.
for _ in $(seq 50); do
  psql -X -q -At -d "$BENCH_PGB_URL" -c "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.2
done

export BENCH_RESULTS=$BENCH_OUT/results.jsonl
: >"$BENCH_RESULTS"

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
started=$SECONDS

read -r -a families <<<"${BENCH_ONLY:-latency memory contention handover waiting scale borrow serve mariadb galera}"
failed=()
for family in "${families[@]}"; do
  [[ -f $here/$family.sh ]] || { echo "bench: no family '$family'" >&2; exit 64; }
  runner=(bash "$here/$family.sh")
  # Galera's three servers live for its family only: idle, they would
  # still take a share of the two cores from every other measurement.
  [[ $family == galera ]] && runner=("$repo/tests/helpers/with-galera.sh" "${runner[@]}")
  if ! "${runner[@]}"; then
    echo "bench: $family failed; its rows say 'not measured'" >&2
    failed+=("$family")
  fi
done

# --- the table ------------------------------------------------------------------------

first_line() { "$@" 2>&1 | head -n 1; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
quick=""
[[ ${BENCH_QUICK:-0} == 1 ]] && quick=" BENCH_QUICK=1: fewer repetitions than a full run."
notes=(
  "machine: $(nproc) × $cpu, $(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM, Linux $(uname -r), Debian $(cat /etc/debian_version 2>/dev/null || echo '?'); load average $load_before before, $(load) after ($((SECONDS - started)) s)"
  "clock: $("$BENCH_CLOCK" --version) (Release build); SQLite $(sqlite3 --version | cut -d' ' -f1) on $(df -T "$BENCH_WORK" | awk 'NR == 2 {print $2}'); $(first_line "$CLOCK_TEST_PG_BIN/postgres" --version) on a unix socket (fsync=off, as tests/helpers/with-postgres.sh sets it); $(first_line pgbouncer --version) in transaction mode; etcd $(etcd --version | sed -n 's/^etcd Version: //p') on 127.0.0.1, data on $(df -T /dev/shm 2>/dev/null | awk 'NR == 2 {print $2}')"
  "medians of repeated runs: uncontended $([[ ${BENCH_QUICK:-0} == 1 ]] && echo 8 || echo 30) runs per command, interleaved; contended $([[ ${BENCH_QUICK:-0} == 1 ]] && echo 1 || echo 3) round(s) (pgbouncer: 1); scale parts once each (acquire and status: median of several runs).$quick"
)
note_args=()
for note in "${notes[@]}"; do note_args+=(--notes "$note"); done
python3 "$here/bench.py" report --results "$BENCH_RESULTS" --title "clock benchmarks, $(date -u +%Y-%m-%d)" \
  "${note_args[@]}" | tee "$BENCH_OUT/results.md"

if ((${#failed[@]})); then
  echo "bench: failed: ${failed[*]}" >&2
  exit 1
fi
