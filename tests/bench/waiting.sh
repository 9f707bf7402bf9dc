#!/usr/bin/env bash
# Measurement 5, the cost of waiting: one `clock run` holds a resource on
# PostgreSQL while 200 more wait for it; once all 200 are queued, the
# statements they make the server run in 10 s, from pg_stat_statements (every
# top-level statement, counted the moment it ends; suite.sh loads it), less
# what the same 10 s cost with the holder alone. xact_commit of
# pg_stat_database is shown beside it (backends report it up to a second or
# more late, so it is the rougher of the two).
source "$(dirname "$0")/lib.sh"

waiters=200
seconds=$(reps 10 5)
say "5. cost of waiting: $waiters waiters on PostgreSQL for ${seconds}s"

url=$(pg_url clock_wait)
psql_at "$BENCH_PG_URL" "DROP DATABASE IF EXISTS clock_wait" >/dev/null
psql_at "$BENCH_PG_URL" "CREATE DATABASE clock_wait" >/dev/null
init_store "$url"

pids=()
stop_all() {
  # SIGTERM: a waiter leaves the queue, the holder releases; then reap them.
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT

# counters: "statements transactions" of database clock_wait so far.
counters() {
  psql_at "$BENCH_PG_URL" "
    SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s
            JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'clock_wait')
           || ' ' ||
           (SELECT xact_commit + xact_rollback FROM pg_stat_database
            WHERE datname = 'clock_wait')" | tr -d '\n'
}

# rate SECONDS: "statements/s transactions/s" over SECONDS from now.
rate() {
  local s1 x1 s2 x2
  read -r s1 x1 <<<"$(counters)"
  sleep "$1"
  read -r s2 x2 <<<"$(counters)"
  echo "$(((s2 - s1) * 1000 / $1)) $(((x2 - x1) * 1000 / $1))"  # per 1000 s: one decimal
}

holder_marker=$BENCH_WORK/m5.held
# shellcheck disable=SC2016  # $0 is the child shell's
"$BENCH_CLOCK" --database "$url" run -r bench.wait -- sh -c 'touch "$0"; exec sleep 600' \
  "$holder_marker" </dev/null >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 300); do [[ -e $holder_marker ]] && break; sleep 0.1; done
[[ -e $holder_marker ]] || { echo "bench: the holder did not start" >&2; exit 1; }

sleep 1
read -r base_q base_x <<<"$(rate "$seconds")"

waiter_pids=()
for _ in $(seq "$waiters"); do
  "$BENCH_CLOCK" --database "$url" run -r bench.wait -- true </dev/null >/dev/null 2>&1 &
  pids+=($!)
  waiter_pids+=($!)
done

# running: how many waiters still run (bash reaps exited jobs; jobs -r lists
# the running ones). A waiter that gives up (exit 69 after lock_timeout, say)
# is counted, not waited for.
running() {
  local -A live=()
  local pid count=0
  for pid in $(jobs -rp); do live[$pid]=1; done
  for pid in "${waiter_pids[@]}"; do [[ -n ${live[$pid]:-} ]] && count=$((count + 1)); done
  echo "$count"
}
queued=0
for _ in $(seq 300); do
  queued=$(psql_at "$url" "SELECT count(*) FROM clock.waiters WHERE expires_at > now()")
  ((queued >= $(running))) && break
  sleep 0.2
done
sleep 2  # past the start-up burst of attempts
queued_before=$queued running_before=$(running)

read -r wait_q wait_x <<<"$(rate "$seconds")"
running_after=$(running)
queued_after=$(psql_at "$url" "SELECT count(*) FROM clock.waiters WHERE expires_at > now()")
say "  waiters running/queued: $running_before/$queued_before before the ${seconds}s, $running_after/$queued_after after"
# What the waiters ran most, for the log (and for whoever reads it next).
psql_at "$BENCH_PG_URL" "
  SELECT calls || ' calls, ' || round(mean_exec_time::numeric, 1) || ' ms mean: '
         || left(regexp_replace(query, '\s+', ' ', 'g'), 90)
  FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = 'clock_wait' ORDER BY calls DESC LIMIT 5" | sed 's/^/    /' >&2

# The exit statuses of the waiters that ended on their own (before SIGTERM).
declare -A still=()
ended=()
for pid in $(jobs -rp); do still[$pid]=1; done
for pid in "${waiter_pids[@]}"; do
  [[ -z ${still[$pid]:-} ]] || continue
  status=0
  wait "$pid" || status=$?
  ended+=("$status")
done
exits=""
# (printf of an empty array still prints one empty line: no waiter ended.)
((${#ended[@]})) &&
  exits=$(printf '%s\n' "${ended[@]}" | sort -n | uniq -c | awk 'NF {printf "%s%s x exit %s", sep, $1, $2; sep = ", "}')
[[ -n $exits ]] && say "  waiters that gave up during the run: $exits"
stop_all

qps=$(python3 -c "print(max(0, ($wait_q - $base_q) / 1000))")
xps=$(python3 -c "print(max(0, ($wait_x - $base_x) / 1000))")
bench record m5.pg "$qps" --unit "q/s" \
  --extra "{\"xact_per_s\": $xps, \"waiters\": $waiters, \"seconds\": $seconds,
            \"holder_only_q_per_s\": $(python3 -c "print($base_q / 1000)"),
            \"running_before\": $running_before, \"running_after\": $running_after,
            \"queued_after\": $queued_after, \"gave_up\": \"$exits\"}"
psql_at "$BENCH_PG_URL" "DROP DATABASE clock_wait WITH (FORCE)" >/dev/null
