-- clock schema for SQLite, version 14: the success log (successes, 008) is
-- pruned to the newest 1000 starts of a resource at every 50th success
-- instead of at every one, as the PostgreSQL schema has it (its migration
-- 020). Finding the 1000th newest start walks 1000 index entries, which
-- every successful run of a resource with a full log paid; in steps it
-- costs a fiftieth of that, and the log holds at most 1049 starts of a
-- resource.
--
-- ordinal numbers a resource's successes, one more than its newest logged
-- start's (NULL for the starts logged before this version: the count
-- starts again at 1). The triggers of last_success number each start they
-- log; the prune is a trigger of successes that fires on every 50th. Every
-- binary that writes last_success, older ones included, goes through them.
ALTER TABLE successes ADD COLUMN ordinal INTEGER;

DROP TRIGGER last_success_logs_insert;
DROP TRIGGER last_success_logs_update;

CREATE TRIGGER last_success_logs_insert AFTER INSERT ON last_success
BEGIN
  INSERT INTO successes (namespace, resource, started_at, ordinal)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at,
            coalesce((SELECT ordinal FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1), 0) + 1)
    ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER last_success_logs_update AFTER UPDATE ON last_success
BEGIN
  INSERT INTO successes (namespace, resource, started_at, ordinal)
    VALUES (NEW.namespace, NEW.resource, NEW.started_at,
            coalesce((SELECT ordinal FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1), 0) + 1)
    ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER successes_pruned_in_steps AFTER INSERT ON successes
WHEN NEW.ordinal % 50 = 0
BEGIN
  DELETE FROM successes WHERE namespace = NEW.namespace AND resource = NEW.resource
    AND started_at < (SELECT started_at FROM successes
                      WHERE namespace = NEW.namespace AND resource = NEW.resource
                      ORDER BY started_at DESC LIMIT 1 OFFSET 999);
END;
