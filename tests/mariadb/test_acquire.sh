#!/usr/bin/env bash
# The acquire side of the lock model on MariaDB (sql/mariadb/procedures/
# 10_util.sql, 20_acquire.sql … 23_deadlock.sql): real CALLs of
# clock_try_acquire through the mariadb client, against the server of
# tests/helpers/with-mariadb.sh. Checks, each as the man page states the rule:
# - exclusive, shared and slots; an upgrade and a slots mismatch refused;
# - the hierarchy (foo conflicts with foo.bar and back; foo and foobar do
#   not), namespaces apart;
# - FIFO: a queued waiter is granted before a later one, and nothing jumps
#   an earlier conflicting waiter;
# - a deadlock cycle is reported (with its links) and its asker dequeued;
# - re-entry by the same owner (depth, same token) and a retried request id;
# - a wrong secret refused and recorded with who asked;
# - fencing tokens strictly increase across all grants;
# - -n records 'skipped' with who was in the way; --once-per answers 'done';
#   expired related leases are removed and recorded;
# - one transaction per CALL: a failure part-way leaves nothing;
# - concurrency: client processes looping acquire/release on overlapping
#   hierarchies never hold conflicting leases at once, and get no 1213/1205.
# CLOCK_TEST_MARIADB_SQL_DIR and the skip rule: sql_test_lib.sh.
set -uo pipefail

db=acquire_$$
# shellcheck source=tests/mariadb/sql_test_lib.sh
source "$(dirname "$0")/sql_test_lib.sh"

o1=11111111-1111-4111-8111-111111111111
o2=22222222-2222-4222-8222-222222222222
o3=33333333-3333-4333-8333-333333333333
o4=44444444-4444-4444-8444-444444444444
secret_of() { echo "s-${1:0:1}"; }

# acq NS RESOURCES OWNER [MODE [SLOTS [QUEUE [REQUEST [SECRET [ONCE_PER_MS [TTL_MS]]]]]]]
# One CALL clock_try_acquire; prints its JSON. RESOURCES: a JSON array.
# REQUEST: a fresh id unless given (acq runs in a subshell: no counter).
acq() {
  local ns=$1 res=$2 owner=$3 mode=${4:-exclusive} slots=${5:-0} queue=${6:-TRUE}
  local req=${7:-$(cat /proc/sys/kernel/random/uuid)} secret=${8-$(secret_of "$owner")} once=${9:-NULL} ttl=${10:-60000}
  q "CALL clock_try_acquire('$ns', '$res', '$mode', $slots, '$owner', $ttl, '$req', $queue,
       'host-${owner:0:1}', '10.0.0.1', 100, 'alice', 'make', NULL, TRUE, '$secret', 'asker',
       $once, 0)"
}
# rel NS RESOURCES OWNER [SUCCEEDED]
rel() { q "CALL clock_release('$1', '$2', '$3', '$(secret_of "$3")', '', 'host', '[100]', ${4:-FALSE})" >/dev/null; }
outcome() { js "$1" 'd["outcome"]'; }

as_root -e "CREATE DATABASE \`$db\`" || { echo "cannot create database $db" >&2; exit 1; }
trap 'as_root -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1' EXIT

for f in "$sql_dir"/migrations/*.sql; do
  check "migration $(basename "$f") applies" as_root "$db" -e "source $f"
done
for f in "$sql_dir"/procedures/*.sql; do
  check "$(basename "$f") applies" apply "$f"
done
for f in "$sql_dir"/procedures/*.sql; do
  check "$(basename "$f") applies again" apply "$f"
done

# ------------------------------------------------------------ exclusive
r=$(acq n '["a"]' $o1)
check "a free resource is granted" same "$(js "$r" 'd["outcome"], d["grants"][0]["resource"], d["grants"][0]["depth"]')" "('granted', 'a', 1)"
t1=$(js "$r" 'd["grants"][0]["token"]')
check "the grant is recorded 'acquired' with its token and secret hash, and counted" \
  same "$(q "SELECT CONCAT_WS(',', token, secret_hash = SHA2('s-1', 256), db_user <> '') FROM history WHERE event = 'acquired' AND resource = 'a'"),$(q "SELECT count FROM run_counts WHERE resource = 'a' AND outcome = 'acquired'")" \
  "$t1,1,1,1"
r=$(acq n '["a"]' $o2)
check "another owner is blocked by it, and told by whom, running what" \
  same "$(js "$r" 'd["outcome"], [l["owner"] for l in d["leases"]], d["leases"][0]["token"], d["leases"][0]["command"], d["leases"][0]["host"]')" "('blocked', ['$o1'], $t1, 'make', 'host-1')"
check "the blocked request is queued" same "$(count "waiters WHERE owner = '$o2' AND resource = 'a'")" 1
q "DELETE FROM waiters"

# ------------------------------------------------------------ hierarchy, namespaces
check "foo.bar is blocked by a lock on foo (a.b by a)" same "$(outcome "$(acq n '["a.b"]' $o2 exclusive 0 FALSE)")" blocked
check "a shared a.b is blocked by an exclusive a too" same "$(outcome "$(acq n '["a.b"]' $o2 shared 0 FALSE)")" blocked
check "ab is not related to a" same "$(outcome "$(acq n '["ab"]' $o2)")" granted
check "a in another namespace is free" same "$(outcome "$(acq other '["a"]' $o2)")" granted
check "a holder of x.y" same "$(outcome "$(acq n '["x.y"]' $o3)")" granted
r=$(acq n '["x"]' $o4 exclusive 0 FALSE)
check "blocks x (foo by foo.bar)" same "$(js "$r" 'd["outcome"], d["leases"][0]["resource"]')" "('blocked', 'x.y')"
check "but not its sibling x.z" same "$(outcome "$(acq n '["x.z"]' $o4)")" granted

# ------------------------------------------------------------ shared, upgrade, slots
check "shared s by o1" same "$(outcome "$(acq n '["s"]' $o1 shared)")" granted
check "shared s by o2 beside it" same "$(outcome "$(acq n '["s"]' $o2 shared)")" granted
check "exclusive s blocked by the shared ones" same "$(js "$(acq n '["s"]' $o3 exclusive 0 FALSE)" 'd["outcome"], len(d["leases"])')" "('blocked', 2)"
r=$(acq n '["s"]' $o1 exclusive)
check "an owner holding s shared cannot take it exclusive (upgrade)" same "$(js "$r" 'd["outcome"], d["resource"]')" "('upgrade', 's')"
check "slot 1 of 2 on sem" same "$(outcome "$(acq n '["sem"]' $o1 exclusive 2)")" granted
check "slot 2 of 2 on sem" same "$(outcome "$(acq n '["sem"]' $o2 exclusive 2)")" granted
check "a third is blocked by both holders" same "$(js "$(acq n '["sem"]' $o3 exclusive 2 FALSE)" 'd["outcome"], len(d["leases"])')" "('blocked', 2)"
r=$(acq n '["sem"]' $o4 exclusive 3)
check "another slot count is refused (slots_mismatch)" same "$(js "$r" 'd["outcome"], d["slots"], d["other_slots"]')" "('slots_mismatch', 3, 2)"

# ------------------------------------------------------------ re-entry, retry, owner proof
r=$(acq n '["a"]' $o1 exclusive 0 TRUE re-1)
check "re-entry by the holder: depth 2, the same token" same "$(js "$r" 'd["outcome"], d["grants"][0]["depth"], d["grants"][0]["token"]')" "('granted', 2, $t1)"
r=$(acq n '["a"]' $o1 exclusive 0 TRUE re-1)
check "a retried request id returns its grant (depth stays 2)" same "$(js "$r" 'd["outcome"], d["grants"][0]["depth"]')" "('granted', 2)"
r=$(acq n '["a"]' $o1 exclusive 0 TRUE re-2 wrong-secret)
check "a wrong secret is refused (not_proven)" same "$(js "$r" 'd["outcome"], d["resource"]')" "('not_proven', 'a')"
check "and recorded 'refused' with who asked, the lease unchanged" \
  same "$(q "SELECT CONCAT_WS(',', event, forced_by, token) FROM history ORDER BY id DESC LIMIT 1"),$(q "SELECT depth FROM leases WHERE resource = 'a' AND owner = '$o1'")" \
  "refused,asker,$t1,2"
r=$(acq n '["fresh"]' $o1 exclusive 0 TRUE re-3 "")
check "no secret at all is refused too, for an id that keeps one" same "$(outcome "$r")" not_proven

# ------------------------------------------------------------ FIFO queue
acq q '["f"]' $o1 >/dev/null
check "o2 queues behind o1" same "$(outcome "$(acq q '["f"]' $o2 exclusive 0 TRUE w2)")" blocked
check "o3 queues behind o2" same "$(outcome "$(acq q '["f.sub"]' $o3 exclusive 0 TRUE w3)")" blocked
rel q '["f"]' $o1
r=$(acq q '["f.sub"]' $o3 exclusive 0 TRUE w3)
check "the waiter in the way is told with its command" same "$(js "$r" 'd["waiters"][0]["command"], d["waiters"][0]["host"]')" "('make', 'host-2')"
check "once f is free, o3 (later) is still blocked by o2's earlier entry" \
  same "$(js "$r" 'd["outcome"], d["leases"], [w["owner"] for w in d["waiters"]]')" "('blocked', [], ['$o2'])"
check "a later shared request does not jump o2 either" same "$(outcome "$(acq q '["f"]' $o4 shared 0 FALSE)")" blocked
check "o2 (first) is granted" same "$(outcome "$(acq q '["f"]' $o2 exclusive 0 TRUE w2)")" granted
check "its queue entry is gone" same "$(count "waiters WHERE owner = '$o2'")" 0
rel q '["f"]' $o2
check "then o3" same "$(outcome "$(acq q '["f.sub"]' $o3 exclusive 0 TRUE w3)")" granted
rel q '["f.sub"]' $o3

# ------------------------------------------------------------ deadlock
acq d '["d1"]' $o1 >/dev/null
acq d '["d2"]' $o2 >/dev/null
check "o1 (holding d1) waits for d2" same "$(outcome "$(acq d '["d2"]' $o1)")" blocked
r=$(acq d '["d1"]' $o2)
check "o2 (holding d2) asking for d1 closes a cycle: deadlock, o2 first" \
  same "$(js "$r" 'd["outcome"], [(l["owner"], l["resource"]) for l in d["cycle"]]')" \
  "('deadlock', [('$o2', 'd1'), ('$o1', 'd2')])"
check "the deadlocked request is not queued" same "$(count "waiters WHERE owner = '$o2'")" 0
acq d '["e1"]' $o3 >/dev/null
check "o3 waits for d1 held by o1 (no cycle)" same "$(outcome "$(acq d '["d1"]' $o3)")" blocked
q "DELETE FROM waiters WHERE namespace = 'd'"

# ------------------------------------------------------------ -n, --once-per, expiry
acq k '["busy"]' $o1 >/dev/null
r=$(acq k '["busy"]' $o2 exclusive 0 FALSE)
check "-n: blocked, recorded 'skipped' with who was in the way, counted" \
  same "$(outcome "$r"),$(q "SELECT CONCAT_WS(',', in_the_way_owner, in_the_way_host) FROM history WHERE event = 'skipped' AND resource = 'busy'"),$(q "SELECT count FROM run_counts WHERE resource = 'busy' AND outcome = 'skipped'")" \
  "blocked,$o1,host-1,1"
check "-n: not queued" same "$(count "waiters WHERE resource = 'busy'")" 0
acq k '["daily"]' $o1 >/dev/null
rel k '["daily"]' $o1 TRUE
r=$(acq k '["daily"]' $o2 exclusive 0 TRUE od-1 s-2 86400000)
check "--once-per after a success in the period: done, naming the run" \
  same "$(js "$r" 'd["outcome"], d["done_by"]["owner"], d["done_by"]["resource"]')" "('done', '$o1', 'daily')"
check "and recorded 'skipped' with the run's start" same "$(count "history WHERE event = 'skipped' AND resource = 'daily' AND done_by_started_us IS NOT NULL")" 1
check "--once-per with a period already over: granted" same "$(outcome "$(acq k '["daily"]' $o2 exclusive 0 TRUE od-2 s-2 0)")" granted
acq k '["brief"]' $o3 exclusive 0 TRUE "" s-3 NULL 1 >/dev/null
q "DO SLEEP(0.002)"  # the lease lapses 1 ms after its grant
check "a lapsed lease does not block" same "$(outcome "$(acq k '["brief.x"]' $o4)")" granted
check "it is removed and recorded 'expired'" same "$(count "leases WHERE resource = 'brief'"),$(count "history WHERE event = 'expired' AND resource = 'brief' AND held_for_us = 1000")" "0,1"

# ------------------------------------------------------------ tokens
tokens=$(q "SELECT GROUP_CONCAT(token ORDER BY id) FROM history WHERE event = 'acquired'")
check "fencing tokens strictly increase across all grants ($tokens)" \
  /usr/bin/python3 -c 'import sys; t = [int(x) for x in sys.argv[1].split(",")]; sys.exit(0 if all(a < b for a, b in zip(t, t[1:])) and len(t) > 10 else 1)' "$tokens"

# ------------------------------------------------------------ one transaction per CALL
as_root --delimiter='#@!' "$db" -e "CREATE TRIGGER test_boom BEFORE INSERT ON history FOR EACH ROW
  IF NEW.resource = 'boom' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF"
before="$(count leases),$(count history),$(q "SELECT last FROM tokens"),$(q "SELECT SUM(writes) FROM hierarchy_locks"),$(count run_counts)"
check "a grant that fails part-way reports the error" \
  fails_with "ERROR 1644 .*: boom" acq tx '["t1", "boom"]' $o4
check "and leaves nothing: no lease, history, token, slot write or count" \
  same "$(count leases),$(count history),$(q "SELECT last FROM tokens"),$(q "SELECT SUM(writes) FROM hierarchy_locks"),$(count run_counts)" "$before"
q "DROP TRIGGER test_boom"
check "bad arguments are refused with PostgreSQL's message" \
  fails_with "ERROR 1644 .*invalid resource name" acq n '["a..b"]' $o1
check "a bad mode too" fails_with "ERROR 1644 .*invalid mode" acq n '["a"]' $o1 both
check "the session's autocommit is as it was" same "$(q "CALL clock_try_acquire('n', '[\"z\"]', 'shared', 0, '$o4', 1000, 'ac', TRUE, '', '', 0, '', '', NULL, TRUE, 's-4', '', NULL, 0); SELECT @@autocommit" | tail -1)" 1

# ------------------------------------------------------------ concurrency
# Each client is one mariadb process sending a script of attempts (-n) and
# releases on the hierarchy c: c, c.x, c.y, c.x.z, in turns, exclusive.
# Afterwards, from history: no two related grants ever overlapped, i.e. each
# grant's instant is at or after the release of every related earlier one.
clients=4
rounds=60
pids=()
for k in $(seq 1 $clients); do
  owner=$(printf '%08d-0000-4000-8000-%012d' "$k" "$k")
  {
    for i in $(seq 1 $rounds); do
      case $(((i + k) % 4)) in 0) res=c ;; 1) res=c.x ;; 2) res=c.y ;; 3) res=c.x.z ;; esac
      echo "CALL clock_try_acquire('cc', '[\"$res\"]', 'exclusive', 0, '$owner', 60000, 'r$k-$i', FALSE, 'h$k', '', $k, '', '', NULL, FALSE, 'sec$k', '', NULL, 0);"
      echo "CALL clock_release('cc', '[\"$res\"]', '$owner', 'sec$k', '', 'h$k', '[$k]', FALSE);"
    done
  } >"/tmp/acquire_$$_$k.sql"
  as_root --force "$db" <"/tmp/acquire_$$_$k.sql" >"/tmp/acquire_$$_$k.out" 2>"/tmp/acquire_$$_$k.err" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
errors=$(cat /tmp/acquire_$$_*.err)
grants=$(cat /tmp/acquire_$$_*.out | grep -c '"granted"')
rm -f /tmp/acquire_$$_*
check "$clients clients x $rounds attempts: no error (1213, 1205), some grants ($grants)" \
  same "$errors,$((grants > 0))" ",1"
overlaps=$(q "SELECT COUNT(*) FROM history a JOIN history r ON r.namespace = a.namespace AND r.resource = a.resource AND r.token = a.token AND r.event = 'released'
              JOIN history b ON b.namespace = a.namespace AND b.event = 'acquired' AND b.token > a.token
                AND clock_acq_related(a.resource, b.resource) AND b.at_us < r.at_us
              WHERE a.namespace = 'cc' AND a.event = 'acquired'")
check "no two related grants overlapped" same "$overlaps" 0
check "every grant was released" same "$(count "history WHERE namespace = 'cc' AND event = 'acquired'")" "$(count "history WHERE namespace = 'cc' AND event = 'released'")"

# Queued waiters on two hierarchies at once: each worker (a test-only
# procedure in one mariadb process) asks for two resources of c and d in
# either order, attempts again until granted as clock does (its request id
# kept, so it keeps its place), checks while holding that no other owner
# holds a related lease, then releases. Requests in both orders must not
# deadlock the server (slot rows in slot order) nor the model (a waiter
# holds nothing). A request not granted within 5,000 attempts (10 s and
# more) fails the worker, so that a broken model ends the test, not ctest.
as_root --delimiter='#@!' "$db" -e "CREATE TABLE test_violations (k INT, i INT, n INT)#@!
CREATE PROCEDURE test_worker(IN k INT, IN rounds INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE v_owner CHAR(36) DEFAULT CONCAT(LPAD(k, 8, '0'), '-0000-4000-8000-', LPAD(k, 12, '0'));
  DECLARE v_res LONGTEXT;
  DECLARE v_got INT;
  DECLARE v_others INT;
  DECLARE v_tries INT;
  WHILE i < rounds DO
    SET v_res = ELT(1 + (i + k) % 4, '[\"c.x\", \"d\"]', '[\"d.y\", \"c\"]',
                    '[\"c\", \"d.y.z\"]', '[\"d\", \"c.x\"]');
    SET v_got = 0;
    SET v_tries = 0;
    WHILE v_got < 2 DO
      SET v_tries = v_tries + 1;
      IF v_tries > 5000 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'a queued request was never granted';
      END IF;
      CALL clock_try_acquire('qq', v_res, 'exclusive', 0, v_owner, 5000, CONCAT('w', k, '-', i),
                             TRUE, CONCAT('h', k), '', k, '', '', NULL, FALSE, CONCAT('s', k), '',
                             NULL, 0);
      SELECT COUNT(*) INTO v_got FROM leases WHERE namespace = 'qq' AND owner = v_owner;
      IF v_got < 2 THEN DO SLEEP(0.002); END IF;
    END WHILE;
    SELECT COUNT(*) INTO v_others FROM leases m JOIN leases o
      ON o.namespace = m.namespace AND o.owner <> m.owner AND clock_acq_related(o.resource, m.resource)
    WHERE m.namespace = 'qq' AND m.owner = v_owner;
    IF v_others > 0 THEN INSERT INTO test_violations VALUES (k, i, v_others); END IF;
    CALL clock_release('qq', v_res, v_owner, CONCAT('s', k), '', CONCAT('h', k), '[]', FALSE);
    SET i = i + 1;
  END WHILE;
END"
workers=4
wrounds=25
pids=()
for k in $(seq 1 $workers); do
  as_root "$db" -e "CALL test_worker($k, $wrounds)" >/dev/null 2>"/tmp/acquire_$$_w$k.err" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
errors=$(cat /tmp/acquire_$$_w*.err)
rm -f /tmp/acquire_$$_w*
check "$workers queued workers x $wrounds two-hierarchy requests in both orders: no error (1213, 1205) ($errors)" same "$errors" ""
check "all granted and released, in FIFO turns" same "$(count "history WHERE namespace = 'qq' AND event = 'acquired'"),$(count "leases WHERE namespace = 'qq'")" "$((workers * wrounds * 2)),0"
check "no worker ever saw another owner holding a related lease" same "$(count test_violations)" 0

echo "$checks checks, $failures failed"
((failures == 0))
