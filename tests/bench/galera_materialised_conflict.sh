#!/usr/bin/env bash
# galera_materialised_conflict.sh: the experiment behind the MariaDB backend's
# Galera design (docs/internals/mariadb.md, "Galera"). Run by hand:
#
#   tests/helpers/with-galera.sh tests/bench/galera_materialised_conflict.sh
#
# Two clients call the same grant procedure at once, one on node 1 for `foo`,
# one on node 2 for `foo.bar`, 50 trials; the procedure reads the leases
# that conflict, waits 50 ms (to make the race certain), and inserts a lease
# when none conflicts. Run once without and once with an UPDATE of a shared
# slot row as the transaction's first write.
#
# Measured 2026-11-26 (MariaDB 10.11.19, galera-4 26.4.23, 3 nodes on one
# host): without the slot write both were granted in 50 of 50 trials
# (certification sees only writes, and the two leases are different rows);
# with it, 0 of 50, and in every trial the loser got error 1213 (a retry for
# clock's client, never an error exit); wsrep_local_cert_failures rose by 29
# and wsrep_local_bf_aborts by 42 across the two nodes (a second run: 34 and 40).
set -euo pipefail
: "${CLOCK_TEST_GALERA_NODE:?run under tests/helpers/with-galera.sh}"
node=$CLOCK_TEST_GALERA_NODE
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
socket() { local var=CLOCK_TEST_GALERA_SOCKET_$1; echo "${!var}"; }

"$node" sql 1 "CREATE DATABASE g;
CREATE TABLE g.slots (slot INT PRIMARY KEY, writes BIGINT NOT NULL DEFAULT 0);
INSERT INTO g.slots VALUES (1, 0);
CREATE TABLE g.leases (trial INT, name VARBINARY(255), PRIMARY KEY (trial, name));"
mariadb -uroot --socket="$(socket 1)" <<'SQL'
DELIMITER //
CREATE PROCEDURE g.take(p_name VARBINARY(255), p_trial INT, p_slot_write INT)
MODIFIES SQL DATA
BEGIN
  DECLARE n INT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF p_slot_write THEN UPDATE g.slots SET writes = writes + 1 WHERE slot = 1; END IF;
  SELECT COUNT(*) INTO n FROM g.leases WHERE trial = p_trial
    AND (name = p_name OR p_name LIKE CONCAT(name, '.%') OR name LIKE CONCAT(p_name, '.%'));
  DO SLEEP(0.05);
  IF n = 0 THEN INSERT INTO g.leases VALUES (p_trial, p_name); END IF;
  COMMIT;
  SELECT IF(n = 0, 'granted', 'busy');
END
//
SQL

for slot_write in 0 1; do
  errors=0
  for t in $(seq 1 50); do
    trial=$((slot_write * 100 + t))
    mariadb -uroot --socket="$(socket 1)" -N -e "CALL g.take('foo', $trial, $slot_write)" >"$out/a" 2>&1 &
    mariadb -uroot --socket="$(socket 2)" -N -e "CALL g.take('foo.bar', $trial, $slot_write)" >"$out/b" 2>&1 &
    wait || true
    if grep -q 'ERROR 1213' "$out/a" "$out/b"; then errors=$((errors + 1)); fi
  done
  # wsrep_sync_wait: node 3 answers only after applying all it has received.
  both=$("$node" sql 3 "SET SESSION wsrep_sync_wait = 1;
    SELECT COUNT(*) FROM (SELECT trial FROM g.leases WHERE trial BETWEEN $((slot_write * 100 + 1))
      AND $((slot_write * 100 + 50)) GROUP BY trial HAVING COUNT(*) = 2) x")
  echo "slot row written first: $slot_write; trials with both granted: $both / 50; trials with a 1213 reply: $errors"
done
for n in 1 2; do
  "$node" sql "$n" "SHOW STATUS WHERE Variable_name IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')" |
    sed "s/^/node $n: /"
done
