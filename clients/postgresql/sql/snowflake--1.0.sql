-- snowflake 1.0: the functions of CREATE EXTENSION snowflake (their C side:
-- snowflake.c; documented in docs/databases.md).
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- One ID from /dev/snowflake: one read, ordered across the host.
CREATE FUNCTION nextval() RETURNS bigint
	AS 'MODULE_PATHNAME', 'sf_nextval' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
-- One RFC 9562 UUIDv7 from /dev/uuidv7, ordered across the host.
CREATE FUNCTION uuidv7() RETURNS uuid
	AS 'MODULE_PATHNAME', 'sf_uuidv7' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
-- The device's layout, as the module reports it.
CREATE FUNCTION layout(OUT epoch timestamptz, OUT time_unit_ms integer,
		OUT timestamp_bits integer, OUT datacenter_bits integer,
		OUT worker_bits integer, OUT sequence_bits integer,
		OUT datacenter_id bigint, OUT worker_id bigint)
	AS 'MODULE_PATHNAME', 'sf_layout_record' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
-- An ID's fields, by the device's layout.  VOLATILE: the layout is the
-- device's, read at each call (not an immutable property of the ID).
CREATE FUNCTION decode(id bigint, OUT "time" timestamptz, OUT datacenter bigint,
		OUT worker bigint, OUT sequence bigint)
	AS 'MODULE_PATHNAME', 'sf_decode_record' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
CREATE FUNCTION "timestamp"(id bigint) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'sf_timestamp' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
-- The smallest ID of the first tick at or after ts (0 before the epoch):
-- id >= from_timestamp(a) AND id < from_timestamp(b) is every ID of [a, b).
CREATE FUNCTION from_timestamp(ts timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME', 'sf_from_timestamp' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
