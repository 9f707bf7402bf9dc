# shellcheck shell=bash
# shellcheck disable=SC2317  # shellcheck 0.9 takes functions called from traps for dead code
# What the with-*.sh helpers share: their messages, the rule for a missing
# server (fatal in CI, a warning elsewhere), and stopping the command they
# wrap. Sourced after `helper_name` is set (with-postgres, with-mariadb...).

die() { echo "${helper_name:?}: $*" >&2; exit 1; }
warn() { echo "${helper_name:?}: warning: $*" >&2; }

is_ci() { case "${CI:-}" in true | TRUE | 1 | yes) return 0 ;; *) return 1 ;; esac; }

# A missing tool: fatal in CI, where every test must run; a warning elsewhere.
missing() {
  if is_ci; then
    die "$1 (CI=true, so this is fatal; run 'make deps' as root to install it)"
  fi
  warn "$1; running without it (install it with 'make deps' as root)"
}

# True while process $1 runs. A daemon's exited process can stay a zombie for a
# while (its parent is init, which may reap slowly), and kill -0 succeeds on one.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# Process $1 and all its descendants, children first.
process_tree() {
  local child
  for child in $(pgrep -P "$1"); do process_tree "$child"; done
  echo "$1"
}

# Runs a command as user $1 from directory $2 (the server's user may not be
# able to read the caller's cwd, and initdb, pg_ctl and mariadbd fail there).
run_as_in() {
  local user=$1 dir=$2
  shift 2
  if [[ $user == "$(id -un)" ]]; then
    (cd "$dir" && "$@")
  else
    (cd "$dir" && runuser -u "$user" -- "$@")
  fi
}

# Stops the wrapped command $1 (when the helper is interrupted) and what it
# started: a background command ignores SIGINT, and its children would
# outlive it and hold the server. SIGTERM, up to 10 s, then SIGKILL.
stop_command() {
  [[ -n $1 ]] && alive "$1" || return 0
  local pids
  pids=$(process_tree "$1")
  # shellcheck disable=SC2086  # a list of pids
  kill -TERM $pids 2>/dev/null
  for _ in $(seq 100); do alive "$1" || break; sleep 0.1; done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  wait "$1" 2>/dev/null
}
