#!/usr/bin/env bash
# A clock_app login cannot stall another's lock on MariaDB
# (docs/threat-model.md, "Bounds of a call"), with real clock processes
# against the server of tests/helpers/with-mariadb.sh. Beside a job renewing
# a 3 s lease of hierarchy `stall`, an app login
# 1. calls clock_try_acquire inside a transaction it opened and keeps open:
#    refused at once (25001), where the procedure's own START TRANSACTION
#    used to commit the caller's work without a word;
# 2. calls clock_renew with 20,000 resources of that hierarchy: refused at
#    once (54000), where it used to run for a minute holding the
#    hierarchy's slot row (the job lost its lease, 79; others timed out);
# and meanwhile a sibling's `run -n` exits 0, an operator's
# `release --force` exits 0 and the job exits 0. Then: every procedure's
# bounds; roles.sql with @without_release_1_0 takes release 1.0's
# unbounded procedures away and clock keeps working; clock init warns
# when the server's general log would keep owner secrets.
# Exits 77 (skipped) without a server; in CI that is a failure.
set -uo pipefail

db=bounded_calls_$$
source "$(dirname "$0")/sql_test_lib.sh"
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
work=$(mktemp -d /tmp/clock-mariadb-bounded.XXXXXX)
root_url="mariadb://root@localhost/$db?socket=$socket"
: >"$work/clock.toml"
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG="$work/clock.toml" "$clock" "$@"; }
as_app() { mariadb --protocol=socket -S "$socket" -u"app_$$" -ppw -N -B "$db" "$@"; }
# Waits (up to 30 s) until `clock status` on RESOURCE shows a holder.
await_holder() {
  for _ in $(seq 600); do
    run_clock --database "$root_url" status --format json "$1" 2>/dev/null | grep -q '"holders": \[$' &&
      return 0
    sleep 0.05
  done
  echo "     $1 never had a holder" >&2
  return 1
}

as_root -e "CREATE DATABASE $db"
check "clock init" run_clock --database "$root_url" init
as_root "$db" <"$sql_dir/roles.sql"
as_root -e "CREATE USER 'app_$$'@'localhost' IDENTIFIED BY 'pw'; GRANT clock_app TO 'app_$$'@'localhost';
            SET DEFAULT ROLE clock_app FOR 'app_$$'@'localhost';
            CREATE USER 'op_$$'@'localhost' IDENTIFIED BY 'pw';
            GRANT clock_operator TO 'op_$$'@'localhost';
            SET DEFAULT ROLE clock_operator FOR 'op_$$'@'localhost'"
app_url="mariadb://app_$$:pw@localhost/$db?socket=$socket"
# This release's procedures carry its set's suffix (docs/upgrades.md); the
# unsuffixed ones are release 1.0's, kept for its hosts as they were.
suffix=$(q "SELECT suffix FROM routine_sets WHERE suffix <> ''")
check "clock init installed this release's set" test -n "$suffix"
op_url="mariadb://op_$$:pw@localhost/$db?socket=$socket"

run_clock --database "$app_url" run --ttl 3s -r stall.job -- sleep 5 2>"$work/job.err" &
job=$!
check "the job holds its lock" await_holder stall.job
check "a victim lease is taken" run_clock --database "$app_url" acquire -r stall.victim --ttl 60s \
  --format shell >/dev/null

# 1. A call inside the caller's own transaction, kept open (a coprocess).
coproc hostile { as_app --unbuffered -f 2>&1; }
echo "START TRANSACTION;
CALL clock_try_acquire$suffix('', '[\"stall.other\"]', 'exclusive', 0, UUID(), 60000, 'r-hostile', FALSE,
  'h', '', 1, 'u', 'c', NULL, FALSE, '', 'x', NULL, 0);
SELECT 'sent';" >&"${hostile[1]}"
said=""
while IFS= read -r -t 30 line <&"${hostile[0]}"; do
  [[ $line == sent ]] && break
  said+="$line "
done
check "a call inside an open transaction is refused" \
  grep -q "one statement of their own" <<<"$said"

# 2. 20,000 resources in one call, in the background.
# (On stdin: one argument may not hold 240 kB.)
python3 -c 'import json, sys; print("CALL clock_renew%s(%r, %r, UUID(), %r, 60000, %r, %r)" % (
  sys.argv[1], "", json.dumps(["stall.n%d" % i for i in range(20000)]), "[]", "", "x"))' \
  "$suffix" >"$work/many.sql"
as_app <"$work/many.sql" >"$work/many.out" 2>&1 &
many=$!
# Until it has ended (refused) or holds its transaction (the hierarchy's
# slot row), whichever comes first.
in_call() {
  q "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
     JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
     WHERE p.USER = 'app_$$' AND p.INFO LIKE 'CALL clock_renew%'"
}
for _ in $(seq 1200); do
  kill -0 "$many" 2>/dev/null || break
  [[ $(in_call) -gt 0 ]] && break
  sleep 0.05
done

run_clock --database "$app_url" run -n -r stall.sib -- true 2>"$work/sib.err"
check "a sibling's run -n exits 0 ($(head -c 300 "$work/sib.err"))" test $? -eq 0
run_clock --database "$op_url" release --force -r stall.victim 2>"$work/force.err"
check "an operator's release --force exits 0 ($(head -c 300 "$work/force.err"))" test $? -eq 0
wait "$job"
status=$?
check "the job exits 0 ($status: $(head -c 300 "$work/job.err"))" test "$status" -eq 0
wait "$many"
check "the call naming 20,000 resources is refused ($(head -c 300 "$work/many.out"))" \
  grep -q "20000 resources in one call: at most 64" "$work/many.out"

# Every procedure of the set that takes slot rows, the ones added for run
# ends and dead holders too, refuses 65 resources (and release a lineage of
# 65 pids) before it takes any.
names=$(python3 -c 'import json; print(json.dumps(["b.n%d" % i for i in range(65)]))')
lineage=$(python3 -c 'print(list(range(1, 66)))')
for call in "clock_note_holder$suffix('', '$names', UUID(), '[]', 'boot', 1, 1, 1, 0, '', '', 'x')" \
  "clock_release2$suffix('', '$names', UUID(), '', 'x', 'h', '[]', FALSE, 0, NULL)" \
  "clock_expect_runs$suffix('', '$names', 1000, UUID(), '', 'x')" \
  "clock_leave_queue$suffix('', '$names', UUID(), 'r', '')"; do
  check "${call%%(*} refuses 65 resources" fails_with "65 resources in one call: at most 64" \
    as_app -e "CALL $call"
done
check "clock_release2 refuses a lineage of 65 pids" fails_with "lineage of more than 64 pids" \
  as_app -e "CALL clock_release2$suffix('', '[\"b\"]', UUID(), '', 'x', 'h', '$lineage', FALSE, 0, NULL)"
# The leftovers a run records are shown to everyone: at most 64.
leftovers=$(python3 -c 'import json; print(json.dumps([{"pid": i, "command": "x", "fate": "running"} for i in range(1, 66)]))')
check "clock_note_leftovers refuses 65 leftovers" fails_with "too many leftovers: at most 64" \
  as_app -e "CALL clock_note_leftovers$suffix('', '[\"b\"]', UUID(), '[]', '$leftovers', '', 'x')"

# Once no host runs v1.0.0 (docs/upgrades.md): roles.sql again with
# @without_release_1_0 set takes release 1.0's unsuffixed procedures, which
# have none of these bounds, from the roles; clock keeps working through
# its own set.
grants() { as_root -e "SHOW GRANTS FOR clock_app; SHOW GRANTS FOR clock_reader"; }
grants_execute_on() { grants | grep -q "PROCEDURE \`$db\`.\`$1\` TO"; }
lacks_execute_on() { ! grants_execute_on "$1"; }
check "before: clock_app may call release 1.0's clock_try_acquire" grants_execute_on clock_try_acquire
{ echo "SET @without_release_1_0 = 1;"; cat "$sql_dir/roles.sql"; } | as_root "$db"
check "after: clock_app may not call release 1.0's clock_try_acquire" \
  lacks_execute_on clock_try_acquire
check "after: clock_reader may not call release 1.0's clock_status_rows" \
  lacks_execute_on clock_status_rows
check "after: clock_app may call this release's clock_try_acquire$suffix" \
  grants_execute_on "clock_try_acquire$suffix"
check "after: clock run as an app login exits 0" \
  run_clock --database "$app_url" run -n -r after.retire -- true
check "after: its history names the release" \
  grep -q released <(run_clock --database "$app_url" history after.retire)

# The general log writes every statement with its values, owner secrets
# included: clock init says so (as it does of PostgreSQL's statement log).
was=$(as_root -e "SELECT @@GLOBAL.general_log")
as_root -e "SET GLOBAL general_log = 1"
run_clock --database "$root_url" init 2>"$work/init.err"
as_root -e "SET GLOBAL general_log = $was"
check "with the general log on, clock init warns that it keeps owner secrets" \
  grep -q "general log, so owner secrets reach it" "$work/init.err"
run_clock --database "$root_url" init 2>"$work/init.err"
check "with it off, no such warning" bash -c "! grep -q 'owner secrets' '$work/init.err'"

# shellcheck disable=SC2154  # hostile_PID is set by coproc
if [[ -n ${hostile_PID:-} ]]; then
  kill "$hostile_PID" 2>/dev/null
  wait "$hostile_PID" 2>/dev/null
fi
as_root -e "DROP DATABASE $db; DROP USER 'app_$$'@'localhost', 'op_$$'@'localhost'"
echo "$checks checks, $failures failed"
if [[ $failures -gt 0 ]]; then
  echo "kept $work" >&2
  exit 1
fi
rm -rf "$work"
