#!/usr/bin/env bash
# shellcheck disable=SC2317  # shellcheck 0.9 takes functions called from traps for dead code
# with-postgres.sh CMD [ARG...]
#
# Runs CMD beside a throwaway PostgreSQL server and a pgbouncer in front of it,
# then stops both and deletes every file they wrote, whatever CMD did. Exits
# with CMD's status. One server per test run; tests make a fresh database each.
#
# Exported to CMD:
#   CLOCK_TEST_PG_URL          libpq keyword string of the server (unix socket only)
#   CLOCK_TEST_PGBOUNCER_URL   the same database through pgbouncer, transaction pooling
#   CLOCK_TEST_PG_BIN          the PostgreSQL bin directory (pg_ctl, psql...)
#   CLOCK_TEST_PG_DATA         the data directory
#   CLOCK_TEST_PG_LOG          the server log
#   CLOCK_TEST_PG_RUN_AS       the user the server runs as
# tests/helpers/pg-ctl.sh stop|start|restart uses them to stop and restart the
# server in the middle of a test.
#
# With CLOCK_TEST_PG_STANDBY=1 the server is a primary with one streaming
# replica (pg_basebackup -R) on synchronous replication (synchronous_commit =
# on, synchronous_standby_names naming the replica), both on unix sockets in the
# same temp dir, and no pgbouncer. Then:
#   CLOCK_TEST_PG_URL          both servers, primary first, target_session_attrs=read-write
#                              (what clock is told on an HA setup)
#   CLOCK_TEST_PG_PRIMARY_URL  the primary alone
#   CLOCK_TEST_PG_STANDBY_URL  the standby alone
#   CLOCK_TEST_PG_STANDBY_DATA the standby's data directory
#   CLOCK_TEST_PG_STANDBY_LOG  the standby's log
# CLOCK_TEST_PG_DATA and CLOCK_TEST_PG_LOG are the primary's; a failover test
# runs `pg-ctl.sh stop -m immediate` (the primary) then `pg-ctl.sh promote`
# (the standby, with synchronous_standby_names cleared first).
#
# With CLOCK_TEST_PG_AUTH=password every login needs its password, as on a
# real server: initdb -A scram-sha-256 (pg_hba: scram-sha-256 for every local
# and host line, no trust), the superuser postgres with a random password, and
# no pgbouncer. Then:
#   CLOCK_TEST_PG_PASSFILE     a password file (0600) with postgres's line;
#                              CLOCK_TEST_PG_URL connects with PGPASSFILE set to it
#
# Without PostgreSQL (or pgbouncer) installed: with CI=true this fails; else it
# warns and runs CMD without the matching URL, so the tests run SQLite only.
#
# Why it looks the way it does:
# - initdb and postgres refuse to run as root, and so does pgbouncer: as root,
#   everything runs as the unprivileged `postgres` user (CLOCK_TEST_PG_RUN_AS to
#   choose another). That user cannot read the repository (it may live under
#   /root), so all it needs lives in one temp dir that it owns, and every
#   command it runs starts from there.
# - The temp dir is under /tmp, not $TMPDIR: /tmp is traversable by everyone,
#   and a unix socket path must fit in 107 bytes.
# - listen_addresses is empty: the server is reachable only through its socket
#   in the private temp dir, so "port" just names the socket and two runs at
#   once never collide. It is still random in 20000-60000, as asked.
set -uo pipefail

helper_name=with-postgres
# shellcheck source=tests/helpers/server_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/server_common.sh"

[[ $# -ge 1 ]] || { echo "usage: $0 CMD [ARG...]   (e.g. $0 bash)" >&2; exit 64; }

# --- find the tools -----------------------------------------------------------

# CLOCK_TEST_PG_BIN picks the server's bin directory; else 15, as on Debian 12.
pg_bin=${CLOCK_TEST_PG_BIN:-/usr/lib/postgresql/15/bin}
if [[ -z ${CLOCK_TEST_PG_BIN:-} && ! -x $pg_bin/initdb ]]; then
  # Another major version will do as well as 15 if that is what is installed.
  newest=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n 1)
  [[ -n $newest && -x $newest/initdb ]] && pg_bin=$newest
fi

run_as=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  run_as=${CLOCK_TEST_PG_RUN_AS:-postgres}
fi

have_pg=true
if [[ ! -x $pg_bin/initdb || ! -x $pg_bin/pg_ctl || ! -x $pg_bin/postgres ]]; then
  missing "PostgreSQL server binaries not found in $pg_bin (Debian package postgresql)"
  have_pg=false
elif ! id -u "$run_as" >/dev/null 2>&1; then
  missing "user '$run_as' to run PostgreSQL as does not exist (the postgresql package creates it)"
  have_pg=false
fi

if ! $have_pg; then
  exec "$@"
fi

pgbouncer_bin=$(command -v pgbouncer || true)
[[ -z $pgbouncer_bin && -x /usr/sbin/pgbouncer ]] && pgbouncer_bin=/usr/sbin/pgbouncer
if [[ -z $pgbouncer_bin ]]; then
  missing "pgbouncer not found (Debian package pgbouncer)"
fi

# --- clean-up, armed before anything is created ---------------------------------

dir=""
cmd_pid=""
bouncer_pidfile=""

# Runs a command as the server's user, from the temp dir (its cwd must be
# readable by that user: initdb and pg_ctl fail in an unreadable one).
as_pg() { run_as_in "$run_as" "$dir" "$@"; }

# Stops the server of data directory $1, if there is one and it runs.
stop_server() {
  [[ -d $1 ]] || return 0
  local ppid=""
  [[ -s $1/postmaster.pid ]] && ppid=$(head -n 1 "$1/postmaster.pid")
  as_pg "$pg_bin/pg_ctl" -D "$1" -m immediate -w stop >/dev/null 2>&1
  # pg_ctl waits for the postmaster, which waits for its children; this is a
  # safety net for a postmaster that a test left in a bad state.
  if [[ -n $ppid ]] && alive "$ppid"; then
    # shellcheck disable=SC2046  # a list of pids
    kill -KILL $(process_tree "$ppid") 2>/dev/null
  fi
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  stop_command "$cmd_pid"
  if [[ -n $bouncer_pidfile && -s $bouncer_pidfile ]]; then
    local bpid
    bpid=$(<"$bouncer_pidfile")
    kill -TERM "$bpid" 2>/dev/null
    for _ in $(seq 50); do alive "$bpid" || break; sleep 0.1; done
    alive "$bpid" && kill -KILL "$bpid" 2>/dev/null
  fi
  if [[ -n $dir ]]; then
    stop_server "$dir/data"
    stop_server "$dir/standby"
  fi
  if [[ -n $dir ]]; then
    if [[ $status -ne 0 && -n ${CLOCK_TEST_KEEP_PG:-} ]]; then
      echo "with-postgres: kept $dir for inspection (CLOCK_TEST_KEEP_PG is set)" >&2
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

# --- the server -------------------------------------------------------------------

dir=$(mktemp -d /tmp/clock-pg.XXXXXX) || die "cannot create a temp dir in /tmp"
[[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir" || die "cannot give $dir to $run_as"

# Below the kernel's ephemeral range (32768 and up by default), where the
# tests' own outgoing connections hold ports.
pg_port=$(shuf -i 10000-32700 -n 1)
bouncer_port=$(shuf -i 10000-32700 -n 1)
while [[ $bouncer_port == "$pg_port" ]]; do bouncer_port=$(shuf -i 10000-32700 -n 1); done

auth=(-A trust)
if [[ ${CLOCK_TEST_PG_AUTH:-} == password ]]; then
  superuser_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  (umask 077 && echo "$superuser_password" >"$dir/superuser-password")
  [[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir/superuser-password"
  auth=(-A scram-sha-256 --pwfile="$dir/superuser-password")
  # Ours, not the server's: the user running the tests reads it.
  (umask 077 && echo "*:*:*:postgres:$superuser_password" >"$dir/pgpass")
  export CLOCK_TEST_PG_PASSFILE=$dir/pgpass PGPASSFILE=$dir/pgpass
  # Other users (the doc test's second pass) reach the socket in it.
  chmod 711 "$dir"
  unset CLOCK_TEST_PGBOUNCER_URL
  pgbouncer_bin=""
fi
if ! as_pg "$pg_bin/initdb" -D "$dir/data" "${auth[@]}" -U postgres --no-sync -E UTF8 --locale=C \
  >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2
  die "initdb failed (as user $run_as in $dir)"
fi

# Speed over durability: the data is thrown away at the end anyway.
cat >>"$dir/data/postgresql.conf" <<CONF

# --- tests/helpers/with-postgres.sh ---
listen_addresses = ''
port = $pg_port
unix_socket_directories = '$dir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
log_line_prefix = '%m [%p] %q%u@%d '
CONF

standby=false
case "${CLOCK_TEST_PG_STANDBY:-}" in 1 | true | TRUE | yes) standby=true ;; esac

if $standby; then
  # A commit returns once the standby has written it: what a grant needs to
  # survive a failover (fsync stays off: the tests crash servers, not hosts).
  cat >>"$dir/data/postgresql.conf" <<CONF
synchronous_commit = on
synchronous_standby_names = 'clock_standby'
CONF
fi

if ! as_pg "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >/dev/null; then
  tail -n 30 "$dir/postgres.log" >&2
  die "PostgreSQL did not start (log above)"
fi

export CLOCK_TEST_PG_URL="host=$dir port=$pg_port user=postgres dbname=postgres"
export CLOCK_TEST_PG_BIN=$pg_bin
export CLOCK_TEST_PG_DATA=$dir/data
export CLOCK_TEST_PG_LOG=$dir/postgres.log
export CLOCK_TEST_PG_RUN_AS=$run_as

# --- the standby (CLOCK_TEST_PG_STANDBY=1) ------------------------------------------

# A streaming replica of the primary, in $dir/standby, on port $standby_port of
# the same socket dir. Its configuration is the primary's, as pg_basebackup
# copies it, synchronous_standby_names included: the trap a manual promotion
# falls into (pg-ctl.sh promote clears it). initdb's pg_hba.conf already lets
# local connections replicate.
start_standby() {
  standby_port=$(shuf -i 10000-32700 -n 1)
  while [[ $standby_port == "$pg_port" ]]; do standby_port=$(shuf -i 10000-32700 -n 1); done
  if ! as_pg "$pg_bin/pg_basebackup" -D "$dir/standby" -R -X stream -c fast --no-sync \
    -d "host=$dir port=$pg_port user=postgres application_name=clock_standby" \
    >"$dir/basebackup.log" 2>&1; then
    cat "$dir/basebackup.log" >&2
    die "pg_basebackup of the primary failed"
  fi
  echo "port = $standby_port" >>"$dir/standby/postgresql.conf"
  if ! as_pg "$pg_bin/pg_ctl" -D "$dir/standby" -l "$dir/standby.log" -w -t 60 start >/dev/null; then
    tail -n 30 "$dir/standby.log" >&2
    die "the standby did not start (log above)"
  fi
  local state=""
  for _ in $(seq 300); do
    state=$("$pg_bin/psql" -X -At -h "$dir" -p "$pg_port" -U postgres -d postgres -c \
      "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'clock_standby'" 2>/dev/null)
    [[ $state == sync ]] && break
    sleep 0.1
  done
  [[ $state == sync ]] || die "the standby is not a synchronous standby of the primary after 30s (sync_state '$state')"

  export CLOCK_TEST_PG_URL="host=$dir,$dir port=$pg_port,$standby_port user=postgres dbname=postgres target_session_attrs=read-write"
  export CLOCK_TEST_PG_PRIMARY_URL="host=$dir port=$pg_port user=postgres dbname=postgres"
  export CLOCK_TEST_PG_STANDBY_URL="host=$dir port=$standby_port user=postgres dbname=postgres"
  export CLOCK_TEST_PG_STANDBY_DATA=$dir/standby
  export CLOCK_TEST_PG_STANDBY_LOG=$dir/standby.log
  # pgbouncer would follow the primary only: not started, and an outer one's
  # URL (a nested run under make check) must not leak in.
  unset CLOCK_TEST_PGBOUNCER_URL
  pgbouncer_bin=""
}
$standby && start_standby

# --- pgbouncer ----------------------------------------------------------------------

if [[ -n $pgbouncer_bin ]]; then
  bouncer_pidfile=$dir/pgbouncer.pid
  # auth_type=trust still wants the user listed in auth_file. Every database
  # name maps to the same-named database of our server ('*'), so per-test
  # databases work through pgbouncer too. server_login_retry is short so that
  # pgbouncer reconnects quickly after a server restart test; server_idle_timeout
  # is short so idle server connections to a test's database don't linger.
  echo '"postgres" ""' >"$dir/userlist.txt"
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=$dir port=$pg_port

[pgbouncer]
listen_port = $bouncer_port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
server_login_retry = 1
server_idle_timeout = 10
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $bouncer_pidfile
INI
  [[ $run_as == "$(id -un)" ]] || chown "$run_as:" "$dir/userlist.txt" "$dir/pgbouncer.ini"
  if ! as_pg "$pgbouncer_bin" -q -d "$dir/pgbouncer.ini"; then
    cat "$dir/pgbouncer.log" >&2 2>/dev/null
    die "pgbouncer did not start"
  fi
  ready=false
  for _ in $(seq 100); do
    if "$pg_bin/pg_isready" -q -h "$dir" -p "$bouncer_port" -U postgres -d postgres; then
      ready=true
      break
    fi
    sleep 0.1
  done
  if ! $ready; then
    cat "$dir/pgbouncer.log" >&2 2>/dev/null
    die "pgbouncer did not accept connections within 10s"
  fi
  export CLOCK_TEST_PGBOUNCER_URL="host=$dir port=$bouncer_port user=postgres dbname=postgres"
fi

# --- CMD ------------------------------------------------------------------------------

# CMD runs in the background so that a signal to this script is handled at once
# (bash runs traps only after a foreground child ends); the trap then stops CMD
# before the servers. A background command gets /dev/null as stdin unless told
# otherwise, so pass ours on when we have one (CI runs with none at all).
if { true <&0; } 2>/dev/null; then
  "$@" <&0 &
else
  "$@" &
fi
cmd_pid=$!
wait "$cmd_pid"
status=$?
cmd_pid=""
exit "$status"
