#!/usr/bin/env bash
# Installs the Debian packages that building and testing clock need, and only
# those that are missing. Fast and silent when everything is there, so the
# Makefile can run it before every build.
#
#   packaging/install-deps.sh          install what is missing (needs root then)
#   packaging/install-deps.sh --check  only report what is missing (exit 1 if any)
#   packaging/install-deps.sh --bench  install what is missing, BENCH_DEPS too (make bench)
set -euo pipefail

# The one list. Keep it sorted by purpose; say why a package is here.
DEPS=(
  # toolchain
  g++ cmake make ninja-build pkg-config
  # libraries (see README.md, "Libraries")
  libcli11-dev libpqxx-dev libpq-dev libsqlite3-dev libsodium-dev libtomlplusplus-dev
  libspdlog-dev nlohmann-json3-dev doctest-dev
  # clock run --ping's HTTP client (the clock-ping.so module links it; the
  # .deb's dependency on libcurl4 comes from dpkg-shlibdeps)
  libcurl4-openssl-dev
  # test servers and tools: a throwaway PostgreSQL 15 and pgbouncer per test
  # run (tests/helpers/with-postgres.sh), the sqlite3 shell, tmux for terminal
  # tests, faketime for clock-skew tests, bindfs for a FUSE mount (a file system
  # SQLite refuses) in the SQLite fault tests
  postgresql pgbouncer sqlite3 tmux faketime bindfs
  # the output contracts (ctest output-*): python3-jsonschema validates the JSON
  # output against packaging/schema/*.schema.json (run with /usr/bin/python3,
  # not a pyenv one); prometheus for promtool, which parses and lints
  # `clock status --format prometheus`, and checks and unit-tests the shipped
  # alert rules (promtool check rules / test rules). The package has the server too: its
  # postinst enables prometheus.service, and starts it where systemd runs (not
  # in containers, whose policy-rc.d forbids starts).
  python3 python3-jsonschema prometheus
  # make package and its test (tests/package/test_deb.sh, run by make check):
  # dpkg-dev for dpkg-buildflags and dpkg-shlibdeps, man-db for man -l,
  # lintian to lint the .deb
  dpkg-dev man-db lintian
  # clang for the fuzzers (libclang-rt-14-dev holds libFuzzer and the sanitizer
  # runtimes; bookworm's clang is 14), clang-format for make format/check-format
  clang libclang-rt-14-dev clang-format
)

# Only for `make bench` (tests/bench): etcd and etcdctl to compare with, and
# python3 for its timing helper. pgbench comes with postgresql, flock with
# util-linux.
BENCH_DEPS=(etcd-server etcd-client python3)

check_only=false
case "${1:-}" in
  --check) check_only=true ;;
  --bench) DEPS+=("${BENCH_DEPS[@]}") ;;
  "") ;;
  *) echo "usage: $0 [--check | --bench]" >&2; exit 64 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: not a Debian-like system (no dpkg-query); install the equivalents of:" >&2
  echo "  ${DEPS[*]}" >&2
  exit 0
fi

# One dpkg-query call for the whole list (unknown packages print an error on
# stderr and are simply absent from stdout).
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${DEPS[@]}" 2>/dev/null \
  | awk '$2 == "installed" { print $1 }' || true)
missing=()
for pkg in "${DEPS[@]}"; do
  grep -qxF -- "$pkg" <<<"$installed" || missing+=("$pkg")
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

install_cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if $check_only; then
  echo "install-deps: missing: ${missing[*]}" >&2
  echo "install-deps: install them with: $install_cmd" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: these packages are missing: ${missing[*]}" >&2
  echo "install-deps: as root, run: $install_cmd" >&2
  echo "install-deps: (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
