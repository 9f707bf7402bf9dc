#!/usr/bin/env bash
# Measurement 8, connections borrowed, not held (man clock, COMMANDS): a fleet's burst
# against a server whose connection budget is far smaller than the fleet.
# clock logs in as a clock_app member with CONNECTION LIMIT 90 (what
# max_connections = 100 leaves a fleet; the test server itself allows more),
# and a sampler counts that role's client backends every 20 ms.
#   8a  N `clock run -- true` started at once on distinct resources, direct
#       and through pgbouncer: exits, wall time, peak backends;
#   8b  W waiters on one resource, empty job, direct and through pgbouncer:
#       exits, wall time, peak backends (also apart: while the herd arrives,
#       each of its processes connecting to enter the queue, and once all are
#       queued), hand-over p50/p90 (the gap from one job's end stamp to the
#       next one's start stamp);
#   8c  200 waiters behind a holder through pgbouncer: server transactions/s
#       while they wait, then hand-over p50 once it lets go;
#   8d  J jobs `sleep S` on distinct resources: backends held between heartbeats.
# Sizes (the issue's targets in brackets; BENCH_QUICK=1 takes the smaller):
# BENCH_BORROW_BURST [1000], BENCH_BORROW_QUEUE [500], BENCH_BORROW_JOBS [150].
# BENCH_BORROW_ONLY="queue.pg wait200" runs some rows only (burst.pg,
# burst.pgbouncer, queue.pg, queue.pgbouncer, wait200 (through pgbouncer),
# wait200.pg (direct), sleepers).
source "$(dirname "$0")/lib.sh"

burst=${BENCH_BORROW_BURST:-$(reps 1000 200)}
queue=${BENCH_BORROW_QUEUE:-$(reps 500 100)}
jobs_n=${BENCH_BORROW_JOBS:-$(reps 150 50)}
say "8. borrowed connections: burst $burst, queue $queue, $jobs_n sleeping jobs"

db=clock_borrow
role=clock_borrow_host
psql_at "$BENCH_PG_URL" "DROP DATABASE IF EXISTS $db" >/dev/null
psql_at "$BENCH_PG_URL" "CREATE DATABASE $db" >/dev/null
admin_url=$(pg_url $db)
"$BENCH_CLOCK" --database "$admin_url" init >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -v schema=clock -d "$admin_url" \
  -f "$bench_dir/../../sql/postgres/roles.sql" >/dev/null
psql_at "$admin_url" "DROP ROLE IF EXISTS $role" >/dev/null
psql_at "$admin_url" "CREATE ROLE $role LOGIN CONNECTION LIMIT 90 IN ROLE clock_app" >/dev/null
url="$admin_url user=$role"
# pgbouncer knows only the server's superuser (tests/helpers/with-postgres.sh);
# its pool (20) is what the server sees of the fleet.
pgb=$(pgb_url $db)
work=$BENCH_WORK/m8
mkdir -p "$work"
only=${BENCH_BORROW_ONLY:-burst.pg burst.pgbouncer queue.pg queue.pgbouncer wait200 wait200.pg sleepers}
wanted() { [[ " $only " == *" $1 "* ]]; }

# backends: the role's client backends now.
# (Asked in another database, so that the sampler's own transactions do not
# count in this one's.)
backends() {
  psql_at "$BENCH_PG_URL" "SELECT count(*) FROM pg_stat_activity
                        WHERE usename = '$role' AND backend_type = 'client backend'"
}
# sample_peak FILE [COUNT DIR]: until FILE.stop exists, the largest count of
# backends so far in FILE, and in FILE.at when it was first seen (ms since
# the sampler began). With COUNT and DIR (a herd on one resource), also the
# largest while the herd arrives (FILE.arriving) and once it has (FILE.queued):
# arrived when DIR/spawned exists and every one of COUNT has started its job
# or has its entry in the queue.
sample_peak() {
  local peak=0 n t0 count=${2:-} dir=${3:-} arrived=false peak_arriving=0 peak_queued=0 entered
  t0=$(date +%s%N)
  echo 0 >"$1.at"
  while [[ ! -e $1.stop ]]; do
    n=$(backends)
    ((n > peak)) && peak=$n && echo "$peak" >"$1" && echo $((($(date +%s%N) - t0) / 1000000)) >"$1.at"
    if [[ -n $count ]]; then
      if $arrived; then
        ((n > peak_queued)) && peak_queued=$n
      else
        ((n > peak_arriving)) && peak_arriving=$n
        if [[ -e $dir/spawned ]]; then
          entered=$(psql_at "$admin_url" "SELECT count(DISTINCT owner) FROM clock.waiters")
          entered=$((entered + $(compgen -G "$dir/job.*.start" | wc -l)))
          ((entered >= count)) && arrived=true && echo $((($(date +%s%N) - t0) / 1000000)) >"$1.arrived_at"
        fi
      fi
      echo "$peak_arriving" >"$1.arriving"
      echo "$peak_queued" >"$1.queued"
    fi
    sleep 0.02
  done
  echo "$peak" >"$1"
}
# xacts: committed and rolled back transactions of the database so far.
xacts() { psql_at "$BENCH_PG_URL" "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$db'"; }
# flushed_xacts: the same once every server backend of pgbouncer's pool has
# reported its count. A backend that stays connected reports lazily (at most
# once a second while busy, after 10 s idle, at exit), so through pgbouncer
# the start-up burst's transactions came in 5-15 s after it: the server log
# showed 452 statements in such a window whose count said 643. RECONNECT has
# pgbouncer close its server connections; once those that began before have
# exited, everything so far is counted (the pool's new backends add their
# start-up transaction each, about 20 a window).
flushed_xacts() {
  local since i
  since=$(psql_at "$BENCH_PG_URL" "SELECT now()")
  psql_at "$(pgb_url pgbouncer)" "RECONNECT $db" >/dev/null
  for i in $(seq 200); do
    (($(psql_at "$BENCH_PG_URL" "SELECT count(*) FROM pg_stat_activity
                                 WHERE datname = '$db' AND backend_start < '$since'") == 0)) && break
    sleep 0.05
  done
  xacts
}

# herd KEY URL COUNT RESOURCE-PREFIX SAME: COUNT `clock run` at once; SAME=1
# puts them all on one resource. Each job stamps its start and end.
herd() {
  local key=$1 u=$2 n=$3 same=$4 dir=$work/$1 i resource t0 t1 peak
  rm -rf "$dir" && mkdir -p "$dir"
  if ((same)); then sample_peak "$dir/peak" "$n" "$dir" & else sample_peak "$dir/peak" & fi
  local sampler=$!
  t0=$(date +%s%N)
  local pids=()
  for i in $(seq "$n"); do
    resource=bench.herd.$i
    ((same)) && resource=bench.one
    # shellcheck disable=SC2016  # $0..$1 are the child shell's
    "$BENCH_CLOCK" --database "$u" run -r "$resource" -w 10m -- \
      sh -c '"$0" "$1.start"; "$0" "$1.end"' "$BENCH_STAMP" "$dir/job.$i" \
      </dev/null >/dev/null 2>>"$dir/stderr" &
    pids+=($!)
  done
  touch "$dir/spawned"
  : >"$dir/exits"
  for pid in "${pids[@]}"; do
    status=0
    wait "$pid" || status=$?
    echo "$status" >>"$dir/exits"
  done
  t1=$(date +%s%N)
  touch "$dir/peak.stop"
  wait "$sampler"
  peak=$(cat "$dir/peak")
  python3 - "$dir" "$n" "$(((t1 - t0) / 1000000))" "$peak" "$same" "$key" "$(cat "$dir/peak.at")" <<'EOF' >>"$BENCH_RESULTS"
import collections, glob, json, statistics, sys
d, n, wall_ms, peak, same, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6]
peak_at = int(sys.argv[7])
exits = collections.Counter(int(x) for x in open(f"{d}/exits").read().split())
spans = []
for start in glob.glob(f"{d}/job.*.start"):
    end = start[:-6] + ".end"
    try:
        spans.append((int(open(start).read()), int(open(end).read())))
    except (OSError, ValueError):
        pass
spans.sort()
record = {"key": key, "unit": "ms", "median": wall_ms, "count": n, "ran": len(spans),
          "exits": {str(k): v for k, v in sorted(exits.items())}, "peak_backends": peak,
          "peak_at_ms": peak_at}
for name, field in (("arriving", "peak_backends_arriving"), ("queued", "peak_backends_queued"),
                    ("arrived_at", "arrived_at_ms")):
    try:
        record[field] = int(open(f"{d}/peak.{name}").read())
    except (OSError, ValueError):
        pass
if same and len(spans) > 1:
    gaps = [(b[0] - a[1]) / 1e6 for a, b in zip(spans, spans[1:])]
    record["overlaps"] = sum(1 for g in gaps if g < 0)
    gaps.sort()
    record["handover_p50"] = gaps[len(gaps) // 2]
    record["handover_p90"] = gaps[int(len(gaps) * 0.9)]
print(json.dumps(record))
EOF
  say "  $key: $(tail -n 1 "$BENCH_RESULTS")"
}

wanted burst.pg && herd m8.burst.pg "$url" "$burst" 0
wanted burst.pgbouncer && herd m8.burst.pgbouncer "$pgb" "$burst" 0
wanted queue.pg && herd m8.queue.pg "$url" "$queue" 1
wanted queue.pgbouncer && herd m8.queue.pgbouncer "$pgb" "$queue" 1

# 8c: 200 waiters behind a holder, through pgbouncer and direct: the server's
# transactions per second while they wait (5-15 s after they queued, while
# their looks still slow down, and 15-25 s, at their steady pace; direct, a
# look is two: the backend's start and the attempt) and the role's peak
# client backends then, then the hand-over once it lets go.
wait200() {
  local key=$1 u=$2 dir=$work/$1 i x0 x1 holder bad pid
  rm -rf "$dir" && mkdir -p "$dir"
  # shellcheck disable=SC2016
  "$BENCH_CLOCK" --database "$u" run -r bench.c -- sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' \
    "$dir/held" "$dir/go" </dev/null >/dev/null 2>&1 &
  holder=$!
  for _ in $(seq 300); do [[ -e $dir/held ]] && break; sleep 0.1; done
  local waiters=()
  for i in $(seq 200); do
    # shellcheck disable=SC2016
    "$BENCH_CLOCK" --database "$u" run -r bench.c -- \
      sh -c '"$0" "$1.start"; "$0" "$1.end"' "$BENCH_STAMP" "$dir/job.$i" </dev/null >/dev/null 2>&1 &
    waiters+=($!)
  done
  for _ in $(seq 300); do
    (($(psql_at "$admin_url" "SELECT count(*) FROM clock.waiters WHERE expires_at > now()") >= 200)) && break
    sleep 0.2
  done
  sleep 5  # past the start-up burst
  sample_peak "$dir/peak" &
  local sampler=$!
  local count=xacts
  [[ $u == "$pgb" ]] && count=flushed_xacts
  x0=$($count)
  sleep 10
  x1=$($count)
  # and once their looks have slowed to their steady pace
  sleep 10
  x2=$($count)
  touch "$dir/peak.stop"
  wait "$sampler"
  touch "$dir/go"
  wait "$holder" || true
  bad=0
  for pid in "${waiters[@]}"; do wait "$pid" || bad=$((bad + 1)); done
  python3 - "$dir" "$(((x1 - x0) / 10))" "$bad" "$key" "$(cat "$dir/peak")" "$(((x2 - x1) / 10))" <<'EOF' >>"$BENCH_RESULTS"
import glob, json, sys
d, xps, bad, key, peak = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
xps_later = int(sys.argv[6])
spans = sorted((int(open(s).read()), int(open(s[:-6] + ".end").read())) for s in glob.glob(f"{d}/job.*.start"))
gaps = sorted((b[0] - a[1]) / 1e6 for a, b in zip(spans, spans[1:]))
print(json.dumps({"key": key, "unit": "ms", "median": gaps[len(gaps) // 2],
                  "p90": gaps[int(len(gaps) * 0.9)], "xact_per_s": xps,
                  "xact_per_s_later": xps_later,
                  "peak_backends_waiting": peak, "failed": bad, "ran": len(spans),
                  "overlaps": sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])}))
EOF
  say "  $key: $(tail -n 1 "$BENCH_RESULTS")"
}
wanted wait200 && wait200 m8.wait200.pgbouncer "$pgb"
wanted wait200.pg && wait200 m8.wait200.pg "$url"

# 8d: jobs that sleep hold no backend between heartbeats.
sleepers() {
  local dir=$work/m8d
rm -rf "$dir" && mkdir -p "$dir"
sleepers=()
for i in $(seq "$jobs_n"); do
  # shellcheck disable=SC2016
  "$BENCH_CLOCK" --database "$url" run -r "bench.sleep.$i" -- sh -c 'touch "$0"; sleep 20' \
    "$dir/started.$i" </dev/null >/dev/null 2>&1 &
  sleepers+=($!)
done
for _ in $(seq 600); do
  (($(find "$dir" -name 'started.*' | wc -l) >= jobs_n)) && break
  sleep 0.1
done
sleep 3  # a second past the last grant, well before the first heartbeat (9 s)
held=$(backends)
bad=0
for pid in "${sleepers[@]}"; do wait "$pid" || bad=$((bad + 1)); done
echo "{\"key\": \"m8.sleepers.pg\", \"unit\": \"backends\", \"median\": $held, \"jobs\": $jobs_n, \"failed\": $bad}" >>"$BENCH_RESULTS"
say "  m8.sleepers.pg: $(tail -n 1 "$BENCH_RESULTS")"
}
wanted sleepers && sleepers

psql_at "$BENCH_PG_URL" "DROP DATABASE $db WITH (FORCE)" >/dev/null
psql_at "$BENCH_PG_URL" "DROP ROLE IF EXISTS $role" >/dev/null
