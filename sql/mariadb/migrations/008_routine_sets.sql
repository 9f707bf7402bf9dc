-- clock schema for MariaDB, version 8: the sets of routines each release
-- installs beside the others (docs/upgrades.md). From release 1.1 on, a
-- release's procedures and functions carry a suffix of their own
-- (_r<hash>, see src/store/mariadb/schema.cpp), are created once and never
-- replaced, so that adjacent releases run side by side; release 1.0's keep
-- their names (and procedures_stamp). One row per set: clock init retires
-- the sets of releases older than the previous one.
CREATE TABLE IF NOT EXISTS routine_sets (
  suffix       VARCHAR(16) CHARACTER SET ascii NOT NULL PRIMARY KEY,  -- '' for release 1.0
  release_name VARCHAR(32) CHARACTER SET ascii NOT NULL,  -- clock --version of its installer
  sha256       CHAR(64) CHARACTER SET ascii NOT NULL,
  installed_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)
) ENGINE=InnoDB;
INSERT IGNORE INTO routine_sets (suffix, release_name, sha256) VALUES ('', '1.0.0', '');
