#!/usr/bin/env bash
# The MariaDB procedures of sql/mariadb/procedures/ that keep the record
# (renew, release, force release, leave_queue, status rows, history, gc,
# missed runs, expected runs) and the roles of sql/mariadb/roles.sql,
# against the server of tests/helpers/with-mariadb.sh, driven with the
# mariadb client. Leases and queue entries are inserted directly (the
# acquire procedures are tested on their own). Checks:
# - the files apply, and apply again unchanged (CREATE OR REPLACE);
# - a renewal in the same second as the grant on a 1 s TTL, repeated for 3 s,
#   is never reported lost;
# - renew and release with a wrong owner proof are refused, recorded, and
#   leave the lease as it was; another owner's lease, another token, an
#   expired lease are told apart;
# - release writes its history event (with who asked, from outside the
#   holder's process tree), re-entry decrements, a success is kept;
# - force release records by whom and the login, and leaves waiters queued;
# - status lists holders and waiters in queue order, filtered;
# - history filters by namespace, resource tree and event, newest first,
#   at most the limit;
# - gc removes only dead rows, at most a batch, nothing on a dry run;
# - leave_queue, record_missed_run, expect_runs/expected_rows;
# - the procedure files applied again keep roles.sql's grants; a forced
#   release records the operator's login and the leftovers the app noted.
# Elsewhere, on both servers where it applies: what each role may not do
# (tests/integration/test_least_privilege.cpp); one CALL is one transaction
# and the session's settings as they were, history past
# group_concat_max_len (MariaDB only: test_routine_transactions.cpp).
# CLOCK_TEST_MARIADB_SQL_DIR and the skip rule: sql_test_lib.sh.
set -uo pipefail

db=procs_$$
# shellcheck source=tests/mariadb/sql_test_lib.sh
source "$(dirname "$0")/sql_test_lib.sh"

o1=11111111-1111-4111-8111-111111111111
o2=22222222-2222-4222-8222-222222222222
o3=33333333-3333-4333-8333-333333333333
o4=44444444-4444-4444-8444-444444444444

# lease NS RESOURCE OWNER TOKEN TTL_MS SECRET [EXPIRES_IN_MS [MODE [DEPTH]]]
# A lease expiring EXPIRES_IN_MS from now (default TTL_MS; negative:
# expired), granted TTL_MS before that (or now, if later), held by host h1,
# pid 100, with the 'acquired' history record the acquire writes.
lease() {
  local expires=${7:-$5} mode=${8:-exclusive} depth=${9:-1} hash="NULL"
  [[ -n $6 ]] && hash="SHA2('$6', 256)"
  q "INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                         acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid, user_name,
                         command, secret_hash)
     VALUES ('$1', '$2', '$3', '$mode', 0, $4, $depth, 'req-$4',
             clock_now_us() - GREATEST(0, $5 - $expires) * 1000,
             clock_now_us() - GREATEST(0, $5 - $expires) * 1000,
             IF($5 = 0, NULL, clock_now_us() + $expires * 1000), $5 * 1000, 'h1', '10.0.0.1',
             100, 'alice', 'make deploy', $hash);
     INSERT INTO history (at_us, event, namespace, resource, owner, mode, token, secret_hash)
     VALUES (clock_now_us(), 'acquired', '$1', '$2', '$3', '$mode', $4, $hash)"
}
# waiter NS RESOURCE OWNER SECRET [LIFE_MS]: a queue entry at the back.
waiter() {
  local hash="NULL"
  [[ -n $4 ]] && hash="SHA2('$4', 256)"
  q "INSERT INTO waiters (namespace, resource, owner, mode, slots, request_id, enqueued_us,
                          expires_us, host, ip, pid, user_name, command, secret_hash)
     VALUES ('$1', '$2', '$3', 'exclusive', 0, 'wreq-$3', clock_now_us(),
             clock_now_us() + ${5:-30000} * 1000, 'h2', '10.0.0.2', 200, 'bob', 'backup', $hash)"
}
lease_row() { q "SELECT CONCAT_WS(',', token, depth, expires_us) FROM leases WHERE namespace = '$1' AND resource = '$2' AND owner = '$3'"; }

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
  "clock_end_dead_lease,clock_expect_runs,clock_expected_rows,clock_force_release,clock_gc_batch,clock_history,clock_history2,clock_holder_trace,clock_leave_queue,clock_note_holder,clock_note_leftovers,clock_record_missed_run,clock_release,clock_release2,clock_renew,clock_run_results,clock_status_rows,clock_try_acquire"
definer_ones=$(q "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = '$db'
                  AND routine_name LIKE 'clock\_rec\_%' AND security_type = 'DEFINER'")
check "no clock_rec_ helper runs with the definer's rights" same "$definer_ones" 0

# ------------------------------------------- same-second renewals, 2 s TTL
# (2 s, not 1: under a loaded CI machine one client round trip can take
# more than a second, and the lease would expire between renewals)
lease ns r.same "$o1" 1 2000 s1
first=$(q "CALL clock_renew('ns', '[\"r.same\"]', '$o1', '[1]', 2000, 's1', 'u@h1 pid 100')")
check "a renewal in the grant's second is a renewal ($first)" same "$(js "$first" 'd["outcome"]')" renewed
check "and says when the lease now expires (now + 2 s)" \
  same "$(js "$first" 'd["expires_at"] - d["now"]')" 2000000
renewals=0
lost=0
# 3 s and at least 4 renewals (a loaded machine managed 3 in 3 s), at most 30 s.
end=$((SECONDS + 3))
while ((SECONDS < end || (renewals < 4 && SECONDS < end + 27))); do
  reply=$(q "CALL clock_renew('ns', '[\"r.same\"]', '$o1', '[1]', 2000, 's1', 'u@h1 pid 100')")
  renewals=$((renewals + 1))
  [[ $(js "$reply" 'd["outcome"]') == renewed ]] || { lost=$((lost + 1)); echo "     $reply" >&2; }
done
check "$renewals renewals back to back for 3 s or more on a 2 s TTL: none reported lost" same "$lost" 0
check "and many of them within one second of another (>= 4 done)" test "$renewals" -ge 4
check "the lease is live, its token unchanged" \
  same "$(q "SELECT token, expires_us > clock_now_us() FROM leases WHERE resource = 'r.same'")" $'1\t1'
check "a live renewal writes no history" \
  same "$(q "SELECT COUNT(*) FROM history WHERE resource = 'r.same' AND event <> 'acquired'")" 0

# ---------------------------------------------------- the owner's proof
lease ns r.proof "$o1" 2 60000 s1
before=$(lease_row ns r.proof "$o1")
reply=$(q "CALL clock_renew('ns', '[\"r.proof\"]', '$o1', '[2]', 60000, 'wrong', 'mallory@h9 pid 9')")
check "renew with a wrong secret is refused ($reply)" \
  same "$(js "$reply" '(d["outcome"], d["lost"])')" "('not_owner', [{'resource': 'r.proof', 'reason': 'not_proven'}])"
check "and leaves the lease as it was" same "$(lease_row ns r.proof "$o1")" "$before"
check "and is recorded 'refused' with who asked" \
  same "$(q "SELECT CONCAT_WS('|', event, forced_by, token) FROM history WHERE resource = 'r.proof' ORDER BY id DESC LIMIT 1")" \
  "refused|mallory@h9 pid 9|2"
reply=$(q "CALL clock_renew('ns', '[\"r.proof\"]', '$o1', '[2]', 60000, '', 'mallory@h9 pid 9')")
check "renew with no secret at all is refused too" same "$(js "$reply" 'd["lost"][0]["reason"]')" not_proven
reply=$(q "CALL clock_release('ns', '[\"r.proof\"]', '$o1', 'wrong', 'mallory@h9 pid 9', 'h9', '[9]', TRUE)")
check "release with a wrong secret is refused ($reply)" \
  same "$(js "$reply" '(d["released"], d["refused"])')" "([], [{'resource': 'r.proof', 'reason': 'not_proven'}])"
check "and leaves the lease as it was" same "$(lease_row ns r.proof "$o1")" "$before"
check "and keeps no success for it" same "$(count "last_success WHERE resource = 'r.proof'")" 0
reply=$(q "CALL clock_release('ns', '[\"r.proof\"]', '$o2', '', 'eve@h8 pid 8', 'h8', '[8]', FALSE)")
check "another owner's release finds it held by someone else" \
  same "$(js "$reply" 'd["refused"][0]["reason"]')" other_owner
check "and it is still there" same "$(lease_row ns r.proof "$o1")" "$before"
reply=$(q "CALL clock_renew('ns', '[\"r.other\"]', '$o1', '[]', 60000, 'wrong', 'x')")
check "the proof belongs to the id: a wrong secret is refused on a resource it does not hold" \
  same "$(js "$reply" 'd["lost"][0]["reason"]')" not_proven
reply=$(q "CALL clock_renew('ns', '[\"r.proof\"]', '$o1', '[3]', 60000, 's1', 'x')")
check "renew under another token reports 'token'" same "$(js "$reply" 'd["lost"][0]["reason"]')" token
check "and leaves the lease as it was" same "$(lease_row ns r.proof "$o1")" "$before"
reply=$(q "CALL clock_renew('ns', '[\"r.proof\", \"r.none\"]', '$o1', '[]', 60000, 's1', 'x')")
check "renew of one held and one never-held resource reports the second gone, all or none" \
  same "$(js "$reply" '(d["outcome"], d["lost"])')" "('not_owner', [{'resource': 'r.none', 'reason': 'gone'}])"
check "so the held one was not renewed either" same "$(lease_row ns r.proof "$o1")" "$before"
check "and nothing is recorded lost for a resource the owner never held" \
  same "$(count "history WHERE resource = 'r.none'")" 0
lease ns r.late "$o3" 4 60000 s3 -5
reply=$(q "CALL clock_renew('ns', '[\"r.late\"]', '$o3', '[4]', 60000, 's3', 'x')")
check "renew of an expired lease reports it expired" same "$(js "$reply" 'd["lost"][0]["reason"]')" expired
check "removes it" same "$(count "leases WHERE resource = 'r.late'")" 0
check "records it lost and counts the loss" \
  same "$(q "SELECT CONCAT(h.event, ',', c.count) FROM history h JOIN run_counts c ON c.resource = h.resource AND c.outcome = 'lost' WHERE h.resource = 'r.late' AND h.event = 'lost'")" "lost,1"
reply=$(q "CALL clock_renew('ns', '[\"r.late\"]', '$o3', '[4]', 60000, 's3', 'x')")
check "renewing it again: gone, recorded lost once more (it held it, its secret proves it)" \
  same "$(js "$reply" 'd["lost"][0]["reason"]'),$(count "history WHERE resource = 'r.late' AND event = 'lost'")" "gone,2"

# ------------------------------------------------------------- release
lease ns r.rel "$o1" 5 60000 s1 60000 exclusive 2
reply=$(q "CALL clock_release('ns', '[\"r.rel\"]', '$o1', 's1', 'alice@h1 pid 100', 'h1', '[100, 1]', FALSE)")
check "a release of a re-entered lease leaves depth 1" \
  same "$(js "$reply" 'd["released"]')" "[{'resource': 'r.rel', 'remaining_depth': 1}]"
check "and writes no history" same "$(count "history WHERE resource = 'r.rel' AND event <> 'acquired'")" 0
reply=$(q "CALL clock_release('ns', '[\"r.rel\"]', '$o1', 's1', 'alice@h1 pid 100', 'h1', '[100, 1]', TRUE)")
check "the next release removes it" same "$(js "$reply" 'd["released"][0]["remaining_depth"]'),$(count "leases WHERE resource = 'r.rel'")" "0,0"
check "and writes 'released' with the token, no 'by' (from the holder's own tree), the login" \
  same "$(q "SELECT CONCAT_WS('|', event, token, forced_by, host, pid, db_user, held_for_us >= 0) FROM history WHERE resource = 'r.rel' ORDER BY id DESC LIMIT 1")" \
  "released|5||h1|100|root@localhost|1"
check "a released run is not counted as a run outcome" same "$(count "run_counts WHERE resource = 'r.rel' AND outcome = 'released'")" 0
check "a successful run's release keeps it as the latest success, and in successes" \
  same "$(q "SELECT CONCAT(l.token, ',', COUNT(s.started_us)) FROM last_success l JOIN successes s ON s.resource = l.resource AND s.started_us = l.started_us WHERE l.resource = 'r.rel' GROUP BY l.token")" "5,1"
lease ns r.rel2 "$o1" 6 60000 s1
q "CALL clock_release('ns', '[\"r.rel2\"]', '$o1', 's1', 'alice@h7 pid 70', 'h7', '[70]', FALSE)" >/dev/null
check "a release from another host records who asked" \
  same "$(q "SELECT forced_by FROM history WHERE resource = 'r.rel2' AND event = 'released'")" "alice@h7 pid 70"
lease ns r.rel3 "$o1" 7 60000 s1 -1
reply=$(q "CALL clock_release('ns', '[\"r.rel3\"]', '$o1', 's1', 'x', 'h1', '[100]', TRUE)")
check "releasing an expired lease: refused as expired, removed, recorded 'expired' at its expiry" \
  same "$(js "$reply" 'd["refused"][0]["reason"]'),$(count "leases WHERE resource = 'r.rel3'"),$(q "SELECT held_for_us = 60000000 AND at_us < clock_now_us() FROM history WHERE resource = 'r.rel3' AND event = 'expired'")" \
  "expired,0,1"
reply=$(q "CALL clock_release('ns', '[\"r.never\"]', '$o1', 's1', 'x', 'h1', '[100]', FALSE)")
check "releasing what nobody holds: not_held" same "$(js "$reply" 'd["refused"][0]["reason"]')" not_held

# ------------------------------------------------------- force release
lease ns r.force "$o1" 8 60000 s1 60000 shared
lease ns r.force "$o2" 9 60000 s2 60000 shared
lease ns r.force "$o3" 10 60000 s3 -1 shared
waiter ns r.force "$o4" s4
reply=$(q "CALL clock_force_release('ns', '[\"r.force\", \"r.idle\"]', 'ops@admin pid 5')")
check "force release removes every holder ($reply)" \
  same "$(js "$reply" 'd["released"]')" "[{'resource': 'r.force', 'holders_removed': 3}, {'resource': 'r.idle', 'holders_removed': 0}]"
check "no lease is left" same "$(count "leases WHERE resource = 'r.force'")" 0
check "live holders are recorded 'forced' by whom and by which login, the expired one 'expired'" \
  same "$(q "SELECT GROUP_CONCAT(CONCAT_WS('|', token, event, forced_by, db_user) ORDER BY token SEPARATOR ';') FROM history WHERE resource = 'r.force' AND event <> 'acquired'")" \
  "8|forced|ops@admin pid 5|root@localhost;9|forced|ops@admin pid 5|root@localhost;10|expired||root@localhost"
check "forced runs are counted" same "$(q "SELECT count FROM run_counts WHERE resource = 'r.force' AND outcome = 'forced'")" 2
check "the waiter stays queued" same "$(count "waiters WHERE resource = 'r.force'")" 1

# -------------------------------------------------------------- status
lease st q.a "$o1" 20 60000 s1
lease st q.a.b "$o2" 21 60000 s2 60000 shared
lease st qa "$o3" 22 60000 s3
lease st q.dead "$o4" 23 60000 s4 -1
lease other q.a "$o1" 24 60000 s1
waiter st q.a "$o3" s3
waiter st q.a "$o4" s4
waiter st q.a "$o2" s2
waiter st q.a "$o1" s1 -1
status() { q "CALL clock_status_rows($1, $2, $3)"; }
rows=$(status "'st'" "'q'" FALSE)
check "status: 'now' first, with the server's clock" \
  bash -c "head -1 <<<'$rows' | awk -F'\t' '\$1 == \"now\" && \$9 > 1700000000000000 { ok = 1 } END { exit !ok }'"
check "status: holders of q and its descendants only, live only" \
  same "$(awk -F'\t' '$1 == "holder" { print $3 "," $4 "," $7 "," $12 }' <<<"$rows" | paste -sd' ')" \
  "q.a,$o1,20,0 q.a.b,$o2,21,0"
check "status: live waiters in queue order" \
  same "$(awk -F'\t' '$1 == "waiter" { print $4 }' <<<"$rows" | paste -sd' ')" "$o3 $o4 $o2"
check "status: a waiter's token column is its position, increasing" \
  bash -c "awk -F'\t' '\$1 == \"waiter\" { if (\$7 <= last) bad = 1; last = \$7 } END { exit bad }' <<<'$rows'"
check "status: 20 columns, instants in microseconds (acquired <= renewed < expires)" \
  bash -c "awk -F'\t' '\$1 == \"holder\" { if (NF != 20 || !(\$9 <= \$10 && \$10 < \$11)) bad = 1 } END { exit bad }' <<<'$rows'"
rows=$(status "'st'" "'q'" TRUE)
check "status with expired: the expired holder too, marked expired" \
  same "$(awk -F'\t' '$1 == "holder" && $3 == "q.dead" { print $12 }' <<<"$rows")" 1
rows=$(status NULL NULL FALSE)
check "status of all namespaces: both q.a holders" \
  same "$(awk -F'\t' '$1 == "holder" && $3 == "q.a" { print $2 }' <<<"$rows" | sort | paste -sd' ')" "other st"
check "status lists run counts ('runs', outcome, count)" \
  same "$(awk -F'\t' '$1 == "runs" && $3 == "r.force" { print $5 "," $7 }' <<<"$rows")" "forced,2"

# ------------------------------------------------------------- history
hist() { q "CALL clock_history($1, $2, $3, $4)"; }
all=$(hist NULL NULL 1000 NULL)
check "history: newest first" same "$(js "$all" 'all(a["id"] > b["id"] for a, b in zip(d, d[1:]))')" True
check "history: every event of the table" same "$(js "$all" 'len(d)')" "$(count history)"
page=$(hist NULL NULL 2 NULL)
check "history: at most the limit, the newest" \
  same "$(js "$page" '[e["id"] for e in d]')" "$(js "$all" '[e["id"] for e in d[:2]]')"
check "history: limit 0 is empty" same "$(hist NULL NULL 0 NULL)" "[]"
forced=$(hist "'ns'" "'r'" 100 "'forced'")
check "history by event and resource tree: the two forced ones, with who forced them" \
  same "$(js "$forced" '[(e["event"], e["token"], e["by"], e["resource"]) for e in d]')" \
  "[('forced', 9, 'ops@admin pid 5', 'r.force'), ('forced', 8, 'ops@admin pid 5', 'r.force')]"
check "history by resource: q.a and q.a.b, not qa" \
  same "$(js "$(hist "'st'" "'q.a'" 100 NULL)" 'sorted(set(e["resource"] for e in d))')" "['q.a', 'q.a.b']"
check "history by namespace" same "$(js "$(hist "'other'" NULL 100 NULL)" '[e["namespace"] for e in d]')" "['other']"
released=$(hist "'ns'" "'r.rel'" 1 "'released'")
check "history JSON: held_for_ms, user, command, no in_the_way" \
  same "$(js "$released" '(type(d[0]["held_for_ms"]).__name__, d[0]["user"], d[0]["command"], d[0]["in_the_way"])')" \
  "('int', 'alice', 'make deploy', None)"

# ------------------------------------------------- leave_queue, missed runs
waiter lq l.a "$o1" s1
waiter lq l.b "$o1" s1
check "leave_queue with a wrong secret removes nothing" \
  same "$(q "CALL clock_leave_queue('lq', '[\"l.a\", \"l.b\"]', '$o1', NULL, 'wrong')"),$(count "waiters WHERE namespace = 'lq'")" "0,2"
check "and is recorded 'refused'" same "$(count "history WHERE namespace = 'lq' AND event = 'refused'")" 2
check "leave_queue of another request id removes nothing" \
  same "$(q "CALL clock_leave_queue('lq', '[\"l.a\"]', '$o1', 'other-request', 's1')")" 0
check "leave_queue removes the caller's entries" \
  same "$(q "CALL clock_leave_queue('lq', '[\"l.a\", \"l.b\"]', '$o1', 'wreq-$o1', 's1')"),$(count "waiters WHERE namespace = 'lq'")" "2,0"
reply=$(q "CALL clock_record_missed_run('timed_out', 'mr', '[\"m.a\", \"m.b\"]', '$o2', 'exclusive', 'h2', '10.0.0.2', 200, 'bob', 'backup', '{\"owner\": \"$o1\", \"host\": \"h1\", \"token\": 20}', 's2')")
check "record_missed_run: one record per resource" same "$reply" 2
check "with who was in the way, counted" \
  same "$(q "SELECT GROUP_CONCAT(CONCAT_WS('|', h.resource, h.in_the_way_owner, h.in_the_way_token, c.count) ORDER BY h.resource) FROM history h JOIN run_counts c ON c.namespace = h.namespace AND c.resource = h.resource AND c.outcome = 'timed_out' WHERE h.namespace = 'mr'")" \
  "m.a|$o1|20|1,m.b|$o1|20|1"
check "history shows it in_the_way" \
  same "$(js "$(hist "'mr'" "'m.a'" 1 NULL)" 'd[0]["in_the_way"]')" "{'owner': '$o1', 'host': 'h1', 'token': 20}"
check "record_missed_run refuses other events" \
  fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_record_missed_run('released', 'mr', '[\"m.a\"]', '$o2', 'exclusive', 'h', 'i', 1, 'u', 'c', NULL, 's2')"
waiter mr m.c "$o2" s2
check "record_missed_run with a wrong secret writes 0 records (a 'refused' one)" \
  same "$(q "CALL clock_record_missed_run('killed', 'mr', '[\"m.c\"]', '$o2', 'exclusive', 'h', 'i', 1, 'u', 'c', NULL, 'wrong')"),$(count "history WHERE namespace = 'mr' AND event = 'killed'"),$(count "history WHERE namespace = 'mr' AND event = 'refused'")" "0,0,1"

# ------------------------------------------------------ expected runs
lease ex e.a "$o3" 90 600000 s3
lease ex e.b "$o3" 91 600000 s3
check "expect_runs by the holder with its secret declares" \
  same "$(q "CALL clock_expect_runs('ex', '[\"e.a\", \"e.b\"]', 60000, '$o3', 's3', 'me')")" 1
declared=$(q "SELECT declared_us FROM expected_runs WHERE resource = 'e.a'")
q "CALL clock_expect_runs('ex', '[\"e.a\"]', 60000, '$o3', 's3', 'me')" >/dev/null
check "expect_runs again keeps declared" same "$(q "SELECT declared_us FROM expected_runs WHERE resource = 'e.a'")" "$declared"
q "CALL clock_expect_runs('ex', '[\"e.a\"]', 120000, '$o3', 's3', 'me')" >/dev/null
check "a new period replaces the old, keeping declared" \
  same "$(q "SELECT CONCAT(every_ms, ',', declared_us) FROM expected_runs WHERE resource = 'e.a'")" "120000,$declared"
check "expect_runs with the holder's id and a wrong secret: 0, recorded as refused, period kept" \
  same "$(q "CALL clock_expect_runs('ex', '[\"e.a\"]', 315360000000, '$o3', 'guess', 'intruder')"),$(count "history WHERE namespace = 'ex' AND event = 'refused' AND forced_by = 'intruder'"),$(q "SELECT every_ms FROM expected_runs WHERE resource = 'e.a'")" "0,1,120000"
check "expect_runs by an owner that holds no lease there: 0, nothing declared" \
  same "$(q "CALL clock_expect_runs('ex', '[\"e.c\"]', 60000, '$o4', '', 'stranger')"),$(count "expected_runs WHERE resource = 'e.c'")" "0,0"
check "expect_runs needs a lease on every resource named" \
  same "$(q "CALL clock_expect_runs('ex', '[\"e.a\", \"e.c\"]', 1000, '$o3', 's3', 'me')"),$(q "SELECT every_ms FROM expected_runs WHERE resource = 'e.a'")" "0,120000"
check "expect_runs refuses a period of 0" fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_expect_runs('ex', '[\"e.a\"]', 0, '$o3', 's3', 'me')"
q "INSERT INTO successes VALUES ('ex', 'e.a', clock_now_us() - 10000000000), ('ex', 'e.a', clock_now_us() - 20000000000), ('ex', 'e.a', clock_now_us() - 1000000)"
rows=$(q "CALL clock_expected_rows('ex', NULL, NULL)")
check "expected_rows: now, both expectations, the success within the period and the latest before" \
  same "$(awk -F'\t' '{ print $1 "," $3 }' <<<"$rows" | sort | paste -sd' ')" \
  "expected,e.a expected,e.b now,NULL success,e.a success,e.a"

# ------------------------------------------------------------------ gc
q "DELETE FROM leases; DELETE FROM waiters"
lease gc g.1 "$o1" 30 60000 s1 -3
lease gc g.2 "$o1" 31 60000 s1 -2
lease gc g.3 "$o1" 32 60000 s1 -1
lease gc g.live "$o2" 33 60000 s2
waiter gc g.live "$o3" s3 -1
waiter gc g.live "$o4" s4
q "INSERT INTO history (at_us, event, namespace, resource, owner) VALUES (clock_now_us() - 7200000000, 'released', 'gc', 'g.old', '$o1')"
total=$(count history)
reply=$(q "CALL clock_gc_batch(2, NULL, TRUE, 0)")
check "gc dry run counts everything ($reply), removes nothing" \
  same "$(js "$reply" '(d["expired_leases"], d["dead_waiters"], d["history_rows"])'),$(count leases),$(count waiters)" "(3, 1, 0),4,2"
reply=$(q "CALL clock_gc_batch(2, NULL, FALSE, 0)")
check "gc removes at most a batch of expired leases, oldest first ($reply)" \
  same "$(js "$reply" '(d["expired_leases"], d["dead_waiters"], d["history_rows"])'),$(q "SELECT GROUP_CONCAT(resource ORDER BY resource) FROM leases")" "(2, 1, 0),g.3,g.live"
check "and records each 'expired'" same "$(count "history WHERE namespace = 'gc' AND event = 'expired'")" 2
check "the live waiter stays" same "$(q "SELECT owner FROM waiters")" "$o4"
check "no history pruned without a cut-off" same "$(count history)" "$((total + 2))"
reply=$(q "CALL clock_gc_batch(100, 3600000, FALSE, 0)")
check "with a cut-off of 1 h: the last expired lease, the old history row only" \
  same "$(js "$reply" '(d["expired_leases"], d["history_rows"])'),$(count "history WHERE resource = 'g.old'"),$(count "leases WHERE resource = 'g.live'")" "(1, 1),0,1"

# ------------------------------------------------- concurrent calls
# Slot rows are written in slot order whatever the order of the resources,
# so calls naming the same hierarchies in opposite orders never deadlock
# (1213) or time out (1205); each loop's renewals of its own leases stay
# renewals while the others force-release the shared resources.
for i in 1 2 3 4; do lease cc "c$i.own" "$o1" $((60 + i)) 60000 s1; done
loop() {
  local i=$1 order=$2 n
  for n in $(seq 25); do
    q "CALL clock_force_release('cc', '$order', 'loop $i'); CALL clock_renew('cc', '[\"c$i.own\"]', '$o1', '[]', 60000, 's1', 'x')" || echo "loop $i call $n failed"
  done >"$work_dir/loop$i" 2>&1
}
work_dir=$(mktemp -d)
loop 1 '["c1.x", "c2.x", "c3.x", "c4.x"]' &
loop 2 '["c4.x", "c3.x", "c2.x", "c1.x"]' &
loop 3 '["c2.x", "c4.x", "c1.x", "c3.x"]' &
loop 4 '["c3.x", "c1.x", "c4.x", "c2.x"]' &
wait
check "4 x 25 concurrent force releases in opposite orders, with renewals: no error" \
  same "$(cat "$work_dir"/loop* | grep -c -E 'ERROR|failed')" 0
check "every renewal a renewal" same "$(cat "$work_dir"/loop* | grep -c '"outcome": "renewed"')" 100
cat "$work_dir"/loop* | grep -E "ERROR|failed" | sort | uniq -c | head -5 >&2
rm -rf "$work_dir"

# ------------------------------------------------------------ bad input
error=$(q "CALL clock_renew('ns', '[\"a..b\"]', '$o1', '[]', 5000, 's1', 'x')" 2>&1 >/dev/null)
check "an invalid resource name is refused, naming it" grep -q "invalid resource name 'a..b'" <<<"$error"
check "a resource named twice is refused" \
  fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_release('ns', '[\"a\", \"a\"]', '$o1', 's1', 'x', 'h', '[]', FALSE)"
check "resources that are not a JSON array are refused" \
  fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_force_release('ns', 'a', 'x')"
check "an owner that is not a UUID is refused" \
  fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_release('ns', '[\"a\"]', 'not-a-uuid', 's1', 'x', 'h', '[]', FALSE)"
check "a namespace over 255 bytes is refused" \
  fails_with "ERROR 1644 \\(22023\\)" q "CALL clock_force_release(REPEAT('n', 256), '[\"a\"]', 'x')"

# ---------------------------------------------------------------- roles
# What each role may and may not do, on both servers: the least privilege
# suite (tests/integration/test_least_privilege.cpp). Here: applying the
# procedure files again (CREATE OR REPLACE) keeps roles.sql's grants, and a
# forced release records the operator's login and what the app noted.
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
