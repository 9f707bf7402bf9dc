-- clock on PostgreSQL, version 3: renewing and releasing (30_renew_release.sql).
-- Migrations hold DDL only; the functions of this version live, in their
-- current text, in sql/postgres/functions/, re-applied by the migration
-- script whenever their hash changes (src/store/postgres/schema.cpp). What is
-- left here is what a database created at this version ran besides them.

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
