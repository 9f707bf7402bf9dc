#!/usr/bin/env bash
# clock on MariaDB's bad days, with real clock processes against the server
# of tests/helpers/with-mariadb.sh (a restart under a holder and a waiter is
# tested on both servers by tests/integration/test_server_trouble.cpp):
# a full server: 100 runs at once on distinct resources and 20 on one
# resource, by an app login, against max_connections = 20: every run exits
# 0 and runs once, the 20 never overlap and their tokens increase.
# Exits 77 (skipped) without a server; in CI that is a failure.
set -uo pipefail

db=bad_days_$$
source "$(dirname "$0")/sql_test_lib.sh"
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
work=$(mktemp -d /tmp/clock-mariadb-bad-days.XXXXXX)
root_url="mariadb://root@localhost/$db?socket=$socket"
: >"$work/clock.toml"
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG="$work/clock.toml" "$clock" "$@"; }

as_root -e "CREATE DATABASE $db"
check "clock init" run_clock --database "$root_url" init

# ---------------------------------------------------------------- a full server
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
