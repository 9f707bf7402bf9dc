#!/usr/bin/env bash
# What only the mariadb client can show of sql/mariadb/procedures/ and
# sql/mariadb/roles.sql, against the server of tests/helpers/with-mariadb.sh:
# - the migration and procedure files apply as a DBA applies them by hand
#   (docs/internals/mariadb.md), and apply again unchanged (CREATE OR
#   REPLACE); they define the operation procedures listed below, and no
#   clock_rec_ helper runs with the definer's rights;
# - the procedure files applied again keep roles.sql's grants: an app login
#   renews and notes leftovers, an operator login forces the release,
#   recorded with its login and the leftovers the app noted.
# clock init applies each release's procedures once, under names of their
# own (a routine set's suffix): only files applied by hand, twice, reach the
# second point. What the procedures do, on PostgreSQL and
# MariaDB alike, is in the shared suite: tests/integration/test_record_calls.cpp
# (raw calls clock never makes), test_release.cpp, test_status_gc.cpp,
# test_missed_runs.cpp, test_expected_runs.cpp, test_owner_proof.cpp,
# test_owner_secret.cpp, test_refusals.cpp, test_run.cpp (same-second
# renewals); what each role may not do: test_least_privilege.cpp; one CALL
# is one transaction: test_routine_transactions.cpp.
# CLOCK_TEST_MARIADB_SQL_DIR and the skip rule: sql_test_lib.sh.
set -uo pipefail

db=procs_$$
# shellcheck source=tests/mariadb/sql_test_lib.sh
source "$(dirname "$0")/sql_test_lib.sh"

o1=11111111-1111-4111-8111-111111111111

# lease NS RESOURCE OWNER TOKEN TTL_MS SECRET: a live lease granted now,
# held by host h1, pid 100, with the 'acquired' record the acquire writes.
lease() {
  q "INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                         acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid, user_name,
                         command, secret_hash)
     VALUES ('$1', '$2', '$3', 'exclusive', 0, $4, 1, 'req-$4', clock_now_us(), clock_now_us(),
             clock_now_us() + $5 * 1000, $5 * 1000, 'h1', '10.0.0.1', 100, 'alice',
             'make deploy', SHA2('$6', 256));
     INSERT INTO history (at_us, event, namespace, resource, owner, mode, token, secret_hash)
     VALUES (clock_now_us(), 'acquired', '$1', '$2', '$3', 'exclusive', $4, SHA2('$6', 256))"
}

as_root -e "CREATE DATABASE \`$db\`" || { echo "cannot create database $db" >&2; exit 1; }
trap 'as_root -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1' EXIT

# ---------------------------------------------------------------- applying
for f in "$sql_dir"/migrations/*.sql; do
  check "migration $(basename "$f") applies" as_root "$db" -e "source $f"
done
# What clock init keeps its versions in (src/store/mariadb/schema.cpp).
q "CREATE TABLE IF NOT EXISTS schema_migrations (version INT NOT NULL PRIMARY KEY,
     name VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6))"
procedure_files=("$sql_dir"/procedures/*.sql)
for f in "${procedure_files[@]}"; do
  check "$(basename "$f") applies" apply "$f"
done
for f in "${procedure_files[@]}"; do
  check "$(basename "$f") applies again" apply "$f"
done
routines=$(q "SELECT GROUP_CONCAT(routine_name ORDER BY CAST(routine_name AS BINARY)) FROM information_schema.routines
              WHERE routine_schema = '$db' AND routine_name NOT LIKE 'clock\_rec\_%'
                AND routine_name NOT LIKE 'clock\_acq\_%'
                AND routine_type = 'PROCEDURE'")
check "the operation procedures exist ($routines)" same "$routines" \
  "clock_end_dead_lease,clock_expect_runs,clock_expected_rows,clock_force_release,clock_gc_batch,clock_history,clock_history2,clock_holder_trace,clock_leave_queue,clock_note_leftovers,clock_record_missed_run,clock_release,clock_release2,clock_renew,clock_run_results,clock_status_rows,clock_try_acquire"
definer_ones=$(q "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = '$db'
                  AND routine_name LIKE 'clock\_rec\_%' AND security_type = 'DEFINER'")
check "no clock_rec_ helper runs with the definer's rights" same "$definer_ones" 0

# ---------------------------------------------------------------- roles
# Applying the procedure files again (CREATE OR REPLACE) keeps roles.sql's
# grants, and a forced release records the operator's login and what the
# app noted.
check "roles.sql applies" as_root "$db" -e "source $sql_dir/roles.sql"
for f in "${procedure_files[@]}"; do apply "$f"; done
for who in app:clock_app ops:clock_operator; do
  user=${who%%:*}_$$
  as_root -e "CREATE USER '$user'@'localhost' IDENTIFIED BY 'pw-$$';
              GRANT ${who#*:} TO '$user'@'localhost';
              SET DEFAULT ROLE ${who#*:} FOR '$user'@'localhost'"
done
as() { local user=$1_$$; shift; mariadb --protocol=socket -S "$socket" -u"$user" -p"pw-$$" -N -B "$db" -e "$1"; }
lease roles ro.a "$o1" 50 60000 s1
reply=$(as app "CALL clock_renew('roles', '[\"ro.a\"]', '$o1', '[]', 60000, 's1', 'x')")
check "app, after the procedures were applied again: renews through the procedure ($reply)" \
  grep -q '"outcome": "renewed"' <<<"$reply"
reply=$(as app "CALL clock_note_leftovers('roles', '[\"ro.a\"]', '$o1', '[]', '[{\"pid\": 7, \"command\": \"c\", \"fate\": \"running\"}]', 's1', 'x')")
check "app: notes leftovers through the procedure ($reply)" grep -q '"outcome": "noted"' <<<"$reply"
reply=$(as ops "CALL clock_force_release('roles', '[\"ro.a\"]', 'carol@admin')")
check "ops: forces the release ($reply)" grep -q '"holders_removed": 1' <<<"$reply"
check "recorded with who asked, the operator's login and the leftovers the app noted" \
  same "$(q "SELECT CONCAT(forced_by, '|', db_user, '|', JSON_VALUE(leftovers, '\$[0].pid')) FROM history WHERE resource = 'ro.a' AND event = 'forced'")" \
  "carol@admin|ops_$$@localhost|7"
for user in app ops; do as_root -e "DROP USER '${user}_$$'@'localhost'"; done

echo "$checks checks, $failures failed"
[[ $failures -eq 0 ]]
