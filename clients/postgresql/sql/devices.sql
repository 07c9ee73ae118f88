-- pg_regress for CREATE EXTENSION snowflake: what needs no snowflake device
-- (run first; the dkms-sid and dkms-trixie stages run it alone on
-- PostgreSQL 18 in a sid root and 17 in a Debian 13 root, where no module
-- is loaded).  The errors of a missing and of a
-- foreign device, and who may point the functions at another device.
-- sf_err(), made here, is snowflake.sql's too (one database for the run).

-- sf_err(q): q's error, as its SQLSTATE, message and hint (unaligned output
-- below, so that a long message does not widen a table).
CREATE FUNCTION sf_err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN st || ': ' || msg || coalesce(' / ' || nullif(hint, ''), '');
END $$;
\pset format unaligned

-- No device (module not loaded).
SET snowflake.device = '/dev/snowflake-not-there';
SELECT sf_err('SELECT snowflake.nextval()');
-- A foreign device: refused before anything is read.
SET snowflake.device = '/dev/null';
SELECT sf_err('SELECT snowflake.nextval()');
SET snowflake.device = '/dev/urandom';
SELECT sf_err('SELECT snowflake.layout()');
-- A regular file is not the device either.
SET snowflake.device = '/etc/hostname';
SELECT sf_err('SELECT snowflake.nextval()');
-- An infinite time has no ID (refused before the device is asked).
SELECT sf_err($$SELECT snowflake.from_timestamp('infinity')$$) AS infinity;
-- Only a superuser points the functions at another device.
CREATE ROLE sf_regress_user;
SET ROLE sf_regress_user;
SET snowflake.device = '/dev/null';
RESET ROLE;
DROP ROLE sf_regress_user;
