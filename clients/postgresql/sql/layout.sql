-- pg_regress: decoding with the layout given as arguments (snowflake 1.1,
-- issue 43): IMMUTABLE, no device read, so it runs on a host without the
-- module, in an expression index and in a generated column; the
-- device-layout forms STABLE.  The layout here: the Twitter epoch, 1 ms,
-- 41/5/5/12 bits.
\pset format unaligned
SET timezone = 'UTC';

SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile
  FROM pg_proc p WHERE p.pronamespace = 'snowflake'::regnamespace
 ORDER BY 1, 2;

-- An ID of 1000 ms after the epoch, datacenter 3, worker 7, sequence 5.
SELECT * FROM snowflake.decode((1000::bigint << 22) | (3 << 17) | (7 << 12) | 5,
  '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12);
SELECT snowflake.timestamp((1000::bigint << 22) | 5, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12);
-- The first tick at or after a time: 1000 ms after the epoch is tick 1000;
-- half a millisecond before it too; before the epoch, 0.
SELECT snowflake.from_timestamp('2010-11-04 01:42:55.657+00', '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12) = 1000::bigint << 22 AS tick_1000,
       snowflake.from_timestamp('2010-11-04 01:42:55.6565+00', '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12) = 1000::bigint << 22 AS ceil_to_1000,
       snowflake.from_timestamp('2000-01-01 00:00:00+00', '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12) AS before_epoch;
-- A 10 ms unit and other widths: the same ID means another time.
SELECT snowflake.timestamp(1000::bigint << 22, '2010-11-04 01:42:54.657+00', 10, 41, 5, 5, 12);

-- Bad layouts and IDs: refused, and why.
\set VERBOSITY terse
SELECT snowflake.timestamp(1, '2010-11-04 01:42:54.657+00', 0, 41, 5, 5, 12);
SELECT snowflake.timestamp(1, '2010-11-04 01:42:54.657+00', 1, 41, 10, 10, 12);
SELECT snowflake.timestamp(1, '2010-11-04 01:42:54.657+00', 1, -1, 5, 5, 12);
SELECT snowflake.timestamp(1, '1969-12-31 23:59:59+00', 1, 41, 5, 5, 12);
SELECT snowflake.timestamp(1, '2010-11-04 01:42:54.6575+00', 1, 41, 5, 5, 12);
SELECT snowflake.timestamp(1, 'infinity', 1, 41, 5, 5, 12);
SELECT snowflake.decode(-1, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12);
SELECT snowflake.timestamp(1::bigint << 62, '2010-11-04 01:42:54.657+00', 1000000, 50, 1, 1, 11);
SELECT snowflake.from_timestamp('infinity', '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12);
\set VERBOSITY default

-- The range query of docs/databases.md with the layout given: an index
-- condition, not a filter over every row.
CREATE TABLE ev (id bigint PRIMARY KEY, v int);
INSERT INTO ev SELECT ((g * 1000)::bigint << 22) | g, g FROM generate_series(1, 1000) g;
ANALYZE ev;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ev
 WHERE id >= snowflake.from_timestamp(now() - interval '1 hour', '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12);
-- An expression index and a generated column on the ID's time.
CREATE INDEX ev_time ON ev (snowflake.timestamp(id, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12));
ALTER TABLE ev ADD COLUMN t timestamptz
  GENERATED ALWAYS AS (snowflake.timestamp(id, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12)) STORED;
EXPLAIN (COSTS OFF) SELECT v FROM ev
 WHERE snowflake.timestamp(id, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12) < '2010-11-04 01:43:00+00';
SELECT count(*) AS first_five_s FROM ev
 WHERE snowflake.timestamp(id, '2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12) < '2010-11-04 01:43:00+00';
SELECT min(t), max(t) FROM ev;
RESET enable_seqscan;
DROP TABLE ev;

-- UUIDv7: the time of a UUID (RFC 9562's example: 2022-02-22 19:22:22
-- UTC), the lowest UUIDv7 of a time, and what is not a UUIDv7.
SELECT snowflake.uuid_timestamp('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');
SELECT snowflake.uuid_from_timestamp('2022-02-22 19:22:22+00') AS lowest,
       snowflake.uuid_from_timestamp('2022-02-22 19:22:22.0001+00') AS next_ms,
       snowflake.uuid_from_timestamp('1960-01-01 00:00:00+00') AS before_1970;
SELECT snowflake.uuid_from_timestamp('2022-02-22 19:22:22+00') <= '017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid AS at_or_below,
       snowflake.uuid_from_timestamp('2022-02-22 19:22:22.001+00') > '017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid AS next_ms_above;
\set VERBOSITY terse
SELECT snowflake.uuid_timestamp('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
SELECT snowflake.uuid_timestamp('017f22e2-79b0-7cc3-58c4-dc0c0c07398f');
SELECT snowflake.uuid_from_timestamp('infinity');
SELECT snowflake.uuid_from_timestamp('20000-01-01 00:00:00+00');
\set VERBOSITY default

-- 1.0 updated to 1.1: the same functions, volatility and overloads.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.0';
SELECT count(*) AS functions_1_0, string_agg(DISTINCT provolatile::text, '') AS volatility_1_0
  FROM pg_proc WHERE pronamespace = 'snowflake'::regnamespace;
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile
  FROM pg_proc p WHERE p.pronamespace = 'snowflake'::regnamespace
 ORDER BY 1, 2;
