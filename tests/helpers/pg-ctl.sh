#!/usr/bin/env bash
# pg-ctl.sh stop|start|restart [PG_CTL_ARG...]
#
# Stops, starts or restarts the test server that with-postgres.sh started, from
# inside a test (what happens to clock when PostgreSQL goes away and comes back).
# stop and restart default to -m fast; pass "-m immediate" to simulate a crash.
# Waits until the server is down or accepting connections again.
set -euo pipefail

usage() { echo "usage: $0 stop|start|restart [PG_CTL_ARG...]" >&2; exit 64; }
[[ $# -ge 1 ]] || usage
action=$1
shift

for var in CLOCK_TEST_PG_BIN CLOCK_TEST_PG_DATA CLOCK_TEST_PG_LOG CLOCK_TEST_PG_RUN_AS; do
  if [[ -z ${!var:-} ]]; then
    echo "pg-ctl: $var is not set; run under tests/helpers/with-postgres.sh" >&2
    exit 1
  fi
done

case $action in
  stop | restart) args=(-m fast "$@") ;; # a later -m in "$@" wins
  start) args=("$@") ;;
  *) usage ;;
esac

# The server's user may not be able to read the current directory (the repo
# may be under /root), and pg_ctl needs to; its data dir's parent is its own.
cd "$(dirname "$CLOCK_TEST_PG_DATA")"
cmd=("$CLOCK_TEST_PG_BIN/pg_ctl" -D "$CLOCK_TEST_PG_DATA" -l "$CLOCK_TEST_PG_LOG" -w -t 60
  "$action" "${args[@]}")
if [[ $CLOCK_TEST_PG_RUN_AS == "$(id -un)" ]]; then
  exec "${cmd[@]}"
else
  exec runuser -u "$CLOCK_TEST_PG_RUN_AS" -- "${cmd[@]}"
fi
