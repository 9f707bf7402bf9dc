#!/usr/bin/env bash
# galera-node.sh COMMAND NODE [--faketime OFFSET]
#
# Controls one node of the throwaway three-node Galera cluster that
# with-galera.sh started (it exports CLOCK_TEST_GALERA_DIR, which this script
# reads). NODE is 1, 2 or 3.
#
#   start N [--faketime +3s]  start node N and wait until it is Synced; with
#                             --faketime its clock runs OFFSET ahead (libfaketime)
#   stop N                    clean shutdown, wait until the others see 2 nodes
#   kill N                    SIGKILL, no wait: what a crashed host looks like
#   wait-synced N             wait until node N reports Synced
#   wait-size N SIZE          wait until node N sees a cluster of SIZE nodes
#   sql N STATEMENT           run STATEMENT on node N as root, print the rows
#   pid N                     the server's pid (empty when it is down)
#
# Exit status: 0, or 1 with one line on stderr saying what failed.
set -uo pipefail

die() { echo "galera-node: $*" >&2; exit 1; }

[[ -n ${CLOCK_TEST_GALERA_DIR:-} && -d $CLOCK_TEST_GALERA_DIR ]] ||
  die "CLOCK_TEST_GALERA_DIR is not set: run under tests/helpers/with-galera.sh"
# shellcheck source=tests/helpers/galera_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/galera_cluster.sh"
galera_load_state "$CLOCK_TEST_GALERA_DIR"

[[ $# -ge 2 ]] || die "usage: $0 start|stop|kill|wait-synced|wait-size|sql|pid NODE [ARG]"
command=$1 node=$2
shift 2
[[ $node =~ ^[123]$ ]] || die "no node '$node' (the cluster has nodes 1, 2 and 3)"

case $command in
  start)
    faketime=""
    if [[ ${1:-} == --faketime ]]; then
      [[ -n ${2:-} ]] || die "--faketime needs an offset such as +3s"
      faketime=$2
    fi
    galera_start_node "$node" "$faketime" || exit 1
    galera_wait_synced "$node" || exit 1
    ;;
  stop) galera_stop_node "$node" || exit 1 ;;
  kill) galera_kill_node "$node" ;;
  wait-synced) galera_wait_synced "$node" || exit 1 ;;
  wait-size) galera_wait_cluster_size "$node" "${1:?a cluster size}" || exit 1 ;;
  sql) galera_sql "$node" "${1:?a statement}" ;;
  pid) galera_node_pid "$node" ;;
  *) die "unknown command '$command'" ;;
esac
