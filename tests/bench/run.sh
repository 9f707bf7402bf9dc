#!/usr/bin/env bash
# tests/bench/run.sh (what `make bench` runs): builds a Release clock in
# build-release/, starts the servers it compares against (PostgreSQL and
# pgbouncer via tests/helpers/with-postgres.sh, etcd via with-etcd.sh), runs
# every measurement for clock and its peers in the same run, prints a table
# of medians, ratios and the issue's targets, and stops everything it started.
# Not part of `make check`.
#
#   tests/bench/run.sh                          everything (about 13 minutes)
#   BENCH_QUICK=1 tests/bench/run.sh            fewer repetitions, for a quick look
#   BENCH_ONLY="latency handover" tests/bench/run.sh   some families only
#
# Families (one script each, run in this order): latency (1), memory (6),
# contention (2), handover (3), waiting (5), scale (4), borrow (8), serve (9),
# mariadb (10: MariaDB beside PostgreSQL), galera (11: one node of a three-node
# Galera cluster vs all three; suite.sh starts the cluster for it alone, with
# tests/helpers/with-galera.sh). Results go to
# build-release/bench/: results.jsonl (every sample) and results.md (the table).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

say() { printf '==> %s\n' "$*" >&2; }

for tool in cmake cc python3 flock psql pgbench sqlite3 etcd etcdctl mariadb; do
  command -v "$tool" >/dev/null ||
    { echo "bench: $tool not found; 'make bench' installs what is missing (as root)" >&2; exit 1; }
done

# --- the binary -------------------------------------------------------------------------

build=$repo/build-release
say "building a Release clock in $build"
if [[ ! -f $build/CMakeCache.txt ]]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCLOCK_BUILD_TESTS=OFF >&2
fi
cmake --build "$build" --target clock -j"$(nproc)" >&2
# The mariadb family measures both servers through this binary, which
# builds clock-mariadb.so beside it (the clock target depends on it).
export BENCH_MARIADB_CLOCK=$build/clock
export BENCH_OUT=$build/bench
mkdir -p "$BENCH_OUT"
export BENCH_CLOCK=$build/clock
export BENCH_STAMP=$BENCH_OUT/stamp
cc -O2 -static -o "$BENCH_STAMP" tests/bench/stamp.c 2>/dev/null ||
  cc -O2 -o "$BENCH_STAMP" tests/bench/stamp.c

# --- a work dir, removed at the end -------------------------------------------------------

# Under /tmp (a real disk here, as the default SQLite path would be), not
# /dev/shm: SQLite and flock files live here.
BENCH_WORK=$(mktemp -d /tmp/clock-bench.XXXXXX)
export BENCH_WORK
trap 'rm -rf "$BENCH_WORK"' EXIT

say "starting PostgreSQL, pgbouncer, MariaDB and etcd; the measurements follow (log: stderr)"
tests/helpers/with-postgres.sh tests/helpers/with-mariadb.sh tests/bench/with-etcd.sh \
  tests/bench/suite.sh
