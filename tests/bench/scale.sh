#!/usr/bin/env bash
# Measurement 4, scale, per backend: `clock acquire` with 1,000 and with
# 1,000,000 unrelated held leases; `clock status` with 100,000; `clock gc` of
# 1,000,000 expired leases, timed, with an acquire loop on an unrelated
# resource beside it whose slowest acquire (over its usual time) is the stall.
#
# The filler leases are rows inserted straight into clock's tables (SQLite: a
# recursive CTE in the sqlite3 shell; PostgreSQL: generate_series), under the
# unrelated root `filler` of the global namespace, each with its own owner. On
# PostgreSQL each fill is followed by VACUUM ANALYZE, as autovacuum would do
# within a minute; SQLite gets no ANALYZE, as clock runs none. One round of
# each (the acquires: median of repeated runs); the fills dominate the time.
source "$(dirname "$0")/lib.sh"

acquire_runs=$(reps 30 5)
status_runs=$(reps 5 2)
say "4. scale: acquire ($acquire_runs runs) at 1,000 and 1,000,000 leases, status ($status_runs runs) at 100,000, gc of 1,000,000"

# --- filling ------------------------------------------------------------------------

# fill_sqlite FILE FROM TO EXPIRES_IN_MS: leases filler.rFROM..filler.rTO.
fill_sqlite() {
  sqlite3 -bail "$1" >/dev/null <<SQL
PRAGMA busy_timeout = 30000;
PRAGMA cache_size = -262144;
BEGIN IMMEDIATE;
WITH RECURSIVE n(i) AS (SELECT $2 UNION ALL SELECT i + 1 FROM n WHERE i < $3),
     now(ms) AS (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                    acquired_at, renewed_at, expires_at, host, ip, pid, user, command,
                    owner_started_at)
SELECT '', printf('filler.r%07d', i),
       lower(printf('%s-%s-4%s-a%s-%s', hex(randomblob(4)), hex(randomblob(2)),
                    substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2),
                    hex(randomblob(6)))),
       'exclusive', 0, i, 1, 'fill', ms, ms, ms + $4, 'filler-host', '10.0.0.1',
       1000 + i % 30000, 'bench', 'filler job', ms
FROM n, now;
UPDATE counters SET value = max(value, $3) WHERE name = 'token';
COMMIT;
SQL
}

# fill_pg URL FROM TO EXPIRES_IN_MS
fill_pg() {
  psql_at "$1" "
    INSERT INTO clock.leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                              acquired_at, renewed_at, expires_at, ttl, host, ip, pid, user_name,
                              command, owner_started_at)
    SELECT '', 'filler.r' || lpad(i::text, 7, '0'), gen_random_uuid(), 'exclusive', 0, i, 1,
           'fill', now(), now(), now() + $4 * interval '1 ms', interval '1 day', 'filler-host',
           '10.0.0.1', 1000 + i % 30000, 'bench', 'filler job', now()
    FROM generate_series($2, $3) AS i;
    SELECT setval('clock.tokens', greatest($3, (SELECT last_value FROM clock.tokens)));" >/dev/null
  psql_at "$1" "VACUUM ANALYZE clock.leases"
}

# expired_left_*: expired leases still in the table.
expired_left_sqlite() {
  sqlite3 "$1" "SELECT count(*) FROM leases WHERE expires_at <=
                  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}
expired_left_pg() { psql_at "$1" "SELECT count(*) FROM clock.leases WHERE expires_at <= now()"; }

# --- one backend --------------------------------------------------------------------

day_ms=86400000

# measure BACKEND SMALL_URL SMALL BIG_URL BIG FILL EXPIRE LEFT: the
# measurements of one backend on two fresh stores, SMALL (1,000 leases) and
# BIG (100,000, then 1,000,000). SMALL and BIG are what FILL, EXPIRE and LEFT
# take: the file for SQLite, the URL for PostgreSQL. The acquires on the two
# run interleaved, so that a busy moment of the machine hits both alike.
measure() {
  local backend=$1 small_url=$2 small=$3 big_url=$4 big=$5 fill=$6 expire=$7 left=$8
  local small_clock big_clock
  small_clock=$(clock_cmd "$small_url")
  big_clock=$(clock_cmd "$big_url")
  local probe="-r bench.scale.probe --owner $BENCH_OWNER"
  init_store "$small_url"
  init_store "$big_url"

  say "  $backend: 1,000 held leases in one store, 100,000 in another"
  "$fill" "$small" 1 1000 "$day_ms"
  "$fill" "$big" 1 100000 "$day_ms"
  bench latency --runs "$status_runs" --warmup 1 --cmd "m4.$backend.status_100k" "$big_clock status"

  say "  $backend: 1,000,000 held leases in the second; acquire in both, interleaved"
  "$fill" "$big" 100001 1000000 "$day_ms"
  bench latency --runs "$acquire_runs" --warmup 3 \
    --cmd "m4.$backend.acquire_1k" "$small_clock acquire $probe" \
    --after "m4.$backend.acquire_1k" "$small_clock release $probe" \
    --cmd "m4.$backend.acquire_1m" "$big_clock acquire $probe" \
    --after "m4.$backend.acquire_1m" "$big_clock release $probe"

  say "  $backend: 1,000,000 expired leases; gc beside an acquire loop"
  "$expire" "$big"
  bench stall --key "m4.$backend.gc" --acquire "$big_clock acquire $probe" \
    --release "$big_clock release $probe" --during "$big_clock gc" --baseline 2 --tail 0.5
  bench record "m4.$backend.gc_left" "$("$left" "$big")" --unit leases
}

# SQLite: the expiry moved into the past in place.
expire_sqlite() {
  sqlite3 -bail "$1" >/dev/null "PRAGMA busy_timeout = 30000;
    UPDATE leases SET expires_at = expires_at - 2 * $day_ms
    WHERE resource > 'filler.' AND resource < 'filler/'"
}
small=$BENCH_WORK/m4-1k.db big=$BENCH_WORK/m4-1m.db
measure sqlite "sqlite:$small" "$small" "sqlite:$big" "$big" fill_sqlite expire_sqlite expired_left_sqlite
rm -f "$small" "$small"-* "$big" "$big"-*

# PostgreSQL: a database each; the held leases are replaced by expired ones
# (TRUNCATE and a new fill: an UPDATE of a million rows would leave the table
# twice its size until a vacuum).
expire_pg() {
  psql_at "$1" "TRUNCATE clock.leases"
  fill_pg "$1" 1 1000000 "-3600000"
}
for db in clock_scale_1k clock_scale_1m; do
  psql_at "$BENCH_PG_URL" "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  psql_at "$BENCH_PG_URL" "CREATE DATABASE $db" >/dev/null
done
small=$(pg_url clock_scale_1k) big=$(pg_url clock_scale_1m)
measure pg "$small" "$small" "$big" "$big" fill_pg expire_pg expired_left_pg
for db in clock_scale_1k clock_scale_1m; do
  psql_at "$BENCH_PG_URL" "DROP DATABASE $db WITH (FORCE)" >/dev/null
done
