-- pg_regress for CREATE EXTENSION snowflake (make installcheck), against a
-- server on a host with the module loaded and a worker id assigned; after
-- devices.sql, which makes sf_err().
-- Nothing here depends on the time or the ids: only on what must hold.
\pset format unaligned

-- nextval: increasing within a statement and across statements.
CREATE TEMP TABLE ids AS
  SELECT g, snowflake.nextval() AS id FROM generate_series(1, 10000) g;
SELECT count(DISTINCT id) = 10000 AS distinct_ids,
       bool_and(id > 0) AS positive
  FROM ids;
SELECT count(*) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM ids) s
 WHERE id <= prev;
SELECT snowflake.nextval() > max(id) AS later_is_larger FROM ids;
-- Order across backends, the reason there is no cache in a backend: IDs
-- taken in turn here and in a second backend (dblink) increase in the
-- order they were taken.
CREATE EXTENSION dblink;
SELECT dblink_connect('other', 'dbname=' || current_database()) AS connected;
CREATE TEMP TABLE pp (n int, id bigint);
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    IF i % 2 = 0 THEN
      INSERT INTO pp VALUES (i, snowflake.nextval());
    ELSE
      INSERT INTO pp SELECT i, x FROM dblink('other', 'SELECT snowflake.nextval()') AS r(x bigint);
    END IF;
  END LOOP;
END $$;
SELECT count(*) AS ids, count(*) FILTER (WHERE id <= prev) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM pp) s;
SELECT dblink_disconnect('other') AS disconnected;
DROP EXTENSION dblink;

-- As a column default.
CREATE TEMP TABLE t (id bigint PRIMARY KEY DEFAULT snowflake.nextval(), v int);
INSERT INTO t (v) SELECT generate_series(1, 1000);
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM t;
SELECT count(*) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY v) AS prev FROM t) s WHERE id <= prev;

-- The layout is the device's: its widths add up to at most 63 bits.
SELECT timestamp_bits + datacenter_bits + worker_bits + sequence_bits <= 63 AS fits,
       time_unit_ms >= 1 AS unit
  FROM snowflake.layout();

-- Decoding by that layout: this host's ids, a time near now.
SELECT d.datacenter = l.datacenter_id AS datacenter,
       d.worker = l.worker_id AS worker,
       d.sequence >= 0 AS sequence,
       abs(extract(epoch FROM d.time - now())) < 3600 AS time_is_now,
       d.time = snowflake.timestamp(i.id) AS same_time
  FROM (SELECT snowflake.nextval() AS id) i,
       LATERAL snowflake.decode(i.id) d, snowflake.layout() l;

-- The smallest ID of a time: at or below every ID of that time, above
-- every ID before it; its fields are 0.
SELECT snowflake.from_timestamp(snowflake.timestamp(id)) <= id AS at_or_below,
       snowflake.from_timestamp(snowflake.timestamp(id) + interval '1 ms' *
         (SELECT time_unit_ms FROM snowflake.layout())) > id AS next_tick_above,
       (snowflake.decode(snowflake.from_timestamp(snowflake.timestamp(id)))).sequence = 0 AS seq0,
       snowflake.timestamp(snowflake.from_timestamp(snowflake.timestamp(id))) =
         snowflake.timestamp(id) AS same_tick
  FROM (SELECT snowflake.nextval() AS id) i;
-- A range scan by time finds the rows of that time.
SELECT count(*) = 1000 AS all_rows_in_range FROM t
 WHERE id >= snowflake.from_timestamp(now() - interval '1 hour')
   AND id < snowflake.from_timestamp(clock_timestamp() + interval '1 hour');
SELECT snowflake.from_timestamp('1970-01-01 00:00:00+00') AS before_epoch;
-- The documented query (docs/databases.md) is a range scan of the key:
-- from_timestamp is STABLE, so its bound is an index condition, not a
-- filter that reads the device once per row.
ANALYZE t;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t
 WHERE id >= snowflake.from_timestamp(now() - interval '1 hour');
RESET enable_seqscan;
RESET enable_bitmapscan;
-- The layout given as arguments decodes as the device does.
SELECT snowflake.timestamp(i.id, l.epoch, l.time_unit_ms, l.timestamp_bits,
         l.datacenter_bits, l.worker_bits, l.sequence_bits) = snowflake.timestamp(i.id) AS same_time,
       (snowflake.decode(i.id, l.epoch, l.time_unit_ms, l.timestamp_bits,
         l.datacenter_bits, l.worker_bits, l.sequence_bits)).worker = l.worker_id AS same_worker,
       snowflake.from_timestamp(now(), l.epoch, l.time_unit_ms, l.timestamp_bits,
         l.datacenter_bits, l.worker_bits, l.sequence_bits) = snowflake.from_timestamp(now()) AS same_bound
  FROM (SELECT snowflake.nextval() AS id) i, snowflake.layout() l;

-- Bad input: an ID with bits above the layout's.
SELECT sf_err('SELECT snowflake.decode(-1)') AS decode_minus_one;

-- UUIDv7: version 7, the RFC variant, increasing.
CREATE TEMP TABLE u AS SELECT g, snowflake.uuidv7() AS u FROM generate_series(1, 1000) g;
SELECT count(DISTINCT u) AS distinct_uuids,
       bool_and(substr(u::text, 15, 1) = '7') AS version7,
       bool_and(substr(u::text, 20, 1) IN ('8', '9', 'a', 'b')) AS rfc_variant
  FROM u;
SELECT count(*) AS out_of_order
  FROM (SELECT u, lag(u) OVER (ORDER BY g) AS prev FROM u) s WHERE u <= prev;

-- The snowflake device is not a uuidv7 device.
SET snowflake.uuid_device = '/dev/snowflake';
SELECT sf_err('SELECT snowflake.uuidv7()');
RESET snowflake.uuid_device;
-- An error mid-statement aborts the statement: nothing half-inserted.  The
-- fifth row points the setting at another file: its ID's read fails.
RESET snowflake.device;
CREATE TEMP TABLE half (id bigint, v int);
SELECT sf_err($$INSERT INTO half (v, id)
  SELECT g, snowflake.nextval() FROM (SELECT g, CASE WHEN g = 5 THEN
    set_config('snowflake.device', '/dev/null', true) END AS x
    FROM generate_series(1, 10) g OFFSET 0) s$$) AS mid_statement;
SELECT count(*) AS rows_after_the_error FROM half;
-- The device again after a failure: reopened.
RESET snowflake.device;
SELECT snowflake.nextval() > 0 AS reopened;
