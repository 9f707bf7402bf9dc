#!/usr/bin/env bash
# Renewals in the same second as the grant and as each other never read as
# a loss (ShedLock-style "0 rows changed" on a DATETIME(0) column
# is the bug this guards against): a job under a 1 s TTL, renewed every
# third of it (333 ms), runs 60 s on MariaDB and ends with exit 0, its
# lease released, never lost, the same token throughout.
# Exits 77 (skipped) without a server; in CI that is a failure.
set -uo pipefail

db=same_second_$$
source "$(dirname "$0")/sql_test_lib.sh"
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
work=$(mktemp -d /tmp/clock-mariadb-same-second.XXXXXX)
: >"$work/clock.toml"
url="mariadb://root@localhost/$db?socket=$socket"
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG="$work/clock.toml" "$clock" "$@"; }

as_root -e "CREATE DATABASE $db"
check "clock init" run_clock --database "$url" init
run_clock --database "$url" run --ttl 1s -r same.second -- sleep "${CLOCK_TEST_SAME_SECOND_FOR:-60}" \
  2>"$work/run.err" &
job=$!
renewed() { q "SELECT renewed_us FROM leases WHERE resource = 'same.second'"; }
for _ in $(seq 200); do [[ -n $(renewed) ]] && break; sleep 0.05; done
first=$(renewed)
sleep 1.5
check "the lease is renewed while the job runs" test "$(renewed)" -gt "${first:-0}"
check "each renewal sets it to expire 1 s later" \
  same "$(q "SELECT expires_us - renewed_us FROM leases WHERE resource = 'same.second'")" 1000000
wait "$job"
status=$?
check "a 1 s lease renewed for 60 s exits 0 (got $status: $(head -c 300 "$work/run.err"))" \
  test "$status" -eq 0
check "it was released, never lost" same "$(q "SELECT GROUP_CONCAT(event ORDER BY id) FROM history")" \
  "acquired,released"
check "under one token" same "$(q "SELECT COUNT(DISTINCT token) FROM history")" 1
check "nothing is held afterwards" same "$(count leases)" 0

as_root -e "DROP DATABASE $db"
echo "$checks checks, $failures failed"
if [[ $failures -gt 0 ]]; then
  echo "kept $work" >&2
  exit 1
fi
rm -rf "$work"
