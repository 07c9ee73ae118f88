// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in a single Redis instance.
 *
 * The lease is the key PREFIX:CLUSTER:worker:DC:W with this run's owner as
 * its value; the pair's timestamp mark is PREFIX:CLUSTER:mark:DC:W (no TTL:
 * it outlives every lease).  Every step is one Lua script, which Redis runs
 * atomically (no other command runs in between):
 *
 *   claim:   if the key exists: held; if the mark is missing: no mark;
 *            else SET key owner PX ttl and return the mark (G1, G4)
 *   renew:   if GET key == owner: PEXPIRE key ttl, and raise the mark to
 *            at least the value given (never lower it); else lost (G3, G4)
 *   release: if GET key == owner: DEL key (the mark stays)
 *
 * The owner is new at every start (128 random bits), so "the key holds our
 * owner" proves the key is the one this very run created: a key deleted
 * and claimed again by another agent holds another owner.
 *
 * What Redis must guarantee, checked at every connection: a key lives until
 * its TTL ends or its owner deletes it.  So maxmemory-policy must be
 * noeviction (any other policy may evict a lease under memory pressure,
 * volatile-* ones first of all, as every lease has a TTL), and the server
 * must not be a Redis Cluster node (hiredis does not follow MOVED).  A
 * wrong password is an error of its own, not an outage to wait out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "agent.h"

/* KEYS: key, mark; ARGV: owner, ttl.  -1 held, -2 no mark, else the mark. */
static const char claim_lua[] =
	"if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end "
	"local m = redis.call('GET', KEYS[2]) "
	"if not m then return -2 end "
	"redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) "
	"return m";
/*
 * KEYS: key, mark; ARGV: owner, ttl, raise ("0": none).  0 lost; -2 ours
 * but no mark (and none to create); else the mark after the raise.
 */
static const char renew_lua[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
	"redis.call('PEXPIRE', KEYS[1], ARGV[2]) "
	"local m = redis.call('GET', KEYS[2]) "
	"if ARGV[3] ~= '0' and (not m or tonumber(m) < tonumber(ARGV[3])) then "
	"redis.call('SET', KEYS[2], ARGV[3]) m = ARGV[3] end "
	"if not m then return -2 end "
	"return m";
static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then "
	"return redis.call('DEL', KEYS[1]) else return 0 end";

struct rstore {
	redisContext *rc;
	bool down;			/* logged already */
	bool young;			/* logged already */
	char claim_sha[41], renew_sha[41], release_sha[41];
};

static struct rstore *R(const struct agent *a)
{
	return a->store;
}

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
	struct rstore *r = R(a);

	if (!r->down)
		logm(AG_WARN, "event=redis_down host=%s port=%d error=\"%s\"",
		     a->c->redis_host, a->c->redis_port, why);
	else
		logm(AG_DEBUG, "redis still down: %s", why);
	r->down = true;
	if (r->rc) {
		redisFree(r->rc);
		r->rc = NULL;
	}
}

/* Redis can never be used as configured: the agent stops with @code. */
static void redis_fatal(struct agent *a, int code, const char *fmt, const char *detail)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, detail);
	logm(AG_ERR, "event=%s host=%s port=%d: %s",
	     code == AG_EXIT_AUTH ? "redis_auth_failed" : "redis_unsafe",
	     a->c->redis_host, a->c->redis_port, msg);
	a->fatal = code;
	if (R(a)->rc) {
		redisFree(R(a)->rc);
		R(a)->rc = NULL;
	}
}

/* An error reply that means: never usable as configured. */
static bool fatal_reply(struct agent *a, const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ERROR)
		return false;
	if (!strncmp(r->str, "NOAUTH", 6) || !strncmp(r->str, "WRONGPASS", 9)) {
		redis_fatal(a, AG_EXIT_AUTH, "%s (redis-password)", r->str);
		return true;
	}
	if (!strncmp(r->str, "MOVED", 5) || !strncmp(r->str, "ASK ", 4) ||
	    !strncmp(r->str, "CLUSTERDOWN", 11)) {
		redis_fatal(a, AG_EXIT_UNSAFE_STORE,
			    "%s: Redis Cluster is not supported (use one Redis instance, or etcd)", r->str);
		return true;
	}
	return false;
}

/*
 * Run a command that ends by @deadline (0: within redis-timeout-ms); NULL
 * when the deadline has passed, or the connection failed (it is dropped),
 * or the reply is fatal (a->fatal set).
 */
static redisReply *cmd(struct agent *a, int64_t deadline, int argc, const char **argv)
{
	struct rstore *rs = R(a);
	int64_t t = ms_left(deadline, a->c->redis_timeout_ms);
	redisReply *r;

	if (!t) {
		logm(AG_DEBUG, "%s: no time left before the fence", argv[0]);
		return NULL;
	}
	if (!rs->rc || redisSetTimeout(rs->rc, tv_of(t)) != REDIS_OK) {
		redis_drop(a, "no connection");
		return NULL;
	}
	r = redisCommandArgv(rs->rc, argc, argv, NULL);
	if (!r) {
		redis_drop(a, rs->rc->errstr[0] ? rs->rc->errstr : "no reply");
		return NULL;
	}
	if (fatal_reply(a, r)) {
		freeReplyObject(r);
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

/* CONFIG GET @name as a string in @out ("" when it cannot be read). */
static void config_get(struct agent *a, int64_t deadline, const char *name, char *out, size_t len)
{
	const char *argv[] = { "CONFIG", "GET", name };
	redisReply *r = cmd(a, deadline, 3, argv);

	*out = '\0';
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING)
		snprintf(out, len, "%s", r->element[1]->str);
	freeReplyObject(r);
}

/*
 * G5 for the marks: a Redis that can lose an acknowledged write (no AOF,
 * or appendfsync other than always) can lose the last raise of a mark in
 * a crash, and a mark read lower than it was accepted lets the next
 * holder stamp below the old holder's ceiling.  Said once per run (not an
 * error: a Redis without persistence loses the marks whole, which reads as
 * missing and is safe; deployment-redis.md says what to choose).
 */
static void durability(struct agent *a, int64_t deadline)
{
	static bool said;
	char aof[16], fsync[16];

	if (said)
		return;
	config_get(a, deadline, "appendonly", aof, sizeof(aof));
	config_get(a, deadline, "appendfsync", fsync, sizeof(fsync));
	said = true;
	if (!strcmp(aof, "yes") && !strcmp(fsync, "always"))
		return;
	logm(AG_WARN, "event=redis_not_durable host=%s port=%d appendonly=%s appendfsync=%s: a crash of this Redis can lose the last writes, the pairs' timestamp marks among them; set appendonly yes and appendfsync always (docs/deployment-redis.md)",
	     a->c->redis_host, a->c->redis_port, *aof ? aof : "?", *fsync ? fsync : "?");
}

/*
 * The checks of every new connection: Redis keeps a key until its TTL or
 * its owner ends it.  false (a->fatal set, or the connection dropped)
 * when not.
 */
static bool check_redis(struct agent *a, int64_t deadline)
{
	const char *cfg[] = { "CONFIG", "GET", "maxmemory-policy" };
	const char *info[] = { "INFO", "cluster" };
	redisReply *r;
	bool ok;

	r = cmd(a, deadline, 3, cfg);
	if (!r)
		return false;
	if (r->type == REDIS_REPLY_ERROR) {
		redis_fatal(a, AG_EXIT_UNSAFE_STORE,
			    "CONFIG GET maxmemory-policy failed (%s): cannot check that Redis never evicts a lease; allow CONFIG GET for the agent's user",
			    r->str);
		freeReplyObject(r);
		return false;
	}
	ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	     r->element[1]->type == REDIS_REPLY_STRING;
	if (!ok || strcmp(r->element[1]->str, "noeviction") != 0) {
		redis_fatal(a, AG_EXIT_UNSAFE_STORE,
			    "maxmemory-policy is %s, not noeviction: Redis may evict a lease under memory pressure and give its pair to a second host; set maxmemory-policy noeviction",
			    ok ? r->element[1]->str : "unknown");
		freeReplyObject(r);
		return false;
	}
	freeReplyObject(r);
	durability(a, deadline);
	r = cmd(a, deadline, 2, info);
	if (!r)
		return false;
	if ((r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
	    strstr(r->str, "cluster_enabled:1")) {
		redis_fatal(a, AG_EXIT_UNSAFE_STORE, "%s",
			    "this is a Redis Cluster node: not supported (use one Redis instance, or etcd)");
		freeReplyObject(r);
		return false;
	}
	freeReplyObject(r);
	return true;
}

/*
 * Connect (name lookup, AUTH, SELECT, checks, scripts), all of it by
 * @deadline (0: each step within redis-timeout-ms); true when connected.
 */
static bool redis_connect(struct agent *a, int64_t deadline)
{
	const struct ag_conf *c = a->c;
	struct rstore *rs = R(a);
	int64_t t = ms_left(deadline, c->redis_timeout_ms);
	char db[16], addr[256], err[512];
	redisReply *r;

	if (rs->rc)
		return true;
	if (!t || a->fatal)
		return false;
	if (resolve_bounded(c->redis_host, t, addr, sizeof(addr), err, sizeof(err))) {
		redis_drop(a, err);
		return false;
	}
	t = ms_left(deadline, c->redis_timeout_ms);
	rs->rc = redisConnectWithTimeout(addr, c->redis_port, tv_of(t));
	if (!rs->rc || rs->rc->err) {
		redis_drop(a, rs->rc ? rs->rc->errstr : "out of memory");
		return false;
	}
	if (c->redis_password) {
		const char *argv[] = { "AUTH", c->redis_password };

		r = cmd(a, deadline, 2, argv);
		if (!r)
			return false;
		if (r->type == REDIS_REPLY_ERROR) {
			redis_fatal(a, AG_EXIT_AUTH, "AUTH refused: %s (redis-password)", r->str);
			freeReplyObject(r);
			return false;
		}
		freeReplyObject(r);
	}
	if (c->redis_db) {
		const char *argv[] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", c->redis_db);
		r = cmd(a, deadline, 2, argv);
		if (!r)
			return false;
		if (r->type == REDIS_REPLY_ERROR) {
			redis_drop(a, r->str);
			freeReplyObject(r);
			return false;
		}
		freeReplyObject(r);
	}
	if (!check_redis(a, deadline))
		return false;
	if (!load_script(a, deadline, claim_lua, rs->claim_sha) ||
	    !load_script(a, deadline, renew_lua, rs->renew_sha) ||
	    !load_script(a, deadline, release_lua, rs->release_sha)) {
		if (!a->fatal)
			redis_drop(a, "SCRIPT LOAD failed");
		return false;
	}
	if (rs->down)
		logm(AG_INFO, "event=redis_up host=%s port=%d", c->redis_host, c->redis_port);
	rs->down = false;
	return true;
}

/*
 * EVALSHA of one of our scripts on the pair's key and mark with @argc
 * arguments; EVAL again when the script cache was flushed.  The reply
 * (the caller frees it), or NULL on a connection error or timeout.
 */
static redisReply *eval2(struct agent *a, int64_t deadline, const char *sha, const char *lua,
			 uint32_t dc, uint32_t w, int argc, const char **args)
{
	char key[512], mark[512];
	const char *argv[10] = { "EVALSHA", sha, "2", key, mark };
	redisReply *r;
	int i;

	key_of(a, dc, w, key, sizeof(key));
	mark_key_of(a, dc, w, mark, sizeof(mark));
	for (i = 0; i < argc && i < 5; i++)
		argv[5 + i] = args[i];
	r = cmd(a, deadline, 5 + argc, argv);
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = lua;
		r = cmd(a, deadline, 5 + argc, argv);
	}
	if (r && r->type == REDIS_REPLY_ERROR) {
		logm(AG_WARN, "%s: %s", argv[0], r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

/* A mark as a script returned it (a string of digits): 0 on success. */
static int mark_of(const redisReply *r, uint64_t *mark)
{
	char *end;

	if (r->type != REDIS_REPLY_STRING || !r->len)
		return -1;
	errno = 0;
	*mark = strtoull(r->str, &end, 10);
	return errno || *end ? -1 : 0;
}

/*
 * The renewal script: 1 renewed (*@mark the mark after it), 0 lost, -1
 * failed, TRY_NO_MARK ours but no mark.
 */
static int renew_script(struct agent *a, int64_t deadline, uint32_t dc, uint32_t w,
			uint64_t raise, uint64_t *mark)
{
	char ttl[16], rs[24];
	const char *args[] = { a->owner, ttl, rs };
	redisReply *r;
	int ret = -1;

	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	if (raise)
		snprintf(rs, sizeof(rs), MARK_FMT, (unsigned long long)raise);
	else
		strcpy(rs, "0");
	r = eval2(a, deadline, R(a)->renew_sha, renew_lua, dc, w, 3, args);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		ret = r->integer == 0 ? 0 : r->integer == -2 ? TRY_NO_MARK : -1;
	else if (!mark_of(r, mark))
		ret = 1;
	if (ret == -1)
		logm(AG_WARN, "renew script: odd reply");
	freeReplyObject(r);
	return ret;
}

static int r_init(struct agent *a)
{
	a->store = calloc(1, sizeof(struct rstore));
	if (!a->store) {
		logm(AG_ERR, "out of memory");
		return AG_EXIT_RUNTIME;
	}
	return 0;
}

static void r_fini(struct agent *a)
{
	struct rstore *rs = R(a);

	if (!rs)
		return;
	if (rs->rc)
		redisFree(rs->rc);
	free(rs);
	a->store = NULL;
}

static void r_describe(const struct agent *a, char *buf, size_t len)
{
	snprintf(buf, len, "redis=%s:%d", a->c->redis_host, a->c->redis_port);
}

/* SET mark value NX: 1 created, 0 present, -1 failed. */
static int set_mark_nx(struct agent *a, uint32_t dc, uint32_t w, uint64_t value)
{
	char mark[512], v[24];
	const char *argv[] = { "SET", mark, v, "NX" };
	redisReply *r;
	int ret = -1;

	mark_key_of(a, dc, w, mark, sizeof(mark));
	snprintf(v, sizeof(v), MARK_FMT, (unsigned long long)value);
	r = cmd(a, 0, 4, argv);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK"))
		ret = 1;
	else if (r->type == REDIS_REPLY_NIL)
		ret = 0;
	else
		logm(AG_WARN, "SET %s NX: %s", mark, r->type == REDIS_REPLY_ERROR ? r->str : "odd reply");
	freeReplyObject(r);
	return ret;
}

/* The claim script (see the top of this file). */
static int r_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark,
		   uint64_t init_mark)
{
	char ttl[16];
	const char *args[] = { a->owner, ttl };
	redisReply *r;
	int ret = TRY_ERROR;

	if (!redis_connect(a, 0))
		return TRY_ERROR;
	if (init_mark && set_mark_nx(a, dc, w, init_mark) < 0)
		return TRY_ERROR;
	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	*sent = boot_ns();
	r = eval2(a, 0, R(a)->claim_sha, claim_lua, dc, w, 2, args);
	if (!r)
		return TRY_ERROR;
	if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
		ret = TRY_HELD;
	else if (r->type == REDIS_REPLY_INTEGER && r->integer == -2)
		ret = TRY_NO_MARK;
	else if (!mark_of(r, mark))
		ret = TRY_TAKEN;
	else
		logm(AG_WARN, "claim script: odd reply");
	freeReplyObject(r);
	return ret;
}

/*
 * The key still holds this run's owner: renew it with the renewal script,
 * re-creating a missing mark at the highest this run had raised it to.
 */
static int r_readopt(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark)
{
	int ret;

	if (!redis_connect(a, 0))
		return TRY_ERROR;
	*sent = boot_ns();
	ret = renew_script(a, 0, dc, w, a->mark_ms, mark);
	if (ret < 0)
		return TRY_ERROR;
	return ret == 1 ? TRY_TAKEN : TRY_HELD;
}

static int r_renew(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise_to)
{
	uint64_t mark;
	int ret;

	if (!redis_connect(a, deadline))
		return -1;
	*sent = boot_ns();
	ret = renew_script(a, deadline, a->dc, a->w, raise_to, &mark);
	/* Ours, but the mark is gone and nothing to raise: it is made at the next raise. */
	if (ret == TRY_NO_MARK)
		return 1;
	return ret;
}

static void r_release(struct agent *a)
{
	const char *args[] = { a->owner };
	redisReply *r;
	long long v = -1;

	if (!redis_connect(a, 0)) {
		logm(AG_WARN, "event=release_failed key=%s: it expires by itself", a->key);
		return;
	}
	r = eval2(a, 0, R(a)->release_sha, release_lua, a->dc, a->w, 1, args);
	if (r && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	freeReplyObject(r);
	if (v == 1)
		logm(AG_INFO, "event=released datacenter=%u worker=%u key=%s", a->dc, a->w, a->key);
	else
		logm(AG_WARN, "event=release_failed key=%s: %s", a->key,
		     v == 0 ? "not ours any more" : "Redis failed; it expires by itself");
}

static int r_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t mark,
		       bool replace_invalid)
{
	(void)replace_invalid;
	if (!redis_connect(a, 0))
		return -1;
	return set_mark_nx(a, dc, w, mark);
}

/*
 * A Redis that restarted without persistence has forgotten every lease,
 * while their holders still use them until their next renewal fails.  Claim
 * nothing until it has been up for min_uptime_ms (by default one TTL): by
 * then every holder of a forgotten lease has fenced.
 */
static int64_t r_claim_wait(struct agent *a)
{
	const char *argv[] = { "INFO", "server" };
	struct rstore *rs = R(a);
	long long up_s = -1, need_s;
	redisReply *r;
	const char *p;

	if (!redis_connect(a, 0))
		return -1;
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
	if (up_s >= need_s) {
		rs->young = false;
		return 0;
	}
	logm(rs->young ? AG_DEBUG : AG_INFO,
	     "event=redis_young uptime_s=%lld need_s=%lld: waiting before claiming (a restart forgets leases)",
	     up_s, need_s);
	rs->young = true;
	return (need_s - up_s) * 1000 * NS_PER_MS;
}

const struct store_ops ag_redis_ops = {
	.name = "redis",
	.init = r_init,
	.fini = r_fini,
	.describe = r_describe,
	.claim_wait = r_claim_wait,
	.claim = r_claim,
	.readopt = r_readopt,
	.renew = r_renew,
	.release = r_release,
	.init_mark = r_init_mark,
};
