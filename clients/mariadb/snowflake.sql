-- The snowflake loadable functions (snowflake_udf.so, clients/mariadb):
-- mariadb < /usr/share/snowflake/mariadb/snowflake.sql as an administrator.
-- docs/databases.md documents them.
CREATE FUNCTION IF NOT EXISTS snowflake_next RETURNS INTEGER SONAME 'snowflake_udf.so';
CREATE FUNCTION IF NOT EXISTS snowflake_uuidv7 RETURNS STRING SONAME 'snowflake_udf.so';
CREATE FUNCTION IF NOT EXISTS snowflake_unix_ms RETURNS INTEGER SONAME 'snowflake_udf.so';
CREATE FUNCTION IF NOT EXISTS snowflake_datacenter RETURNS INTEGER SONAME 'snowflake_udf.so';
CREATE FUNCTION IF NOT EXISTS snowflake_worker RETURNS INTEGER SONAME 'snowflake_udf.so';
CREATE FUNCTION IF NOT EXISTS snowflake_sequence RETURNS INTEGER SONAME 'snowflake_udf.so';
