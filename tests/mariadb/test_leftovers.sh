#!/usr/bin/env bash
# What a holder's command left running, on MariaDB (migration 004,
# clock_note_leftovers, the leftovers column of clock_status_rows and of
# history), as PostgreSQL's note_leftovers() has it: real CALLs through the
# mariadb client against the server of tests/helpers/with-mariadb.sh,
# leases taken with clock_try_acquire. Checks:
# - 004 upgrades a version-3 schema in place: a live lease stays as it was,
#   with no leftovers; 004 applies again unchanged; the columns refuse text
#   that is not JSON;
# - a note by the holder shows in status (the 20th column, the same JSON,
#   any UTF-8 command), [] or NULL clears it;
# - a wrong secret is refused for every resource and recorded 'refused'
#   with who asked; a lease not held ('gone'), under another token or
#   expired is refused and nothing is written, all or none;
# - a list that is not JSON or not an array, bad tokens or owner: 22023;
# - every end of a lease copies the list into history (released, forced,
#   expired by release, force, gc and a grant over it, lost by renewal) and
#   clock_history shows it as JSON, null where there is none;
# - one CALL is one transaction; concurrent notes and forced releases in
#   opposite orders get no 1213/1205.
# CLOCK_TEST_MARIADB_SQL_DIR and the skip rule: sql_test_lib.sh.
set -uo pipefail

db=leftovers_$$
# shellcheck source=tests/mariadb/sql_test_lib.sh
source "$(dirname "$0")/sql_test_lib.sh"

o1=11111111-1111-4111-8111-111111111111
o2=22222222-2222-4222-8222-222222222222
o3=33333333-3333-4333-8333-333333333333
secret_of() { echo "s-${1:0:1}"; }

# acq NS RESOURCES OWNER [QUEUE]: one CALL clock_try_acquire (its JSON).
acq() {
  q "CALL clock_try_acquire('$1', '$2', 'exclusive', 0, '$3', 60000,
       '$(cat /proc/sys/kernel/random/uuid)', ${4:-FALSE}, 'host-${3:0:1}', '10.0.0.1', 100, 'alice',
       'make', NULL, TRUE, '$(secret_of "$3")', 'asker', NULL, 0)"
}
# note NS RESOURCES OWNER TOKENS LEFTOVERS [SECRET [BY]]: LEFTOVERS is SQL
# (a quoted JSON text, or NULL); prints the reply.
note() {
  q "CALL clock_note_leftovers('$1', '$2', '$3', '$4', $5, '${6-$(secret_of "$3")}', '${7:-u@h pid 1}')"
}
# The holder's leftovers column (the 20th) of clock_status_rows, as text.
status_leftovers() {
  q "CALL clock_status_rows('$1', '$2', TRUE)" | awk -F'\t' -v owner="$3" '$1 == "holder" && $4 == owner { print $20 }'
}
expire() { q "UPDATE leases SET expires_us = clock_now_us() - 1000 WHERE namespace = '$1' AND resource = '$2'"; }
leftovers_of() { q "SELECT COALESCE(leftovers, 'NULL') FROM leases WHERE namespace = '$1' AND resource = '$2'"; }
# The "leftovers" of the newest EVENT of a resource in clock_history, as
# JSON text: null when the key is there with no list, "missing" without it.
history_leftovers() {
  js "$(q "CALL clock_history('$1', '$2', 1, '$3')")" \
    'json.dumps(d[0]["leftovers"], ensure_ascii=False) if d and "leftovers" in d[0] else "missing"'
}
# Same JSON: both parse to equal values (MariaDB keeps the text as given,
# PostgreSQL's jsonb reorders keys; the client parses either).
same_json() {
  /usr/bin/python3 -c '
import json, sys
try:
    sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))
except ValueError:
    sys.exit(1)' "$1" "$2" ||
    { echo "     got '$1', want '$2'" >&2; return 1; }
}

left='[{"pid": 4242, "command": "sleep 999", "fate": "running"}, {"pid": 4243, "command": "upload é ☃ --to s3", "fate": "running"}]'
ended='[{"pid": 4242, "command": "sleep 999", "fate": "ended"}]'

as_root -e "CREATE DATABASE \`$db\` CHARACTER SET utf8mb4" || { echo "cannot create database $db" >&2; exit 1; }
trap 'as_root -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1' EXIT

# ------------------------------------------------ the upgrade from version 3
for f in "$sql_dir"/migrations/00[1-3]_*.sql; do
  as_root "$db" -e "source $f" || check "migration $(basename "$f") applies" false
done
q "CREATE TABLE IF NOT EXISTS schema_migrations (version INT NOT NULL PRIMARY KEY,
     name VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6))"
# A lease granted by a version-3 clock (its columns, no leftovers).
q "INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                       acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid, user_name,
                       command, secret_hash)
   VALUES ('up', 'old', '$o3', 'exclusive', 0, 1, 1, 'req-old', clock_now_us(), clock_now_us(),
           clock_now_us() + 600000000, 600000000, 'h3', '10.0.0.3', 300, 'carol', 'backup',
           SHA2('$(secret_of "$o3")', 256));
   INSERT INTO history (at_us, event, namespace, resource, owner, mode, token)
   VALUES (clock_now_us(), 'acquired', 'up', 'old', '$o3', 'exclusive', 1);
   UPDATE tokens SET last = 1"
old_row() { q "SELECT CONCAT_WS('|', namespace, resource, owner, mode, token, depth, acquired_us, renewed_us, expires_us, host, pid, command, secret_hash) FROM leases"; }
before=$(old_row)
check "migration 004 applies to a version-3 schema" as_root "$db" -e "source $sql_dir/migrations/004_leftovers.sql"
check "and again, unchanged" as_root "$db" -e "source $sql_dir/migrations/004_leftovers.sql"
check "the live lease of version 3 is as it was, with no leftovers" \
  same "$(old_row),$(leftovers_of up old)" "$before,NULL"
check "leases.leftovers and history.leftovers: JSON (LONGTEXT utf8mb4_bin, JSON_VALID checked), nullable, last" \
  same "$(q "SELECT GROUP_CONCAT(CONCAT_WS(' ', c.table_name, c.column_type, c.collation_name, c.is_nullable, c.ordinal_position = (SELECT MAX(ordinal_position) FROM information_schema.columns m WHERE m.table_schema = c.table_schema AND m.table_name = c.table_name), k.check_clause) ORDER BY c.table_name SEPARATOR '; ')
             FROM information_schema.columns c
             LEFT JOIN information_schema.check_constraints k
               ON k.constraint_schema = c.table_schema AND k.table_name = c.table_name AND k.constraint_name = c.column_name
             WHERE c.table_schema = '$db' AND c.column_name = 'leftovers'")" \
  "history longtext utf8mb4_bin YES 1 json_valid(\`leftovers\`); leases longtext utf8mb4_bin YES 1 json_valid(\`leftovers\`)"
# The later migrations too, as clock init applies them: the procedures read
# their tables (clock_history reads period_changes).
for f in "$sql_dir"/migrations/0*.sql; do
  version=$(basename "$f")
  ((10#${version%%_*} > 4)) || continue
  as_root "$db" -e "source $f" || check "$(basename "$f") applies" false
done
for f in "$sql_dir"/procedures/*.sql; do apply "$f" || check "$(basename "$f") applies" false; done
check "the lease of version 3 shows in status with no leftovers (NULL)" same "$(status_leftovers up old "$o3")" NULL
check "the column refuses text that is not JSON" \
  fails_with "ERROR 4025" q "UPDATE leases SET leftovers = 'pid 4242' WHERE resource = 'old'"
reply=$(note up '["old"]' "$o3" '[1]' "'$ended'")
check "its holder notes leftovers on it ($reply)" same "$(js "$reply" 'd["outcome"]')" noted
reply=$(q "CALL clock_release('up', '[\"old\"]', '$o3', '$(secret_of "$o3")', '', 'h3', '[300]', FALSE)")
check "and its release, by the new procedures, keeps them in history" \
  same_json "$(q "SELECT leftovers FROM history WHERE resource = 'old' AND event = 'released'")" "$ended"

# ---------------------------------------------------- noting, and status
acq ns '["job"]' "$o1" >/dev/null
token=$(q "SELECT token FROM leases WHERE resource = 'job'")
reply=$(note ns '["job"]' "$o1" "[$token]" "'$left'")
check "the holder notes two leftovers ($reply)" \
  same "$(js "$reply" '(d["outcome"], type(d["now"]).__name__)')" "('noted', 'int')"
check "status shows them as the holder's 20th column, the same JSON (UTF-8 command intact)" \
  same_json "$(status_leftovers ns job "$o1")" "$left"
acq ns '["job"]' "$o2" TRUE >/dev/null  # queued behind o1
check "only on the holder's row: now, waiter and runs rows have NULL there" \
  same "$(q "CALL clock_status_rows('ns', NULL, TRUE)" | awk -F'\t' '$1 != "holder" { print $1 "=" $20 }' | sort -u | paste -sd' ')" \
  "now=NULL runs=NULL waiter=NULL"
reply=$(note ns '["job"]' "$o1" '[]' "'$ended'")
check "tokens [] (any) notes too, replacing the list" same "$(js "$reply" 'd["outcome"]')" noted
check "status shows the new list" same_json "$(status_leftovers ns job "$o1")" "$ended"
note ns '["job"]' "$o1" "[$token]" "'[]'" >/dev/null
check "[] clears it" same "$(status_leftovers ns job "$o1")" NULL
note ns '["job"]' "$o1" "[$token]" "'$left'" >/dev/null
note ns '["job"]' "$o1" "[$token]" NULL >/dev/null
check "NULL clears it too" same "$(status_leftovers ns job "$o1")" NULL
check "noting writes no history" same "$(count "history WHERE resource = 'job' AND event <> 'acquired'")" 0

# ------------------------------------------------------------ refusals
acq ns '["two.a", "two.b"]' "$o2" >/dev/null
note ns '["two.a", "two.b"]' "$o2" '[]' "'$left'" >/dev/null
reply=$(note ns '["two.a", "two.b"]' "$o2" '[]' "'$ended'" wrong 'mallory@h9 pid 9')
check "a wrong secret is refused for every resource ($reply)" \
  same "$(js "$reply" '(d["outcome"], d["lost"])')" \
  "('not_owner', [{'resource': 'two.a', 'reason': 'not_proven'}, {'resource': 'two.b', 'reason': 'not_proven'}])"
check "and recorded 'refused' on each, with who asked and the token" \
  same "$(q "SELECT GROUP_CONCAT(CONCAT_WS('|', resource, forced_by, token IS NOT NULL) ORDER BY resource) FROM history WHERE namespace = 'ns' AND event = 'refused'")" \
  "two.a|mallory@h9 pid 9|1,two.b|mallory@h9 pid 9|1"
check "and the list stays as the holder noted it" \
  same_json "$(leftovers_of ns two.a)" "$left"
reply=$(note ns '["two.a"]' "$o2" '[]' "'$ended'" '' 'mallory@h9 pid 9')
check "no secret at all is refused too" same "$(js "$reply" 'd["lost"][0]["reason"]')" not_proven
reply=$(q "CALL clock_release('ns', '[\"two.a\"]', '$o2', 'wrong', 'mallory@h9 pid 9', 'h9', '[9]', FALSE)")
check "a release with a wrong secret is refused, and its 'refused' record keeps no list (only ends do)" \
  same "$(js "$reply" 'd["refused"]'),$(q "SELECT COALESCE(leftovers, 'NULL') FROM history WHERE resource = 'two.a' AND event = 'refused' ORDER BY id DESC LIMIT 1")" \
  "[{'resource': 'two.a', 'reason': 'not_proven'}],NULL"
reply=$(note ns '["two.a", "gone"]' "$o2" '[]' "'$ended'")
check "a lease not held is refused as gone, the held one named with it is not noted either" \
  same "$(js "$reply" '(d["outcome"], d["lost"])'),$(same_json "$(leftovers_of ns two.a)" "$left" && echo unchanged)" \
  "('not_owner', [{'resource': 'gone', 'reason': 'gone'}]),unchanged"
reply=$(note ns '["two.a"]' "$o3" '[]' "'$ended'" "$(secret_of "$o3")")
check "another owner's note on it: gone (it holds nothing there)" same "$(js "$reply" 'd["lost"]')" "[{'resource': 'two.a', 'reason': 'gone'}]"
reply=$(note ns '["two.a", "two.b"]' "$o2" '[1, 999999]' "'$ended'")
check "under other tokens: refused as 'token' for each" \
  same "$(js "$reply" '[l["reason"] for l in d["lost"]]')" "['token', 'token']"
expire ns two.b
reply=$(note ns '["two.a", "two.b"]' "$o2" '[]' "'$ended'")
check "an expired lease: refused as 'expired'" same "$(js "$reply" 'd["lost"]')" "[{'resource': 'two.b', 'reason': 'expired'}]"
check "and left for the next renewal: still there, its list unchanged, no history written" \
  same "$(count "leases WHERE resource = 'two.b'"),$(same_json "$(leftovers_of ns two.b)" "$left" && echo unchanged),$(count "history WHERE namespace = 'ns' AND event NOT IN ('acquired', 'refused')")" \
  "1,unchanged,0"
q "UPDATE leases SET expires_us = clock_now_us() + 60000000 WHERE resource = 'two.b'"

# ------------------------------------------------------------ bad input
invalid='ERROR 1644 \(22023\).*note_leftovers: invalid owner, tokens \(one per resource, or none\) or leftovers \(a JSON array\)'
check "leftovers that are not JSON are refused (22023, PostgreSQL's message)" \
  fails_with "$invalid" note ns '["job"]' "$o1" '[]' "'[{\"pid\": 1'"
check "a JSON object is refused" fails_with "$invalid" note ns '["job"]' "$o1" '[]' "'{\"pid\": 1}'"
check "a JSON string is refused" fails_with "$invalid" note ns '["job"]' "$o1" '[]' "'\"sleep\"'"
check "tokens that are not one per resource are refused" fails_with "$invalid" note ns '["two.a", "two.b"]' "$o2" '[1]' "'[]'"
check "an owner that is not a UUID is refused" fails_with "$invalid" note ns '["job"]' not-a-uuid '[]' "'[]'"
check "an invalid resource name is refused, naming it" \
  fails_with "invalid resource name 'a..b'" note ns '["a..b"]' "$o1" '[]' "'[]'"
check "none of them wrote anything" \
  same "$(status_leftovers ns job "$o1"),$(same_json "$(leftovers_of ns two.a)" "$left" && echo unchanged)" "NULL,unchanged"

# ------------------------------------- the end of a lease keeps the list
note ns '["job"]' "$o1" "[$token]" "'$left'" >/dev/null
q "CALL clock_release('ns', '[\"job\"]', '$o1', '$(secret_of "$o1")', '', 'host-1', '[100]', TRUE)" >/dev/null
check "a release copies the list into its history record" \
  same_json "$(q "SELECT leftovers FROM history WHERE resource = 'job' AND event = 'released'")" "$left"
check "clock_history shows it as JSON (a list, not a string), the command intact" \
  same_json "$(history_leftovers ns job released)" "$left"
check "the 'acquired' event has the key, null (as PostgreSQL's jsonb_build_object)" \
  same "$(history_leftovers ns job acquired)" null
acq ns '["plain"]' "$o1" >/dev/null
q "CALL clock_release('ns', '[\"plain\"]', '$o1', '$(secret_of "$o1")', '', 'host-1', '[100]', FALSE)" >/dev/null
check "a release of a lease that left nothing: null" same "$(history_leftovers ns plain released)" null
acq ns '["reentered"]' "$o1" >/dev/null
acq ns '["reentered"]' "$o1" >/dev/null
note ns '["reentered"]' "$o1" '[]' "'$ended'" >/dev/null
q "CALL clock_release('ns', '[\"reentered\"]', '$o1', '$(secret_of "$o1")', '', 'host-1', '[100]', FALSE)" >/dev/null
check "a release that only lowers the depth keeps the list on the lease" \
  same "$(count "history WHERE resource = 'reentered' AND event = 'released'"),$(same_json "$(leftovers_of ns reentered)" "$ended" && echo kept)" "0,kept"

acq ns '["forced"]' "$o1" >/dev/null
note ns '["forced"]' "$o1" '[]' "'$left'" >/dev/null
acq ns '["forced2"]' "$o2" >/dev/null
note ns '["forced2"]' "$o2" '[]' "'$ended'" >/dev/null
expire ns forced2
q "CALL clock_force_release('ns', '[\"forced\", \"forced2\"]', 'ops@admin')" >/dev/null
check "a forced release copies the list ('forced')" same_json "$(history_leftovers ns forced forced)" "$left"
check "and an expired lease it removes keeps its own ('expired')" \
  same_json "$(history_leftovers ns forced2 expired)" "$ended"

acq ns '["rel.late"]' "$o1" >/dev/null
note ns '["rel.late"]' "$o1" '[]' "'$left'" >/dev/null
expire ns rel.late
q "CALL clock_release('ns', '[\"rel.late\"]', '$o1', '$(secret_of "$o1")', '', 'host-1', '[100]', FALSE)" >/dev/null
check "releasing an expired lease: its 'expired' record has the list" \
  same_json "$(history_leftovers ns rel.late expired)" "$left"

acq ns '["gc"]' "$o1" >/dev/null
note ns '["gc"]' "$o1" '[]' "'$ended'" >/dev/null
expire ns gc
q "CALL clock_gc_batch(100, NULL, FALSE, 0)" >/dev/null
check "gc's 'expired' record has the list" \
  same_json "$(history_leftovers ns gc expired)" "$ended"

acq ns '["taken"]' "$o1" >/dev/null
note ns '["taken"]' "$o1" '[]' "'$left'" >/dev/null
expire ns taken
reply=$(acq ns '["taken.sub"]' "$o2")
check "a grant over an expired related lease ($(js "$reply" 'd["outcome"]')): its 'expired' record has the list" \
  same_json "$(history_leftovers ns taken expired)" "$left"

acq ns '["lost.token"]' "$o1" >/dev/null
note ns '["lost.token"]' "$o1" '[]' "'$ended'" >/dev/null
q "CALL clock_renew('ns', '[\"lost.token\"]', '$o1', '[999999]', 60000, '$(secret_of "$o1")', 'x')" >/dev/null
check "a renewal under another token: its 'lost' record has the list" \
  same_json "$(history_leftovers ns lost.token lost)" "$ended"
acq ns '["lost.late"]' "$o1" >/dev/null
note ns '["lost.late"]' "$o1" '[]' "'$left'" >/dev/null
expire ns lost.late
q "CALL clock_renew('ns', '[\"lost.late\"]', '$o1', '[]', 60000, '$(secret_of "$o1")', 'x')" >/dev/null
check "a renewal that finds it expired: its 'lost' record has the list" \
  same_json "$(history_leftovers ns lost.late lost)" "$left"
check "'refused' records keep none (as on PostgreSQL)" \
  same "$(count "history WHERE event IN ('refused', 'acquired') AND leftovers IS NOT NULL")" 0

# ------------------------------------------- one CALL is one transaction
acq tx '["t.a", "boom"]' "$o1" >/dev/null
note tx '["t.a", "boom"]' "$o1" '[]' "'$ended'" >/dev/null
as_root --delimiter='#@!' "$db" -e "CREATE TRIGGER test_boom BEFORE UPDATE ON leases FOR EACH ROW
  IF NEW.resource = 'boom' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF"
check "a note that fails part-way reports the error" \
  fails_with "ERROR 1644 .*: boom" note tx '["t.a", "boom"]' "$o1" '[]' "'$left'"
check "and leaves the first lease's list as it was" same_json "$(leftovers_of tx t.a)" "$ended"
as_root "$db" -e "DROP TRIGGER test_boom"

# ------------------------------------------------- concurrent calls
# Notes of each loop's own lease while the others force-release shared
# resources in other orders: the slot rows are taken in slot order, so no
# call waits for another in a cycle.
for i in 1 2 3 4; do acq cc "[\"c$i.own\"]" "$o1" >/dev/null; done
work_dir=$(mktemp -d)
loop() {
  local i=$1 order=$2 n
  for n in $(seq 25); do
    q "CALL clock_force_release('cc', '$order', 'loop $i');
       CALL clock_note_leftovers('cc', '[\"c$i.own\", \"c$((i % 4 + 1)).own\"]', '$o1', '[]', '[{\"pid\": $n, \"command\": \"c\", \"fate\": \"running\"}]', '$(secret_of "$o1")', 'x')" ||
      echo "loop $i call $n failed"
  done >"$work_dir/loop$i" 2>&1
}
loop 1 '["c1.x", "c2.x", "c3.x", "c4.x"]' &
loop 2 '["c4.x", "c3.x", "c2.x", "c1.x"]' &
loop 3 '["c2.x", "c4.x", "c1.x", "c3.x"]' &
loop 4 '["c3.x", "c1.x", "c4.x", "c2.x"]' &
wait
check "4 x 25 concurrent notes (two hierarchies each) and forced releases in other orders: no error" \
  same "$(cat "$work_dir"/loop* | grep -c -E 'ERROR|failed')" 0
check "every note noted" same "$(cat "$work_dir"/loop* | grep -c '"outcome": "noted"')" 100
cat "$work_dir"/loop* | grep -E "ERROR|failed" | sort | uniq -c | head -5 >&2
rm -rf "$work_dir"

echo "$checks checks, $failures failed"
[[ $failures -eq 0 ]]
