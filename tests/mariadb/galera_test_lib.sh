# shellcheck shell=bash
# What the Galera tests (test_galera.sh, test_galera_node_loss.sh,
# test_galera_isolation.sh) share:
# the skip rule without a cluster, the clock binary, node control, a scratch
# directory with an empty config, the check helpers and the summary. Sourced
# after `db` names the test's database.
# Exits 77 (skipped) without a cluster; in CI that is a failure.

if [[ -z ${CLOCK_TEST_GALERA_DIR:-} ]]; then
  [[ ${CI:-} == true ]] && { echo "CLOCK_TEST_GALERA_DIR not set (run under with-galera.sh)" >&2; exit 1; }
  echo "skipped: no Galera cluster (run under tests/helpers/with-galera.sh)" >&2
  exit 77
fi
clock=${CLOCK_BINARY:?CLOCK_BINARY names the clock binary}
node_ctl=${CLOCK_TEST_GALERA_NODE:?CLOCK_TEST_GALERA_NODE names galera-node.sh}
work=$(mktemp -d /tmp/clock-galera-test.XXXXXX)
: >"$work/clock.toml"
failures=0
checks=0

check() {
  local what=$1
  shift
  checks=$((checks + 1))
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; failures=$((failures + 1)); fi
}
same() { [[ $1 == "$2" ]] || { echo "     got '$1', want '$2'" >&2; return 1; }; }
port() { local var=CLOCK_TEST_GALERA_PORT_$1; echo "${!var}"; }
# on_node N STATEMENT: runs STATEMENT on node N as root, prints the rows.
on_node() { "$node_ctl" sql "$1" "$2"; }
# CONFIG: another config file for one call (default: the empty one).
run_clock() { HOME="$work" XDG_CONFIG_HOME="$work" CLOCK_CONFIG="${CONFIG:-$work/clock.toml}" "$clock" "$@"; }

# url N: every node, node N first (a host on node N fails over to the others).
url() {
  local first=$1 hosts="" n
  for n in "$first" $(((first % 3) + 1)) $((((first + 1) % 3) + 1)); do
    hosts+="${hosts:+,}127.0.0.1:$(port "$n")"
  done
  echo "mariadb://root@$hosts/${db:?}"
}
only() { echo "mariadb://root@127.0.0.1:$(port "$1")/${db:?}"; }
# await_held URL RESOURCE: waits (up to 30 s) until RESOURCE has a holder.
await_held() {
  for _ in $(seq 300); do
    run_clock --database "$1" status --format json "$2" 2>/dev/null | grep -q '"holders": \[$' && return 0
    sleep 0.1
  done
  echo "     $2 never got a holder" >&2
  return 1
}
# steady_status N: the status JSON read on node N alone, without what depends
# on the instant it is read (a renewal may come between two nodes' reads).
steady_status() {
  run_clock --database "$(only "$1")" status --format json 2>/dev/null | python3 -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("now", "renewed_at", "expires_at") and not k.endswith(("_in_ms", "_for_ms"))}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(sys.stdin)), sort_keys=True))'
}

# history_of N: the count, last id and token sum of the history, read on node N.
history_of() { on_node "$1" "SELECT COUNT(*), COALESCE(MAX(id), 0), COALESCE(SUM(token), 0) FROM ${db:?}.history"; }

# Drops the test's database, prints the summary; exits 1 (keeping $work)
# if a check failed.
finish() {
  on_node 1 "DROP DATABASE ${db:?}"
  echo "$checks checks, $failures failed"
  if [[ $failures -gt 0 ]]; then
    echo "kept $work" >&2
    exit 1
  fi
  rm -rf "$work"
}
