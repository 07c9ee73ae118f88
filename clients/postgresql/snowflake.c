/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * snowflake: PostgreSQL functions on /dev/snowflake and /dev/uuidv7
 * (libsnowflake).  CREATE EXTENSION snowflake; the SQL side is
 * sql/snowflake--1.0.sql, the documentation docs/databases.md.
 *
 * Order: snowflake.nextval() reads one ID per call from the device, so two
 * calls anywhere on the host (this backend, another backend, another
 * program) are ordered by the kernel: a later call returns a larger ID.
 * There is no cache in the backend: nothing here can hand out an ID twice
 * or out of order, and a failed read raises an error, which aborts the
 * statement (nothing half-inserted).
 *
 * A wait for the next tick (up to time_unit_ms, an hour at most) is not a
 * sleep in the kernel, which PostgreSQL's signal handlers (SA_RESTART)
 * would restart: the device is opened non-blocking, and a read that finds
 * the tick used up (-EAGAIN) waits on the backend's latch and the device
 * (WaitLatchOrSocket, wait event "Extension"), then CHECK_FOR_INTERRUPTS():
 * statement_timeout, pg_cancel_backend(), pg_terminate_backend() and a
 * fast shutdown end it at once.
 *
 * The device is opened once per backend and kept.  A backend is forked from
 * the postmaster: a descriptor opened in another process (the postmaster,
 * when the library is preloaded) is not used but reopened (pid check), and
 * after any failed read the descriptor is closed and opened again by the
 * next call (the module may have been reloaded).
 *
 * Decoding by the device's layout asks the device for it
 * (SNOWFLAKE_IOC_GET_CONFIG: epoch, time unit, the four widths): nothing is
 * assumed.  Those forms are STABLE (the layout cannot change while a
 * descriptor is open), so that a bound like from_timestamp(now() - ...) is
 * an index condition.  The forms that take the layout as arguments
 * (snowflake--1.0--1.1.sql) read no device and are IMMUTABLE: expression
 * indexes, generated columns, and hosts without the module (a replica).
 */
#include "postgres.h"

#include <errno.h>
#include <pwd.h>
#include <unistd.h>

#include <snowflake.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "access/htup_details.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/wait_event.h"

/* PostgreSQL 18 names a module in pg_get_loaded_modules(). */
#if PG_VERSION_NUM >= 180000
PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = "1.1");
#else
PG_MODULE_MAGIC;
#endif

/* Unix ms of PostgreSQL's epoch, 2000-01-01. */
#define PG_EPOCH_UNIX_MS INT64CONST(946684800000)

static char *sf_device_path;
static char *sf_uuid_device_path;

/*
 * One open device of a kind: its handle, the process that opened it and
 * the path it was opened at (a changed setting opens the new path).
 */
struct sf_dev {
	struct snowflake *h;
	pid_t pid;
	char opened[MAXPGPATH];
	const char *what;	/* "snowflake", "uuidv7" */
	char **path;
};

static struct sf_dev sf_ids = { NULL, 0, "", "snowflake", &sf_device_path };
static struct sf_dev sf_uuids = { NULL, 0, "", "uuidv7", &sf_uuid_device_path };

void _PG_init(void);

void
_PG_init(void)
{
	DefineCustomStringVariable("snowflake.device",
				   "The snowflake device snowflake.nextval() and the decoding functions read.",
				   NULL, &sf_device_path, SNOWFLAKE_DEFAULT_PATH,
				   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("snowflake.uuid_device",
				   "The UUIDv7 device snowflake.uuidv7() reads.",
				   NULL, &sf_uuid_device_path, SNOWFLAKE_UUID_DEFAULT_PATH,
				   PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("snowflake");
}

static void
sf_forget(struct sf_dev *d)
{
	if (d->h && d->pid == MyProcPid)
		snowflake_close(d->h);
	/* A descriptor of another process: not ours to close (CLOEXEC only). */
	d->h = NULL;
	d->pid = 0;
}

/*
 * The error for -@err from @op on @d, with what to do about it.  Never
 * returns.  PostgreSQL 18 replaced pg_attribute_noreturn() (after the
 * declarator) with pg_noreturn (before it; C11 _Noreturn).
 */
#if PG_VERSION_NUM >= 180000
static pg_noreturn void
#else
static void pg_attribute_noreturn()
#endif
sf_raise(struct sf_dev *d, const char *op, int err)
{
	const char *path = *d->path;
	struct passwd *pw = getpwuid(geteuid());
	const char *user = pw ? pw->pw_name : "postgres";

	sf_forget(d);
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_FILE),
			 errmsg("snowflake: %s: no such device (%s)", path, op),
			 errdetail("The snowflake kernel module is not loaded, or its device node is missing."),
			 errhint("Load the module: modprobe snowflake (Debian: install snowflake-dkms; snowflake-floor.service loads it at boot).")));
		break;
	case EACCES:
	case EPERM:
		ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("snowflake: %s: permission denied for the server's user \"%s\" (%s)", path, user, op),
			 errdetail("The device is readable by the group snowflake."),
			 errhint("Add the server's user to that group and restart the server: usermod -aG snowflake %s && systemctl restart postgresql", user)));
		break;
	case ENOTCONN:
		ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake: %s refuses IDs: no lease (%s)", path, op),
			 errdetail("The device is strict (or fenced) and holds no worker id lease: the agent is not holding a pair, its lease expired, or the VM was cloned."),
			 errhint("Check the agent: systemctl status snowflake-agent; snowflake stats shows the device's state.")));
		break;
	case ENOTTY:
		ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("snowflake: %s is not a %s device (%s)", path, d->what, op),
			 errhint("Point snowflake.%s at the %s device.",
				 d == &sf_ids ? "device" : "uuid_device",
				 d == &sf_ids ? SNOWFLAKE_DEFAULT_PATH : SNOWFLAKE_UUID_DEFAULT_PATH)));
		break;
	default:
		ereport(ERROR,
			(errcode(ERRCODE_IO_ERROR),
			 errmsg("snowflake: %s: %s failed: %s", path, op, snowflake_strerror(-err))));
	}
	pg_unreachable();
}

/*
 * The handle of @d, opened once per backend (again after a fork, a failure
 * or a change of its setting).
 */
static struct snowflake *
sf_get(struct sf_dev *d)
{
	int err;

	if (d->h && d->pid == MyProcPid && strcmp(d->opened, *d->path) == 0)
		return d->h;
	sf_forget(d);
	if (d == &sf_ids)
		err = snowflake_open(&d->h, *d->path, SNOWFLAKE_NONBLOCK);
	else
		err = snowflake_uuid_open(&d->h, *d->path, SNOWFLAKE_NONBLOCK);
	if (err) {
		d->h = NULL;
		sf_raise(d, "open", -err);
	}
	d->pid = MyProcPid;
	strlcpy(d->opened, *d->path, sizeof(d->opened));
	return d->h;
}

/*
 * One record of @d into @buf: the tick used up is waited out on the latch
 * and the device's descriptor, with CHECK_FOR_INTERRUPTS() in between (see
 * the top).  Raises the error of a failed read.
 */
static void
sf_read(struct sf_dev *d, void *buf)
{
	for (;;) {
		struct snowflake *h;
		int err;

		CHECK_FOR_INTERRUPTS();
		h = sf_get(d);
		err = d == &sf_ids ? snowflake_next(h, buf) : snowflake_uuid_next(h, buf);
		if (err == 0)
			return;
		if (err != -EAGAIN)
			sf_raise(d, "read", -err);
		/* The device is readable at the next tick (its poll). */
		(void) WaitLatchOrSocket(MyLatch,
					 WL_LATCH_SET | WL_SOCKET_READABLE | WL_TIMEOUT |
					 WL_EXIT_ON_PM_DEATH,
					 snowflake_fd(h), 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

PG_FUNCTION_INFO_V1(sf_nextval);
Datum
sf_nextval(PG_FUNCTION_ARGS)
{
	uint64_t id;

	/* One read: the kernel's order across the host (see the top). */
	sf_read(&sf_ids, &id);
	PG_RETURN_INT64((int64) id);
}

PG_FUNCTION_INFO_V1(sf_uuidv7);
Datum
sf_uuidv7(PG_FUNCTION_ARGS)
{
	pg_uuid_t *u = palloc(sizeof(*u));

	StaticAssertStmt(sizeof(u->data) == SNOWFLAKE_UUID_SIZE, "uuid size");
	sf_read(&sf_uuids, u->data);
	PG_RETURN_UUID_P(u);
}

/* The device's layout (the device's own, never assumed). */
static void
sf_layout(struct snowflake_config *cfg)
{
	int err = snowflake_get_config(sf_get(&sf_ids), cfg);

	if (err)
		sf_raise(&sf_ids, "SNOWFLAKE_IOC_GET_CONFIG", -err);
}

/*
 * The layout given as arguments @first.. of the call: epoch (timestamptz,
 * a whole ms at or after 1970), time unit (ms), the four widths; checked
 * as the kernel checks a layout (snowflake_check_layout).
 */
static void
sf_arg_layout(FunctionCallInfo fcinfo, int first, struct snowflake_config *cfg)
{
	TimestampTz epoch = PG_GETARG_TIMESTAMPTZ(first);
	int32 v[5];
	int i;

	for (i = 0; i < 5; i++)
		v[i] = PG_GETARG_INT32(first + 1 + i);
	if (TIMESTAMP_NOT_FINITE(epoch) || epoch % 1000 != 0 ||
	    epoch < -PG_EPOCH_UNIX_MS * 1000)
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("snowflake: the epoch must be a whole millisecond at or after 1970-01-01 00:00:00+00")));
	for (i = 0; i < 5; i++)
		if (v[i] < 0)
			ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake: the time unit and the widths cannot be negative")));
	memset(cfg, 0, sizeof(*cfg));
	cfg->epoch_ms = (uint64_t) (epoch / 1000 + PG_EPOCH_UNIX_MS);
	cfg->time_unit_ms = (uint32_t) v[0];
	cfg->timestamp_bits = (uint8_t) Min(v[1], 255);
	cfg->datacenter_bits = (uint8_t) Min(v[2], 255);
	cfg->worker_bits = (uint8_t) Min(v[3], 255);
	cfg->sequence_bits = (uint8_t) Min(v[4], 255);
	if (snowflake_check_layout(cfg))
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("snowflake: not a valid layout: unit %d ms, %d/%d/%d/%d bits",
				v[0], v[1], v[2], v[3], v[4]),
			 errdetail("The time unit must be at least 1 ms and the four widths must fit 63 bits, as the module requires (snowflake.layout() shows a device's).")));
}

/*
 * @id split by @cfg: the device's layout (@explicit false: read now) or
 * the one given.
 */
static void
sf_decode(int64 id, struct snowflake_config *cfg, struct snowflake_parts *p, bool explicit)
{
	int err;

	if (!explicit)
		sf_layout(cfg);
	err = snowflake_decode(cfg, (uint64_t) id, p);
	if (err == -EOVERFLOW)
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake: the time of " INT64_FORMAT " does not fit 64 bits of Unix ms", id),
			 errdetail("Layout: %u/%u/%u/%u bits, epoch %llu ms, unit %u ms.",
				   cfg->timestamp_bits, cfg->datacenter_bits, cfg->worker_bits,
				   cfg->sequence_bits, (unsigned long long) cfg->epoch_ms, cfg->time_unit_ms)));
	if (err)
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("snowflake: " INT64_FORMAT " is not an ID of %s layout", id,
				explicit ? "this" : "this device's"),
			 errdetail("Layout: %u/%u/%u/%u bits, epoch %llu ms, unit %u ms: bits above those are set.",
				   cfg->timestamp_bits, cfg->datacenter_bits, cfg->worker_bits,
				   cfg->sequence_bits, (unsigned long long) cfg->epoch_ms, cfg->time_unit_ms)));
}

static TimestampTz
sf_unix_ms_to_tstz(uint64_t unix_ms)
{
	int64 ms = (int64) unix_ms - PG_EPOCH_UNIX_MS;

	if (unix_ms > (uint64_t) PG_INT64_MAX / 2 || ms > PG_INT64_MAX / 1000 ||
	    !IS_VALID_TIMESTAMP(ms * 1000))
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake: the ID's time is out of timestamptz's range")));
	return (TimestampTz) (ms * 1000);
}

PG_FUNCTION_INFO_V1(sf_timestamp);
Datum
sf_timestamp(PG_FUNCTION_ARGS)
{
	struct snowflake_config cfg;
	struct snowflake_parts p;

	bool explicit = PG_NARGS() > 1;

	if (explicit)
		sf_arg_layout(fcinfo, 1, &cfg);
	sf_decode(PG_GETARG_INT64(0), &cfg, &p, explicit);
	PG_RETURN_TIMESTAMPTZ(sf_unix_ms_to_tstz(p.unix_ms));
}

PG_FUNCTION_INFO_V1(sf_decode_record);
Datum
sf_decode_record(PG_FUNCTION_ARGS)
{
	struct snowflake_config cfg;
	struct snowflake_parts p;
	TupleDesc td;
	Datum v[4];
	bool nulls[4] = { false, false, false, false };
	bool explicit = PG_NARGS() > 1;

	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "snowflake.decode: a record type was expected");
	if (explicit)
		sf_arg_layout(fcinfo, 1, &cfg);
	sf_decode(PG_GETARG_INT64(0), &cfg, &p, explicit);
	v[0] = TimestampTzGetDatum(sf_unix_ms_to_tstz(p.unix_ms));
	v[1] = Int64GetDatum((int64) p.datacenter);
	v[2] = Int64GetDatum((int64) p.worker);
	v[3] = Int64GetDatum((int64) p.sequence);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(td), v, nulls)));
}

PG_FUNCTION_INFO_V1(sf_layout_record);
Datum
sf_layout_record(PG_FUNCTION_ARGS)
{
	struct snowflake_config cfg;
	TupleDesc td;
	Datum v[8];
	bool nulls[8] = { false };

	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "snowflake.layout: a record type was expected");
	sf_layout(&cfg);
	v[0] = TimestampTzGetDatum(sf_unix_ms_to_tstz(cfg.epoch_ms));
	v[1] = Int32GetDatum((int32) cfg.time_unit_ms);
	v[2] = Int32GetDatum(cfg.timestamp_bits);
	v[3] = Int32GetDatum(cfg.datacenter_bits);
	v[4] = Int32GetDatum(cfg.worker_bits);
	v[5] = Int32GetDatum(cfg.sequence_bits);
	v[6] = Int64GetDatum((int64) cfg.datacenter_id);
	v[7] = Int64GetDatum((int64) cfg.worker_id);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(td), v, nulls)));
}

/*
 * The smallest ID whose time is at or after @ts: the first tick that starts
 * at or after it, datacenter, worker and sequence 0.  So
 * id >= from_timestamp(a) AND id < from_timestamp(b) is every ID of [a, b).
 */
PG_FUNCTION_INFO_V1(sf_from_timestamp);
Datum
sf_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	struct snowflake_config cfg;
	struct snowflake_parts p = { 0 };
	int64 epoch_us, unit_us;
	uint64_t id;
	int err;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake.from_timestamp: infinite time has no ID")));
	if (PG_NARGS() > 1)
		sf_arg_layout(fcinfo, 1, &cfg);
	else
		sf_layout(&cfg);
	epoch_us = ((int64) cfg.epoch_ms - PG_EPOCH_UNIX_MS) * 1000;
	unit_us = (int64) cfg.time_unit_ms * 1000;
	if (ts <= epoch_us) {
		p.timestamp = 0;
	} else {
		/* ceil((ts - epoch) / unit): the first tick starting at or after ts */
		p.timestamp = (uint64_t) ((ts - epoch_us) / unit_us) +
			((ts - epoch_us) % unit_us != 0);
	}
	err = snowflake_compose(&cfg, &p, &id);
	if (err)
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake.from_timestamp: the time is past the layout's %u timestamp bits",
				cfg.timestamp_bits)));
	PG_RETURN_INT64((int64) id);
}

/*
 * A UUIDv7's time (RFC 9562: the first 48 bits, Unix ms), read from the
 * UUID alone: IMMUTABLE.  Anything but version 7 of the RFC's variant is
 * refused.
 */
PG_FUNCTION_INFO_V1(sf_uuid_timestamp);
Datum
sf_uuid_timestamp(PG_FUNCTION_ARGS)
{
	pg_uuid_t *u = PG_GETARG_UUID_P(0);
	uint64_t ms = 0;
	int i;

	if ((u->data[6] >> 4) != 7 || (u->data[8] & 0xc0) != 0x80)
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("snowflake.uuid_timestamp: not a UUIDv7 (version %d, variant bits %d%d)",
				u->data[6] >> 4, u->data[8] >> 7, (u->data[8] >> 6) & 1),
			 errdetail("A UUIDv7 has version 7 and the RFC 9562 variant (binary 10).")));
	for (i = 0; i < 6; i++)
		ms = (ms << 8) | u->data[i];
	PG_RETURN_TIMESTAMPTZ(sf_unix_ms_to_tstz(ms));
}

/*
 * The lowest UUIDv7 of the first millisecond at or after @ts (the lowest
 * of 1970-01-01 before it): u >= uuid_from_timestamp(a) AND
 * u < uuid_from_timestamp(b) is every UUIDv7 of [a, b).  IMMUTABLE.
 */
PG_FUNCTION_INFO_V1(sf_uuid_from_timestamp);
Datum
sf_uuid_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	pg_uuid_t *u = palloc0(sizeof(*u));
	int64 unix_us;
	uint64_t ms;
	int i;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake.uuid_from_timestamp: infinite time has no UUID")));
	unix_us = ts + PG_EPOCH_UNIX_MS * 1000;
	ms = unix_us <= 0 ? 0 : (uint64_t) (unix_us / 1000 + (unix_us % 1000 != 0));
	if (ms >> 48)
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("snowflake.uuid_from_timestamp: the time is past a UUIDv7's 48 bits of ms")));
	for (i = 5; i >= 0; i--) {
		u->data[i] = (uint8) (ms & 0xff);
		ms >>= 8;
	}
	u->data[6] = 0x70;
	u->data[8] = 0x80;
	PG_RETURN_UUID_P(u);
}
