// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): hold a unique (datacenter, worker) id pair for this
 * host as a lease in Redis, set it on /dev/snowflake, and fence the device
 * whenever the lease could have expired.
 *
 * The lease is the key PREFIX:CLUSTER:worker:DC:W with this agent's owner
 * string as its value, created with SET NX PX ttl and renewed (PEXPIRE) or
 * released (DEL) only by a Lua script that first checks the value.
 *
 * Safety argument: a lease is taken as valid from the moment *before* the
 * SET (or the renewing EVAL) was sent, for ttl - margin ms of our monotonic
 * clock.  Redis starts its own ttl when the command arrives, which is later,
 * so as long as the two clocks run at nearly the same rate (the margin
 * covers the drift) our validity ends before Redis can expire the key and
 * give the id to another host.  Every Redis call gets a timeout that ends
 * no later than the fence time, so a dead or stopped Redis cannot hold the
 * fence back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <snowflake.h>

#include "conf.h"

#define PROG	"snowflake-agent"
#ifndef SNOWFLAKE_VERSION
#define SNOWFLAKE_VERSION	"unknown"
#endif

static const char renew_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then "
	"return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then "
	"return redis.call('DEL', KEYS[1]) else return 0 end";

static volatile sig_atomic_t stop_signal;
static enum ag_level log_level = AG_INFO;
static bool log_journal;

struct agent {
	struct ag_conf *c;
	char owner[256];
	redisContext *rc;
	bool redis_down;		/* logged already */
	bool redis_young;		/* logged already */
	char renew_sha[41], release_sha[41];

	struct snowflake *sf;		/* NULL in dry-run */
	bool fenced;

	uint32_t dc_lo, dc_hi, w_lo, w_hi;
	uint64_t pool;			/* number of pairs */

	bool held;			/* we hold a lease (valid until fence_at) */
	bool ever_held;
	uint32_t dc, w;			/* the pair held, or last held */
	bool have_pref;
	uint32_t pref_dc, pref_w;
	char key[512];
	int64_t lease_start;		/* mono ms, before the last SET/renew was sent */
	int64_t fence_at;
	int64_t next_renew;
	int64_t next_acquire;
	int64_t young_wait;		/* Redis restarted: wait this long */
	bool ready_sent;

	/* For --metrics-file: counted since the start. */
	uint64_t m_claims, m_renewals, m_fences, m_store_errors;
	int64_t m_renew_ms_sum;		/* the renewals' round trips */
	bool m_write_failed;		/* logged already */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void __attribute__((format(printf, 2, 3))) logm(enum ag_level l, const char *fmt, ...)
{
	static const int prio[] = { 3, 4, 6, 7 };
	char buf[1024];
	va_list ap;

	if (l > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", prio[l], buf);
	else
		fprintf(stderr, PROG "[%d]: %s: %s\n", (int)getpid(), ag_level_name(l), buf);
}

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	close(fd);
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* ---------------------------------------------------------------- */
/* The device                                                        */
/* ---------------------------------------------------------------- */

/* Fence (or lift the fence).  Returns 0 or -errno; dry-run only logs. */
static int dev_fence(struct agent *a, bool on, const char *why)
{
	int ret = 0;

	if (a->sf)
		ret = snowflake_set_fence(a->sf, on);
	if (ret) {
		logm(AG_ERR, "event=%s_failed error=\"%s\"", on ? "fence" : "unfence",
		     snowflake_strerror(ret));
		return ret;
	}
	if (a->fenced != on)
		logm(on ? AG_WARN : AG_INFO, "event=%s%s datacenter=%u worker=%u reason=%s",
		     on ? "fenced" : "unfenced", a->sf ? "" : " dry_run=1", a->dc, a->w, why);
	if (on && !a->fenced)
		a->m_fences++;
	a->fenced = on;
	return 0;
}

static int dev_set_ids(struct agent *a)
{
	int ret;

	if (!a->sf)
		return 0;
	ret = snowflake_assign_ids(a->sf, a->dc, a->w);
	if (ret)
		logm(AG_ERR, "event=set_ids_failed datacenter=%u worker=%u error=\"%s\"",
		     a->dc, a->w, snowflake_strerror(ret));
	return ret;
}

/* ---------------------------------------------------------------- */
/* The state file: the last pair held, to prefer it next time         */
/* ---------------------------------------------------------------- */

static void state_load(struct agent *a)
{
	const char *path = a->c->state_file;
	unsigned int dc, w;
	FILE *f;

	if (!*path)
		return;
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			logm(AG_WARN, "cannot read %s: %s", path, strerror(errno));
		return;
	}
	if (fscanf(f, "datacenter=%u worker=%u", &dc, &w) == 2 &&
	    dc >= a->dc_lo && dc <= a->dc_hi && w >= a->w_lo && w <= a->w_hi) {
		a->have_pref = true;
		a->pref_dc = dc;
		a->pref_w = w;
		logm(AG_INFO, "event=state_loaded datacenter=%u worker=%u file=%s", dc, w, path);
	} else {
		logm(AG_WARN, "%s: no pair within the pool: ignored", path);
	}
	fclose(f);
}

/* Crash-safe: a temporary file, fsync, rename, fsync of the directory. */
static void state_save(struct agent *a)
{
	const char *path = a->c->state_file;
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	char buf[64];
	int fd, n, dfd;

	if (!*path || (a->have_pref && a->pref_dc == a->dc && a->pref_w == a->w))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(buf, sizeof(buf), "datacenter=%u worker=%u\n", a->dc, a->w);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n || fsync(fd) || close(fd) ||
	    rename(tmp, path)) {
		logm(AG_WARN, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	a->have_pref = true;
	a->pref_dc = a->dc;
	a->pref_w = a->w;
}

/* ---------------------------------------------------------------- */
/* Redis                                                             */
/* ---------------------------------------------------------------- */

static struct timeval tv_of(int64_t ms)
{
	struct timeval tv;

	if (ms < 1)
		ms = 1;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	return tv;
}

static void redis_drop(struct agent *a, const char *why)
{
	if (!a->redis_down)
		logm(AG_WARN, "event=redis_down host=%s port=%d error=\"%s\"",
		     a->c->redis_host, a->c->redis_port, why);
	else
		logm(AG_DEBUG, "redis still down: %s", why);
	a->redis_down = true;
	a->m_store_errors++;
	if (a->rc) {
		redisFree(a->rc);
		a->rc = NULL;
	}
}

/*
 * The timeout of the next call: redis-timeout-ms, cut to end by @deadline
 * (monotonic ms; 0: none).  0 when the deadline has passed.
 */
static int64_t call_timeout(const struct agent *a, int64_t deadline)
{
	int64_t t = a->c->redis_timeout_ms;

	if (deadline) {
		int64_t left = deadline - mono_ms();

		if (left < t)
			t = left > 0 ? left : 0;
	}
	return t;
}

/*
 * Run a command that ends by @deadline (0: within redis-timeout-ms); NULL
 * when the deadline has passed, or the connection failed (it is dropped).
 */
static redisReply *cmd(struct agent *a, int64_t deadline, int argc, const char **argv)
{
	int64_t t = call_timeout(a, deadline);
	redisReply *r;

	if (!t) {
		logm(AG_DEBUG, "%s: no time left before the fence", argv[0]);
		return NULL;
	}
	if (!a->rc || redisSetTimeout(a->rc, tv_of(t)) != REDIS_OK) {
		redis_drop(a, "no connection");
		return NULL;
	}
	r = redisCommandArgv(a->rc, argc, argv, NULL);
	if (!r) {
		redis_drop(a, a->rc->errstr[0] ? a->rc->errstr : "no reply");
		return NULL;
	}
	return r;
}

static bool load_script(struct agent *a, int64_t deadline, const char *lua, char *sha)
{
	const char *argv[] = { "SCRIPT", "LOAD", lua };
	redisReply *r = cmd(a, deadline, 3, argv);
	bool ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;

	if (ok)
		memcpy(sha, r->str, 41);
	else if (r)
		logm(AG_WARN, "SCRIPT LOAD: %s", r->type == REDIS_REPLY_ERROR ? r->str : "odd reply");
	freeReplyObject(r);
	return ok;
}

/*
 * A two-word command of the connection's setup (AUTH, SELECT): true when it
 * succeeded; an error reply drops the connection with Redis' message.
 */
static bool setup_cmd(struct agent *a, int64_t deadline, const char *argv[2])
{
	redisReply *r = cmd(a, deadline, 2, argv);
	bool ok;

	if (!r)
		return false;
	ok = r->type != REDIS_REPLY_ERROR;
	if (!ok)
		redis_drop(a, r->str);
	freeReplyObject(r);
	return ok;
}

/*
 * Connect (AUTH, SELECT, scripts), all of it by @deadline (0: each step
 * within redis-timeout-ms); true when connected.
 */
static bool redis_connect(struct agent *a, int64_t deadline)
{
	const struct ag_conf *c = a->c;
	int64_t t = call_timeout(a, deadline);
	char db[16];

	if (a->rc)
		return true;
	if (!t)
		return false;
	a->rc = redisConnectWithTimeout(c->redis_host, c->redis_port, tv_of(t));
	if (!a->rc || a->rc->err) {
		redis_drop(a, a->rc ? a->rc->errstr : "out of memory");
		return false;
	}
	if (c->redis_password) {
		const char *argv[] = { "AUTH", c->redis_password };

		if (!setup_cmd(a, deadline, argv))
			return false;
	}
	if (c->redis_db) {
		const char *argv[] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", c->redis_db);
		if (!setup_cmd(a, deadline, argv))
			return false;
	}
	if (!load_script(a, deadline, renew_lua, a->renew_sha) ||
	    !load_script(a, deadline, release_lua, a->release_sha)) {
		redis_drop(a, "SCRIPT LOAD failed");
		return false;
	}
	if (a->redis_down)
		logm(AG_INFO, "event=redis_up host=%s port=%d", c->redis_host, c->redis_port);
	a->redis_down = false;
	return true;
}

/*
 * EVALSHA of a compare-and-act script on @key with the owner; EVAL again
 * when the script cache was flushed.  Returns the integer reply, or -1 on a
 * connection error or timeout.
 */
static long long eval_owned(struct agent *a, int64_t deadline, const char *sha,
			    const char *lua, const char *key, const char *arg2)
{
	const char *argv[] = { "EVALSHA", sha, "1", key, a->owner, arg2 };
	int argc = arg2 ? 6 : 5;
	redisReply *r;
	long long v = -1;

	r = cmd(a, deadline, argc, argv);
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = lua;
		r = cmd(a, deadline, argc, argv);
	}
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	else
		logm(AG_WARN, "%s: %s", argv[0], r->type == REDIS_REPLY_ERROR ? r->str : "odd reply");
	freeReplyObject(r);
	return v;
}

static void key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s:worker:%u:%u", a->c->prefix, a->c->cluster, dc, w);
}

/* ---------------------------------------------------------------- */
/* The lease                                                         */
/* ---------------------------------------------------------------- */

static void lease_lost(struct agent *a, const char *why)
{
	a->held = false;
	a->next_acquire = mono_ms();
	notify("STATUS=fenced: no lease");
	(void)dev_fence(a, true, why);
}

static void lease_taken(struct agent *a, uint32_t dc, uint32_t w, int64_t t0)
{
	a->held = true;
	a->dc = dc;
	a->w = w;
	key_of(a, dc, w, a->key, sizeof(a->key));
	a->lease_start = t0;
	a->fence_at = t0 + a->c->ttl_ms - a->c->margin_ms;
	a->next_renew = t0 + a->c->renew_ms;
	a->m_claims++;
	logm(AG_INFO, "event=claimed datacenter=%u worker=%u key=%s ttl_ms=%u owner=%s",
	     dc, w, a->key, a->c->ttl_ms, a->owner);
}

enum { TRY_TAKEN = 1, TRY_HELD = 0, TRY_ERROR = -1 };

/* SET key owner NX PX ttl: 1 taken, 0 held by someone, -1 Redis failed. */
static int try_pair(struct agent *a, uint32_t dc, uint32_t w)
{
	char key[512], ttl[16];
	const char *argv[] = { "SET", key, a->owner, "NX", "PX", ttl };
	int64_t t0 = mono_ms();
	redisReply *r;
	int ret;

	key_of(a, dc, w, key, sizeof(key));
	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	r = cmd(a, 0, 6, argv);
	if (!r)
		return TRY_ERROR;
	if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK")) {
		ret = TRY_TAKEN;
		lease_taken(a, dc, w, t0);
	} else if (r->type == REDIS_REPLY_NIL) {
		ret = TRY_HELD;
	} else {
		logm(AG_WARN, "SET %s: %s", key, r->type == REDIS_REPLY_ERROR ? r->str : "odd reply");
		ret = TRY_ERROR;
	}
	freeReplyObject(r);
	return ret;
}

/*
 * The key still holds our owner (a renewal whose reply was lost, after we
 * fenced): take it back with the compare-and-renew script.
 */
static int readopt(struct agent *a, uint32_t dc, uint32_t w)
{
	char key[512], ttl[16];
	int64_t t0 = mono_ms();
	long long v;

	key_of(a, dc, w, key, sizeof(key));
	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	v = eval_owned(a, 0, a->renew_sha, renew_lua, key, ttl);
	if (v < 0)
		return TRY_ERROR;
	if (v == 0)
		return TRY_HELD;
	lease_taken(a, dc, w, t0);
	return TRY_TAKEN;
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)mono_ms() * 6364136223846793005ULL + (uint64_t)getpid();
	return v;
}

/*
 * A Redis that restarted without persistence has forgotten every lease,
 * while their holders still use them until their next renewal fails.  Claim
 * nothing until it has been up for min_uptime_ms (by default one TTL): by
 * then every holder of a forgotten lease has fenced.  0 when Redis is old
 * enough, else how many ms to wait; -1 on a Redis error.
 */
static int64_t redis_too_young(struct agent *a)
{
	const char *argv[] = { "INFO", "server" };
	long long up_s = -1, need_s;
	redisReply *r;
	const char *p;

	if (!a->c->min_uptime_ms)
		return 0;
	r = cmd(a, 0, 2, argv);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
		p = strstr(r->str, "uptime_in_seconds:");
		if (p)
			up_s = strtoll(p + strlen("uptime_in_seconds:"), NULL, 10);
	}
	freeReplyObject(r);
	if (up_s < 0) {
		logm(AG_WARN, "INFO server: no uptime_in_seconds: not checking for a restart");
		return 0;
	}
	/* uptime_in_seconds is rounded down. */
	need_s = (a->c->min_uptime_ms + 999) / 1000;
	if (up_s >= need_s)
		return 0;
	logm(a->redis_young ? AG_DEBUG : AG_INFO,
	     "event=redis_young uptime_s=%lld need_s=%lld: waiting before claiming (a restart forgets leases)",
	     up_s, need_s);
	a->redis_young = true;
	return (need_s - up_s) * 1000;
}

/*
 * Claim a pair: the preferred one (the last held, else the state file's),
 * then every pair of the pool from a random start.  Returns TRY_TAKEN,
 * TRY_HELD (the whole pool is held) or TRY_ERROR.
 */
static int acquire(struct agent *a)
{
	uint32_t ndc = a->dc_hi - a->dc_lo + 1;
	uint64_t i, start;
	int64_t wait;
	int ret;

	if (!redis_connect(a, 0))
		return TRY_ERROR;
	if (a->have_pref) {
		/* Our own key, still there: no restart can have lost it. */
		ret = readopt(a, a->pref_dc, a->pref_w);
		if (ret != TRY_HELD)
			return ret;
	}
	wait = redis_too_young(a);
	if (wait) {
		a->young_wait = wait;
		return TRY_ERROR;
	}
	a->redis_young = false;
	if (a->have_pref) {
		ret = try_pair(a, a->pref_dc, a->pref_w);
		if (ret != TRY_HELD)
			return ret;
		logm(AG_INFO, "event=preferred_busy datacenter=%u worker=%u", a->pref_dc, a->pref_w);
	}
	start = rnd64() % a->pool;
	for (i = 0; i < a->pool && !stop_signal; i++) {
		uint64_t n = (start + i) % a->pool;
		uint32_t dc = a->dc_lo + (uint32_t)(n % ndc);
		uint32_t w = a->w_lo + (uint32_t)(n / ndc);

		if (a->have_pref && dc == a->pref_dc && w == a->pref_w)
			continue;
		ret = try_pair(a, dc, w);
		if (ret != TRY_HELD)
			return ret;
	}
	return stop_signal ? TRY_ERROR : TRY_HELD;
}

/* After a claim: ids on the device, the fence lifted.  0 or -errno. */
static int serve(struct agent *a)
{
	int ret;

	ret = dev_set_ids(a);
	if (!ret)
		ret = dev_fence(a, false, "lease-held");
	if (ret)
		return ret;
	state_save(a);
	if (!a->ready_sent) {
		notify("READY=1");
		a->ready_sent = true;
	}
	notify("STATUS=serving");
	a->ever_held = true;
	return 0;
}

/* Renew: 1 renewed, 0 lost (the key is gone or someone else's), -1 failed. */
static int renew(struct agent *a)
{
	int64_t t0;
	char ttl[16];
	long long v;

	/* Nothing may run past the fence time. */
	if (!redis_connect(a, a->fence_at))
		return -1;
	t0 = mono_ms();
	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	v = eval_owned(a, a->fence_at, a->renew_sha, renew_lua, a->key, ttl);
	if (v < 0)
		return -1;
	if (v == 0)
		return 0;
	a->lease_start = t0;
	a->fence_at = t0 + a->c->ttl_ms - a->c->margin_ms;
	a->next_renew = t0 + a->c->renew_ms;
	a->m_renewals++;
	a->m_renew_ms_sum += mono_ms() - t0;
	logm(AG_DEBUG, "event=renewed key=%s", a->key);
	return 1;
}

static void release(struct agent *a)
{
	long long v;

	if (!a->held)
		return;
	if (!redis_connect(a, 0)) {
		logm(AG_WARN, "event=release_failed key=%s: it expires by itself", a->key);
		return;
	}
	v = eval_owned(a, 0, a->release_sha, release_lua, a->key, NULL);
	if (v == 1)
		logm(AG_INFO, "event=released datacenter=%u worker=%u key=%s", a->dc, a->w, a->key);
	else
		logm(AG_WARN, "event=release_failed key=%s: %s", a->key,
		     v == 0 ? "not ours any more" : "Redis failed; it expires by itself");
	a->held = false;
}

/*
 * Sleep until @until (mono ms) or SIGTERM/SIGINT.  Those are blocked
 * everywhere else and let in only here, atomically, so one that arrives
 * while the agent works is not missed: it ends this sleep at once.
 */
static void sleep_until(int64_t until)
{
	int64_t d = until - mono_ms();
	struct timespec ts;
	sigset_t none;

	if (d <= 0 || stop_signal)
		return;
	ts.tv_sec = d / 1000;
	ts.tv_nsec = (d % 1000) * 1000000;
	sigemptyset(&none);
	ppoll(NULL, 0, &ts, &none);
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_metric(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP snowflake_agent_%s %s\n# TYPE snowflake_agent_%s %s\n", name, help,
		name, type);
}

/*
 * --metrics-file: the agent's state in the Prometheus text format, for
 * node_exporter's textfile collector, written to PATH.tmp and renamed (the
 * collector never reads half a file), after every change and renewal.
 */
static void metrics_write(struct agent *a)
{
	const char *path = a->c->metrics_file;
	int64_t left = a->held ? a->fence_at - mono_ms() : 0;
	char tmp[PATH_MAX];
	FILE *f;
	int err;

	if (!path || !*path)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "we");
	if (!f)
		goto fail;
	put_metric(f, "lease_held", "gauge", "1 while the agent holds the lease on its pair.");
	fprintf(f, "snowflake_agent_lease_held %d\n", a->held);
	put_metric(f, "lease_remaining_seconds", "gauge",
		   "Time left before the agent fences the device unless it renews (0: no lease).");
	fprintf(f, "snowflake_agent_lease_remaining_seconds %lld.%03lld\n",
		(long long)(left > 0 ? left / 1000 : 0), (long long)(left > 0 ? left % 1000 : 0));
	put_metric(f, "fenced", "gauge", "1 while the agent keeps the device fenced.");
	fprintf(f, "snowflake_agent_fenced %d\n", a->fenced);
	put_metric(f, "claims_total", "counter", "Leases claimed.");
	fprintf(f, "snowflake_agent_claims_total %llu\n", (unsigned long long)a->m_claims);
	put_metric(f, "renewals_total", "counter", "Leases renewed.");
	fprintf(f, "snowflake_agent_renewals_total %llu\n", (unsigned long long)a->m_renewals);
	put_metric(f, "renewal_latency_seconds", "summary", "Round trips of the renewals.");
	fprintf(f, "snowflake_agent_renewal_latency_seconds_sum %lld.%03lld\n",
		(long long)(a->m_renew_ms_sum / 1000), (long long)(a->m_renew_ms_sum % 1000));
	fprintf(f, "snowflake_agent_renewal_latency_seconds_count %llu\n",
		(unsigned long long)a->m_renewals);
	put_metric(f, "fences_total", "counter", "Times the agent fenced the device.");
	fprintf(f, "snowflake_agent_fences_total %llu\n", (unsigned long long)a->m_fences);
	put_metric(f, "store_errors_total", "counter", "Failed connections to and commands of Redis.");
	fprintf(f, "snowflake_agent_store_errors_total %llu\n",
		(unsigned long long)a->m_store_errors);
	if (a->ever_held || a->held) {
		put_metric(f, "info", "gauge", "The pair the agent holds, or held last, as labels.");
		fputs("snowflake_agent_info{cluster=\"", f);
		put_label(f, a->c->cluster);
		fprintf(f, "\",datacenter_id=\"%u\",worker_id=\"%u\"} 1\n", a->dc, a->w);
	}
	err = ferror(f);
	if (fclose(f) || err || rename(tmp, path))
		goto fail;
	a->m_write_failed = false;
	return;
fail:
	if (!a->m_write_failed)
		logm(AG_WARN, "event=metrics_write_failed path=%s error=\"%s\"", path, strerror(errno));
	a->m_write_failed = true;
	unlink(tmp);
}

static uint32_t mask_of(unsigned int bits)
{
	return bits >= 32 ? UINT32_MAX : (uint32_t)((1ULL << bits) - 1);
}

/* The pool from the configuration and the layout's widths. */
static int setup_pool(struct agent *a, unsigned int dc_bits, unsigned int w_bits)
{
	const struct ag_conf *c = a->c;
	uint32_t dmax = mask_of(dc_bits), wmax = mask_of(w_bits);

	a->dc_lo = c->datacenters.set ? c->datacenters.lo : 0;
	a->dc_hi = c->datacenters.set ? c->datacenters.hi : dmax;
	a->w_lo = c->workers.set ? c->workers.lo : 0;
	a->w_hi = c->workers.set ? c->workers.hi : wmax;
	if (a->dc_hi > dmax || a->w_hi > wmax) {
		logm(AG_ERR, "datacenter-ids %u-%u / worker-ids %u-%u do not fit the layout's %u/%u bits",
		     a->dc_lo, a->dc_hi, a->w_lo, a->w_hi, dc_bits, w_bits);
		return AG_EXIT_USAGE;
	}
	a->pool = (uint64_t)(a->dc_hi - a->dc_lo + 1) * (a->w_hi - a->w_lo + 1);
	return 0;
}

static int run(struct agent *a)
{
	const struct ag_conf *c = a->c;
	int64_t now, wake;
	int ret;

	for (;;) {
		if (stop_signal)
			break;
		now = mono_ms();

		if (a->held && now >= a->fence_at) {
			logm(AG_WARN, "event=lease_expiring datacenter=%u worker=%u since_renew_ms=%lld ttl_ms=%u margin_ms=%u",
			     a->dc, a->w, (long long)(now - a->lease_start), c->ttl_ms, c->margin_ms);
			lease_lost(a, "lease-not-renewed");
			if (!a->fenced)
				return AG_EXIT_RUNTIME;
			/* How long after the last renewal was sent the fence was up. */
			logm(AG_WARN, "event=fence_latency datacenter=%u worker=%u since_renew_ms=%lld ttl_ms=%u",
			     a->dc, a->w, (long long)(mono_ms() - a->lease_start), c->ttl_ms);
			continue;
		}
		if (a->held && now >= a->next_renew) {
			ret = renew(a);
			if (ret == 0) {
				logm(AG_WARN, "event=lease_lost datacenter=%u worker=%u key=%s",
				     a->dc, a->w, a->key);
				lease_lost(a, "lease-lost");
				if (!a->fenced)
					return AG_EXIT_RUNTIME;
			} else if (ret < 0) {
				/* Try again soon, but never past the fence. */
				a->next_renew = mono_ms() + (c->renew_ms / 5 > 50 ? c->renew_ms / 5 : 50);
			}
			continue;
		}
		if (!a->held && now >= a->next_acquire) {
			ret = acquire(a);
			if (ret == TRY_TAKEN) {
				if (serve(a)) {
					release(a);
					(void)dev_fence(a, true, "device-failed");
					return AG_EXIT_RUNTIME;
				}
				continue;
			}
			if (ret == TRY_HELD) {
				logm(AG_ERR, "event=pool_full datacenters=%u-%u workers=%u-%u pairs=%llu prefix=%s cluster=%s: every id is held by another owner",
				     a->dc_lo, a->dc_hi, a->w_lo, a->w_hi,
				     (unsigned long long)a->pool, c->prefix, c->cluster);
				if (!a->ever_held)
					return AG_EXIT_POOL_FULL;
			}
			a->next_acquire = mono_ms() + (c->renew_ms < 1000 ? c->renew_ms : 1000);
			if (a->young_wait > 0) {
				a->next_acquire = mono_ms() + (a->young_wait < 1000 ? a->young_wait : 1000);
				a->young_wait = 0;
			}
			continue;
		}
		wake = a->held ? (a->next_renew < a->fence_at ? a->next_renew : a->fence_at)
			       : a->next_acquire;
		metrics_write(a);
		sleep_until(wake);
	}

	logm(AG_INFO, "event=stopping signal=%d", (int)stop_signal);
	notify("STOPPING=1");
	/* Fence first: the id must not be used once it may be someone else's. */
	(void)dev_fence(a, true, "agent-stopped");
	release(a);
	metrics_write(a);
	return AG_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct ag_conf conf;
	struct agent a;
	struct sigaction sa;
	char err[1024], host[128];
	int ret;

	memset(&a, 0, sizeof(a));
	ret = ag_conf_load(&conf, argc, argv, err, sizeof(err));
	if (!ret && !conf.help && !conf.version)
		ret = ag_conf_finish(&conf, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s\n" PROG ": try '" PROG " --help'\n", err);
		ag_conf_free(&conf);
		return ret;
	}
	if (conf.version) {
		puts(PROG " " SNOWFLAKE_VERSION);
		ag_conf_free(&conf);
		return fflush(stdout) ? AG_EXIT_RUNTIME : AG_EXIT_OK;
	}
	if (conf.help) {
		fputs(ag_usage, stdout);
		ag_conf_free(&conf);
		return 0;
	}
	if (conf.print_config) {
		ag_conf_print(&conf, stdout);
		ag_conf_free(&conf);
		return 0;
	}
	a.c = &conf;
	log_level = conf.level;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	setvbuf(stderr, NULL, _IOLBF, 0);

	if (conf.owner) {
		snprintf(a.owner, sizeof(a.owner), "%s", conf.owner);
	} else {
		if (gethostname(host, sizeof(host)))
			strcpy(host, "unknown");
		host[sizeof(host) - 1] = '\0';
		snprintf(a.owner, sizeof(a.owner), "%s:%d:%016llx", host, (int)getpid(),
			 (unsigned long long)rnd64());
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGINT);
	sigprocmask(SIG_BLOCK, &sa.sa_mask, NULL);

	if (conf.dry_run) {
		ret = setup_pool(&a, conf.dry_run_bits[0], conf.dry_run_bits[1]);
		a.fenced = true;
	} else {
		struct snowflake_config layout;

		ret = snowflake_open(&a.sf, conf.device, 0);
		if (!ret)
			ret = snowflake_get_config(a.sf, &layout);
		if (ret) {
			logm(AG_ERR, "cannot use %s: %s", conf.device ? conf.device : "the device",
			     snowflake_strerror(ret));
			ag_conf_free(&conf);
			return AG_EXIT_RUNTIME;
		}
		ret = setup_pool(&a, layout.datacenter_bits, layout.worker_bits);
		/* Nothing is served until a lease is held. */
		if (!ret && dev_fence(&a, true, "no-lease-yet"))
			ret = AG_EXIT_RUNTIME;
	}
	if (ret) {
		snowflake_close(a.sf);
		ag_conf_free(&conf);
		return ret;
	}
	logm(AG_INFO, "event=start owner=%s redis=%s:%d prefix=%s cluster=%s datacenters=%u-%u workers=%u-%u ttl_ms=%u renew_ms=%u margin_ms=%u%s",
	     a.owner, conf.redis_host, conf.redis_port, conf.prefix, conf.cluster,
	     a.dc_lo, a.dc_hi, a.w_lo, a.w_hi, conf.ttl_ms, conf.renew_ms, conf.margin_ms,
	     conf.dry_run ? " dry_run=1" : "");
	state_load(&a);
	a.next_acquire = mono_ms();

	ret = run(&a);

	if (a.rc)
		redisFree(a.rc);
	snowflake_close(a.sf);
	ag_conf_free(&conf);
	return ret;
}
