#!/usr/bin/env bash
# tests/bench/postgres_profile.sh: where a PostgreSQL server spends its time
# on `clock run -- true`, statement by statement and function by function.
# Not part of `make bench`: a tool for the next change to the routines.
#
#   tests/helpers/with-postgres.sh tests/bench/postgres_profile.sh [CLOCK] [RUNS]
#
# Loads pg_stat_statements (track = all, with planning) and track_functions
# into the throwaway server of with-postgres.sh, restarts it, then runs RUNS
# (100) `clock run -r rN -- true` on ten resources, first with a new
# connection each (as cron runs them), then through pgbouncer (warm
# backends), and prints for each: the client's statements, the statements
# inside the routines, and the routines' own time (self, ms). CLOCK defaults
# to build-release/clock (`make bench` builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."
clock=${1:-$PWD/build-release/clock}
runs=${2:-100}
: "${CLOCK_TEST_PG_URL:?run under tests/helpers/with-postgres.sh}"

cat >>"$CLOCK_TEST_PG_DATA/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
track_functions = all
CONF
tests/helpers/pg-ctl.sh restart >/dev/null
sql() { psql "$CLOCK_TEST_PG_URL" -X -q -v ON_ERROR_STOP=1 "$@"; }
sql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
"$clock" --database "$CLOCK_TEST_PG_URL" init >/dev/null

report() {
  local shown="left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS statement"
  sql -c "SELECT calls, round(total_exec_time::numeric / $runs, 2) AS exec_ms_per_run,
                 round(total_plan_time::numeric / $runs, 2) AS plan_ms_per_run, $shown
          FROM pg_stat_statements WHERE toplevel AND query LIKE '%clock%'
          ORDER BY total_exec_time + total_plan_time DESC LIMIT 10"
  sql -c "SELECT calls, round(total_exec_time::numeric / $runs, 2) AS exec_ms_per_run, $shown
          FROM pg_stat_statements WHERE NOT toplevel
          ORDER BY total_exec_time DESC LIMIT 20"
  sql -c "SELECT funcname, calls, round(self_time::numeric / $runs, 2) AS self_ms_per_run
          FROM pg_stat_user_functions ORDER BY self_time DESC LIMIT 20"
}

for way in "a new connection each" "through pgbouncer"; do
  url=$CLOCK_TEST_PG_URL
  if [[ $way == "through pgbouncer" ]]; then
    url=$CLOCK_TEST_PGBOUNCER_URL
    # Warm the pool's backends first: this way measures warm ones.
    for i in $(seq 20); do "$clock" --database "$url" run -r "r$((i % 10))" -- true; done
  fi
  sql -c "SELECT pg_stat_statements_reset(), pg_stat_reset()" >/dev/null
  for i in $(seq "$runs"); do "$clock" --database "$url" run -r "r$((i % 10))" -- true; done
  echo "== $runs runs, $way"
  report
done
