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
 * host.  The device is opened once per server thread (a thread-local
 * handle, closed when the thread ends), again after a fork or a failed
 * read.  The init function of each statement opens it and checks the
 * device's state, so that a missing module, a permission, a foreign device
 * or a device that refuses (no lease) fails the statement before any row,
 * with what to do in the message; a read that fails later in the statement
 * sets the row's error, which ends the statement (ER_UDF_ERROR) instead of
 * handing out NULL.
 */
#include <errno.h>
#include <pthread.h>
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

struct sf_dev {
	struct snowflake *h;
	pid_t pid;
};

static pthread_key_t sf_key[2];
static pthread_once_t sf_once = PTHREAD_ONCE_INIT;
static int sf_key_err;

static void sf_free(void *p)
{
	struct sf_dev *d = p;

	if (d && d->h && d->pid == getpid())
		snowflake_close(d->h);
	free(d);
}

static void sf_keys(void)
{
	sf_key_err = pthread_key_create(&sf_key[0], sf_free) ||
		     pthread_key_create(&sf_key[1], sf_free);
}

/* The thread's handle of kind @uuid (0: /dev/snowflake), opened if needed. */
static int sf_get(int uuid, struct snowflake **h)
{
	struct sf_dev *d;
	int err;

	if (pthread_once(&sf_once, sf_keys) || sf_key_err)
		return -ENOMEM;
	d = pthread_getspecific(sf_key[uuid]);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d || pthread_setspecific(sf_key[uuid], d)) {
			free(d);
			return -ENOMEM;
		}
	}
	if (d->h && d->pid == getpid()) {
		*h = d->h;
		return 0;
	}
	/* A descriptor inherited from another process is left to it. */
	d->h = NULL;
	err = uuid ? snowflake_uuid_open(&d->h, NULL, 0) : snowflake_open(&d->h, NULL, 0);
	if (err) {
		d->h = NULL;
		return err;
	}
	d->pid = getpid();
	*h = d->h;
	return 0;
}

/* After a failed read: the next call opens the device again. */
static void sf_drop(int uuid)
{
	struct sf_dev *d = pthread_getspecific(sf_key[uuid]);

	if (d && d->h && d->pid == getpid())
		snowflake_close(d->h);
	if (d)
		d->h = NULL;
}

/*
 * @msg: what went wrong with -@err and what to do.  MariaDB prints at most
 * 80 characters of it (ER_CANT_INITIALIZE_UDF: "%-.80s"): the cause and
 * the remedy come first and fit.
 */
static void sf_message(char *msg, int uuid, const char *op, int err)
{
	const char *path = uuid ? SNOWFLAKE_UUID_DEFAULT_PATH : SNOWFLAKE_DEFAULT_PATH;
	struct passwd *pw = getpwuid(geteuid());
	const char *user = pw ? pw->pw_name : "mysql";

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
	struct snowflake_stats st;
	struct snowflake *h;
	int err;

	if (args->arg_count != nargs) {
		snprintf(msg, MYSQL_ERRMSG_SIZE, "%s() takes %u argument%s", name, nargs,
			 nargs == 1 ? "" : "s");
		return 1;
	}
	if (nargs)
		args->arg_type[0] = INT_RESULT;
	err = sf_get(uuid, &h);
	if (err) {
		sf_message(msg, uuid, "open", err);
		return 1;
	}
	if (!uuid) {
		err = snowflake_get_stats(h, &st);
		if (err) {
			sf_drop(uuid);
			sf_message(msg, uuid, "SNOWFLAKE_IOC_GET_STATS", err);
			return 1;
		}
		if (!nargs && (st.state & SNOWFLAKE_STATE_REFUSING)) {
			sf_message(msg, uuid, "its state", -ENOTCONN);
			return 1;
		}
	}
	initid->maybe_null = nargs != 0;
	initid->const_item = 0;
	return 0;
}

my_bool snowflake_next_init(UDF_INIT *initid, UDF_ARGS *args, char *msg);
long long snowflake_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error);
my_bool snowflake_uuidv7_init(UDF_INIT *initid, UDF_ARGS *args, char *msg);
char *snowflake_uuidv7(UDF_INIT *initid, UDF_ARGS *args, char *result,
		       unsigned long *length, char *is_null, char *error);

my_bool snowflake_next_init(UDF_INIT *initid, UDF_ARGS *args, char *msg)
{
	return sf_init(initid, args, msg, 0, 0, "snowflake_next");
}

long long snowflake_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error)
{
	struct snowflake *h;
	uint64_t id;

	(void)initid;
	(void)args;
	*is_null = 0;
	if (sf_get(0, &h) || snowflake_next_n(h, &id, 1) != 1) {
		sf_drop(0);
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

char *snowflake_uuidv7(UDF_INIT *initid, UDF_ARGS *args, char *result,
		       unsigned long *length, char *is_null, char *error)
{
	uint8_t u[SNOWFLAKE_UUID_SIZE];
	struct snowflake *h;

	(void)initid;
	(void)args;
	*is_null = 0;
	/* result has room for 255 bytes, more than the 37 of the text form. */
	if (sf_get(1, &h) || snowflake_uuid_next(h, u) ||
	    snowflake_uuid_format(u, result, SNOWFLAKE_UUID_STR_MAX) < 0) {
		sf_drop(1);
		*error = 1;
		return NULL;
	}
	*length = SNOWFLAKE_UUID_STR_MAX - 1;
	return result;
}

/* The decoding functions: the ID's field, by the device's own layout. */
enum sf_field { SF_UNIX_MS, SF_DATACENTER, SF_WORKER, SF_SEQUENCE };

static long long sf_field(UDF_ARGS *args, char *is_null, char *error, enum sf_field f)
{
	struct snowflake_config cfg;
	struct snowflake_parts p;
	struct snowflake *h;

	*is_null = 0;
	if (!args->args[0]) {
		*is_null = 1;
		return 0;
	}
	if (sf_get(0, &h) || snowflake_get_config(h, &cfg)) {
		sf_drop(0);
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
	long long name(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error); \
	my_bool name##_init(UDF_INIT *initid, UDF_ARGS *args, char *msg)	\
	{									\
		return sf_init(initid, args, msg, 0, 1, #name);			\
	}									\
	long long name(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error) \
	{									\
		(void)initid;							\
		return sf_field(args, is_null, error, field);			\
	}

SF_DECODER(snowflake_unix_ms, SF_UNIX_MS)
SF_DECODER(snowflake_datacenter, SF_DATACENTER)
SF_DECODER(snowflake_worker, SF_WORKER)
SF_DECODER(snowflake_sequence, SF_SEQUENCE)
