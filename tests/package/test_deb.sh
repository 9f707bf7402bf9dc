#!/usr/bin/env bash
# Checks a built clock .deb without installing it: unpacks it (dpkg -x) into a
# scratch root and checks the control fields, the installed binary, the man
# page, the conffile, the completions, the gc timer and the docs. Builds
# nothing: make the package first.
#
#   make package && bash tests/package/test_deb.sh build-pkg/clock_*.deb
#
# Prints one line per check and a closing "N passed, N failed"; exits 1 if any
# check failed, 2 on a usage error. Needs dpkg-deb and man (man-db); uses
# readelf, zsh and bash-completion when they are there.
# The bash -c '...' checks expand their $1, $2 inside, on purpose.
# shellcheck disable=SC2016
set -uo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 PATH/clock_VERSION_ARCH.deb (make package builds it in build-pkg/)" >&2
  exit 2
fi
deb=$1
for tool in dpkg-deb man; do
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
shlib_depends() { [[ $depends == *libc6* && $depends == *libpqxx* && $depends == *libsqlite3* ]]; }
long_description() { [[ -n $(head -n 1 <<<"$description") && $(wc -l <<<"$description") -ge 3 ]]; }
# dpkg-deb -c lines: MODE OWNER/GROUP SIZE DATE TIME PATH.
not_root_owned() { awk '$2 != "root/root"' <<<"$listing"; }
writable_by_others() { awk '$1 !~ /^l/ && ($1 ~ /^.....w/ || $1 ~ /^........w/)' <<<"$listing"; }
check "Depends (from dpkg-shlibdeps) has libc6, libpqxx and libsqlite3" shlib_depends
check "Description has a synopsis and a long description" long_description
check "every file is owned by root:root" test -z "$(not_root_owned)"
check "nothing is group- or world-writable" test -z "$(writable_by_others)"

# --- the binary -------------------------------------------------------------------
clock=$fs/usr/bin/clock
version=$(field Version)
upstream=${version%-*}
check "/usr/bin/clock is executable" test -x "$clock"
check "clock --version prints clock $upstream" \
  bash -c 'out=$("$1" --version) && [[ $out == "clock $2" ]]' _ "$clock" "$upstream"
if command -v readelf >/dev/null; then
  check "the binary is stripped (no .symtab, .comment, .debug_*)" \
    bash -c '! readelf -S --wide "$1" | grep -E "\.(symtab|comment|debug_)"' _ "$clock"
else
  skip "the binary is stripped (no readelf)"
fi

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
check "clock accepts the shipped /etc/clock/clock.toml" \
  env -u CLOCK_DATABASE_URL -u CLOCK_NAMESPACE -u CLOCK_LOG_LEVEL \
  "$clock" --config "$fs/etc/clock/clock.toml" --database "sqlite:$root/state/clock.db" status

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
    test "$(complete_bash clock '')" = "acquire gc history init release renew run status "
  check "bash completes status --format" \
    test "$(complete_bash clock status --format '')" = "json prometheus table "
  check "bash completes run --on-lease-lost" \
    test "$(complete_bash clock run --on-lease-lost '')" = "kill warn "
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
check "the cron alternative is an example, not in /etc/cron.d" \
  bash -c 'test -f "$1/usr/share/doc/clock/examples/cron.d/clock-gc" && test ! -e "$1/etc/cron.d"' _ "$fs"

# --- docs ------------------------------------------------------------------------
doc=$fs/usr/share/doc/clock
check "copyright is machine-readable (DEP-5)" \
  bash -c '[[ $(head -n 1 "$1") == "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ]] &&
           grep -q "^License: Expat" "$1"' _ "$doc/copyright"
check "changelog.Debian.gz's top entry is version $version" \
  bash -c '[[ $(gzip -dc "$1" | head -n 1) == "clock ($2) "* ]]' _ "$doc/changelog.Debian.gz" "$version"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
