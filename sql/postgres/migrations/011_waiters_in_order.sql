-- Queue entries of one resource in queue order, so that a waiter's attempt
-- finds the first entry ahead of its own, and counts (up to a bound) how many
-- there are, by an index range scan whose cost does not grow with the queue
-- (try_acquire's fast path 0, 20_acquire.sql).
CREATE INDEX IF NOT EXISTS waiters_in_order ON @schema@.waiters (namespace, resource, position);
