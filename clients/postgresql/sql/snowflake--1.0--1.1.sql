-- snowflake 1.1 (ALTER EXTENSION snowflake UPDATE, or CREATE EXTENSION,
-- which runs 1.0 and then this): decoding that can be planned and indexed
-- (issue 43; documented in docs/databases.md).
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- The device-layout forms: STABLE, not VOLATILE.  The layout (epoch, unit,
-- widths) cannot change while the backend's descriptor is open, so within
-- a statement they are constant for a given argument, and a bound such as
-- id >= from_timestamp(now() - interval '1 hour') is an index condition.
-- layout() stays VOLATILE: it also reports the ids, which the agent sets.
ALTER FUNCTION decode(bigint) STABLE;
ALTER FUNCTION "timestamp"(bigint) STABLE;
ALTER FUNCTION from_timestamp(timestamptz) STABLE;

-- The same with the layout as arguments (epoch, time unit in ms, the four
-- widths, as snowflake.layout() reports them): no device is read, so they
-- are IMMUTABLE (expression indexes, generated columns, a replica or an
-- analytics host without the module).
CREATE FUNCTION decode(id bigint, epoch timestamptz, time_unit_ms integer,
		timestamp_bits integer, datacenter_bits integer, worker_bits integer,
		sequence_bits integer, OUT "time" timestamptz, OUT datacenter bigint,
		OUT worker bigint, OUT sequence bigint)
	AS 'MODULE_PATHNAME', 'sf_decode_record' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION "timestamp"(id bigint, epoch timestamptz, time_unit_ms integer,
		timestamp_bits integer, datacenter_bits integer, worker_bits integer,
		sequence_bits integer) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'sf_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION from_timestamp(ts timestamptz, epoch timestamptz, time_unit_ms integer,
		timestamp_bits integer, datacenter_bits integer, worker_bits integer,
		sequence_bits integer) RETURNS bigint
	AS 'MODULE_PATHNAME', 'sf_from_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A UUIDv7's time (its first 48 bits), and the lowest UUIDv7 of the first
-- millisecond at or after a time (for a range scan of a UUIDv7 key):
-- IMMUTABLE, no device.  PostgreSQL 18's uuid_extract_timestamp() does
-- the first; on 15 to 17 there is none.
CREATE FUNCTION uuid_timestamp(u uuid) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'sf_uuid_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION uuid_from_timestamp(ts timestamptz) RETURNS uuid
	AS 'MODULE_PATHNAME', 'sf_uuid_from_timestamp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
