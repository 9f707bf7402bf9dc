# shellcheck shell=bash
# What the MariaDB procedure tests (test_procedures.sh)
# share: the skip rule without a server, the SQL directory under test, the
# root client on the test server's socket and the check helpers. Sourced
# after `db` names the test's database.
#
# CLOCK_TEST_MARIADB_SQL_DIR: the sql/mariadb directory to test (default:
# this checkout's), so a deliberately broken copy can be shown to fail.
# Exits 77 (skipped) without a server; in CI that is a failure.

if [[ -z ${CLOCK_TEST_MARIADB_SOCKET:-} ]]; then
  [[ ${CI:-} == true ]] && { echo "CLOCK_TEST_MARIADB_SOCKET not set (run under with-mariadb.sh)" >&2; exit 1; }
  echo "skipped: no MariaDB server (run under tests/helpers/with-mariadb.sh)" >&2
  exit 77
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034  # read by the tests that source this
sql_dir=${CLOCK_TEST_MARIADB_SQL_DIR:-$here/../../sql/mariadb}
socket=$CLOCK_TEST_MARIADB_SOCKET
failures=0
checks=0

as_root() { mariadb --protocol=socket -S "$socket" -uroot -N -B "$@"; }
q() { as_root "${db:?}" -e "$1"; }
# A procedure file is sent whole (one multi-statement query), as clock does.
apply() { as_root --delimiter='#@!' "${db:?}" <"$1"; }
check() {
  local what=$1
  shift
  checks=$((checks + 1))
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; failures=$((failures + 1)); fi
}
# Value of a Python expression over the JSON document $1 (bound as d).
js() { /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" <<<"$1"; }
same() { [[ $1 == "$2" ]] || { echo "     got '$1', want '$2'" >&2; return 1; }; }
# fails_with PATTERN CMD…: CMD fails with an error message matching PATTERN.
fails_with() {
  local pattern=$1 out
  shift
  if out=$("$@" 2>&1 >/dev/null); then echo "     succeeded" >&2; return 1; fi
  grep -Eq "$pattern" <<<"$out" || { echo "     $out" >&2; return 1; }
}
count() { q "SELECT COUNT(*) FROM $1"; }
