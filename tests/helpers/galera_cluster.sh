# shellcheck shell=bash disable=SC2154  # the galera_* settings come from with-galera.sh or galera_load_state
# galera_cluster.sh: the functions with-galera.sh and galera-node.sh share to
# run a throwaway three-node Galera cluster on 127.0.0.1. Sourced, not run.
#
# Layout of the cluster directory ($galera_dir):
#   state          what galera-node.sh needs to find the cluster again
#   nodeN/my.cnf   node N's options; nodeN/data, nodeN/mariadbd.{pid,log,sock}
#
# Ports: four per node from a random base: SQL, group communication, IST, SST.
#
# Why it looks the way it does:
# - As root, every node runs as the unprivileged `mysql` user (mariadbd and
#   Galera's SST scripts misbehave as root), from a dir that user owns.
# - Node 1 is made by mariadb-install-db and bootstraps the cluster; nodes 2
#   and 3 start empty and receive a copy by rsync SST, so all three share one
#   history from the start (no copied data directories).
# - Group communication timeouts are shortened (suspect 2 s, inactive 4 s):
#   a killed node leaves the view in seconds, not the default 15 s, so the
#   node-loss tests wait less.
# - Durability is off (flush at commit = 2, no doublewrite): the data is
#   thrown away at the end; Galera's synchronous replication is untouched.
# - innodb_lock_wait_timeout = 3 for the whole server, as docs/galera.md
#   advises: a node's replication applier can wait on a hierarchy row that
#   a local grant holds while that grant waits to replicate, and the
#   applier's wait ends only at this timeout (50 s by default; measured by
#   make bench row 11: stalls of 50 s, about 3 s with this setting).

galera_sql_port() { echo $((galera_base_port + ($1 - 1) * 4)); }
galera_gcomm_port() { echo $((galera_base_port + ($1 - 1) * 4 + 1)); }
galera_ist_port() { echo $((galera_base_port + ($1 - 1) * 4 + 2)); }
galera_sst_port() { echo $((galera_base_port + ($1 - 1) * 4 + 3)); }
galera_node_dir() { echo "$galera_dir/node$1"; }
galera_socket() { echo "$galera_dir/node$1/mariadbd.sock"; }

galera_save_state() {
  cat >"$galera_dir/state" <<STATE
galera_dir=$galera_dir
galera_base_port=$galera_base_port
galera_run_as=$galera_run_as
galera_mariadbd=$galera_mariadbd
galera_client=$galera_client
galera_admin=$galera_admin
STATE
}

galera_load_state() {
  [[ -r $1/state ]] || { echo "galera: no cluster state in $1" >&2; return 1; }
  # shellcheck source=/dev/null
  source "$1/state"
}

galera_as_server_user() {
  if [[ $galera_run_as == "$(id -un)" ]]; then
    (cd "$galera_dir" && "$@")
  else
    (cd "$galera_dir" && runuser -u "$galera_run_as" -- "$@")
  fi
}

galera_write_config() {
  local node=$1 node_dir members="" other
  node_dir=$(galera_node_dir "$node")
  for other in 1 2 3; do
    members+="${members:+,}127.0.0.1:$(galera_gcomm_port "$other")"
  done
  # tmpdir: temp files of its own, as with-mariadb.sh (on-disk temporary
  # tables in /tmp were removed under a node mid-query: "Error on delete of
  # '/tmp/#sql-temptable-…'", error 6, an exit 70 of mariadb-galera).
  mkdir -p "$node_dir/data" "$node_dir/tmp"
  cat >"$node_dir/my.cnf" <<CNF
[mariadbd]
datadir=$node_dir/data
tmpdir=$node_dir/tmp
socket=$node_dir/mariadbd.sock
pid-file=$node_dir/mariadbd.pid
log-error=$node_dir/mariadbd.log
bind-address=127.0.0.1
port=$(galera_sql_port "$node")
skip-name-resolve
innodb_flush_log_at_trx_commit=2
innodb_doublewrite=0
innodb_buffer_pool_size=32M
max_connections=151
innodb_lock_wait_timeout=3
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=clock-test
wsrep_cluster_address=gcomm://$members
wsrep_node_name=node$node
wsrep_node_address=127.0.0.1:$(galera_gcomm_port "$node")
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$(galera_gcomm_port "$node");ist.recv_addr=127.0.0.1:$(galera_ist_port "$node");gcache.size=32M;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.install_timeout=PT4S"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$(galera_sst_port "$node")
CNF
  if [[ $galera_run_as != "$(id -un)" ]]; then
    chown -R "$galera_run_as:" "$node_dir"
  fi
}

galera_node_pid() {
  local pid_file
  pid_file="$(galera_node_dir "$1")/mariadbd.pid"
  [[ -s $pid_file ]] || return 0
  local pid
  pid=$(<"$pid_file")
  if kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

galera_sql() {
  "$galera_client" --protocol=socket --socket="$(galera_socket "$1")" -uroot \
    --batch --skip-column-names -e "$2"
}

galera_status_value() {
  galera_sql "$1" "SHOW STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

# galera_start_node N [FAKETIME] [bootstrap]
galera_start_node() {
  local node=$1 faketime=${2:-} bootstrap=${3:-} node_dir
  node_dir=$(galera_node_dir "$node")
  [[ -z $(galera_node_pid "$node") ]] || { echo "galera: node $node is already running" >&2; return 1; }
  rm -f "$node_dir/mariadbd.pid"
  local -a env_prefix=() args=(--defaults-file="$node_dir/my.cnf")
  [[ -n $bootstrap ]] && args+=(--wsrep-new-cluster)
  if [[ -n $faketime ]]; then
    local lib
    lib=$(find /usr/lib -path '*/faketime/libfaketime.so.1' -print -quit 2>/dev/null)
    [[ -n $lib ]] || { echo "galera: libfaketime not found (Debian package libfaketime)" >&2; return 1; }
    # The wall clock only: Galera's timers run on the monotonic clock.
    env_prefix=(env LD_PRELOAD="$lib" FAKETIME="$faketime" DONT_FAKE_MONOTONIC=1 FAKETIME_NO_CACHE=1)
  fi
  galera_as_server_user "${env_prefix[@]}" "$galera_mariadbd" "${args[@]}" >/dev/null 2>&1 &
  disown
  local _
  for _ in $(seq 1200); do
    [[ -n $(galera_node_pid "$node") ]] && galera_sql "$node" 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  tail -n 30 "$node_dir/mariadbd.log" >&2 2>/dev/null
  echo "galera: node $node did not start within 120 s (its log is above)" >&2
  return 1
}

galera_wait_synced() {
  local _
  for _ in $(seq 1200); do
    [[ $(galera_status_value "$1" wsrep_local_state_comment) == Synced &&
      $(galera_status_value "$1" wsrep_ready) == ON ]] && return 0
    sleep 0.1
  done
  echo "galera: node $1 is not Synced after 120 s" >&2
  return 1
}

galera_wait_cluster_size() {
  local _
  for _ in $(seq 600); do
    [[ $(galera_status_value "$1" wsrep_cluster_size) == "$2" ]] && return 0
    sleep 0.1
  done
  echo "galera: node $1 does not see $2 nodes after 60 s (it sees $(galera_status_value "$1" wsrep_cluster_size))" >&2
  return 1
}

galera_stop_node() {
  local pid _
  pid=$(galera_node_pid "$1")
  [[ -n $pid ]] || return 0
  "$galera_admin" --protocol=socket --socket="$(galera_socket "$1")" -uroot shutdown >/dev/null 2>&1 ||
    kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "galera: node $1 (pid $pid) did not stop within 60 s" >&2
  return 1
}

galera_kill_node() {
  local pid
  pid=$(galera_node_pid "$1")
  [[ -z $pid ]] || kill -KILL "$pid" 2>/dev/null
  return 0
}
