#!/usr/bin/env bash
# tests/bench/compare.sh: row 1 of `make bench` (an uncontended SQLite
# `clock run -- true` beside `flock`) for several clock binaries in one run,
# to tell whether a change pays before it goes in. Each binary gets a SQLite
# file of its own and 25 warm-up runs; the runs are interleaved (bench.py
# latency), so the machine's load falls on all of them alike. Prints the
# median wall time and the median CPU time (user + sys of the process and
# the children it reaped) of each.
#
#   tests/bench/compare.sh [-n RUNS] BINARY...        (RUNS: 500 by default)
#
# Copy each build's `clock` into a folder of its own first: a binary measured
# here must not be rebuilt while it runs. On a machine others share, `chrt -f 10 tests/bench/compare.sh …` (as root) lets
# the runs preempt the other work; compare only binaries measured in one call,
# and repeat one before believing a difference under 0.05 ms.
set -euo pipefail
runs=500
if [[ ${1:-} == -n ]]; then
  runs=$2
  shift 2
fi
if [[ $# -lt 1 ]]; then
  echo "usage: tests/bench/compare.sh [-n RUNS] BINARY..." >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/clock-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
args=(--cmd flock "flock $work/flock.lock true")
i=0
for binary in "$@"; do
  i=$((i + 1))
  "$binary" --database "sqlite:$work/$i.db" init >/dev/null
  args+=(--cmd "clock$i" "$binary --database sqlite:$work/$i.db run -r compare -- true")
done
python3 "$here/bench.py" latency --results "$work/results.jsonl" --runs "$runs" --warmup 25 \
  "${args[@]}" >/dev/null 2>"$work/bench.log" || { cat "$work/bench.log" >&2; exit 1; }
python3 - "$work/results.jsonl" "$@" <<'PY'
import json, sys
results = {row["key"]: row for row in map(json.loads, open(sys.argv[1]))}
flock = results["flock"]
print(f"flock    wall median {flock['median']:.3f} ms, CPU median {flock['cpu_median']:.3f} ms")
for i, binary in enumerate(sys.argv[2:], 1):
    row = results[f"clock{i}"]
    print(f"clock{i}   wall median {row['median']:.3f} ms = {row['median'] / flock['median']:.2f}x flock "
          f"(p10 {row['p10']:.3f}, p90 {row['p90']:.3f}), CPU median {row['cpu_median']:.3f} ms "
          f"= {row['cpu_median'] / flock['cpu_median']:.2f}x flock  {binary}")
PY
