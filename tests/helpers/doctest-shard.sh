#!/usr/bin/env bash
# doctest-shard.sh K N PROGRAM [ARG...]
#
# Runs the K-th of N shares of the test cases PROGRAM (a doctest binary) would
# run with ARG..., so that N ctest entries run one suite side by side. The
# shares are cut from the cases in name order (doctest's --order-by=name),
# which mixes the files, so the slow cases of one file do not all land in
# one share; --first/--last count the cases that pass the filters and are not
# skipped, as --count does. Exits with PROGRAM's status.
set -uo pipefail

[[ $# -ge 3 && $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $1 -ge 1 && $1 -le $2 ]] ||
  { echo "usage: $0 K N PROGRAM [ARG...]   (1 <= K <= N)" >&2; exit 64; }
share=$1 shares=$2
shift 2

count=$("$@" --count 2>/dev/null | sed -n 's/.*passing the current filters: \([0-9][0-9]*\).*/\1/p')
if [[ -z $count ]]; then
  # PROGRAM could not count (e.g. it reports its backend skipped): let it say why.
  exec "$@"
fi
first=$(((share - 1) * count / shares + 1))
last=$((share * count / shares))
if [[ $last -lt $first ]]; then
  echo "doctest-shard: share $share of $shares has no test case (only $count in all)"
  exit 0
fi
echo "doctest-shard: share $share of $shares: cases $first to $last of $count, in name order"
exec "$@" --order-by=name --first="$first" --last="$last"
