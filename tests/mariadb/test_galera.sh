#!/usr/bin/env bash
# clock on a multi-writer Galera cluster (docs/galera.md): real clock processes
# bound to different nodes of the three-node cluster of
# tests/helpers/with-galera.sh, every node taking writes at once.
# 1. 6 loops, loop i bound to node i%3+1, each CLOCK_TEST_GALERA_RUNS runs
#    (default 50) of `clock run -w 60s` on one resource around
#    clock_critical_section: the counter equals the number of runs, no two
#    runs overlap, tokens strictly increase in grant order, every run exits
#    0 (never 69), and the nodes' certification failures and brute-force
#    aborts rose (the contention was real).
# 2. The same with wsrep_retry_autocommit = 0 on every node and `-n`: no
#    overlap, tokens increase, each run exits 0 or 75 (busy), never 69/70.
# 3. Hierarchy across nodes: `foo` through node 1 and `foo.bar` through
#    node 2, started together (a fifo barrier) with `-n` around a job that
#    holds the lock until the other has exited, CLOCK_TEST_GALERA_TRIALS
#    trials (default 50): never both granted; the loser is refused (75).
#    Certification sees write sets only: this holds only because both
#    grants write a row they share.
#
# CLOCK_TEST_GALERA_SECTIONS: the sections to run, in order (default "1 2 3").
# CLOCK_TEST_MARIADB_SQL_DIR: a sql/mariadb directory whose procedures
# replace the installed ones after clock init (as sql_test_lib.sh), so a
# deliberately broken copy can be shown to fail.
# Exits 77 (skipped) without a cluster; in CI that is a failure.
set -uo pipefail

db=galera_$$
# shellcheck source=tests/mariadb/galera_test_lib.sh
source "$(dirname "$0")/galera_test_lib.sh"
critical=${CLOCK_CRITICAL_SECTION:?CLOCK_CRITICAL_SECTION names clock_critical_section}
runs=${CLOCK_TEST_GALERA_RUNS:-50}
trials=${CLOCK_TEST_GALERA_TRIALS:-50}
# A procedure file is sent whole (one multi-statement query), as clock does.
apply_on_node_1() {
  mariadb --protocol=socket -S "$CLOCK_TEST_GALERA_SOCKET_1" -uroot --delimiter='#@!' "$db" <"$1"
}
url() { echo "mariadb://root@127.0.0.1:$(port "$1")/$db"; }
# Certification failures plus brute-force aborts, summed over the nodes:
# each is one transaction that lost a conflict with another node's.
conflicts() {
  local node sum=0 value
  for node in 1 2 3; do
    value=$(on_node "$node" "SHOW GLOBAL STATUS WHERE Variable_name IN
                               ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')" |
      awk '{ s += $2 } END { print s + 0 }')
    sum=$((sum + value))
  done
  echo "$sum"
}
# Milliseconds the cluster has spent paused by flow control (a pause stops
# every node, so node 1's count is the cluster's): printed with each
# section, as a stalled cluster shows there first.
paused_ms() {
  on_node 1 "SHOW GLOBAL STATUS LIKE 'wsrep_flow_control_paused_ns'" | awk '{ print int($2 / 1000000) }'
}
# loop NODE COUNT NAME ARG…: COUNT runs of `clock run ARG…` through NODE,
# one after another; each exit status is appended to NAME.codes.
loop() {
  local node=$1 count=$2 name=$3 i
  shift 3
  for ((i = 0; i < count; i++)); do
    run_clock --database "$(url "$node")" run "$@" 2>>"$work/$name.err"
    echo $? >>"$work/$name.codes"
  done
}
# Over a log of clock_critical_section ("start end pid token"), in start
# order: the runs that began before an earlier one ended, and the tokens
# not larger than the one before.
overlaps() { sort -n -k1,1 "$1" | awk 'NR > 1 && $1 < end { n++ } $2 > end { end = $2 } END { print n + 0 }'; }
token_drops() { sort -n -k1,1 "$1" | awk 'NR > 1 && $4 <= last { n++ } { last = $4 } END { print n + 0 }'; }
codes_other_than() { grep -cvxE "$1" "$2"; }
tally() { sort -n "$1" | uniq -c | awk '{ printf "%s%s x %s", sep, $2, $1; sep = ", " }'; }
errors() { sort "$1" 2>/dev/null | uniq -c | sort -rn | head -n 3 | cut -c1-300; }

check "database created on node 1" on_node 1 "CREATE DATABASE $db"
check "clock init through node 1" run_clock --database "$(url 1)" init
if [[ -n ${CLOCK_TEST_MARIADB_SQL_DIR:-} ]]; then
  for file in "$CLOCK_TEST_MARIADB_SQL_DIR"/procedures/*.sql; do
    check "replaced by $file" apply_on_node_1 "$file"
  done
fi

# ---------------------------------------------------------------- 1. one resource, three writers
section_1() {
  local started=$SECONDS before rose paused total i
  local -a pids=()
  before=$(conflicts)
  paused=$(paused_ms)
  for i in 0 1 2 3 4 5; do
    loop $((i % 3 + 1)) "$runs" one -r galera.one -w 60s -- \
      "$critical" "$work/one.counter" "$work/one.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  rose=$(($(conflicts) - before))
  paused=$(($(paused_ms) - paused))
  total=$((6 * runs))
  echo "     section 1: $total runs in $((SECONDS - started)) s, exits $(tally "$work/one.codes")," \
    "$rose certification failures and brute-force aborts, paused by flow control $paused ms"
  check "every run exits 0 ($(errors "$work/one.err"))" same "$(codes_other_than 0 "$work/one.codes")" 0
  check "the counter counts every run" same "$(cat "$work/one.counter")" "$total"
  check "every run logged its section" same "$(wc -l <"$work/one.log")" "$total"
  check "no two sections overlap" same "$(overlaps "$work/one.log")" 0
  check "tokens strictly increase in grant order" same "$(token_drops "$work/one.log")" 0
  check "the nodes' certification conflicts rose (got $rose)" test "$rose" -gt 0
}

# ---------------------------------------------------------------- 2. no autocommit retry
section_2() {
  local started=$SECONDS before rose paused granted i node
  local -a pids=()
  local -A retry_was
  for node in 1 2 3; do
    retry_was[$node]=$(on_node "$node" "SELECT @@GLOBAL.wsrep_retry_autocommit")
    check "wsrep_retry_autocommit = 0 on node $node" on_node "$node" "SET GLOBAL wsrep_retry_autocommit = 0"
  done
  before=$(conflicts)
  paused=$(paused_ms)
  for i in 0 1 2 3 4 5; do
    loop $((i % 3 + 1)) "$runs" noretry -r galera.noretry -n -- \
      "$critical" "$work/noretry.counter" "$work/noretry.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  rose=$(($(conflicts) - before))
  paused=$(($(paused_ms) - paused))
  for node in 1 2 3; do
    on_node "$node" "SET GLOBAL wsrep_retry_autocommit = ${retry_was[$node]}"
  done
  granted=$(grep -cx 0 "$work/noretry.codes")
  echo "     section 2: $((6 * runs)) runs in $((SECONDS - started)) s, exits $(tally "$work/noretry.codes")," \
    "$rose certification failures and brute-force aborts, paused by flow control $paused ms"
  # A -n run gives server trouble a few seconds (man clock, COMMANDS); on a
  # loaded machine a run can meet certification conflicts (1213) for all of
  # them and give up with 69, saying so: allowed for at most 1 run in 100,
  # never any other exit or error.
  local gave_up
  gave_up=$(grep -cx 69 "$work/noretry.codes" || true)
  check "every run exits 0 or 75, or 69 after -n's patience of conflicts ($(errors "$work/noretry.err"))" \
    same "$(codes_other_than '0|75|69' "$work/noretry.codes")" 0
  check "at most 1 run in 100 gave up ($gave_up of $((6 * runs)))" test "$gave_up" -le $((6 * runs / 100))
  check "and each that gave up met certification conflicts (error 1213)" \
    same "$(grep -c 'error' "$work/noretry.err" || true)" "$(grep -c 'error 1213).*gave up after trying' "$work/noretry.err" || true)"
  check "some runs were granted" test "$granted" -gt 0
  check "the counter counts the granted runs" same "$(cat "$work/noretry.counter" 2>/dev/null)" "$granted"
  check "every granted run logged its section" same "$(wc -l <"$work/noretry.log")" "$granted"
  check "no two sections overlap" same "$(overlaps "$work/noretry.log")" 0
  check "tokens strictly increase in grant order" same "$(token_drops "$work/noretry.log")" 0
}

# ---------------------------------------------------------------- 3. an ancestor and a descendant on two nodes
# The barrier: each contender says it is ready on one fifo and waits for a
# line on another; both lines go out in one write once both are ready. This
# shell holds both fifos open read-write, so no open ever blocks.
# contender NODE RESOURCE TRIAL: at the barrier, then `clock run -n` on
# RESOURCE through NODE. Its job appends "RESOURCE TOKEN" to trial.TRIAL and
# holds the lock until trial.TRIAL.release appears (made once the other
# contender has exited, so a refusal is never a turn taken after a release),
# or for 10 s, so two grants at once end too, both 0.
contender() {
  local node=$1 resource=$2 trial=$3
  echo ready >&3
  read -r _ <&4
  exec 3>&- 4>&-
  # shellcheck disable=SC2016  # expanded by the job's shell
  run_clock --database "$(url "$node")" run -n -r "$resource" -- sh -c '
    echo "$1 $CLOCK_TOKEN" >>"$2"
    i=0
    while [ ! -e "$2.release" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
    sh "$resource" "$work/trial.$trial"
}
section_3() {
  local started=$SECONDS before rose trial first second done_pid a b ran
  local both=0 refused=0 neither=0 odd=0 unlogged=0
  mkfifo "$work/ready" "$work/go"
  exec 3<>"$work/ready" 4<>"$work/go"
  before=$(conflicts)
  for trial in $(seq "$trials"); do
    contender 1 foo "$trial" 2>>"$work/tree.err" &
    first=$!
    contender 2 foo.bar "$trial" 2>>"$work/tree.err" &
    second=$!
    read -r _ <&3
    read -r _ <&3
    printf 'go\ngo\n' >&4
    wait -n -p done_pid "$first" "$second"
    a=$?
    : >"$work/trial.$trial.release"
    if [[ $done_pid == "$first" ]]; then
      wait "$second"
      b=$?
    else
      b=$a
      wait "$first"
      a=$?
    fi
    case "$a $b" in
      "0 0") both=$((both + 1)) ;;
      "0 75" | "75 0") refused=$((refused + 1)) ;;
      "75 75") neither=$((neither + 1)) ;;
      *) odd=$((odd + 1)) && echo "     trial $trial: foo exited $a, foo.bar $b" >&2 ;;
    esac
    ran=0
    [[ -e $work/trial.$trial ]] && ran=$(wc -l <"$work/trial.$trial")
    [[ $ran -eq $(((a == 0) + (b == 0))) ]] || unlogged=$((unlogged + 1))
  done
  exec 3>&- 4>&-
  rose=$(($(conflicts) - before))
  echo "     section 3: $trials trials in $((SECONDS - started)) s: both granted $both," \
    "one granted and the other refused $refused, neither $neither, other exits $odd;" \
    "$rose certification failures and brute-force aborts"
  check "foo and foo.bar are never both granted" same "$both" 0
  check "every run exits 0 or 75 ($(errors "$work/tree.err"))" same "$odd" 0
  check "each granted run ran its job once, each refused none" same "$unlogged" 0
  check "the loser was refused in most trials ($refused of $trials)" test $((refused * 10)) -ge $((trials * 9))
  check "the nodes' certification conflicts rose (got $rose)" test "$rose" -gt 0
}

for section in ${CLOCK_TEST_GALERA_SECTIONS:-1 2 3}; do "section_$section"; done
finish
