#!/usr/bin/env bash
# Checks a built clock .deb without touching the system: unpacks it (dpkg -x)
# into a scratch root and checks the control fields, the binary, the man page,
# the conffile, the completions, the gc timer, the docs and JSON Schemas; then
# installs, removes and purges it with dpkg --root in another scratch root, and
# runs lintian. Builds nothing: make the package first (make check does both).
#
#   make package && bash tests/package/test_deb.sh build-pkg/clock_*.deb
#
# Prints one line per check and a closing "N passed, N failed"; exits 1 if any
# check failed, 2 on a usage error. Needs dpkg, dpkg-deb and man (man-db); uses
# readelf, zsh, bash-completion, lintian and /usr/bin/python3's jsonschema
# when they are there.
# The bash -c '...' checks expand their $1, $2 inside, on purpose.
# shellcheck disable=SC2016
set -uo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 PATH/clock_VERSION_ARCH.deb (make package builds it in build-pkg/)" >&2
  exit 2
fi
deb=$1
for tool in dpkg dpkg-deb dpkg-query man; do
  command -v "$tool" >/dev/null || { echo "test_deb: needs $tool" >&2; exit 2; }
done

root=$(mktemp -d "${TMPDIR:-/tmp}/clock-deb.XXXXXX")
trap 'rm -rf "$root"' EXIT

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }
# check NAME COMMAND...: passes when COMMAND exits 0.
check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(tail -n 3 <<<"$out")"; fi
}
skip() { echo "skip $1"; }

field() { dpkg-deb -f "$deb" "$1"; }

# --- the archive and its control fields ----------------------------------------
check "dpkg -x unpacks the package" dpkg-deb -x "$deb" "$root/fs"
mkdir -p "$root/fs"
fs=$root/fs
check "Package is clock" test "$(field Package)" = clock
check "Section is admin, Priority optional" \
  test "$(field Section) $(field Priority)" = "admin optional"
check "Maintainer" test "$(field Maintainer)" = "clock developers <clock@example.invalid>"
depends=$(field Depends)
description=$(field Description)
listing=$(dpkg-deb -c "$deb")
# clock links SQLite and its C++ runtime in (CLOCK_STATIC_RUNTIME); only the
# PostgreSQL module brings shared libraries beyond libc.
shlib_depends() { [[ $depends == *libc6* && $depends == *libpqxx* && $depends != *libsqlite3* ]]; }
static_runtime() { ! ldd "$fs/usr/bin/clock" | grep -Eq 'libstdc\+\+|libsqlite3|libspdlog|libfmt|libtomlplusplus'; }
long_description() { [[ -n $(head -n 1 <<<"$description") && $(wc -l <<<"$description") -ge 3 ]]; }
# dpkg-deb -c lines: MODE OWNER/GROUP SIZE DATE TIME PATH.
not_root_owned() { awk '$2 != "root/root"' <<<"$listing"; }
writable_by_others() { awk '$1 !~ /^l/ && ($1 ~ /^.....w/ || $1 ~ /^........w/)' <<<"$listing"; }
check "Depends (from dpkg-shlibdeps) has libc6 and libpqxx, not libsqlite3 (linked in)" shlib_depends
# The ping module (clock-ping.so) links libcurl: its package comes from
# dpkg-shlibdeps too.
curl_depends() { [[ $depends == *libcurl4* ]]; }
check "Depends (from dpkg-shlibdeps) has libcurl4, for clock run --ping's module" curl_depends
# The MariaDB module (clock-mariadb.so) links Connector/C: libmariadb3.
mariadb_depends() { [[ $depends == *libmariadb3* ]]; }
check "Depends (from dpkg-shlibdeps) has libmariadb3, for the MariaDB module" mariadb_depends
check "the alert rules, their unit tests and the Grafana dashboard are in /usr/share/clock" \
  test -f "$fs/usr/share/clock/prometheus/clock.rules.yml" \
  -a -f "$fs/usr/share/clock/prometheus/clock.rules.test.yml" \
  -a -f "$fs/usr/share/clock/grafana/clock-dashboard.json"
if command -v promtool >/dev/null; then
  check "the installed alert rules pass their unit tests (promtool test rules)" \
    promtool test rules "$fs/usr/share/clock/prometheus/clock.rules.test.yml"
else
  skip "the installed alert rules pass their unit tests (no promtool)"
fi
check "Description has a synopsis and a long description" long_description
check "every file is owned by root:root" test -z "$(not_root_owned)"
check "nothing is group- or world-writable" test -z "$(writable_by_others)"

# --- the binary -------------------------------------------------------------------
clock=$fs/usr/bin/clock
version=$(field Version)
upstream=${version%-*}
check "/usr/bin/clock is executable" test -x "$clock"
check "clock loads no shared C++ runtime, SQLite, spdlog, fmt or toml++" static_runtime
# clock exports what its PostgreSQL module and libpqxx use (cmake/ModuleImports.cmake),
# not the whole static runtime (~6,300 symbols), and the way to the logger
# registry among them: spdlog is compiled into clock (src/static_runtime/), and
# the module reaches clock's registry through spdlog::default_logger_raw().
lean_exports() {
  local symbols
  symbols=$(nm -D --defined-only "$clock") || return 1
  [[ $(wc -l <<<"$symbols") -lt 2000 && $symbols == *" _ZN6spdlog18default_logger_rawEv"* ]]
}
if command -v nm >/dev/null; then
  check "clock exports under 2,000 symbols, spdlog's default logger among them" lean_exports
else
  skip "clock's exports (no nm)"
fi
check "clock --version prints clock $upstream" \
  bash -c 'out=$("$1" --version) && [[ $out == "clock $2" ]]' _ "$clock" "$upstream"
if command -v readelf >/dev/null; then
  check "the binary is stripped (no .symtab, .comment, .debug_*)" \
    bash -c '! readelf -S --wide "$1" | grep -E "\.(symtab|comment|debug_)"' _ "$clock"
else
  skip "the binary is stripped (no readelf)"
fi

# The guard, a fork of the installed clock, leads the command's process group.
check "clock run puts the command in a process group led by its guard (clock-guard)" \
  bash -c 'leader=$("$1" --database "sqlite:$2" run -r guard -- \
             sh -c "cat /proc/\$(ps -o pgid= -p \$\$ | tr -d \" \")/comm") &&
           [[ $leader == clock-guard ]] || { echo "group leader: $leader"; false; }' \
  _ "$clock" "$root/state/guard.db"

# --- the man page -----------------------------------------------------------------
man_gz=$fs/usr/share/man/man1/clock.1.gz
check "man page at /usr/share/man/man1/clock.1.gz" test -f "$man_gz"
check "man page is gzip -9n (no name, no timestamp)" \
  bash -c 'gzip -t "$1" && [[ $(od -An -tx1 -j3 -N5 "$1" | tr -d " ") == 0000000000 ]]' _ "$man_gz"
check "man -l renders it (exit 0)" bash -c 'man -l "$1" >/dev/null' _ "$man_gz"
check "man -l output mentions 'clock run'" \
  bash -c 'MANWIDTH=80 man -l "$1" 2>/dev/null | grep -q "clock run"' _ "$man_gz"
check "man --warnings: no groff warnings" \
  bash -c 'w=$(MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null); [[ -z $w ]] || { echo "$w"; false; }' _ "$man_gz"

# --- the conffile -----------------------------------------------------------------
conffiles=$(dpkg-deb -I "$deb" conffiles 2>&1)
check "conffiles lists /etc/clock/clock.toml" grep -qx /etc/clock/clock.toml <<<"$conffiles"
check "/etc/clock/clock.toml is in the package" test -f "$fs/etc/clock/clock.toml"
# status exits 1 when nothing is held (its documented exit status), after
# the line that names the database it read.
check "clock accepts the shipped /etc/clock/clock.toml" \
  bash -c 'out=$(env -u CLOCK_DATABASE_URL -u CLOCK_NAMESPACE -u CLOCK_LOG_LEVEL \
             "$1" --config "$2" --database "sqlite:$3" status); rc=$?
           [[ $rc -eq 1 && $out == "database: sqlite:$3"$'"'"'\n'"'"'"no locks held" ]] ||
             { echo "exit $rc: $out"; false; }' \
  _ "$clock" "$fs/etc/clock/clock.toml" "$root/state/clock.db"

# --- completions ------------------------------------------------------------------
bash_comp=$fs/usr/share/bash-completion/completions/clock
zsh_comp=$fs/usr/share/zsh/vendor-completions/_clock
check "bash completion at /usr/share/bash-completion/completions/clock" test -f "$bash_comp"
check "bash completion parses (bash -n)" bash -n "$bash_comp"
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
  # Complete `clock status --format ` and `clock ` the way bash would.
  complete_bash() {
    bash -c '
      source /usr/share/bash-completion/bash_completion
      source "$1"; shift
      COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
      COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
      _clock clock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
      printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$bash_comp" "$@"
  }
  check "bash completes the commands" \
    test "$(complete_bash clock '')" = "acquire check config gc history init missed release renew run serve status "
  check "bash completes status --format" \
    test "$(complete_bash clock status --format '')" = "json prometheus table "
  check "bash completes run --on-lease-lost" \
    test "$(complete_bash clock run --on-lease-lost '')" = "kill warn "
  check "bash completes run --leftovers" \
    test "$(complete_bash clock run --leftovers '')" = "kill wait "
  check "bash completes missed --format" \
    test "$(complete_bash clock missed --format '')" = "json nagios table "
else
  skip "bash completion behaviour (bash-completion not installed)"
fi
check "zsh completion at /usr/share/zsh/vendor-completions/_clock" test -f "$zsh_comp"
check "zsh completion starts with #compdef clock" \
  bash -c '[[ $(head -n 1 "$1") == "#compdef clock" ]]' _ "$zsh_comp"
if command -v zsh >/dev/null; then
  check "zsh completion parses (zsh -n)" zsh -n "$zsh_comp"
else
  skip "zsh completion parses (no zsh)"
fi

# --- gc: systemd timer and service, cron example ------------------------------------
service=$fs/lib/systemd/system/clock-gc.service
timer=$fs/lib/systemd/system/clock-gc.timer
check "clock-gc.service in /lib/systemd/system" test -f "$service"
check "clock-gc.timer in /lib/systemd/system" test -f "$timer"
check "the service runs /usr/bin/clock ... gc" grep -Eq '^ExecStart=/usr/bin/clock( .*)? gc$' "$service"
check "the timer fires every 10 minutes with a random delay" \
  bash -c 'grep -qx "OnCalendar=\*:0/10" "$1" && grep -q "^RandomizedDelaySec=" "$1" &&
           grep -qx "WantedBy=timers.target" "$1"' _ "$timer"
# systemd-analyze verify, with ExecStart pointing at the unpacked binary; it
# exits 0 on some errors (an unknown Type=, say), so any output fails too.
verify_units() {
  local dir out rc
  dir=$(mktemp -d "$root/units.XXXXXX") || return
  sed "s|/usr/bin/clock|$clock|" "$service" >"$dir/clock-gc.service"
  cp "$timer" "$dir/"
  out=$(systemd-analyze verify --man=no "$dir/clock-gc.timer" "$dir/clock-gc.service" 2>&1)
  rc=$?
  [[ -z $out ]] || echo "$out"
  [[ $rc -eq 0 && -z $out ]]
}
if command -v systemd-analyze >/dev/null; then
  check "systemd-analyze verify accepts the units" verify_units
else
  skip "systemd-analyze verify (no systemd-analyze)"
fi
# --- serve: its unit, installed and not enabled ----------------------------------------
serve_unit=$fs/lib/systemd/system/clock-serve.service
check "clock-serve.service in /lib/systemd/system, not enabled (no wants link)" \
  bash -c 'test -f "$1" && test ! -e "$2/etc/systemd/system/multi-user.target.wants"' _ "$serve_unit" "$fs"
check "the serve service runs /usr/bin/clock ... serve" grep -Eq '^ExecStart=/usr/bin/clock( .*)? serve$' "$serve_unit"
check "clock-serve.so is installed beside the other modules" \
  bash -c 'ls "$1"/usr/lib/*/clock/clock-serve.so' _ "$fs"
check "clock-mariadb.so is installed beside the other modules" \
  bash -c 'ls "$1"/usr/lib/*/clock/clock-mariadb.so' _ "$fs"
check "the MariaDB roles are an example in /usr/share/doc/clock/examples/mariadb" \
  test -f "$fs/usr/share/doc/clock/examples/mariadb/roles.sql"
# The installed clock loads its MariaDB module: init --print-sql asks the
# module for its DDL and connects to nothing.
mariadb_module_loads() {
  local out
  : >"$root/empty.toml"
  out=$(HOME=$root CLOCK_CONFIG=$root/empty.toml "$clock" --database 'mariadb://nobody@db.invalid/clock' \
    init --print-sql 2>&1) || { echo "$out" | head -n 3; return 1; }
  [[ $out == *"CREATE TABLE"* && $out == *"PROCEDURE clock_try_acquire"* ]]
}
check "the installed clock loads its MariaDB module (init --print-sql)" mariadb_module_loads
verify_serve_unit() {
  local dir out rc
  dir=$(mktemp -d "$root/units.XXXXXX") || return
  sed "s|/usr/bin/clock|$clock|" "$serve_unit" >"$dir/clock-serve.service"
  out=$(systemd-analyze verify --man=no "$dir/clock-serve.service" 2>&1)
  rc=$?
  [[ -z $out ]] || echo "$out"
  [[ $rc -eq 0 && -z $out ]]
}
if command -v systemd-analyze >/dev/null; then
  check "systemd-analyze verify accepts clock-serve.service" verify_serve_unit
else
  skip "systemd-analyze verify of clock-serve.service (no systemd-analyze)"
fi
check "the cron alternative is an example, not in /etc/cron.d" \
  bash -c 'test -f "$1/usr/share/doc/clock/examples/cron.d/clock-gc" && test ! -e "$1/etc/cron.d"' _ "$fs"

# --- docs ------------------------------------------------------------------------
doc=$fs/usr/share/doc/clock
check "copyright is machine-readable (DEP-5)" \
  bash -c '[[ $(head -n 1 "$1") == "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ]] &&
           grep -q "^License: Expat" "$1"' _ "$doc/copyright"
check "changelog.Debian.gz's top entry is version $version" \
  bash -c '[[ $(gzip -dc "$1" | head -n 1) == "clock ($2) "* ]]' _ "$doc/changelog.Debian.gz" "$version"

check "the JSON Schemas of status, history and missed are in /usr/share/doc/clock/schema" \
  test -f "$doc/schema/status.schema.json" -a -f "$doc/schema/history.schema.json" \
  -a -f "$doc/schema/missed.schema.json"
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  valid_schemas() {
    /usr/bin/python3 - "$@" <<'PY'
import json, sys, jsonschema
for path in sys.argv[1:]:
    schema = json.load(open(path))
    jsonschema.validators.validator_for(schema).check_schema(schema)
PY
  }
  check "the shipped schemas are valid JSON Schemas" \
    valid_schemas "$doc/schema/status.schema.json" "$doc/schema/history.schema.json" \
      "$doc/schema/missed.schema.json"
else
  skip "the shipped schemas are valid JSON Schemas (no python3-jsonschema)"
fi

# --- installed with dpkg into a scratch root --------------------------------------
# dpkg --root: an empty dpkg database in a scratch directory, so the package
# is really installed (files listed, conffile registered), not just unpacked.
# --force-depends: the scratch root has none of the libraries; the binary
# runs with the host's.
dpkg_root=$root/dpkg-root
mkdir -p "$dpkg_root/var/lib/dpkg/info" "$dpkg_root/var/lib/dpkg/updates"
touch "$dpkg_root/var/lib/dpkg/status"
scratch_dpkg() { dpkg --root="$dpkg_root" --force-depends --force-not-root --log=/dev/null "$@"; }
scratch_query() { dpkg-query --admindir="$dpkg_root/var/lib/dpkg" "$@"; }
check "dpkg --root installs the package into a scratch root" scratch_dpkg --install "$deb"
check "dpkg records it as installed" \
  test "$(scratch_query -W -f='${Status}' clock 2>&1)" = "install ok installed"
check "dpkg registered /etc/clock/clock.toml as a conffile" \
  bash -c '[[ $(dpkg-query --admindir="$1" -W -f="\${Conffiles}" clock) == *"/etc/clock/clock.toml "* ]]' \
  _ "$dpkg_root/var/lib/dpkg"
check "the installed clock --version prints clock $upstream" \
  bash -c 'out=$("$1" --version) && [[ $out == "clock $2" ]]' _ "$dpkg_root/usr/bin/clock" "$upstream"
check "man -l renders the installed page" \
  bash -c 'MANWIDTH=80 man -l "$1" 2>/dev/null | grep -q "EXIT STATUS"' \
  _ "$dpkg_root/usr/share/man/man1/clock.1.gz"
check "the installed clock --help works" \
  bash -c '"$1" status --help | grep -q "Exit status"' _ "$dpkg_root/usr/bin/clock"
# The documentation's set-up as a reader runs it with this package
# installed: the installed binary, the packaged /etc/clock/clock.toml as it
# ships, README's and docs/postgresql.md's blocks verbatim against a
# throwaway PostgreSQL that asks every login for its password
# (tests/docs/run_doc_blocks.py; the docs entry of ctest runs them without
# the package). Without PostgreSQL it is skipped, except under CI=true.
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
docs_with_package() {
  CLOCK_TEST_PG_AUTH=password "$source_dir/tests/helpers/with-postgres.sh" \
    python3 "$source_dir/tests/docs/run_doc_blocks.py" --clock "$1/usr/bin/clock" \
    --package-config "$1/etc/clock/clock.toml" "$source_dir/README.md" "$source_dir/docs/postgresql.md"
}
if command -v pg_ctlcluster >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
  [[ ${CI:-} == true ]]; then
  check "README's and docs/postgresql.md's set-up run with the package installed" \
    docs_with_package "$dpkg_root"
else
  skip "the documentation's set-up with the package installed (no PostgreSQL server)"
fi
check "dpkg --remove keeps the conffile, --purge removes it" \
  bash -c 'dpkg --root="$1" --force-not-root --log=/dev/null --remove clock &&
           test ! -e "$1/usr/bin/clock" && test -f "$1/etc/clock/clock.toml" &&
           dpkg --root="$1" --force-not-root --log=/dev/null --purge clock &&
           test ! -e "$1/etc/clock/clock.toml"' _ "$dpkg_root"

# --- lintian ----------------------------------------------------------------------
# Errors and warnings fail; info and pedantic tags are shown, not counted.
if command -v lintian >/dev/null; then
  lint() {
    local out rc
    out=$(lintian --fail-on error,warning --display-info "$deb" 2>&1)
    rc=$?
    [[ -z $out ]] || echo "$out" >&2
    return "$rc"
  }
  check "lintian: no errors or warnings" lint
else
  skip "lintian (not installed)"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
