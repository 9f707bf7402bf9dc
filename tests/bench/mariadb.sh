#!/usr/bin/env bash
# Measurement 10, MariaDB beside PostgreSQL in the same run, both
# driven by the same clock binary (BENCH_MARIADB_CLOCK, run.sh's Release
# build, its modules beside it):
#   10.1  uncontended `clock run -- true`, MariaDB vs PostgreSQL (interleaved)
#   10.2  contended 8 × 25 empty sections on one resource: throughput; then
#         one round whose jobs stamp start, end and CLOCK_TOKEN: no overlap,
#         tokens rising
#   10.3  hand-over release → next child start, p50 (p99)
#   10.4  N `clock run` at once on distinct resources, max_connections = 151
#         (distinct first segments too, as in 10.6: bench.a and bench.b are
#         one hierarchy, whose writes take turns on one row on either server)
#   10.5  200 waiters behind a holder: the server's statements/s while they
#         wait (SHOW GLOBAL STATUS deltas)
#   10.6  capacity: sustained `clock run -- true`/s from 4 loops, on distinct
#         resources and on one, direct and through pgbouncer, and the
#         server's CPU per run, so what one server core sustains, beside
#         the floors (PostgreSQL a new connection and `SELECT 1`, MariaDB
#         GET_LOCK, etcd `etcdctl lock`, in the same loops)
#   10.7  the server's CPU per sequential `clock run -- true` (a new
#         connection each, as cron runs it) beside the floor of each server:
#         PostgreSQL a new connection and `SELECT 1` (psql), MariaDB the
#         `mariadb` client's GET_LOCK and RELEASE_LOCK; and through pgbouncer
#         (its backends warm)
# BENCH_MARIADB_ONLY="latency capacity" runs some parts only (latency,
# contend, handover, burst, wait200, capacity, cpu). BENCH_MARIADB_BURST sets N
# (1000; quick: 200).
source "$(dirname "$0")/lib.sh"

for var in BENCH_MARIADB_CLOCK CLOCK_TEST_MARIADB_URL CLOCK_TEST_MARIADB_SOCKET; do
  [[ -n ${!var:-} ]] || { echo "bench: $var is not set (MariaDB missing? run tests/bench/run.sh)" >&2; exit 1; }
done
only=${BENCH_MARIADB_ONLY:-latency contend handover burst wait200 capacity cpu}
wanted() { [[ " $only " == *" $1 "* ]]; }
say "10. MariaDB beside PostgreSQL: $only"

mysql_at() { mariadb --socket="$CLOCK_TEST_MARIADB_SOCKET" -u root -N -B -e "$1"; }
# maria_url DB [USER:PASSWORD]: clock's URL of database DB on the bench
# server (as root by default).
maria_url() {
  local url=${CLOCK_TEST_MARIADB_URL/\/\?//$1?}
  [[ -n ${2:-} ]] && url=${url/root@/$2@}
  echo "$url"
}
# clock runs as an ordinary user, as a fleet would: root (SUPER) keeps the
# one connection the server reserves beyond max_connections, which the
# counters below need while a herd of clients takes every other slot.
fresh_maria() {
  mysql_at "DROP DATABASE IF EXISTS $1; CREATE DATABASE $1"
  "$BENCH_MARIADB_CLOCK" --database "$(maria_url "$1")" init >/dev/null
  mysql_at "CREATE USER IF NOT EXISTS clock_bench@localhost IDENTIFIED BY 'bench';
            GRANT ALL PRIVILEGES ON $1.* TO clock_bench@localhost"
}
fresh_pg() {
  psql_at "$BENCH_PG_URL" "DROP DATABASE IF EXISTS $1" >/dev/null
  psql_at "$BENCH_PG_URL" "CREATE DATABASE $1" >/dev/null
  "$BENCH_MARIADB_CLOCK" --database "$(pg_url "$1")" init >/dev/null
}
cmd() { printf "%s --database '%s'" "$BENCH_MARIADB_CLOCK" "$1"; }
rows() { python3 "$bench_dir/mariadb_rows.py" "$1" --results "$BENCH_RESULTS" "${@:2}"; }

# MariaDB's default, whatever the helper's server was started with.
mysql_at "SET GLOBAL max_connections = 151"

fresh_maria clock_mb
fresh_pg clock_mb
my=$(maria_url clock_mb clock_bench:bench)
pg=$(pg_url clock_mb)
BENCH_CLOCK=$BENCH_MARIADB_CLOCK init_store "$my"
BENCH_CLOCK=$BENCH_MARIADB_CLOCK init_store "$pg"

if wanted latency; then
  runs=$(reps 30 8)
  say "10.1 uncontended: $runs interleaved runs each"
  bench latency --runs "$runs" --warmup 3 \
    --cmd m10.1.mariadb "$(cmd "$my") run -r bench.m10 -- true" \
    --cmd m10.1.pg "$(cmd "$pg") run -r bench.m10 -- true"
fi

if wanted contend; then
  rounds=$(reps 3 1)
  say "10.2 contended 8 x 25: $rounds round(s) each, then one ordered round each"
  bench contend --procs 8 --turns 25 --reps "$rounds" \
    --cmd m10.2.mariadb "$(cmd "$my") run -r bench.m10c -- true" \
    --cmd m10.2.pg "$(cmd "$pg") run -r bench.m10c -- true"
  rows ordered --key m10.2.mariadb.order --clock "$(cmd "$my")" --stamp "$BENCH_STAMP" \
    --dir "$BENCH_WORK/m10.order.mariadb"
  rows ordered --key m10.2.pg.order --clock "$(cmd "$pg")" --stamp "$BENCH_STAMP" \
    --dir "$BENCH_WORK/m10.order.pg"
fi

if wanted handover; then
  samples=$(reps 100 15)
  say "10.3 hand-over: $samples samples each"
  mkdir -p "$BENCH_WORK/m10.3"
  bench handover --key m10.3.mariadb --samples "$samples" --clock "$(cmd "$my")" \
    --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m10.3"
  bench handover --key m10.3.pg --samples "$samples" --clock "$(cmd "$pg")" \
    --stamp "$BENCH_STAMP" --dir "$BENCH_WORK/m10.3"
fi

if wanted burst; then
  n=${BENCH_MARIADB_BURST:-$(reps 1000 200)}
  say "10.4 burst: $n at once on distinct resources (max_connections $(mysql_at 'SELECT @@max_connections'))"
  mysql_at "FLUSH STATUS"  # Max_used_connections from here
  rows burst --key m10.4.mariadb --count "$n" --clock "$(cmd "$my")"
  peak=$(mysql_at "SHOW GLOBAL STATUS LIKE 'Max_used_connections'" | cut -f2)
  refused=$(mysql_at "SHOW GLOBAL STATUS LIKE 'Connection_errors_max_connections'" | cut -f2)
  bench record m10.4.mariadb.server "$peak" --extra "{\"refused_connections\": $refused}"
fi

# mysql_retry SQL: mysql_at, again every 50 ms for up to 20 s while the
# server refuses (1040: a herd of clients connecting takes every slot).
mysql_retry() {
  local out
  for _ in $(seq 400); do
    out=$(mysql_at "$1" 2>/dev/null) && { echo "$out"; return; }
    sleep 0.05
  done
  mysql_at "$1"
}
# counters: "NS Questions Queries Com_call_procedure Com_select" now.
counters() {
  local values
  values=$(mysql_retry "SHOW GLOBAL STATUS WHERE Variable_name IN
              ('Questions', 'Queries', 'Com_call_procedure', 'Com_select')" |
    awk '{v[$1] = $2} END {print v["Questions"], v["Queries"], v["Com_call_procedure"], v["Com_select"]}')
  echo "$(date +%s%N) $values"
}
# rates SECONDS: the counters' growth per second over about SECONDS from now
# (divided by the time between the two reads), less the one SHOW of this
# measurement that Questions and Queries count.
rates() {
  local a b
  a=$(counters)
  sleep "$1"
  b=$(counters)
  python3 -c 'import sys; a = [int(x) for x in sys.argv[1].split()]; b = [int(x) for x in sys.argv[2].split()]
s = (b[0] - a[0]) / 1e9
print(" ".join(f"{(y - x - (1 if i < 2 else 0)) / s:.1f}" for i, (x, y) in enumerate(zip(a[1:], b[1:]))))' \
    "$a" "$b"
}

if wanted wait200; then
  waiters=200 seconds=$(reps 10 5)
  say "10.5 $waiters waiters behind a holder: statements/s over ${seconds}s"
  pids=()
  stop_all() {
    ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
  }
  trap stop_all EXIT
  marker=$BENCH_WORK/m10.5.held
  # shellcheck disable=SC2016  # $0 is the child shell's
  "$BENCH_MARIADB_CLOCK" --database "$my" run -r bench.m10w -- sh -c 'touch "$0"; exec sleep 600' \
    "$marker" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do [[ -e $marker ]] && break; sleep 0.1; done
  [[ -e $marker ]] || { echo "bench: the holder did not start" >&2; exit 1; }
  sleep 1
  read -r base_q base_all base_call base_select <<<"$(rates "$seconds")"
  mysql_at "FLUSH STATUS"
  t0=$(date +%s%N)
  for _ in $(seq "$waiters"); do
    "$BENCH_MARIADB_CLOCK" --database "$my" run -r bench.m10w -w 10m -- true </dev/null >/dev/null 2>&1 &
    pids+=($!)
  done
  # Measured once every waiter has its entry in the queue, and 2 s more:
  # the front one polls fastest for its first second there.
  queued=0
  for _ in $(seq 1800); do
    queued=$(mysql_retry "SELECT count(DISTINCT owner) FROM clock_mb.waiters") || queued=0
    ((queued >= waiters)) && break
    sleep 0.1
  done
  queued_ms=$((($(date +%s%N) - t0) / 1000000))
  ((queued >= waiters)) || echo "bench: only $queued of $waiters waiters queued after 180 s" >&2
  # While they arrived: the most connections at once, the ones refused
  # (1040), and the row-lock waits of their attempts.
  arrival=$(mysql_retry "SHOW GLOBAL STATUS WHERE Variable_name IN ('Max_used_connections',
              'Connection_errors_max_connections', 'Innodb_row_lock_waits', 'Innodb_row_lock_time_avg')" |
    awk '{printf "\"%s\": %s, ", $1, $2}')
  sleep 2
  read -r q all call select <<<"$(rates "$seconds")"
  # Those seconds catch the waiters' back-off under way (each looks again
  # sooner the nearer the front, and less often each time the queue stood
  # still); a minute on, every pace has reached its ceiling: the rate of a
  # queue that stands still.
  sleep "$(reps 50 10)"
  read -r later_q later_all _ _ <<<"$(rates "$seconds")"
  running=0
  for pid in "${pids[@]:1}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
  stop_all
  bench record m10.5.mariadb "$q" --unit q/s --extra "{\"queries_per_s\": $all, \"calls_per_s\": $call,
    \"selects_per_s\": $select, \"holder_alone_q_per_s\": $base_q, \"holder_alone_queries_per_s\": $base_all,
    \"holder_alone_calls_per_s\": $base_call, \"holder_alone_selects_per_s\": $base_select,
    \"waiters\": $waiters, \"seconds\": $seconds, \"running_after\": $running, \"queued\": $queued,
    \"queued_ms\": $queued_ms, \"later_q_per_s\": $later_q, \"later_queries_per_s\": $later_all,
    \"arrival\": {${arrival%, }}}"
fi

if wanted capacity; then
  seconds=$(reps 20 8)
  say "10.6 capacity: 4 loops for ${seconds}s of each command, distinct resources and one"
  maria_pid=$(cat "$(mysql_at 'SELECT @@pid_file')")
  pg_pid=$(head -n 1 "$CLOCK_TEST_PG_DATA/postmaster.pid")
  pgb=$(pgb_url clock_mb)
  BENCH_CLOCK=$BENCH_MARIADB_CLOCK init_store "$pgb"
  # $R: a resource of each run's own, with a first segment of its own (no
  # shared slot row); bench.cap.one: the one contended resource.
  distinct='run -r "$R" -- true' one='run -w 10m -r bench.cap.one -- true'
  get_lock="mariadb --socket=$CLOCK_TEST_MARIADB_SOCKET -u clock_bench -pbench -N -B -e"
  python3 "$bench_dir/mariadb_rows.py" capacity --results "$BENCH_RESULTS" \
    --server-pid "$maria_pid" --seconds "$seconds" --prefix bench-cap-my \
    --cmd m10.6.mariadb "$(cmd "$my") $distinct" \
    --cmd m10.6.mariadb.one "$(cmd "$my") $one" \
    --cmd m10.6.mariadb.floor "$get_lock \"SELECT GET_LOCK('\$R', 30); SELECT RELEASE_LOCK('\$R')\"" \
    --cmd m10.6.mariadb.floor.one "$get_lock \"SELECT GET_LOCK('bench.cap.one', 600); SELECT RELEASE_LOCK('bench.cap.one')\""
  python3 "$bench_dir/mariadb_rows.py" capacity --results "$BENCH_RESULTS" \
    --server-pid "$pg_pid" --seconds "$seconds" --prefix bench-cap-pg \
    --cmd m10.6.pg "$(cmd "$pg") $distinct" \
    --cmd m10.6.pg.one "$(cmd "$pg") $one" \
    --cmd m10.6.pgbouncer "$(cmd "$pgb") $distinct" \
    --cmd m10.6.pgbouncer.one "$(cmd "$pgb") $one" \
    --cmd m10.6.pg.floor "psql -X -q -d '$pg' -c 'SELECT 1'"
  if [[ -n ${BENCH_ETCD_PID:-} ]]; then
    python3 "$bench_dir/mariadb_rows.py" capacity --results "$BENCH_RESULTS" \
      --server-pid "$BENCH_ETCD_PID" --seconds "$seconds" --prefix bench-cap-etcd \
      --cmd m10.6.etcd.floor "$(etcd_cmd) lock \"\$R\" true" \
      --cmd m10.6.etcd.floor.one "$(etcd_cmd) lock bench.cap.one true"
  fi
fi

if wanted cpu; then
  runs=$(reps 200 40)
  say "10.7 server CPU per run: $runs sequential runs of each, in 4 interleaved blocks"
  maria_pid=$(cat "$(mysql_at 'SELECT @@pid_file')")
  pg_pid=$(head -n 1 "$CLOCK_TEST_PG_DATA/postmaster.pid")
  pgb=$(pgb_url clock_mb)
  BENCH_CLOCK=$BENCH_MARIADB_CLOCK init_store "$pgb"
  # A fleet's job has run for months: its success log holds the 1000
  # starts it keeps, which every success's bookkeeping works beside
  # (docs/missed-runs.md). bench.cpu's is filled to there first.
  psql_at "$pg" "INSERT INTO clock.successes (namespace, resource, started_at)
                 SELECT '', 'bench.cpu', now() - g * interval '1 minute'
                 FROM generate_series(1, 1000) AS g ON CONFLICT DO NOTHING"
  mysql_at "INSERT IGNORE INTO clock_mb.successes (namespace, resource, started_us)
            SELECT '', 'bench.cpu', UNIX_TIMESTAMP(NOW(6)) * 1000000 - seq * 60000000
            FROM clock_mb.seq_1_to_1000"
  python3 "$bench_dir/mariadb_rows.py" server_cpu --results "$BENCH_RESULTS" \
    --server-pid "$pg_pid" --runs "$runs" \
    --cmd m10.7.pg.clock "$(cmd "$pg") run -r bench.cpu -- true" \
    --cmd m10.7.pg.floor "psql -X -q -d '$pg' -c 'SELECT 1'" \
    --cmd m10.7.pgbouncer.clock "$(cmd "$pgb") run -r bench.cpu -- true"
  python3 "$bench_dir/mariadb_rows.py" server_cpu --results "$BENCH_RESULTS" \
    --server-pid "$maria_pid" --runs "$runs" \
    --cmd m10.7.mariadb.clock "$(cmd "$my") run -r bench.cpu -- true" \
    --cmd m10.7.mariadb.floor "mariadb --socket=$CLOCK_TEST_MARIADB_SOCKET -u clock_bench -pbench -N -B -e \"SELECT GET_LOCK('bench.cpu', 30); SELECT RELEASE_LOCK('bench.cpu')\""
fi
