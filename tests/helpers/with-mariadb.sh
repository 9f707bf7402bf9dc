#!/usr/bin/env bash
# shellcheck disable=SC2317  # shellcheck 0.9 takes functions called from traps for dead code
# with-mariadb.sh CMD [ARG...]
#
# Runs CMD beside a throwaway MariaDB server, then stops it and deletes every
# file it wrote, whatever CMD did. Exits with CMD's status. One server per test
# run; tests make a fresh database each.
#
# Exported to CMD:
#   CLOCK_TEST_MARIADB_URL     mariadb://root@localhost/?socket=… (unix socket, no password)
#   CLOCK_TEST_MARIADB_TCP_URL mariadb://root@127.0.0.1:PORT/ (the same server over TCP)
#   CLOCK_TEST_MARIADB_SOCKET  the unix socket
#   CLOCK_TEST_MARIADB_PORT    the TCP port (127.0.0.1 only)
#   CLOCK_TEST_MARIADB_DATA    the data directory
#   CLOCK_TEST_MARIADB_LOG     the server's error log
#   CLOCK_TEST_MARIADB_RUN_AS  the user the server runs as
#
# With CLOCK_TEST_MARIADB_AUTH=password every login needs its password, as on
# a server set up for real (the documentation tests, tests/docs): root has a
# random native password (on the socket, unix_socket still lets the system's
# root in, as Debian's default is), TCP's root the same password, and the
# anonymous account ''@'localhost' that a fresh install may have is there.
# Then also exported:
#   CLOCK_TEST_MARIADB_DEFAULTS  an option file (mode 0600) with root's user,
#                                password and socket in [client]
#
# Without mariadbd installed: with CI=true this fails; else it warns and runs
# CMD without the URL, so the MariaDB tests report themselves skipped.
#
# Why it looks the way it does:
# - mariadbd runs as root only when told --user=root, which a test should not
#   need: as root, the server runs as the unprivileged `mysql` user that the
#   mariadb-server package creates (CLOCK_TEST_MARIADB_RUN_AS to choose
#   another), from a temp dir that user owns.
# - The temp dir is under /tmp (traversable by everyone; a socket path must
#   fit in 107 bytes). TCP listens on 127.0.0.1 at a random port only.
# - Durability is off (innodb_flush_log_at_trx_commit=2, no doublewrite, no
#   binlog): the data is thrown away at the end.
# - The root account authenticates by unix_socket on the socket (the
#   installer's default) and with no password over TCP from 127.0.0.1, which
#   this script creates: the tests connect as the user they run as.
set -uo pipefail

helper_name=with-mariadb
# shellcheck source=tests/helpers/server_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/server_common.sh"

[[ $# -ge 1 ]] || { echo "usage: $0 CMD [ARG...]   (e.g. $0 bash)" >&2; exit 64; }

mariadbd_bin=$(command -v mariadbd || true)
[[ -z $mariadbd_bin && -x /usr/sbin/mariadbd ]] && mariadbd_bin=/usr/sbin/mariadbd
install_db_bin=$(command -v mariadb-install-db || true)
client_bin=$(command -v mariadb || true)

run_as=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  run_as=${CLOCK_TEST_MARIADB_RUN_AS:-mysql}
fi

if [[ -z $mariadbd_bin || -z $install_db_bin || -z $client_bin ]]; then
  missing "MariaDB server or client not found (Debian packages mariadb-server, mariadb-client)"
  exec "$@"
elif ! id -u "$run_as" >/dev/null 2>&1; then
  missing "user '$run_as' to run MariaDB as does not exist (the mariadb-server package creates mysql)"
  exec "$@"
fi

dir=""
cmd_pid=""
server_pid=""

as_server_user() { run_as_in "$run_as" "$dir" "$@"; }

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  stop_command "$cmd_pid"
  if [[ -n $dir && -s $dir/mariadbd.pid ]]; then
    server_pid=$(<"$dir/mariadbd.pid")
  fi
  if [[ -n $server_pid ]] && alive "$server_pid"; then
    kill -KILL "$server_pid" 2>/dev/null  # thrown away: no clean shutdown needed
    for _ in $(seq 100); do alive "$server_pid" || break; sleep 0.05; done
  fi
  if [[ -n $dir ]]; then
    if [[ $status -ne 0 && -n ${CLOCK_TEST_KEEP_MARIADB:-} ]]; then
      echo "with-mariadb: kept $dir for inspection (CLOCK_TEST_KEEP_MARIADB is set)" >&2
    else
      rm -rf "$dir"
    fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

dir=$(mktemp -d /tmp/clock-my.XXXXXX) || die "cannot create a temp dir in /tmp"
chmod 0755 "$dir"
[[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir" || die "cannot give $dir to $run_as"

# Below the kernel's ephemeral range (32768 and up by default), where the
# tests' own outgoing connections hold ports.
port=$(shuf -i 10000-32700 -n 1)
socket=$dir/mariadb.sock

# Temp files of its own: the server writes on-disk temporary tables (a
# stored procedure's cursor over a TEXT column, for one) to tmpdir, /tmp by
# default, where they were removed under it mid-query (by something outside
# the test, while other tests ran; not identified): "Error on delete of
# '/tmp/#sql-temptable-…'" and twice a crash (signal 11 in
# ha_maria::drop_table), 3 of 8 runs of the former mariadb-acquire script.
mkdir "$dir/tmp" || die "cannot create $dir/tmp"
[[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir/tmp" || die "cannot give $dir/tmp to $run_as"
cat >"$dir/my.cnf" <<CNF
[mariadbd]
datadir=$dir/data
tmpdir=$dir/tmp
socket=$socket
pid-file=$dir/mariadbd.pid
log-error=$dir/mariadbd.log
bind-address=127.0.0.1
port=$port
skip-name-resolve
innodb_flush_log_at_trx_commit=2
innodb_doublewrite=0
innodb_buffer_pool_size=64M
skip-log-bin
max_connections=151
CNF
[[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir/my.cnf"

if ! as_server_user "$install_db_bin" --defaults-file="$dir/my.cnf" --auth-root-authentication-method=socket \
  --skip-test-db >"$dir/install-db.log" 2>&1; then
  cat "$dir/install-db.log" >&2
  die "mariadb-install-db failed (as user $run_as in $dir)"
fi

as_server_user "$mariadbd_bin" --defaults-file="$dir/my.cnf" >/dev/null 2>&1 &
server_pid=$!

# Ready when the socket answers; a server that exits first failed to start.
ready=false
for _ in $(seq 300); do
  if "$client_bin" --protocol=socket --socket="$socket" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
    ready=true
    break
  fi
  alive "$server_pid" || break
  sleep 0.1
done
if ! $ready; then
  cat "$dir/mariadbd.log" >&2 2>/dev/null
  die "mariadbd did not start (as user $run_as, see the log above)"
fi

# The socket's root is whoever runs the tests as root; TCP's root has no
# password and only from 127.0.0.1. Only the tests reach either.
"$client_bin" --protocol=socket --socket="$socket" -uroot -e \
  "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
   GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" ||
  die "cannot create the TCP root account"

if [[ ${CLOCK_TEST_MARIADB_AUTH:-} == password ]]; then
  root_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  "$client_bin" --protocol=socket --socket="$socket" -uroot -e \
    "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket
       OR mysql_native_password USING PASSWORD('$root_password');
     ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '$root_password';
     CREATE USER IF NOT EXISTS ''@'localhost';" ||
    die "cannot give root a password"
  (umask 077 && printf '[client]\nuser=root\npassword=%s\nsocket=%s\n' "$root_password" "$socket" \
    >"$dir/root.cnf")
  export CLOCK_TEST_MARIADB_DEFAULTS=$dir/root.cnf
fi

export CLOCK_TEST_MARIADB_URL="mariadb://root@localhost/?socket=$socket"
export CLOCK_TEST_MARIADB_TCP_URL="mariadb://root@127.0.0.1:$port/"
export CLOCK_TEST_MARIADB_SOCKET=$socket
export CLOCK_TEST_MARIADB_PORT=$port
export CLOCK_TEST_MARIADB_DATA=$dir/data
export CLOCK_TEST_MARIADB_LOG=$dir/mariadbd.log
export CLOCK_TEST_MARIADB_RUN_AS=$run_as

"$@" &
cmd_pid=$!
wait "$cmd_pid"
status=$?
cmd_pid=""
exit "$status"
