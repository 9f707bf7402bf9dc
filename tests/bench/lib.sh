# shellcheck shell=bash
# What every measurement script of tests/bench shares: the environment that
# suite.sh exports, and small helpers. Sourced, never run.
#
# From suite.sh:
#   BENCH_CLOCK      the Release clock binary       BENCH_STAMP   tests/bench/stamp.c, built
#   BENCH_WORK       a temp dir for this run        BENCH_RESULTS results, JSON lines
#   BENCH_PG_URL     clock's database, unix socket  BENCH_PGB_URL the same through pgbouncer
#   BENCH_ETCD       etcd's client endpoint         BENCH_QUICK   1: fewer repetitions
set -euo pipefail

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

for var in BENCH_CLOCK BENCH_STAMP BENCH_WORK BENCH_RESULTS BENCH_PG_URL BENCH_PGB_URL BENCH_ETCD; do
  [[ -n ${!var:-} ]] || { echo "bench: $var is not set; run tests/bench/run.sh" >&2; exit 1; }
done

say() { printf '==> %s\n' "$*" >&2; }

# bench SUBCOMMAND ARG...: tests/bench/bench.py with the results file.
bench() {
  local sub=$1
  shift
  python3 "$bench_dir/bench.py" "$sub" --results "$BENCH_RESULTS" "$@"
}

# reps FULL QUICK: the repetition count of this run.
reps() { if [[ ${BENCH_QUICK:-0} == 1 ]]; then echo "$2"; else echo "$1"; fi; }

# clock_cmd URL: clock and its database flag as one command line for bench.py
# (split like a shell would: the libpq keyword string has spaces).
clock_cmd() { printf "%s --database '%s'" "$BENCH_CLOCK" "$1"; }

sqlite_url() { echo "sqlite:$BENCH_WORK/$1.db"; }

# pg_url DB: a libpq keyword string for database DB of the bench server.
pg_url() { echo "${BENCH_PG_URL/dbname=clock_bench/dbname=$1}"; }
pgb_url() { echo "${BENCH_PGB_URL/dbname=clock_bench/dbname=$1}"; }

# psql_at URL SQL: one value (or rows), unaligned, no psqlrc, stop on error.
psql_at() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

etcd_cmd() { printf 'etcdctl --endpoints=%s' "$BENCH_ETCD"; }

# A fixed owner for acquire/release pairs (clock acquire --owner ID.SECRET:
# acquiring as a named owner needs its secret, 77 or 64 without it).
BENCH_OWNER=00000000-0000-4000-8000-00000000b0b0.0123456789abcdef0123456789abcdef

# init_store URL: makes clock create its schema (the store does on first use).
init_store() {
  "$BENCH_CLOCK" --database "$1" acquire -r bench.init --owner "$BENCH_OWNER" >/dev/null
  "$BENCH_CLOCK" --database "$1" release -r bench.init --owner "$BENCH_OWNER"
}
