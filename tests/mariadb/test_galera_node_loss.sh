#!/usr/bin/env bash
# clock on a three-node Galera cluster (tests/helpers/with-galera.sh) when a
# node is lost or its clock is wrong, with real clock processes, each given
# every node in its URL (its own node first):
# 1. a node killed (SIGKILL) under a running holder bound to it: the holder
#    renews through another node and its job runs to the end (9 s under a
#    6 s TTL), contenders on the other nodes never run while it holds, and
#    once the node has rejoined, `clock status` and the history are the
#    same on all three nodes;
# 2. a node restarted with its clock 3 s ahead (libfaketime): clock reports
#    the skew, naming the nodes; a contender on that node is refused (78)
#    under the default mariadb.galera_max_skew, and under a cap above the
#    skew it is granted the lease of a holder that died no earlier than the
#    holder's expiry plus the 100 ms bound, as the other nodes' clocks read it.
# Exits 77 (skipped) without a cluster; in CI that is a failure.
set -uo pipefail

db=node_loss_$$
# shellcheck source=tests/mariadb/galera_test_lib.sh
source "$(dirname "$0")/galera_test_lib.sh"
on_node 1 "CREATE DATABASE $db"
check "clock init on node 1" run_clock --database "$(url 1)" init

# ------------------------------------------------- 1. a node killed under a holder
# Something that stays held through the loss, for the comparison afterwards.
run_clock --database "$(url 2)" run -r kept.res --ttl 1m -- \
  sh -c "while [ ! -e '$work/release-kept' ]; do sleep 0.1; done" 2>"$work/kept.err" &
kept=$!
run_clock --database "$(url 1)" run -r lost.node --ttl 6s -- \
  sh -c "echo \$(date +%s%N) > '$work/h.start'; sleep 9; echo \$(date +%s%N) > '$work/h.end'" \
  2>"$work/holder.err" &
holder=$!
check "the holder bound to node 1 holds" await_held "$(url 2)" lost.node
check "so does the one bound to node 2" await_held "$(url 2)" kept.res
check "node 1 is killed" "$node_ctl" kill 1
# Contenders on nodes 2 and 3 try, without waiting, until the holder is done.
contender_codes=""
n=2
while kill -0 "$holder" 2>/dev/null; do
  run_clock --database "$(url "$n")" run -n -r lost.node -- \
    sh -c "date +%s%N >> '$work/c.runs'" 2>>"$work/contenders.err"
  contender_codes+=" $?"
  n=$((5 - n))  # 2, 3, 2, …
  sleep 0.2
done
wait "$holder"
holder_status=$?
check "the holder exits 0 ($holder_status: $(tail -c 300 "$work/holder.err"))" test "$holder_status" -eq 0
check "its job ran to the end, past its 6 s TTL: it renewed through another node" \
  test -s "$work/h.end"
check "the cluster lost node 1 meanwhile" "$node_ctl" wait-size 2 2
check "contenders tried while it held ($(wc -w <<<"$contender_codes") tries)" \
  test "$(wc -w <<<"$contender_codes")" -ge 5
check "every contender was busy (75) or ran after it (codes:$contender_codes)" \
  bash -c "for c in $contender_codes; do [[ \$c == 0 || \$c == 75 ]] || exit 1; done"
check "no contender ran while the holder held" \
  bash -c "end=\$(cat '$work/h.end'); [[ ! -e '$work/c.runs' ]] || awk -v end=\"\$end\" '\$1 < end { bad = 1 } END { exit bad }' '$work/c.runs'"

check "node 1 rejoins" "$node_ctl" start 1
for n in 1 2 3; do steady_status "$n" >"$work/status.$n"; done
check "status shows the lease held through the loss" grep -q '"resource": "kept.res"' "$work/status.1"
check "status is the same on node 1 as on node 2" same "$(cat "$work/status.1")" "$(cat "$work/status.2")"
check "and on node 3" same "$(cat "$work/status.3")" "$(cat "$work/status.2")"
check "the history is the same on the three nodes" \
  same "$(history_of 1) $(history_of 3)" "$(history_of 2) $(history_of 2)"
touch "$work/release-kept"
wait "$kept"
check "the lease held through the loss is released (exit 0)" test $? -eq 0

# ------------------------------------------------- 2. a node's clock 3 s ahead
check "node 3 stops" "$node_ctl" stop 3
check "node 3 starts with its clock 3 s ahead" "$node_ctl" start 3 --faketime +3s
out=$(run_clock --database "$(url 3)" run -r skew.res -- true 2>&1)
status=$?
check "a run on node 3 is refused (78)" same "$status" 78
# 3 s measured NTP-style: 2.998 is as likely as 3.002.
check "naming the node, how far ahead and of which node ($out)" \
  grep -Eq "node 127.0.0.1:$(port 3) is (2\.9|3\.[0-9])[0-9]{2} s ahead of 127.0.0.1:($(port 1)|$(port 2))'s, more than mariadb.galera_max_skew \(500ms\)" <<<"$out"
check "clock status -v on node 3 reports the skew" \
  bash -c "HOME='$work' CLOCK_CONFIG='$work/clock.toml' '$clock' --database '$(url 3)' status -v 2>&1 | grep -Eq 'is (2\.9|3\.)[0-9]* s ahead of'"
out=$(run_clock --database "$(url 1)" run -r skew.res -- true 2>&1)
status=$?
# 3 s measured NTP-style: 2.999 is as likely as 3.001.
warned_behind() { [[ $1 == 0 ]] && grep -Eq "is (2\.9[0-9]*|3\.[0-9]*) s behind 127.0.0.1:$(port 3)" <<<"$2"; }
check "a run on node 1 goes on (exit 0) and warns that it is behind node 3 ($status: $out)" \
  warned_behind "$status" "$out"

# A holder on node 1 dies (SIGKILL, no release); its lease expires by node
# 1's clock. A contender on node 3 under a cap above the skew waits for it.
printf '[mariadb]\ngalera_max_skew = "5s"\n' >"$work/wide.toml"
setsid "$clock" --database "$(url 1)" run -r skew.res --ttl 2s -- sleep 60 \
  2>"$work/dead.err" </dev/null &
dead=$!
check "the holder on node 1 holds" await_held "$(url 1)" skew.res
kill -KILL -- "-$dead"
expires_us=$(run_clock --database "$(url 1)" status --format json skew.res | python3 -c '
import json, sys, datetime
at = json.load(sys.stdin)["holders"][0]["expires_at"]
print(int(datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1e6))')
CONFIG=$work/wide.toml run_clock --database "$(url 3)" run -r skew.res -w 20s -- \
  sh -c "date +%s%N > '$work/late.start'" 2>"$work/late.err"
status=$?
check "the contender on node 3 gets the lease under the wider cap ($status: $(tail -c 300 "$work/late.err"))" \
  test "$status" -eq 0
started_us=$(($(cat "$work/late.start" 2>/dev/null || echo 0) / 1000))
check "no earlier than the holder's expiry + 100 ms by node 1's clock (started $(((started_us - expires_us) / 1000)) ms after the expiry)" \
  test "$started_us" -ge $((expires_us + 100000))

finish
