# shellcheck shell=bash
# What the Galera tests (test_galera.sh, test_galera_node_loss.sh) share:
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
