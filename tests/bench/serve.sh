#!/usr/bin/env bash
# Measurement 9, clock serve: a page load (/, /status.json, /timeline.json)
# with 10,000 held resources and 1,000,000 history rows (a week of them) in
# SQLite, and serve's peak RSS (VmHWM) and its RSS between refreshes.
# "cold": the request that finds the snapshot a refresh period old, so it
# pays the database read (status, expected runs, the timeline's newest
# --timeline-events history events) and the rendering; "warm": a request
# answered from the snapshot. Then 20 pages at once within one period, to
# show that they share one read (serve's log counts the reads). The filler
# rows go straight into clock's tables, as scale.sh does.
source "$(dirname "$0")/lib.sh"

loads=$(reps 7 3)
say "9. clock serve: page load ($loads cold, $loads warm) at 10,000 leases and 1,000,000 history rows; RSS"

db=$BENCH_WORK/serve.db
url=sqlite:$db
init_store "$url"
sqlite3 -bail "$db" >/dev/null <<'SQL'
PRAGMA busy_timeout = 30000;
PRAGMA cache_size = -262144;
BEGIN IMMEDIATE;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000),
     now(ms) AS (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, request_id,
                    acquired_at, renewed_at, expires_at, host, ip, pid, user, command,
                    owner_started_at)
SELECT '', printf('serve.r%05d', i), printf('00000000-0000-4000-9000-%012d', i), 'exclusive', 0,
       2000000 + i, 1, 'fill', ms, ms, ms + 86400000, 'filler-host', '10.0.0.1', 1000 + i,
       'bench', 'filler job --with some arguments', ms
FROM n, now;
-- 500,000 holds (an acquired and a released row each) over the last week,
-- spread over the same 10,000 resources.
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999),
     now(ms) AS (SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
INSERT INTO history (at, event, namespace, resource, owner, mode, token, held_ms, host, ip, pid,
                     user, command)
SELECT ms - 604800000 + (i / 2) * 1209 + (i % 2) * 600,
       CASE i % 2 WHEN 0 THEN 'acquired' ELSE 'released' END, '',
       printf('serve.r%05d', 1 + (i / 2) % 10000), printf('00000000-0000-4000-8000-%012d', i / 2),
       'exclusive', 1 + i / 2, CASE i % 2 WHEN 1 THEN 600 END, 'filler-host', '10.0.0.1',
       1000 + (i / 2) % 30000, 'bench', 'filler job --with some arguments'
FROM n, now;
UPDATE counters SET value = max(value, 3000000) WHERE name = 'token';
COMMIT;
SQL

"$BENCH_CLOCK" --database "$url" -v serve --listen 127.0.0.1:0 --refresh 2s \
  >"$BENCH_WORK/serve.url" 2>"$BENCH_WORK/serve.log" &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  grep -q '^listening on ' "$BENCH_WORK/serve.url" 2>/dev/null && break
  sleep 0.1
done
base=$(sed -n 's/^listening on \(.*\)\/$/\1/p' "$BENCH_WORK/serve.url")
[[ -n $base ]] || { echo "bench: clock serve did not start: $(cat "$BENCH_WORK/serve.log")" >&2; exit 1; }

# page_load: the wall time in ms of what a browser fetches to draw the page:
# /, then /status.json and /timeline.json (on one connection, as a browser).
page_load() {
  local started
  started=$(date +%s%N)
  curl -sS --noproxy '*' -o /dev/null -o /dev/null -o /dev/null \
    "$base/" "$base/status.json" "$base/timeline.json"
  echo $(($(date +%s%N) - started)) | awk '{printf "%.1f", $1 / 1e6}'
}
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

cold=() warm=()
for _ in $(seq "$loads"); do
  sleep 2.1  # the snapshot is now a refresh period old
  cold+=("$(page_load)")
  warm+=("$(page_load)")
done
page_bytes=$(curl -sS --noproxy '*' "$base/" "$base/status.json" "$base/timeline.json" | wc -c)
bench record serve.page.cold "$(printf '%s\n' "${cold[@]}" | median)" --unit ms \
  --extra "{\"samples\": [$(IFS=,; echo "${cold[*]}")], \"page_bytes\": $page_bytes}"
bench record serve.page.warm "$(printf '%s\n' "${warm[@]}" | median)" --unit ms \
  --extra "{\"samples\": [$(IFS=,; echo "${warm[*]}")]}"

# 20 pages at once, just after a period ends: one read between them.
sleep 2.1
reads_before=$(grep -c 'read the database' "$BENCH_WORK/serve.log" || true)
for _ in $(seq 20); do page_load >/dev/null & done
wait $(jobs -p | grep -v "^$serve_pid$") 2>/dev/null || true
reads_after=$(grep -c 'read the database' "$BENCH_WORK/serve.log" || true)
bench record serve.reads_for_20_pages "$((reads_after - reads_before))" --unit reads

hwm=$(awk '/^VmHWM:/ {printf "%.2f", $2 / 1024}' "/proc/$serve_pid/status")
bench record serve.rss "$hwm" --unit MiB
rss=$(awk '/^VmRSS:/ {printf "%.2f", $2 / 1024}' "/proc/$serve_pid/status")
bench record serve.rss.idle "$rss" --unit MiB
kill "$serve_pid"
