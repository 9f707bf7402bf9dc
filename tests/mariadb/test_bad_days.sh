#!/usr/bin/env bash
# clock on MariaDB's bad days, with real clock processes against the server
# of tests/helpers/with-mariadb.sh:
# 1. the server stopped for 3 s under a running job and under a `-w 30s`
#    waiter: the job ends with 0 and its lease is released once the server
#    is back, the waiter gets the lock after its holder (a larger token),
#    nobody loses a lease;
# 2. a full server: 100 runs at once on distinct resources and 20 on one
#    resource, by an app login, against max_connections = 20: every run
#    exits 0 and runs once, the 20 never overlap and their tokens increase.
# Exits 77 (skipped) without a server; in CI that is a failure.
set -uo pipefail

db=bad_days_$$
source "$(dirname "$0")/sql_test_lib.sh"
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
ctl=$here/../helpers/mariadb-ctl.sh
work=$(mktemp -d /tmp/clock-mariadb-bad-days.XXXXXX)
root_url="mariadb://root@localhost/$db?socket=$socket"
: >"$work/clock.toml"
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG="$work/clock.toml" "$clock" "$@"; }
# Waits (up to 60 s, however slow each status is: a sanitizer build on a
# loaded machine) until `clock status` on RESOURCE shows PATTERN.
await_status() {
  local resource=$1 pattern=$2 until=$((SECONDS + 60))
  while ((SECONDS < until)); do
    run_clock --database "$root_url" status --format json "$resource" 2>/dev/null | grep -q "$pattern" && return 0
    sleep 0.05
  done
  echo "     status of $resource never showed $pattern" >&2
  return 1
}
events() { q "SELECT GROUP_CONCAT(event ORDER BY id) FROM history WHERE resource = '$1'"; }

as_root -e "CREATE DATABASE $db"
check "clock init" run_clock --database "$root_url" init

# ---------------------------------------------------------------- 1. a restart
# Both holders run until the server is back ($work/restarted), so that
# each holds through the outage however slowly this machine runs.
hold_until_restarted="while [ ! -e '$work/restarted' ]; do sleep 0.1; done"
run_clock --database "$root_url" run -r outage.job -- \
  sh -c "echo \$CLOCK_TOKEN > '$work/job.token'; $hold_until_restarted; sleep 1" &
job=$!
run_clock --database "$root_url" run -r outage.turn -- \
  sh -c "echo \$CLOCK_TOKEN > '$work/first.token'; $hold_until_restarted" &
first=$!
check "the job holds its lock" await_status outage.job '"holders": \[$'
check "the first holder holds the other" await_status outage.turn '"holders": \[$'
run_clock --database "$root_url" run -r outage.turn -w 30s -- \
  sh -c "echo \$CLOCK_TOKEN > '$work/waiter.token'" 2>"$work/waiter.err" &
waiter=$!
check "the waiter is queued" await_status outage.turn '"waiters": \[$'
check "the server stops" "$ctl" stop
sleep 3
check "the server starts again" "$ctl" start
touch "$work/restarted"
wait "$job"
check "the job exits 0 through the restart" test $? -eq 0
wait "$first"
check "the first holder exits 0 through the restart" test $? -eq 0
wait "$waiter"
status=$?
check "the -w 30s waiter exits 0 through the restart (got $status: $(head -c 300 "$work/waiter.err"))" \
  test "$status" -eq 0
check "after the first holder (a larger token)" \
  test "$(cat "$work/waiter.token" 2>/dev/null || echo 0)" -gt "$(cat "$work/first.token" 2>/dev/null || echo 0)"
check "the job's lease was released, not lost" same "$(events outage.job)" "acquired,released"
check "both leases of the turn were released" same "$(events outage.turn)" "acquired,released,acquired,released"
check "nothing is held afterwards" same "$(count leases)" 0

# ---------------------------------------------------------------- 2. a full server
as_root "$db" <"$sql_dir/roles.sql"
as_root -e "CREATE USER 'app_$$'@'localhost' IDENTIFIED BY 'pw'; GRANT clock_app TO 'app_$$'@'localhost';
            SET DEFAULT ROLE clock_app FOR 'app_$$'@'localhost'; SET GLOBAL max_connections = 20"
app_url="mariadb://app_$$:pw@localhost/$db?socket=$socket"
pids=()
for i in $(seq 100); do
  run_clock --database "$app_url" run -r "full.each.$i" -- sh -c "echo $i >> '$work/each'" \
    2>>"$work/full.err" &
  pids+=($!)
done
for i in $(seq 20); do
  run_clock --database "$app_url" run -r full.one -w 120s -- \
    sh -c "echo \"s \$CLOCK_TOKEN\" >> '$work/one'; echo \"e \$CLOCK_TOKEN\" >> '$work/one'" \
    2>>"$work/full.err" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
as_root -e "SET GLOBAL max_connections = 151"
check "120 runs against max_connections = 20 all exit 0 ($failed did not: $(sort -u "$work/full.err" | head -c 400))" \
  test "$failed" -eq 0
check "each of the 100 ran once" same "$(sort -n "$work/each" | uniq | wc -l) $(wc -l <"$work/each")" "100 100"
check "the 20 on one resource never overlap" \
  same "$(awk '{ if ($1 == "s") { if (open) bad = 1; open = 1; t = $2 } else { if (!open || $2 != t) bad = 1; open = 0 } } END { print bad + 0 }' "$work/one")" 0
check "and their tokens increase" bash -c "awk '\$1 == \"s\" { print \$2 }' '$work/one' | sort -n -c"
check "all 20 ran" same "$(grep -c '^s ' "$work/one")" 20
check "the server refused connections meanwhile" \
  test "$(as_root -e "SHOW GLOBAL STATUS LIKE 'Connection_errors_max_connections'" | cut -f2)" -gt 0

as_root -e "DROP DATABASE $db; DROP USER 'app_$$'@'localhost'"
echo "$checks checks, $failures failed"
if [[ $failures -gt 0 ]]; then
  echo "kept $work" >&2
  exit 1
fi
rm -rf "$work"
