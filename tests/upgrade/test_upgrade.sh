#!/usr/bin/env bash
# test_upgrade.sh BACKEND (sqlite, postgres or mariadb)
#
# Two adjacent releases side by side against one database (docs/upgrades.md):
# the previous release's binary (CLOCK_OLD_BINARY, built from this
# repository's history by build_release.sh) and the one under test
# (CLOCK_BINARY), whichever arrives first:
# - first use by either, then the other, then each again, several times:
#   every run exits 0 and neither re-applies the other's routines (the
#   schema's stamps do not move after the second arrival);
# - on one resource, a holder of each release, and the other's -n refusal
#   (75), -w time-out (75, leaving the queue) and a waiter that gets the
#   lock when the holder releases; --once-per skips recorded across both;
#   a forced release by the other release's operator (the holder's renew
#   then exits 77); status and history read by each;
# - tokens increase across both, and history holds every grant of both.
# No exit 70 anywhere. Exits 77 (skipped) without the backend's server.
set -uo pipefail

backend=${1:?usage: test_upgrade.sh sqlite|postgres|mariadb}
new=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary under test}
old=${CLOCK_OLD_BINARY:?CLOCK_OLD_BINARY names the previous release binary}
work=$(mktemp -d /tmp/clock-upgrade.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

skip() {
  [[ ${CI:-} == true ]] && { echo "$1" >&2; exit 1; }
  echo "skipped: $1" >&2
  exit 77
}
check() {
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; failures=$((failures + 1)); fi
}

case $backend in
  sqlite) ;;
  postgres)
    [[ -n ${CLOCK_TEST_PG_URL:-} ]] || skip "no PostgreSQL server (run under tests/helpers/with-postgres.sh)"
    psql() { "$CLOCK_TEST_PG_BIN/psql" -X -q -t -A -v ON_ERROR_STOP=1 "$@"; } ;;
  mariadb)
    [[ -n ${CLOCK_TEST_MARIADB_SOCKET:-} ]] || skip "no MariaDB server (run under tests/helpers/with-mariadb.sh)"
    sql() { mariadb --protocol=socket -S "$CLOCK_TEST_MARIADB_SOCKET" -uroot -N -B "$@"; } ;;
  *) echo "unknown backend $backend" >&2; exit 64 ;;
esac

# A fresh database of the backend, by name; prints its URL.
fresh() {
  local name=upgrade_$$_$1
  case $backend in
    sqlite) echo "sqlite:$work/$name.db" ;;
    postgres)
      psql "$CLOCK_TEST_PG_URL" -c "CREATE DATABASE $name" >/dev/null &&
        echo "$CLOCK_TEST_PG_URL dbname=$name" ;;
    mariadb)
      sql -e "CREATE DATABASE \`$name\`" &&
        echo "mariadb://root@localhost/$name?socket=$CLOCK_TEST_MARIADB_SOCKET" ;;
  esac
}

# The stamps that say whose routines a database holds: they must not move
# once both releases have arrived (a flip-flop would move them).
stamps() {
  case $backend in
    sqlite) echo none ;;
    postgres)
      psql "$url" -c "SELECT string_agg(n.nspname || '=' || coalesce(obj_description(n.oid, 'pg_namespace'), ''), ' ' ORDER BY n.nspname)
                      FROM pg_namespace n WHERE n.nspname LIKE 'clock%'" ;;
    mariadb)
      sql "${url_db}" -e "SELECT GROUP_CONCAT(CONCAT(routine_name, '=', md5(routine_definition), '@', created) ORDER BY routine_name)
                          FROM information_schema.routines WHERE routine_schema = DATABASE();
                          SELECT sha256 FROM procedures_stamp" | md5sum ;;
  esac
}

# clock of either release (old or new) with no config file of the user's.
clk() {
  local which=$1
  shift
  local binary=$new
  [[ $which == old ]] && binary=$old
  HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG='' "$binary" --database "$url" "$@"
}
# expect CODE WHAT CLOCK-ARGS...: runs clk, checks its exit status.
expect() {
  local code=$1 what=$2
  shift 2
  clk "$@" >"$work/out" 2>"$work/err"
  local status=$?
  check "$what: exits $code (got $status: $(head -c 300 "$work/err"))" test "$status" -eq "$code"
  check "$what: not 70" test "$status" -ne 70
}

# --- 1. Both orders of first use ----------------------------------------------
for first in old new; do
  second=new
  [[ $first == new ]] && second=old
  url=$(fresh "${first}_first")
  url_db=upgrade_$$_${first}_first
  expect 0 "$first first: its first run" "$first" run -r order.job -- true
  expect 0 "$first first: then $second's first run" "$second" run -r order.job -- true
  before=$(stamps)
  for round in 1 2 3; do
    for which in "$first" "$second"; do
      expect 0 "$first first: $which's run $round" "$which" run -r order.job -- true
      check "$first first: the stamps stay where both arrivals left them after $which's run $round" \
        test "$(stamps)" = "$before"
    done
  done
  expect 0 "$first first: $first's clock init again" "$first" init
  expect 0 "$first first: $second's clock init again" "$second" init
  check "$first first: and inits move no stamp either" test "$(stamps)" = "$before"
done

# --- 1a. clock init says what it did: migrated a schema v1.0.0 made, then
# current (and section 2's fresh database: created).
url=$(fresh init_says)
url_db=upgrade_$$_init_says
expect 0 "init says: old's init" old init
expect 0 "init says: new's init after old's" new init
check "init says: new's init names the migrations it applied ($(head -c 300 "$work/out"))" \
  grep -q "^migrated the clock schema in .*: applied [0-9]" "$work/out"
expect 0 "init says: new's init again" new init
check "init says: then the schema is current ($(head -c 300 "$work/out"))" \
  grep -q "is current (.*); nothing to migrate$" "$work/out"

# --- 1b. Least privilege (the server backends): the owner's clock init of
# the new release first, then app logins of both; and the reverse, where the
# new release's app login meets a schema v1.0.0 set up, names the init to
# run, and runs once the owner has run it (the grants copied, roles.sql not
# run again).
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
roles_of() {  # roles_of RELEASE: that release's roles.sql, as a file
  local file=$work/roles_$1.sql
  if [[ $1 == new ]]; then
    cp "$repo/sql/$backend/roles.sql" "$file"
  else
    # The old build records its commit beside the binary: a clone without
    # tags (CI's) has the commit but not the name v1.0.0.
    git -C "$repo" show "$(cat "$(dirname "$old")/commit"):sql/$backend/roles.sql" >"$file"
  fi
  echo "$file"
}
case $backend in
  postgres)
    psql "$CLOCK_TEST_PG_URL" -c "DO \$\$BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'upgrade_web') THEN
        CREATE ROLE upgrade_web LOGIN; END IF; END\$\$" >/dev/null
    apply_roles() { psql "$owner_url" -f "$(roles_of "$1")" >/dev/null &&
                      psql "$owner_url" -c "GRANT clock_operator TO upgrade_web" >/dev/null; }
    app_url_of() { echo "$1 user=upgrade_web"; } ;;
  mariadb)
    apply_roles() { sql "$db_name" <"$(roles_of "$1")" &&
                      sql -e "CREATE USER IF NOT EXISTS 'upgrade_web'@'localhost' IDENTIFIED BY 'pw';
                              GRANT clock_operator TO 'upgrade_web'@'localhost';
                              SET DEFAULT ROLE clock_operator FOR 'upgrade_web'@'localhost'"; }
    app_url_of() { echo "mariadb://upgrade_web:pw@localhost/$db_name?socket=$CLOCK_TEST_MARIADB_SOCKET"; } ;;
esac
if [[ $backend != sqlite ]]; then
  for first in new old; do
    owner_url=$(fresh "least_$first")
    db_name=upgrade_$$_least_$first
    url_db=$db_name
    app_url=$(app_url_of "$owner_url")
    url=$owner_url
    expect 0 "least privilege, $first's init first: the owner's init" "$first" init
    apply_roles "$first"
    check "least privilege, $first's init first: its roles.sql applies" test $? -eq 0
    before=$(stamps)
    url=$app_url
    if [[ $first == new ]]; then
      expect 0 "least privilege, new's init first: old's app login runs" old run -r least.job -- true
      expect 0 "least privilege, new's init first: new's app login runs" new run -r least.job -- true
    else
      expect 0 "least privilege, old's init first: old's app login runs" old run -r least.job -- true
      expect 78 "least privilege, old's init first: new's app login is refused" new run -r least.job -- true
      check "and names the init to run ($(head -c 300 "$work/err"))" grep -q "clock init" "$work/err"
      url=$owner_url
      expect 0 "least privilege, old's init first: then the owner's init of new" new init
      before=$(stamps)
      url=$app_url
      expect 0 "least privilege: new's app login then runs" new run -r least.job -- true
      expect 0 "least privilege: and old's still runs" old run -r least.job -- true
    fi
    expect 1 "least privilege, $first first: old's status, nothing held" old status
    expect 0 "least privilege, $first first: new's history" new history
    url=$owner_url
    check "least privilege, $first first: no stamp moved" test "$(stamps)" = "$before"
  done
fi

# --- 2. One resource, both releases --------------------------------------------
url=$(fresh shared)
url_db=upgrade_$$_shared
expect 0 "the new release's init" new init
check "the new release's init on a fresh database says it created the schema ($(head -c 300 "$work/out"))" \
  grep -q "^created the clock schema in " "$work/out"
tokens=()
token_of() { sed -n 's/.*CLOCK_TOKEN=\([0-9]*\).*/\1/p' "$work/out"; }
owner_of() { sed -n 's/.*CLOCK_OWNER=\([^ ]*\).*/\1/p' "$work/out"; }

for holder in old new; do
  other=new
  [[ $holder == new ]] && other=old
  expect 0 "$holder holds job" "$holder" acquire -r shared.job --ttl 120s --format shell
  owner=$(owner_of)
  tokens+=("shared.job:$(token_of)")
  expect 75 "$other's -n is refused while $holder holds" "$other" run -n -r shared.job -- true
  expect 75 "$other's -w 1s times out while $holder holds" "$other" run -w 1s -r shared.job -- true
  expect 0 "$other's status shows the holder" "$other" status --format json
  check "$other's status names $holder's owner" grep -q "\"owner\": \"${owner%%.*}\"" "$work/out"
  # A waiter of the other release, granted when the holder releases.
  clk "$other" run -w 60s -r shared.job -- true >"$work/waiter.out" 2>"$work/waiter.err" &
  waiter=$!
  until clk "$holder" status --format json 2>/dev/null | grep -q '"waiters": \[$'; do
    kill -0 "$waiter" 2>/dev/null || break
  done
  check "$other's waiter is in the queue" kill -0 "$waiter"
  CLOCK_OWNER=$owner expect 0 "$holder releases" "$holder" release -r shared.job
  wait "$waiter"
  status=$?
  check "$other's waiter gets the lock and exits 0 (got $status: $(head -c 300 "$work/waiter.err"))" test "$status" -eq 0
done

# A forced release by the other release's operator.
for holder in old new; do
  other=new
  [[ $holder == new ]] && other=old
  expect 0 "$holder holds forced.job" "$holder" acquire -r shared.forced --ttl 120s --format shell
  owner=$(owner_of)
  tokens+=("shared.forced:$(token_of)")
  expect 0 "$other's operator forces the release" "$other" release --force -r shared.forced
  CLOCK_OWNER=$owner expect 77 "$holder's renew then finds its lease lost" "$holder" renew -r shared.forced
done

# --once-per across both: whoever runs first, the other skips.
for first in old new; do
  second=new
  [[ $first == new ]] && second=old
  expect 0 "$first's --once-per run" "$first" run --once-per 1h -r "shared.daily_$first" -- true
  expect 0 "$second's --once-per run after it skips" "$second" run --once-per 1h -r "shared.daily_$first" -- touch "$work/ran_$first"
  check "$second did not run the command" test ! -e "$work/ran_$first"
done

# Status and history read by each; tokens increase across both.
for reader in old new; do
  expect 1 "$reader's status with nothing held" "$reader" status
  expect 0 "$reader's history" "$reader" history --format json --limit 1000
  cp "$work/out" "$work/history_$reader.json"
done
# The same events with the same facts; the newer release adds fields of its
# own (how a run ended), which the older one does not know, and events of
# its own (period_changed: a period its --once-per run declared), kept
# apart from the history the older one reads.
same_history() {
  python3 - "$1" "$2" <<'PY'
import json, sys
old = json.load(open(sys.argv[1]))["events"]
new = [e for e in json.load(open(sys.argv[2]))["events"] if e["event"] != "period_changed"]
sys.exit(0 if len(old) == len(new) and all(
    {k: n.get(k) for k in o} == o for o, n in zip(old, new)) else 1)
PY
}
check "both read the same history (the newer with fields of its own)" \
  same_history "$work/history_old.json" "$work/history_new.json"
# The acquired events, oldest first, as "resource:token" words.
grants=$(python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["events"]
print(" ".join(e["resource"] + ":" + str(e["token"]) for e in reversed(events) if e["event"] == "acquired"))' "$work/history_new.json")
# Each event of a kind on resources of a prefix, counted.
count_events() {
  python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["events"]
print(sum(1 for e in events if e["event"] == sys.argv[2] and e["resource"].startswith(sys.argv[3])))' \
    "$work/history_new.json" "$1" "$2"
}
check "history records both -n refusals as skipped (got $(count_events skipped shared.job))" \
  test "$(count_events skipped shared.job)" -eq 2
check "and both -w time-outs (got $(count_events timed_out shared.job))" \
  test "$(count_events timed_out shared.job)" -eq 2
check "and both --once-per skips (got $(count_events skipped shared.daily))" \
  test "$(count_events skipped shared.daily)" -eq 2
check "and the period the newer one's --once-per run declared (got $(count_events period_changed shared.daily))" \
  test "$(count_events period_changed shared.daily)" -eq 1
check "and both forced releases (got $(count_events forced shared.forced))" \
  test "$(count_events forced shared.forced)" -eq 2
check "each resource's grants increase in token ($grants)" python3 -c '
import sys
last = {}
for word in sys.argv[1].split():
    resource, token = word.rsplit(":", 1)
    if int(token) <= last.get(resource, 0):
        sys.exit(1)
    last[resource] = int(token)' "$grants"
for grant in "${tokens[@]}"; do
  check "history holds the grant $grant" grep -qw "$grant" <<<"$grants"
done
# 2 holders and their 2 waiters, 2 forced holders, 2 --once-per runs.
check "history holds every grant of both (got $(wc -w <<<"$grants"))" test "$(wc -w <<<"$grants")" -eq 8

# --- 3. Retired sets: the routines of a release older than the previous one
# (made here by hand, as a release 0.9 would have left them) fail clock
# check, which names them; clock init drops them, and only clock init.
if [[ $backend != sqlite ]]; then
  url=$(fresh retired)
  url_db=upgrade_$$_retired
  expect 0 "retired sets: new's init" new init
  case $backend in
    postgres)
      psql "$url" -c "CREATE SCHEMA clock_r000000000000;
                      CREATE FUNCTION clock_r000000000000.try_acquire() RETURNS int LANGUAGE sql AS 'SELECT 1';
                      INSERT INTO clock.routine_sets (name, release, stamp)
                        VALUES ('clock_r000000000000', '0.9.0', 'by hand')"
      left() { psql "$url" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'clock_r000000000000'"; } ;;
    mariadb)
      sql "$url_db" -e "CREATE PROCEDURE clock_status_rows_r00000000() SELECT 1;
                        INSERT INTO routine_sets (suffix, release_name, sha256) VALUES ('_r00000000', '0.9.0', '')"
      left() { sql "$url_db" -e "SELECT COUNT(*) FROM information_schema.ROUTINES
                                 WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'clock_status_rows_r00000000'"; } ;;
  esac
  expect 78 "retired sets: clock check fails" new check
  check "and names them ($(grep FAIL "$work/out"))" \
    grep -q "^FAIL  no routines of retired releases: .*0\.9\.0" "$work/out"
  expect 0 "retired sets: another command's first use" new run -r retired.job -- true
  check "drops nothing (left: $(left))" test "$(left)" = 1
  expect 0 "retired sets: new's init" new init
  check "drops them (left: $(left))" test "$(left)" = 0
  expect 0 "retired sets: clock check then passes" new check
fi

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all upgrade checks passed ($backend)"
