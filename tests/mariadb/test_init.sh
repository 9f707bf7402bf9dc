#!/usr/bin/env bash
# clock init and init --print-sql on MariaDB, against the server of
# tests/helpers/with-mariadb.sh:
# - a user's clock opens a mariadb URL (no test-only switch);
# - init creates the schema and the procedures of sql/mariadb/procedures, again is a
#   no-op, re-applies the procedures when their recorded stamp differs and
#   only then, works over TCP too, and --print-sql applied by the mariadb
#   client makes the same schema and procedures; the first operation of a
#   process migrates a database that is not current; the first schema
#   (001) with a live lease is upgraded and keeps it.
# On both servers, in the integration suite: a bad URL's port named and its
# password masked (test_bad_input.cpp); a login that may not create the
# schema told of --print-sql, a wrong password, and what clock check and
# clock run tell a clock_reader login (test_least_privilege.cpp).
# Exits 77 (skipped) without a server.
set -uo pipefail

if [[ -z ${CLOCK_TEST_MARIADB_SOCKET:-} ]]; then
  [[ ${CI:-} == true ]] && { echo "CLOCK_TEST_MARIADB_SOCKET not set (run under with-mariadb.sh)" >&2; exit 1; }
  echo "skipped: no MariaDB server (run under tests/helpers/with-mariadb.sh)" >&2
  exit 77
fi
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
socket=$CLOCK_TEST_MARIADB_SOCKET
port=$CLOCK_TEST_MARIADB_PORT
work=$(mktemp -d /tmp/clock-mariadb-init.XXXXXX)
failures=0

sql() { mariadb --protocol=socket -S "$socket" -uroot -N -B "$@"; }
check() {
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; failures=$((failures + 1)); fi
}
url_of() { echo "mariadb://root@localhost/$1?socket=$socket"; }
fresh() {
  local name=init_$$_$1
  sql -e "CREATE DATABASE \`$name\`" && echo "$name"
}
# clock with a config of nothing (no user file can name another database).
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" "$clock" "$@"; }
run_test_clock() { run_clock "$@"; }

# 1. No test-only switch: a user's clock opens a mariadb URL.
db=$(fresh users)
run_clock --database "$(url_of "$db")" init 2>"$work/err"
status=$?
check "a user's init on a mariadb URL exits 0 (got $status: $(cat "$work/err"))" test "$status" -eq 0
run_clock --database "$(url_of "$db")" run -r users.job -- true 2>"$work/err"
status=$?
check "and a run exits 0 (got $status: $(cat "$work/err"))" test "$status" -eq 0

# 3. init creates the schema, and again is a no-op.
db=$(fresh init)
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
status=$?
check "clock init exits 0 (got $status: $(cat "$work/err"))" test "$status" -eq 0
tables=$(sql -e "SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = '$db'")
check "init made the tables ($tables)" test "$tables" = \
  "expected_runs,hierarchy_locks,history,last_success,leases,period_changes,procedures_stamp,routine_sets,run_counts,run_results,schema_migrations,successes,tokens,waiters"
# Every migration of sql/mariadb/migrations, read from the folder so that a new one needs no edit here.
all_migrations=$(cd "$(dirname "$0")/../../sql/mariadb/migrations" && LC_ALL=C ls *.sql | sed 's/\.sql$//' | paste -sd,)
all_versions=$(cd "$(dirname "$0")/../../sql/mariadb/migrations" && LC_ALL=C ls *.sql | sed 's/_.*//; s/^0*//' | paste -sd,)
check "schema_migrations lists every migration ($all_migrations)" test "$(sql "$db" -e 'SELECT GROUP_CONCAT(name ORDER BY version) FROM schema_migrations')" = "$all_migrations"
check "hierarchy_locks has its 16,385 slots" test "$(sql "$db" -e 'SELECT COUNT(*) FROM hierarchy_locks')" -eq 16385
check "tokens has its one row at 0" test "$(sql "$db" -e 'SELECT last FROM tokens WHERE id = 1')" -eq 0
server_us=$(sql "$db" -e 'SET time_zone = "+09:00"; SELECT clock_now_us()')
client_us=$(($(date +%s%N) / 1000))
check "clock_now_us() is the server's UTC clock in microseconds, whatever the session zone (off by $((client_us - server_us)) us)" \
  test $((client_us - server_us)) -lt 2000000 -a $((server_us - client_us)) -lt 2000000
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
check "clock init again exits 0" test $? -eq 0
check "and applies nothing twice" test "$(sql "$db" -e 'SELECT COUNT(*) FROM schema_migrations')" -eq "$(echo "$all_versions" | tr ',' '\n' | wc -l)"

# 3b. The procedures: applied by init, again only when their stamp differs.
routines() {
  sql -e "SELECT GROUP_CONCAT(routine_name ORDER BY CAST(routine_name AS BINARY))
          FROM information_schema.routines WHERE routine_schema = '$1'"
}
# Every routine the files create, by name, in byte order: the migrations',
# release 1.0's (sql/mariadb/release-1.0) and this release's set, whose
# names end in _r and the first 8 hex of the sha256 of its files
# (docs/upgrades.md).
sql_dir=$(dirname "$0")/../../sql/mariadb
routine_names() {
  grep -ohiE 'CREATE (OR REPLACE )?(DEFINER *= *[^ ]+ )?(PROCEDURE|FUNCTION) (IF NOT EXISTS )?`?[a-z_0-9]+' "$@" |
    awk '{print $NF}' | tr -d '`'
}
suffix=_r$(LC_ALL=C cat $(LC_ALL=C ls "$sql_dir"/procedures/*.sql) | sha256sum | cut -c1-8)
wanted=$({ routine_names "$sql_dir"/migrations/*.sql "$sql_dir"/release-1.0/*.sql
           routine_names "$sql_dir"/procedures/*.sql | sed "s/\$/$suffix/"; } | LC_ALL=C sort -u | paste -sd,)
all_routines=$(routines "$db")
check "init made every routine of sql/mariadb ($all_routines)" test "$all_routines" = "$wanted"
stamp=$(sql "$db" -e 'SELECT sha256 FROM procedures_stamp WHERE id = 1')
check "and recorded their stamp ($stamp)" bash -c "[[ '$stamp' =~ ^[0-9a-f]{64}\$ ]]"
# A procedure dropped behind clock's back shows whether init applies again.
sql "$db" -e 'DROP PROCEDURE clock_renew'
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
check "init with the stamp unchanged exits 0 ($(cat "$work/err"))" test $? -eq 0
check "and does not apply the procedures again" \
  test "$(sql -e "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = '$db' AND routine_name = 'clock_renew'")" -eq 0
sql "$db" -e "UPDATE procedures_stamp SET sha256 = REPEAT('0', 64)"
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
check "init with another stamp exits 0 ($(cat "$work/err"))" test $? -eq 0
check "and applies every procedure again" test "$(routines "$db")" = "$all_routines"
check "and records its own stamp" test "$(sql "$db" -e 'SELECT sha256 FROM procedures_stamp')" = "$stamp"
run_test_clock --database "$(url_of "$db")" status >"$work/out" 2>"$work/err"
status=$?
check "status on the current schema exits 1, no locks held (got $status: $(cat "$work/err"))" \
  test "$status" -eq 1
check "and says so" grep -q "no locks held" "$work/out"

# 3c. The first operation migrates a database that is not current, as on
# PostgreSQL.
db=$(fresh first_use)
run_test_clock --database "$(url_of "$db")" status >"$work/out" 2>"$work/err"
check "status on a database without clock tables makes them and answers ($(cat "$work/err"))" \
  grep -q "no locks held" "$work/out"
check "after making the schema" test "$(sql "$db" -e 'SELECT COUNT(*) FROM schema_migrations')" -eq "$(echo "$all_versions" | tr ',' '\n' | wc -l)"
check "and the procedures" test "$(routines "$db")" = "$all_routines"
sql "$db" -e "DELETE FROM routine_sets WHERE suffix = '$suffix'; DROP PROCEDURE clock_status_rows$suffix"
run_test_clock --database "$(url_of "$db")" history >/dev/null 2>"$work/err"
check "an operation on a database that lacks this release's routines installs them" \
  test "$(routines "$db")" = "$all_routines"

# 3d. The upgrade from the first schema (001) with a live lease: init adds
# every later migration and the lease stays as it was and still holds.
# (tests/mariadb/test_leftovers.sh upgrades version 3 the same way.)
db=$(fresh upgrade)
sql "$db" -e "source $sql_dir/migrations/001_schema.sql"
sql "$db" -e "CREATE TABLE schema_migrations (version INT NOT NULL PRIMARY KEY,
                name VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6));
              INSERT INTO schema_migrations (version, name) VALUES (1, '001_schema');
              INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                                  acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid,
                                  user_name, command, secret_hash)
              VALUES ('', 'nightly', '11111111-1111-4111-8111-111111111111', 'exclusive', 0, 7, 1,
                      'r', clock_now_us(), clock_now_us(), clock_now_us() + 600000000, 600000000,
                      'h1', '10.0.0.1', 100, 'alice', 'backup', SHA2('s', 256))"
lease_of() { sql "$db" -e "SELECT CONCAT_WS('|', resource, owner, token, acquired_us, expires_us, command, secret_hash) FROM leases"; }
lease_before=$(lease_of)
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
check "init on a version-1 schema with a live lease exits 0 ($(cat "$work/err"))" test $? -eq 0
check "and records every later migration" test "$(sql "$db" -e 'SELECT GROUP_CONCAT(version ORDER BY version) FROM schema_migrations')" = "$all_versions"
check "the lease is as it was, with no leftovers" \
  test "$(lease_of),$(sql "$db" -e 'SELECT COALESCE(leftovers, 0) FROM leases')" = "$lease_before,0"
check "and the procedures are there" test "$(routines "$db")" = "$all_routines"
run_test_clock --database "$(url_of "$db")" run -n -r nightly -- true 2>"$work/err"
status=$?
check "the upgraded lease still holds: run -n on it exits 75 (got $status)" test "$status" -eq 75
check "recorded as skipped, the upgraded lease in the way" \
  test "$(sql "$db" -e "SELECT CONCAT(event, ' ', in_the_way_owner) FROM history WHERE resource = 'nightly'")" = \
  "skipped 11111111-1111-4111-8111-111111111111"
run_test_clock --database "$(url_of "$db")" run -r weekly -- true 2>"$work/err"
status=$?
check "and a run beside it exits 0 (got $status: $(cat "$work/err"))" test "$status" -eq 0

# 4. Over TCP.
db=$(fresh tcp)
run_test_clock --database "mysql://root@127.0.0.1:$port/$db" init 2>"$work/err"
check "clock init over TCP exits 0 ($(cat "$work/err"))" test $? -eq 0

# 5. --print-sql, applied by the client (twice), makes the same schema.
db=$(fresh printed)
run_test_clock --database "$(url_of "$db")" init --print-sql >"$work/schema.sql" 2>"$work/err"
check "init --print-sql exits 0" test $? -eq 0
check "and creates nothing itself" test "$(sql -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$db'")" -eq 0
sql "$db" <"$work/schema.sql"
check "the mariadb client applies the printed DDL" test $? -eq 0
sql "$db" <"$work/schema.sql"
check "and again" test $? -eq 0
columns() {
  sql -e "SELECT table_name, column_name, column_type, is_nullable, column_default
          FROM information_schema.columns WHERE table_schema = '$1'
          ORDER BY table_name, ordinal_position"
}
check "the printed DDL makes the schema init makes" \
  diff <(columns "init_$$_init") <(columns "$db")
check "and the procedures init makes" test "$(routines "$db")" = "$all_routines"
check "and records the stamp init records" test "$(sql "$db" -e 'SELECT sha256 FROM procedures_stamp')" = "$stamp"
run_test_clock --database "$(url_of "$db")" init 2>"$work/err"
check "clock init on the printed schema exits 0" test $? -eq 0

if [[ $failures -gt 0 ]]; then
  echo "$failures check(s) failed; kept $work" >&2
  exit 1
fi
rm -rf "$work"
echo "all checks passed"
