#!/usr/bin/env bash
# shellcheck disable=SC2034  # the package lists and their reasons are read by name (members, ${!why})
# Installs the Debian packages that building and testing clock need, and only
# those that are missing, saying which and why before it installs them. Fast
# and silent when everything is there, so the Makefile can run it before every
# build.
#
#   packaging/install-deps.sh          build and test (make deps, build, test, check)
#   packaging/install-deps.sh --demo   only what building clock needs (make demo):
#                                      the toolchain and the libraries, no servers
#                                      or test tools
#   packaging/install-deps.sh --bench  build and test, and the benchmarks' tools (make bench)
#   packaging/install-deps.sh --check  only report what is missing (exit 1 if any)
#   (--check combines with --demo or --bench: --check --demo)
set -euo pipefail

# The lists, one per purpose; each says why its packages are here, and that
# reason is printed before they are installed.
BUILD_WHY="the toolchain that builds clock (ccache: make check's four builds and the upgrade test's build of the previous release share unchanged objects)"
BUILD=(g++ cmake make ninja-build pkg-config ccache)
LIBS_WHY="the libraries clock is built with (ARCHITECTURE.md, \"Libraries\")"
# libcurl4-openssl-dev: clock run --ping's HTTP client (the clock-ping.so
# module links it; the .deb's dependency on libcurl4 comes from dpkg-shlibdeps).
# libcpp-httplib-dev: clock serve's HTTP server (the clock-serve.so module
# links it, with the OpenSSL, zlib and brotli Debian builds it with).
# libmariadb-dev: MariaDB Connector/C, linked only into the MariaDB module
# (clock-mariadb.so).
LIBS=(libcli11-dev libpqxx-dev libpq-dev libsqlite3-dev libsodium-dev libtomlplusplus-dev
  libspdlog-dev nlohmann-json3-dev libcurl4-openssl-dev libcpp-httplib-dev libmariadb-dev)
# doctest for the unit and integration tests; a throwaway PostgreSQL 15 and
# pgbouncer per test run (tests/helpers/with-postgres.sh), the sqlite3 shell,
# a throwaway MariaDB 10.11 per MariaDB test entry (tests/helpers/with-mariadb.sh)
# with its client for the tests' SQL, and galera-4 for the multi-writer tests
# (tests/helpers/with-galera.sh, ctest mariadb-galera; rsync for its state
# transfers); tmux for terminal tests, faketime for clock-skew tests, bindfs for a FUSE
# mount (a file system SQLite refuses) in the SQLite fault tests;
# python3-jsonschema validates the JSON output against
# packaging/schema/*.schema.json (run with /usr/bin/python3, not a pyenv one),
# and runs the documentation's blocks (tests/docs); prometheus for promtool,
# which parses and lints `clock status --format prometheus` and checks and
# unit-tests the shipped alert rules (promtool check rules / test rules). The package has
# the server too: its postinst enables prometheus.service, and starts it where
# systemd runs (not in containers, whose policy-rc.d forbids starts).
TEST_WHY="the tests (make test, make check): doctest, a throwaway PostgreSQL and pgbouncer, a throwaway MariaDB, tmux, faketime, bindfs, JSON Schema and promtool checks, headless chromium (clock serve's page)"
TEST=(doctest-dev postgresql pgbouncer mariadb-server mariadb-client galera-4 rsync sqlite3 tmux faketime
  bindfs python3 python3-jsonschema prometheus chromium)
# dpkg-dev for dpkg-buildflags and dpkg-shlibdeps, man-db for man -l, lintian
# to lint the .deb, bash-completion and zsh to load the completions it ships
# (tests/package/test_deb.sh, run by make check).
PACKAGE_WHY="make package and the .deb's test: dpkg-dev, man-db, lintian, and bash-completion and zsh to try the completions"
PACKAGE=(dpkg-dev man-db lintian bash-completion zsh)
# libclang-rt-14-dev holds libFuzzer and the sanitizer runtimes (bookworm's
# clang is 14).
TOOLS_WHY="the fuzzers (clang) and make format / check-format (clang-format)"
TOOLS=(clang libclang-rt-14-dev clang-format)
# etcd and etcdctl to compare with, and python3 for its timing helper.
# pgbench comes with postgresql, flock with util-linux.
BENCH_WHY="make bench: etcd to compare with, python3 for the timing helper"
BENCH=(etcd-server etcd-client python3)

check_only=false
groups=(BUILD LIBS TEST PACKAGE TOOLS)
for arg in "$@"; do
  case "$arg" in
    --check) check_only=true ;;
    --demo) groups=(BUILD LIBS) ;;
    --bench) groups=(BUILD LIBS TEST PACKAGE TOOLS BENCH) ;;
    *) echo "usage: $0 [--check] [--demo | --bench]" >&2; exit 64 ;;
  esac
done
# members GROUP: the packages of list GROUP, one a line.
members() { eval 'printf "%s\n" "${'"$1"'[@]}"'; }
DEPS=()
for group in "${groups[@]}"; do
  mapfile -t -O "${#DEPS[@]}" DEPS < <(members "$group")
done

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
  grep -qxF -- "$pkg" <<<"$installed" || [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

# What is missing, group by group, and why each group is needed (a package
# in two groups is named under the first).
echo "install-deps: missing, with what needs them:" >&2
named=" "
for group in "${groups[@]}"; do
  wanted=()
  while read -r pkg; do
    if [[ " ${missing[*]} " == *" $pkg "* && $named != *" $pkg "* ]]; then
      wanted+=("$pkg")
      named+="$pkg "
    fi
  done < <(members "$group")
  why=${group}_WHY
  [[ ${#wanted[@]} -gt 0 ]] && echo "install-deps:   ${wanted[*]}: ${!why}" >&2
done

install_cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if $check_only; then
  echo "install-deps: install them with: $install_cmd" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: as root, run: $install_cmd" >&2
  echo "install-deps: (or: sudo $0 $*)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
