#!/usr/bin/env bash
# Measurement 11, multi-writer Galera (docs/galera.md): one node of a three-node
# cluster against all three, in the same run, with the same clock binary
# (BENCH_CLOCK, run.sh's Release build, its modules beside it). suite.sh runs
# it inside tests/helpers/with-galera.sh, so the cluster lives for this
# family only:
#   11.1  contended: 6 loops × N sections on one resource (N: 25; quick: 10),
#         every loop on node 1 vs loops bound round-robin to nodes 1, 2, 3:
#         throughput, hand-over p50 (one section's end → the next one's
#         start), the invariant (sections stamp start, end and CLOCK_TOKEN:
#         0 overlaps, tokens rising in grant order), every `clock run`'s
#         exit code, and wsrep_local_cert_failures + wsrep_local_bf_aborts
#         deltas summed over the nodes
#   11.2  uncontended: `clock run -- true` on distinct resources from 3
#         loops for S seconds (20; quick: 8), one node vs three: runs/s
#         (every grant writes the cluster-wide tokens row) and the nodes'
#         CPU per run
# BENCH_GALERA_ONLY="contend" runs some parts only (contend, capacity);
# BENCH_GALERA_SECTIONS sets N; BENCH_GALERA_LOCK_WAIT=S sets the nodes'
# innodb_lock_wait_timeout (50 s by default) by a rolling restart first: a
# node's applier waits that long for a row lock that a local commit stuck in
# certification holds, and the whole resource waits with it
# (docs/performance.md, "Galera (row 11)"). Without a cluster (with-galera.sh
# warned: galera-4, mariadb-server or rsync missing) it records why, and the
# rows say "not measured".
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

if [[ -z ${CLOCK_TEST_GALERA_SOCKET_3:-} ]]; then
  say "11. Galera: no cluster (tests/helpers/with-galera.sh says why above); not measured"
  reason="no Galera cluster: galera-4, mariadb-server or rsync missing (make deps)"
  bench record m11.missing 0 --extra "{\"reason\": \"$reason\"}"
  exit 0
fi
only=${BENCH_GALERA_ONLY:-contend capacity}
wanted() { [[ " $only " == *" $1 "* ]]; }
say "11. Galera, one node vs three: $only"

# Builds from before multi-writer Galera support warned on a Galera node
# (BENCH_CLOCK may be one): not an error here.
warning="is a Galera node"
nodes=(1 2 3)
sockets=()
for n in "${nodes[@]}"; do
  socket_var=CLOCK_TEST_GALERA_SOCKET_$n
  sockets+=(--socket "${!socket_var}")
done
# url N: clock's URL of the bench database on node N, over TCP.
url() { local var=CLOCK_TEST_GALERA_TCP_URL_$1; echo "${!var}clock_g11"; }
cmd() { printf "%s --database '%s'" "$BENCH_CLOCK" "$(url "$1")"; }
rows() { python3 "$bench_dir/galera_rows.py" "$1" --results "$BENCH_RESULTS" "${@:2}"; }

node() { "$CLOCK_TEST_GALERA_NODE" "$@"; }

if [[ -n ${BENCH_GALERA_LOCK_WAIT:-} ]]; then
  say "11. innodb_lock_wait_timeout = $BENCH_GALERA_LOCK_WAIT on each node (a rolling restart)"
  for n in "${nodes[@]}"; do
    # The cluster's files are thrown away with it (galera_cluster.sh: nodeN/my.cnf).
    echo "innodb_lock_wait_timeout=$BENCH_GALERA_LOCK_WAIT" >>"$CLOCK_TEST_GALERA_DIR/node$n/my.cnf"
    { node stop "$n" && node start "$n" && node wait-size "$n" 3; } ||
      { echo "bench: node $n did not come back after its restart" >&2; exit 1; }
  done
fi
# What the rows were measured on, for the table.
read -r version lock_wait retry < <(node sql 1 "SELECT @@version, @@innodb_lock_wait_timeout,
  @@wsrep_retry_autocommit")
provider=$(node sql 1 "SHOW GLOBAL STATUS LIKE 'wsrep_provider_version'" | cut -f2)
bench record m11.cluster 3 --extra "{\"mariadb\": \"${version%%-*}\", \"galera\": \"$provider\",
  \"innodb_lock_wait_timeout\": $lock_wait, \"wsrep_retry_autocommit\": $retry}"

node sql 1 "DROP DATABASE IF EXISTS clock_g11; CREATE DATABASE clock_g11"
"$BENCH_CLOCK" --database "$(url 1)" init 2>&1 >/dev/null | { grep -v -- "$warning" || true; } >&2
# Every node answers before anything is measured (the schema replicated).
for n in "${nodes[@]}"; do init_store "$(url "$n")" 2> >(grep -v -- "$warning" >&2); done

# set_clocks MODE: clocks becomes the --clock flags of mode one (node 1) or
# three (nodes 1, 2, 3).
clocks=()
set_clocks() {
  clocks=(--clock "$(cmd 1)")
  [[ $1 == one ]] || clocks+=(--clock "$(cmd 2)" --clock "$(cmd 3)")
}

if wanted contend; then
  turns=${BENCH_GALERA_SECTIONS:-$(reps 25 10)}
  say "11.1 contended 6 x $turns on one resource: node 1, then nodes 1, 2, 3"
  for mode in one three; do
    set_clocks "$mode"
    rows contend --key "m11.1.$mode" "${clocks[@]}" "${sockets[@]}" --loops 6 --turns "$turns" \
      --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m11.1.$mode" --resource bench.g11 \
      --ignore "$warning"
  done
fi

if wanted capacity; then
  seconds=$(reps 20 8)
  say "11.2 uncontended: 3 loops for ${seconds}s on distinct resources: node 1, then nodes 1, 2, 3"
  pids=()
  for n in "${nodes[@]}"; do pids+=(--server-pid "$(node pid "$n")"); done
  for mode in one three; do
    set_clocks "$mode"
    rows capacity --key "m11.2.$mode" "${clocks[@]}" "${sockets[@]}" "${pids[@]}" --loops 3 \
      --seconds "$seconds" --prefix "g11-$mode-"
  done
fi
