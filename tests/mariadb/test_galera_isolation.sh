#!/usr/bin/env bash
# clock on a three-node Galera cluster (tests/helpers/with-galera.sh) when
# node 3 is cut off from the others while it keeps running
# (gmcast.isolate=1: it answers connections, but it is no longer in the
# primary component, so it serves nothing). Every clock process names node 3
# first in its URL:
# - a holder and a waiter bound to node 3 before the cut: the holder renews
#   through another node (its lease, as node 1 reads it, outlives the TTL
#   it had at the cut) and exits 0; the waiter keeps its place through
#   another node and runs after the holder, and so does a waiter of the
#   majority that came after it (a lease of the majority is held throughout);
# - a new run after the cut is granted within its 15 s wait (-w 15s);
# - once node 3 rejoins (gmcast.isolate=0), status and history are the same
#   on the three nodes.
# Exits 77 (skipped) without a cluster; in CI that is a failure.
set -uo pipefail

db=isolation_$$
# shellcheck source=tests/mariadb/galera_test_lib.sh
source "$(dirname "$0")/galera_test_lib.sh"
ttl_s=6
# isolate N 0|1: cuts node N off from the others (1) or lets it back (0).
isolate() { on_node "$1" "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=$2'"; }
# cluster_status N: Primary, or non-Primary for a node cut off.
cluster_status() { on_node "$1" "SHOW STATUS LIKE 'wsrep_cluster_status'" | awk '{ print $2 }'; }
# await_cut_off N: waits (up to 30 s) until node N knows it is no longer in
# the primary component (the test cluster's evs timeouts: about 3 s).
await_cut_off() {
  local until=$((SECONDS + 30))
  while ((SECONDS < until)); do
    [[ $(cluster_status "$1") == non-Primary ]] && return 0
    sleep 0.1
  done
  echo "     node $1 is still $(cluster_status "$1")" >&2
  return 1
}
# expiry_us URL RESOURCE: the holder's expiry (µs since the epoch), as read there.
expiry_us() {
  run_clock --database "$1" status --format json "$2" 2>/dev/null | python3 -c '
import json, sys, datetime
holders = json.load(sys.stdin)["holders"]
at = holders[0]["expires_at"] if holders else "1970-01-01T00:00:00Z"
print(int(datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1e6))'
}
# await_renewed_past URL RESOURCE US: waits (up to 20 s) until RESOURCE's
# lease, read at URL, expires after US: its holder renewed it there.
await_renewed_past() {
  local until=$((SECONDS + 20))
  while ((SECONDS < until)); do
    [[ $(expiry_us "$1" "$2") -gt $3 ]] && return 0
    sleep 0.1
  done
  echo "     the lease of $2 expires at $(expiry_us "$1" "$2") µs, not after $3" >&2
  return 1
}
# await_waiters URL RESOURCE N: waits (up to 20 s) until RESOURCE has N waiters.
await_waiters() {
  local until=$((SECONDS + 20))
  while ((SECONDS < until)); do
    [[ $(run_clock --database "$1" status --format json "$2" 2>/dev/null |
      python3 -c 'import json, sys; print(len(json.load(sys.stdin)["waiters"]))') == "$3" ]] && return 0
    sleep 0.1
  done
  echo "     $2 never had $3 waiters" >&2
  return 1
}

on_node 1 "CREATE DATABASE $db"
check "clock init on node 1" run_clock --database "$(url 1)" init

# Before the cut: a lease of the majority held to the end (for the
# comparison after the rejoin), and a holder and a waiter bound to node 3.
run_clock --database "$(url 2)" run -r cut.kept --ttl 1m -- \
  sh -c "while [ ! -e '$work/release-kept' ]; do sleep 0.1; done" 2>"$work/kept.err" &
kept=$!
check "a holder bound to node 2 holds" await_held "$(only 1)" cut.kept
run_clock --database "$(url 3)" run -r cut.held --ttl "${ttl_s}s" -- \
  sh -c "while [ ! -e '$work/release' ]; do sleep 0.1; done" 2>"$work/holder.err" &
holder=$!
check "the holder bound to node 3 holds" await_held "$(only 1)" cut.held
run_clock --database "$(url 3)" run -r cut.held -w 60s -- \
  sh -c "date +%s%N > '$work/waiter3.ran'" 2>"$work/waiter3.err" &
waiter3=$!
check "a waiter bound to node 3 queues behind it" await_waiters "$(only 1)" cut.held 1

# The cut.
cut_at_us=$(($(date +%s%N) / 1000))
check "node 3 is cut off (gmcast.isolate=1)" isolate 3 1
check "node 3 leaves the primary component" await_cut_off 3
check "nodes 1 and 2 go on as a cluster of two" "$node_ctl" wait-size 1 2

# A new run that names node 3 first.
started=$(date +%s%N)
run_clock --database "$(url 3)" run -r cut.new -w 15s -- true 2>"$work/new.err"
status=$?
took_ms=$((($(date +%s%N) - started) / 1000000))
check "a new run naming node 3 first exits 0 within its 15 s wait (took ${took_ms} ms: $(tail -c 300 "$work/new.err"))" \
  test "$status" -eq 0

# The majority's waiter comes after node 3's.
run_clock --database "$(url 1)" run -r cut.held -w 60s -- \
  sh -c "date +%s%N > '$work/waiter1.ran'" 2>"$work/waiter1.err" &
waiter1=$!
check "a waiter of the majority queues behind both" await_waiters "$(only 1)" cut.held 2
check "the holder renews through another node: its lease outlives the TTL it had at the cut" \
  await_renewed_past "$(only 1)" cut.held $((cut_at_us + (ttl_s + 1) * 1000000))
touch "$work/release"
wait "$holder"
status=$?
check "the holder bound to node 3 exits 0 ($status: $(tail -c 300 "$work/holder.err"))" \
  test "$status" -eq 0
wait "$waiter3"
status=$?
check "the waiter bound to node 3 runs after it ($status: $(tail -c 300 "$work/waiter3.err"))" \
  test "$status" -eq 0
wait "$waiter1"
status=$?
check "and the majority's waiter after that ($status: $(tail -c 300 "$work/waiter1.err"))" \
  test "$status" -eq 0
check "in queue order" \
  test "$(cat "$work/waiter3.ran" 2>/dev/null || echo 9)" -lt "$(cat "$work/waiter1.ran" 2>/dev/null || echo 0)"

# Node 3 back.
check "node 3 rejoins (gmcast.isolate=0)" isolate 3 0
check "node 3 is synced" "$node_ctl" wait-synced 3
check "node 3 sees the three nodes" "$node_ctl" wait-size 3 3
for n in 1 2 3; do steady_status "$n" >"$work/status.$n"; done
check "status shows the lease held through the cut" grep -q '"resource": "cut.kept"' "$work/status.1"
check "status is the same on node 1 as on node 2" same "$(cat "$work/status.1")" "$(cat "$work/status.2")"
check "and on node 3" same "$(cat "$work/status.3")" "$(cat "$work/status.2")"
check "the history is the same on the three nodes" \
  same "$(history_of 1) $(history_of 3)" "$(history_of 2) $(history_of 2)"
touch "$work/release-kept"
wait "$kept"
check "the lease held through the cut is released (exit 0)" test $? -eq 0

finish
