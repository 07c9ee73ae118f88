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
 * host.  The device is opened by the init function and closed by the
 * deinit function: its handle lives in initid->ptr, the function call's
 * own state of the UDF interface (a statement's, or, for a column's
 * DEFAULT, the cached table's), and nothing of the library outlives it.
 * No thread-specific key or destructor: the server unloads the library
 * when the last function is dropped, and a thread that ends after that
 * must find nothing of it to run (a key's destructor in the library sent
 * such a thread into unmapped memory: issue 43).  The init function also
 * checks the device's state, so that a missing module, a permission, a
 * foreign device or a device that refuses (no lease) fails the statement
 * before any row, with what to do in the message.
 *
 * A read that fails later raises the server's error (my_printf_error(),
 * which mariadbd exports, found with dlsym()): the statement fails, also
 * without strict mode, where a NULL would become 0 in a NOT NULL key with
 * a warning.  The row's value is NULL, never the UDF error flag: the
 * server keeps that flag for the rest of the function call's life, which
 * for a DEFAULT is the cached table's, and would hand out NULL (0) without
 * calling here again.  After a failure the next call opens the device
 * again.
 *
 * A wait for the next tick (up to time_unit_ms) is a poll of the
 * non-blocking device, 100 ms at a time, between which KILL QUERY and
 * max_statement_time are seen (thd_kill_level() of _current_thd(), both
 * found with dlsym()).  A statement killed there fails with the server's
 * error for its kill (THD::killed_errno(): ER_QUERY_INTERRUPTED,
 * ER_STATEMENT_TIMEOUT, ...), raised here: the server does not raise it
 * itself once the row is sent, and a SELECT returned NULL "successfully"
 * (issue 43).
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
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

/* The server's error and kill check (mariadbd exports both). */
typedef void (*sf_error_fn)(unsigned int code, const char *fmt, unsigned long flags, ...);
typedef int (*sf_killed_fn)(const void *thd);
typedef void *(*sf_thd_fn)(void);
typedef void (*sf_my_error_fn)(unsigned int code, unsigned long flags, ...);
typedef int (*sf_killed_errno_fn)(void *thd);
#define SF_ER_UNKNOWN_ERROR 1105	/* HY000, ER_UNKNOWN_ERROR */
#define SF_ER_SERVER_SHUTDOWN 1053
#define SF_ER_QUERY_INTERRUPTED 1317	/* 70100 */
#define SF_ER_CONNECTION_KILLED 1927
#define SF_ER_STATEMENT_TIMEOUT 1969	/* 70100, max_statement_time */
#define SF_POLL_MS 100

/* A function call's open device (initid->ptr), closed by its deinit function. */
struct sf_stmt {
	struct snowflake *h;
	int uuid;
	sf_error_fn error;
	sf_killed_fn killed;
	sf_thd_fn thd;
	sf_my_error_fn my_error;
	sf_killed_errno_fn killed_errno;
};

static int sf_open_dev(int uuid, struct snowflake **h)
{
	return uuid ? snowflake_uuid_open(h, NULL, SNOWFLAKE_NONBLOCK) :
		      snowflake_open(h, NULL, SNOWFLAKE_NONBLOCK);
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
	st->uuid = uuid;
	/* A pointer to function from a data pointer: POSIX's dlsym(). */
	*(void **)&st->error = dlsym(RTLD_DEFAULT, "my_printf_error");
	*(void **)&st->killed = dlsym(RTLD_DEFAULT, "thd_kill_level");
	*(void **)&st->thd = dlsym(RTLD_DEFAULT, "_current_thd");
	*(void **)&st->my_error = dlsym(RTLD_DEFAULT, "my_error");
	/* int THD::killed_errno(), which mariadbd exports (C++ name). */
	*(void **)&st->killed_errno = dlsym(RTLD_DEFAULT, "_ZN3THD12killed_errnoEv");
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

/* The call's handle: its init function opened it; again after a failure. */
static int sf_h(UDF_INIT *initid, struct snowflake **h)
{
	struct sf_stmt *st = (struct sf_stmt *)initid->ptr;

	if (!st)
		return -EINVAL;
	if (!st->h) {
		int err = sf_open_dev(st->uuid, &st->h);

		if (err) {
			st->h = NULL;
			return err;
		}
	}
	*h = st->h;
	return 0;
}

/*
 * The statement was killed (KILL QUERY, max_statement_time).  The calling
 * thread's THD, not NULL: MariaDB 10.11's thd_kill_level() reads
 * thd->killed without a NULL check (mariadbd got signal 11 at the first
 * wait for the next tick).
 */
static int sf_killed(const struct sf_stmt *st)
{
	void *thd;

	if (!st->killed || !st->thd)
		return 0;
	thd = st->thd();
	return thd && st->killed(thd) != 0;
}

/*
 * One record into @buf: -EAGAIN (the tick used up) is waited out by poll()
 * on the device, SF_POLL_MS at a time, checking for a kill in between
 * (-EINTR then).
 */
static int sf_read(UDF_INIT *initid, void *buf)
{
	struct sf_stmt *st = (struct sf_stmt *)initid->ptr;
	struct snowflake *h;
	int err;

	for (;;) {
		err = sf_h(initid, &h);
		if (err)
			return err;
		if (st->uuid) {
			err = snowflake_uuid_next(h, buf);
		} else {
			long r = snowflake_next_n(h, buf, 1);

			err = r == 1 ? 0 : r < 0 ? (int)r : -ENODATA;
		}
		if (err != -EAGAIN)
			return err;
		if (sf_killed(st))
			return -EINTR;
		{
			struct pollfd p = { .fd = snowflake_fd(h), .events = POLLIN };

			if (poll(&p, 1, SF_POLL_MS) < 0 && errno != EINTR)
				return -errno;
		}
		if (sf_killed(st))
			return -EINTR;
	}
}

/*
 * The killed statement's error: the server's own for its kill
 * (THD::killed_errno(), raised by my_error(): its code and message, e.g.
 * 1969 "Query execution was interrupted (max_statement_time exceeded)"),
 * else ER_QUERY_INTERRUPTED with the server's words.  Never nothing: the
 * server raises no error for a kill once the row is sent (a SELECT
 * returned NULL without one).
 */
static void sf_kill_error(const struct sf_stmt *st)
{
	void *thd = st->thd ? st->thd() : NULL;
	int code = thd && st->killed_errno ? st->killed_errno(thd) : 0;

	switch (code) {
	case SF_ER_QUERY_INTERRUPTED:
	case SF_ER_STATEMENT_TIMEOUT:
	case SF_ER_CONNECTION_KILLED:
	case SF_ER_SERVER_SHUTDOWN:
		if (st->my_error) {
			st->my_error((unsigned int)code, 0);
			return;
		}
		break;
	default:
		code = SF_ER_QUERY_INTERRUPTED;
	}
	st->error((unsigned int)code, "%s", 0,
		  "Query execution was interrupted (snowflake: waiting for the next tick)");
}

/*
 * A failure after init: the server's error, so that the statement fails
 * (see the top), the device closed (the next call opens it again), and
 * the row's value NULL.  Without the server's error function (not
 * MariaDB), the UDF error flag, the interface's own.
 */
static void sf_fail(UDF_INIT *initid, const char *op, int err, char *is_null, char *error)
{
	struct sf_stmt *st = (struct sf_stmt *)initid->ptr;
	char msg[MYSQL_ERRMSG_SIZE];

	*is_null = 1;
	if (!st) {
		*error = 1;
		return;
	}
	snowflake_close(st->h);
	st->h = NULL;
	if (!st->error) {
		*error = 1;
		return;
	}
	/* A kill: its error (the statement fails, see sf_kill_error()). */
	if (err == -EINTR && sf_killed(st)) {
		sf_kill_error(st);
		return;
	}
	sf_message(msg, st->uuid, op, err);
	st->error(SF_ER_UNKNOWN_ERROR, "%s", 0, msg);
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
	uint64_t id;
	int err;

	(void)args;
	*is_null = 0;
	err = sf_read(initid, &id);
	if (err) {
		sf_fail(initid, "read", err, is_null, error);
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
	uint8_t u[SNOWFLAKE_UUID_SIZE];
	int err;

	(void)args;
	*is_null = 0;
	/* result has room for 255 bytes, more than the 37 of the text form. */
	err = sf_read(initid, u);
	if (!err && snowflake_uuid_format(u, result, SNOWFLAKE_UUID_STR_MAX) < 0)
		err = -EINVAL;
	if (err) {
		sf_fail(initid, "read", err, is_null, error);
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
	struct snowflake_config cfg;
	struct snowflake_parts p;
	struct snowflake *h;
	int err;

	*is_null = 0;
	if (!args->args[0]) {
		*is_null = 1;
		return 0;
	}
	err = sf_h(initid, &h);
	if (!err)
		err = snowflake_get_config(h, &cfg);
	if (err) {
		sf_fail(initid, "SNOWFLAKE_IOC_GET_CONFIG", err, is_null, error);
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
