#!/usr/bin/env bash
# mariadb-ctl.sh stop|start|restart
#
# Stops, starts or restarts the test server that with-mariadb.sh started,
# from inside a test (what happens to clock when MariaDB goes away and comes
# back), as pg-ctl.sh does for PostgreSQL. stop is a clean shutdown
# (SIGTERM) and returns once the process is gone; start returns once the
# server answers on its socket.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 stop|start|restart" >&2; exit 64; }
for var in CLOCK_TEST_MARIADB_DATA CLOCK_TEST_MARIADB_SOCKET CLOCK_TEST_MARIADB_RUN_AS; do
  [[ -n ${!var:-} ]] || { echo "mariadb-ctl: $var is not set; run under tests/helpers/with-mariadb.sh" >&2; exit 1; }
done
dir=$(dirname "$CLOCK_TEST_MARIADB_DATA")
run_as=$CLOCK_TEST_MARIADB_RUN_AS

stop() {
  local pid
  pid=$(<"$dir/mariadbd.pid")
  kill -TERM "$pid"
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  echo "mariadb-ctl: mariadbd $pid did not stop within 30 s" >&2
  exit 1
}

start() {
  local as=()
  [[ $(id -u) -eq 0 && $run_as != root ]] && as=(runuser -u "$run_as" --)
  (cd "$dir" && exec "${as[@]}" "$(command -v mariadbd || echo /usr/sbin/mariadbd)" \
    --defaults-file="$dir/my.cnf" >/dev/null 2>&1) &
  for _ in $(seq 600); do
    mariadb --protocol=socket -S "$CLOCK_TEST_MARIADB_SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "mariadb-ctl: mariadbd did not answer within 30 s (see $dir/mariadbd.log)" >&2
  exit 1
}

case $1 in
  stop) stop ;;
  start) start ;;
  restart) stop && start ;;
  *) echo "usage: $0 stop|start|restart" >&2; exit 64 ;;
esac
