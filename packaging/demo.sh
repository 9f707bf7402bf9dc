#!/usr/bin/env bash
# The zero-setup tour behind `make demo`: with nothing configured, clock keeps
# its locks in SQLite at ${XDG_STATE_HOME:-$HOME/.local/state}/clock/clock.db.
# A job runs under a lock; while it holds, `clock status` shows it and a second,
# non-blocking `clock run` on the same resource is refused with exit code 75.
# Then `clock history` shows the grant and the release.
set -euo pipefail
cd "$(dirname "$0")/.."

clock=${CLOCK_BINARY:-./build/clock}
resource=demo.job
[[ -x $clock ]] || { echo "demo: $clock not found; run 'make build' first" >&2; exit 1; }

# The demo is about the defaults: an owner id inherited from a surrounding
# `clock run` would make the second run re-enter instead of being refused, and
# a database URL or config from the environment would hide the default path.
unset CLOCK_OWNER CLOCK_DATABASE_URL CLOCK_CONFIG CLOCK_NAMESPACE

bold="" plain=""
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*"; "$@"; }

job_pid=""
# If the demo stops early, stop the job too (clock forwards SIGTERM to it and
# releases the lock).
trap '[[ -n $job_pid ]] && kill "$job_pid" 2>/dev/null; true' EXIT

step "the database: ${XDG_STATE_HOME:-$HOME/.local/state}/clock/clock.db (the default; nothing to set up)"

step "start a job under the lock '$resource' (in the background)"
# shellcheck disable=SC2016  # $CLOCK_TOKEN is for the job's shell: clock sets it
job='echo "job running with token $CLOCK_TOKEN"; sleep 4'
printf "\$ %s run -r %s -- sh -c '%s' &\n" "$clock" "$resource" "$job"
"$clock" run -r "$resource" -- sh -c "$job" &
job_pid=$!

# Wait, at most 10 s, until the lock shows up as held.
for ((i = 0; i < 100; i++)); do
  if "$clock" status --format json 2>/dev/null | grep -q "\"$resource\""; then
    break
  fi
  if ! kill -0 "$job_pid" 2>/dev/null; then
    echo "demo: the job ended before it showed up in 'clock status'" >&2
    exit 1
  fi
  sleep 0.1
done
if ((i == 100)); then
  echo "demo: '$resource' did not show up in 'clock status --format json' within 10s" >&2
  exit 1
fi

step "who holds what"
show "$clock" status

step "a second job on the same resource, told not to wait (-n), is refused"
set +e
show "$clock" run -n -r "$resource" -- true
code=$?
set -e
echo "exit code: $code (75 means: not acquired, held by another)"
if ((code != 75)); then
  echo "demo: expected exit code 75" >&2
  exit 1
fi

step "the first job finishes and releases the lock"
set +e
wait "$job_pid"
job_status=$?
set -e
job_pid=""
echo "job exit code: $job_status"
((job_status == 0)) || { echo "demo: the job failed" >&2; exit 1; }

step "what happened"
show "$clock" history --limit 5
