-- clock schema for MariaDB (and MySQL), version 3: the stamp of the
-- procedures (sql/mariadb/procedures).
--
-- The procedures are not migrations: each file holds their current text
-- (CREATE OR REPLACE), and clock init applies them all again whenever the
-- sha256 of the files it carries differs from the one recorded here, under
-- the migration lock (src/store/mariadb/schema.cpp). One row, id 1; none
-- until the procedures were first applied. PostgreSQL keeps the same stamp
-- in its schema comment.
--
-- Idempotent like 001: a new table only.
CREATE TABLE IF NOT EXISTS procedures_stamp (
  id         TINYINT NOT NULL PRIMARY KEY CHECK (id = 1),
  sha256     CHAR(64) NOT NULL,
  applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)
) ENGINE=InnoDB;
