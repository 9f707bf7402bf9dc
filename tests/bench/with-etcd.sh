#!/usr/bin/env bash
# shellcheck disable=SC2317  # shellcheck 0.9 takes functions called from traps for dead code
# with-etcd.sh CMD [ARG...]
#
# Runs CMD beside a throwaway single-member etcd (Debian's etcd-server) that
# listens on 127.0.0.1 only, then stops it and deletes its data, whatever CMD
# did. Exports BENCH_ETCD (host:port of its client endpoint) and ETCDCTL_API=3.
# Exits with CMD's status.
#
# The data dir is on tmpfs (/dev/shm) when there is one: the PostgreSQL of
# with-postgres.sh runs with fsync=off, and etcd, which fsyncs its log on
# every write, would otherwise be measured against a disk that PostgreSQL
# never waits for. That makes etcd as fast as it can be here.
set -uo pipefail

die() { echo "with-etcd: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || { echo "usage: $0 CMD [ARG...]" >&2; exit 64; }
command -v etcd >/dev/null || die "etcd not found (Debian package etcd-server; make bench installs it)"
command -v etcdctl >/dev/null || die "etcdctl not found (Debian package etcd-client)"

dir="" etcd_pid="" cmd_pid=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  if [[ -n $cmd_pid ]] && kill -0 "$cmd_pid" 2>/dev/null; then
    kill -TERM "$cmd_pid" 2>/dev/null
    wait "$cmd_pid" 2>/dev/null
  fi
  if [[ -n $etcd_pid ]]; then
    kill -TERM "$etcd_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$etcd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$etcd_pid" 2>/dev/null
    wait "$etcd_pid" 2>/dev/null
  fi
  [[ -n $dir ]] && rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

base=/dev/shm
[[ -d $base && -w $base ]] || base=/tmp
dir=$(mktemp -d "$base/clock-etcd.XXXXXX") || die "cannot create a temp dir in $base"

# Two free loopback ports, from the kernel.
read -r client_port peer_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')

client=http://127.0.0.1:$client_port
peer=http://127.0.0.1:$peer_port
etcd --name bench --data-dir "$dir/data" \
  --listen-client-urls "$client" --advertise-client-urls "$client" \
  --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
  --initial-cluster "bench=$peer" --initial-cluster-state new \
  >"$dir/etcd.log" 2>&1 &
etcd_pid=$!

export ETCDCTL_API=3
export BENCH_ETCD=127.0.0.1:$client_port
export BENCH_ETCD_PID=$etcd_pid  # for the server CPU of `etcdctl lock` (mariadb.sh)
ready=false
for _ in $(seq 100); do
  if etcdctl --endpoints="$BENCH_ETCD" endpoint health >/dev/null 2>&1; then
    ready=true
    break
  fi
  kill -0 "$etcd_pid" 2>/dev/null || break
  sleep 0.1
done
$ready || { tail -n 20 "$dir/etcd.log" >&2; die "etcd did not become healthy within 10s"; }

# In the background, so that a signal to this script is handled at once.
"$@" &
cmd_pid=$!
wait "$cmd_pid"
status=$?
cmd_pid=""
exit "$status"
