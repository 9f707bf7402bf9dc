#!/usr/bin/env bash
# shellcheck disable=SC2317  # shellcheck 0.9 takes functions called from traps for dead code
# with-galera.sh CMD [ARG...]
#
# Runs CMD beside a throwaway three-node Galera cluster (MariaDB + galera-4)
# on 127.0.0.1, then stops it and deletes every file it wrote, whatever CMD
# did. Exits with CMD's status. tests/helpers/galera-node.sh stops, kills and
# restarts single nodes (with a skewed clock if asked) while CMD runs.
#
# Exported to CMD (N = 1, 2, 3):
#   CLOCK_TEST_GALERA_URL_N     mariadb://root@localhost/?socket=… (node N)
#   CLOCK_TEST_GALERA_TCP_URL_N mariadb://root@127.0.0.1:PORT/ (node N over TCP)
#   CLOCK_TEST_GALERA_SOCKET_N  node N's unix socket
#   CLOCK_TEST_GALERA_PORT_N    node N's SQL port
#   CLOCK_TEST_GALERA_DIR       the cluster's directory (galera-node.sh reads it)
#   CLOCK_TEST_GALERA_NODE      the path of galera-node.sh
#
# Without mariadbd, galera-4 or rsync: with CI=true this fails; else it warns
# and runs CMD without the URLs, so the Galera tests report themselves skipped.
# The why of the cluster's settings is in galera_cluster.sh.
set -uo pipefail

helper_name=with-galera
# shellcheck source=tests/helpers/server_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/server_common.sh"

[[ $# -ge 1 ]] || { echo "usage: $0 CMD [ARG...]   (e.g. $0 bash)" >&2; exit 64; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/helpers/galera_cluster.sh
source "$here/galera_cluster.sh"

galera_mariadbd=$(command -v mariadbd || true)
[[ -z $galera_mariadbd && -x /usr/sbin/mariadbd ]] && galera_mariadbd=/usr/sbin/mariadbd
install_db=$(command -v mariadb-install-db || true)
galera_client=$(command -v mariadb || true)
galera_admin=$(command -v mariadb-admin || true)

galera_run_as=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  galera_run_as=${CLOCK_TEST_MARIADB_RUN_AS:-mysql}
fi

if [[ -z $galera_mariadbd || -z $install_db || -z $galera_client || -z $galera_admin ]]; then
  missing "MariaDB server or client not found (Debian packages mariadb-server, mariadb-client)"
  exec "$@"
elif [[ ! -e /usr/lib/galera/libgalera_smm.so ]]; then
  missing "the Galera provider /usr/lib/galera/libgalera_smm.so not found (Debian package galera-4)"
  exec "$@"
elif ! command -v rsync >/dev/null; then
  missing "rsync not found (Galera's state transfer here uses it; Debian package rsync)"
  exec "$@"
elif ! id -u "$galera_run_as" >/dev/null 2>&1; then
  missing "user '$galera_run_as' to run MariaDB as does not exist (the mariadb-server package creates mysql)"
  exec "$@"
fi

galera_dir=""
cmd_pid=""

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  stop_command "$cmd_pid"
  if [[ -n $galera_dir ]]; then
    local node pid
    for node in 1 2 3; do  # thrown away: no clean shutdown needed
      pid=$(galera_node_pid "$node")
      [[ -z $pid ]] || kill -KILL "$pid" 2>/dev/null
    done
    # The SST scripts' rsync daemons run as children of the servers.
    pkill -KILL -f "rsync --daemon.*$galera_dir" 2>/dev/null
    for node in 1 2 3; do
      pid=$(galera_node_pid "$node")
      [[ -n $pid ]] || continue
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    done
    if [[ $status -ne 0 && -n ${CLOCK_TEST_KEEP_GALERA:-} ]]; then
      echo "with-galera: kept $galera_dir for inspection (CLOCK_TEST_KEEP_GALERA is set)" >&2
    else
      rm -rf "$galera_dir"
    fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

galera_dir=$(mktemp -d /tmp/clock-galera.XXXXXX) || die "cannot create a temp dir in /tmp"
chmod 0755 "$galera_dir"
[[ $galera_run_as == "$(id -un)" ]] || chown "$galera_run_as:" "$galera_dir" || die "cannot give $galera_dir to $galera_run_as"
# Below Linux's ephemeral range (ip_local_port_range, 32768-60999 by
# default): there the test's own client connections hold ports, and a node
# that draws one fails to bind (seen 2 starts in 6 with 20000-59980).
galera_base_port=$(shuf -i 20000-32700 -n 1)
galera_save_state

for node in 1 2 3; do galera_write_config "$node"; done

if ! galera_as_server_user "$install_db" --defaults-file="$(galera_node_dir 1)/my.cnf" \
  --auth-root-authentication-method=socket --skip-test-db >"$galera_dir/install-db.log" 2>&1; then
  cat "$galera_dir/install-db.log" >&2
  die "mariadb-install-db failed (as user $galera_run_as in $galera_dir)"
fi

galera_start_node 1 "" bootstrap || die "the first node did not bootstrap the cluster"
galera_wait_synced 1 || die "the first node did not become Synced"
# Made on node 1 before the others join, so the state transfer copies it.
galera_sql 1 "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
              GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" ||
  die "cannot create the TCP root account"

# One joiner at a time: node 1 is the donor of each state transfer.
for node in 2 3; do
  galera_start_node "$node" || die "node $node did not start"
  galera_wait_synced "$node" || die "node $node did not join"
done
for node in 1 2 3; do
  galera_wait_cluster_size "$node" 3 || die "node $node does not see the whole cluster"
done

for node in 1 2 3; do
  export "CLOCK_TEST_GALERA_URL_$node=mariadb://root@localhost/?socket=$(galera_socket "$node")"
  export "CLOCK_TEST_GALERA_TCP_URL_$node=mariadb://root@127.0.0.1:$(galera_sql_port "$node")/"
  export "CLOCK_TEST_GALERA_SOCKET_$node=$(galera_socket "$node")"
  export "CLOCK_TEST_GALERA_PORT_$node=$(galera_sql_port "$node")"
done
export CLOCK_TEST_GALERA_DIR=$galera_dir
export CLOCK_TEST_GALERA_NODE=$here/galera-node.sh

"$@" &
cmd_pid=$!
wait "$cmd_pid"
status=$?
cmd_pid=""
exit "$status"
