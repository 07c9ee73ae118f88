/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * snowflake_udf.so: MariaDB/MySQL loadable functions on /dev/snowflake and
 * /dev/uuidv7 (libsnowflake).  clients/mariadb/snowflake.sql creates them
 * (CREATE FUNCTION ... SONAME); docs/databases.md documents them.
 *
 *   snowflake_next()          one ID (BIGINT) from /dev/snowflake
 *   snowflake_uuidv7()        one UUIDv7, in its text form, from /dev/uuidv7
 *   snowflake_unix_ms(id)     the ID's time, Unix ms, by the device's layout
 *   snowflake_datacenter(id), snowflake_worker(id), snowflake_sequence(id)
 *
 * Order: one read per call, no cache: the kernel orders every call on the
 * host.  The device is opened by the init function of each statement and
 * closed by its deinit function: its handle lives in initid->ptr, the
 * statement's own state of the UDF interface, and nothing of the library
 * outlives a statement.  No thread-specific key or destructor: the server
 * unloads the library when the last function is dropped, and a thread that
 * ends after that must find nothing of it to run (a key's destructor in
 * the library sent such a thread into unmapped memory: issue 43).  The init
 * function also checks the device's state, so that a missing module, a
 * permission, a foreign device or a device that refuses (no lease) fails
 * the statement before any row, with what to do in the message; a read
 * that fails later in the statement sets the row's error.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>
/*
 * The SQL name snowflake_next is the symbol of the loadable function: the
 * library's function of that name is hidden here (never called: one ID is
 * snowflake_next_n() of 1, the same single read).
 */
#define snowflake_next sf_library_next_unused
#include <snowflake.h>
#undef snowflake_next

/* A statement's open device (initid->ptr), closed by its deinit function. */
struct sf_stmt {
	struct snowflake *h;
};

static int sf_open_dev(int uuid, struct snowflake **h)
{
	return uuid ? snowflake_uuid_open(h, NULL, 0) : snowflake_open(h, NULL, 0);
}

static void sf_deinit(UDF_INIT *initid)
{
	struct sf_stmt *st = (struct sf_stmt *)initid->ptr;

	if (st) {
		snowflake_close(st->h);
		free(st);
	}
	initid->ptr = NULL;
}

/*
 * @msg: what went wrong with -@err and what to do.  MariaDB prints at most
 * 80 characters of it (ER_CANT_INITIALIZE_UDF: "%-.80s"): the cause and
 * the remedy come first and fit.
 */
static void sf_message(char *msg, int uuid, const char *op, int err)
{
	const char *path = uuid ? SNOWFLAKE_UUID_DEFAULT_PATH : SNOWFLAKE_DEFAULT_PATH;
	struct passwd pwd, *pw = NULL;
	char buf[1024];
	const char *user = "mysql";

	/* getpwuid() shares one buffer among the server's threads. */
	if (!getpwuid_r(geteuid(), &pwd, buf, sizeof(buf), &pw) && pw)
		user = pw->pw_name;

	switch (-err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "snowflake: no %s: load the module (modprobe snowflake)", path);
		break;
	case EACCES:
	case EPERM:
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "snowflake: %s denied: usermod -aG snowflake %s; restart the server",
			 path, user);
		break;
	case ENOTCONN:
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "snowflake: no lease (strict device): is snowflake-agent holding one?");
		break;
	case ENOTTY:
		snprintf(msg, MYSQL_ERRMSG_SIZE, "snowflake: %s is not a snowflake device", path);
		break;
	default:
		snprintf(msg, MYSQL_ERRMSG_SIZE, "snowflake: %s %s: %s", path, op,
			 snowflake_strerror(err));
	}
}

/* The statement's check: the device opens and gives IDs now. */
static my_bool sf_init(UDF_INIT *initid, UDF_ARGS *args, char *msg, int uuid,
		       unsigned int nargs, const char *name)
{
	struct snowflake_stats stats;
	struct sf_stmt *st;
	int err;

	initid->ptr = NULL;
	if (args->arg_count != nargs) {
		snprintf(msg, MYSQL_ERRMSG_SIZE, "%s() takes %u argument%s", name, nargs,
			 nargs == 1 ? "" : "s");
		return 1;
	}
	if (nargs)
		args->arg_type[0] = INT_RESULT;
	st = calloc(1, sizeof(*st));
	if (!st) {
		sf_message(msg, uuid, "open", -ENOMEM);
		return 1;
	}
	err = sf_open_dev(uuid, &st->h);
	if (err) {
		free(st);
		sf_message(msg, uuid, "open", err);
		return 1;
	}
	initid->ptr = (char *)st;
	if (!uuid) {
		err = snowflake_get_stats(st->h, &stats);
		if (err) {
			sf_deinit(initid);
			sf_message(msg, uuid, "SNOWFLAKE_IOC_GET_STATS", err);
			return 1;
		}
		if (!nargs && (stats.state & SNOWFLAKE_STATE_REFUSING)) {
			sf_deinit(initid);
			sf_message(msg, uuid, "its state", -ENOTCONN);
			return 1;
		}
	}
	initid->maybe_null = nargs != 0;
	initid->const_item = 0;
	return 0;
}

/* The statement's handle (its init function opened it). */
static struct snowflake *sf_h(UDF_INIT *initid)
{
	struct sf_stmt *st = (struct sf_stmt *)initid->ptr;

	return st ? st->h : NULL;
}

my_bool snowflake_next_init(UDF_INIT *initid, UDF_ARGS *args, char *msg);
void snowflake_next_deinit(UDF_INIT *initid);
long long snowflake_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error);
my_bool snowflake_uuidv7_init(UDF_INIT *initid, UDF_ARGS *args, char *msg);
void snowflake_uuidv7_deinit(UDF_INIT *initid);
char *snowflake_uuidv7(UDF_INIT *initid, UDF_ARGS *args, char *result,
		       unsigned long *length, char *is_null, char *error);

my_bool snowflake_next_init(UDF_INIT *initid, UDF_ARGS *args, char *msg)
{
	return sf_init(initid, args, msg, 0, 0, "snowflake_next");
}

void snowflake_next_deinit(UDF_INIT *initid)
{
	sf_deinit(initid);
}

long long snowflake_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error)
{
	struct snowflake *h = sf_h(initid);
	uint64_t id;

	(void)args;
	*is_null = 0;
	if (!h || snowflake_next_n(h, &id, 1) != 1) {
		*error = 1;
		return 0;
	}
	return (long long)id;
}

my_bool snowflake_uuidv7_init(UDF_INIT *initid, UDF_ARGS *args, char *msg)
{
	if (sf_init(initid, args, msg, 1, 0, "snowflake_uuidv7"))
		return 1;
	initid->max_length = SNOWFLAKE_UUID_STR_MAX - 1;
	return 0;
}

void snowflake_uuidv7_deinit(UDF_INIT *initid)
{
	sf_deinit(initid);
}

char *snowflake_uuidv7(UDF_INIT *initid, UDF_ARGS *args, char *result,
		       unsigned long *length, char *is_null, char *error)
{
	struct snowflake *h = sf_h(initid);
	uint8_t u[SNOWFLAKE_UUID_SIZE];

	(void)args;
	*is_null = 0;
	/* result has room for 255 bytes, more than the 37 of the text form. */
	if (!h || snowflake_uuid_next(h, u) ||
	    snowflake_uuid_format(u, result, SNOWFLAKE_UUID_STR_MAX) < 0) {
		*error = 1;
		return NULL;
	}
	*length = SNOWFLAKE_UUID_STR_MAX - 1;
	return result;
}

/* The decoding functions: the ID's field, by the device's own layout. */
enum sf_field { SF_UNIX_MS, SF_DATACENTER, SF_WORKER, SF_SEQUENCE };

static long long sf_field(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error,
			  enum sf_field f)
{
	struct snowflake *h = sf_h(initid);
	struct snowflake_config cfg;
	struct snowflake_parts p;

	*is_null = 0;
	if (!args->args[0]) {
		*is_null = 1;
		return 0;
	}
	if (!h || snowflake_get_config(h, &cfg)) {
		*error = 1;
		return 0;
	}
	/* Not an ID of this layout (a bit above its widths): NULL. */
	if (snowflake_decode(&cfg, (uint64_t)*(long long *)args->args[0], &p)) {
		*is_null = 1;
		return 0;
	}
	switch (f) {
	case SF_UNIX_MS:
		return (long long)p.unix_ms;
	case SF_DATACENTER:
		return p.datacenter;
	case SF_WORKER:
		return p.worker;
	default:
		return p.sequence;
	}
}

#define SF_DECODER(name, field)							\
	my_bool name##_init(UDF_INIT *initid, UDF_ARGS *args, char *msg);	\
	void name##_deinit(UDF_INIT *initid);					\
	long long name(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error); \
	my_bool name##_init(UDF_INIT *initid, UDF_ARGS *args, char *msg)	\
	{									\
		return sf_init(initid, args, msg, 0, 1, #name);			\
	}									\
	void name##_deinit(UDF_INIT *initid)					\
	{									\
		sf_deinit(initid);						\
	}									\
	long long name(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error) \
	{									\
		return sf_field(initid, args, is_null, error, field);		\
	}

SF_DECODER(snowflake_unix_ms, SF_UNIX_MS)
SF_DECODER(snowflake_datacenter, SF_DATACENTER)
SF_DECODER(snowflake_worker, SF_WORKER)
SF_DECODER(snowflake_sequence, SF_SEQUENCE)
