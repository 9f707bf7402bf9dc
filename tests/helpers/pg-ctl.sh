#!/usr/bin/env bash
# pg-ctl.sh stop|start|restart|promote [PG_CTL_ARG...]
#
# Stops, starts or restarts the test server that with-postgres.sh started, from
# inside a test (what happens to clock when PostgreSQL goes away and comes back).
# stop and restart default to -m fast; pass "-m immediate" to simulate a crash.
# Waits until the server is down or accepting connections again.
#
# promote (with-postgres.sh run with CLOCK_TEST_PG_STANDBY=1) makes the standby
# a primary, as an operator does after the primary died: it first clears the
# synchronous_standby_names that the standby copied from the primary (with it,
# every commit on the promoted server would wait forever for a standby that
# does not exist), then promotes, and returns once the server accepts writes.
set -euo pipefail

usage() { echo "usage: $0 stop|start|restart|promote [PG_CTL_ARG...]" >&2; exit 64; }
[[ $# -ge 1 ]] || usage
action=$1
shift

required=(CLOCK_TEST_PG_BIN CLOCK_TEST_PG_DATA CLOCK_TEST_PG_LOG CLOCK_TEST_PG_RUN_AS)
[[ $action == promote ]] && required+=(CLOCK_TEST_PG_STANDBY_DATA CLOCK_TEST_PG_STANDBY_URL)
for var in "${required[@]}"; do
  if [[ -z ${!var:-} ]]; then
    hint="run under tests/helpers/with-postgres.sh"
    [[ $var == CLOCK_TEST_PG_STANDBY_* ]] && hint="run under CLOCK_TEST_PG_STANDBY=1 tests/helpers/with-postgres.sh"
    echo "pg-ctl: $var is not set; $hint" >&2
    exit 1
  fi
done

data=$CLOCK_TEST_PG_DATA
case $action in
  stop | restart) args=(-l "$CLOCK_TEST_PG_LOG" -m fast "$@") ;; # a later -m in "$@" wins
  start) args=(-l "$CLOCK_TEST_PG_LOG" "$@") ;;
  promote)
    data=$CLOCK_TEST_PG_STANDBY_DATA
    args=("$@")
    # ALTER SYSTEM works on a standby in recovery; the reload applies it.
    "$CLOCK_TEST_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$CLOCK_TEST_PG_STANDBY_URL" \
      -c "ALTER SYSTEM SET synchronous_standby_names = ''" -c "SELECT pg_reload_conf()" >/dev/null
    ;;
  *) usage ;;
esac

# The server's user may not be able to read the current directory (the repo
# may be under /root), and pg_ctl needs to; its data dir's parent is its own.
cd "$(dirname "$data")"
cmd=("$CLOCK_TEST_PG_BIN/pg_ctl" -D "$data" -w -t 60 "$action" "${args[@]}")
if [[ $CLOCK_TEST_PG_RUN_AS == "$(id -un)" ]]; then
  exec "${cmd[@]}"
else
  exec runuser -u "$CLOCK_TEST_PG_RUN_AS" -- "${cmd[@]}"
fi
