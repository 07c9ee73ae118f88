// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): the record store in a single Redis instance
 * (ag_redis_rec_ops, the backend of record.c's engine: issue 40,
 * docs/lease-record.md; the layout and the scripts below, above
 * rec_read_lua), on one connection with AUTH, the durability checks and
 * the recheck.
 *
 * What Redis must guarantee, checked at every connection: a record lives
 * until an operator deletes it.  So maxmemory-policy must be noeviction
 * (any other policy may evict a record under memory pressure), and the
 * server must not be a Redis Cluster node (hiredis does not follow
 * MOVED).  A wrong password is an error of its own, not an outage to wait
 * out.
 *
 * G5: a record read older than it was accepted lets the next holder stamp
 * below the old holder's ceiling.  A Redis that can do that (an RDB
 * snapshot or an AOF not fsynced at every write brought back by a
 * restart; a replica promoted by a failover) is refused (exit 5) unless
 * redis-allow-non-durable (then the version counter jumps at every server
 * life, below, and claims wait redis-min-uptime-ms after a restart).
 *
 * Every call ends by its deadline as a whole (not per read: a server that
 * trickles its reply holds nothing past it) and reads at most
 * REDIS_REPLY_MAX bytes (a larger reply drops the connection); every wait,
 * the connect's too, is the engine's ag_wait() (the deadline, the stop
 * signal).  This file keeps no orphan and resends nothing: a write without
 * a reply is RS_UNKNOWN, resolved by the engine (its nonce read back); a
 * call that failed drops the connection, and the next call the engine
 * makes connects again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "agent.h"
#include "redis_parse.h"

/*
 * Layout.  Pair (DC, W)'s record is a hash at 1.4.0's key name
 * (key_of(): PREFIX:CLUSTER:worker:DC:W), no TTL, two fields: "rec", the
 * record's text (ag_rec_format()'s), and "ver", its version in decimal.
 * Redis keeps no version of a key, so the version is a number the cas
 * script takes from one counter of the whole store, PREFIX:CLUSTER:rev
 * (INCR), in the same script as the write.  A store-wide counter, as
 * etcd's revision (mod_revision) is, and not one per record: a per-record
 * counter restarts at 1 when the record is deleted and created again, and
 * a delayed write of an old holder naming version 1 would then land on a
 * record it never read (ABA).  The store-wide one never goes back while
 * the key PREFIX:CLUSTER:rev lives and the store keeps what it
 * acknowledged (where it does not: a server life's jump, below): versions
 * of one pair never repeat, whatever is deleted beside it.  Its value is
 * written as a string and compared as a string (Lua's numbers are
 * doubles: the script refuses a counter past 2^53 - 1, which a million
 * writes a second reach in 285 years).
 *
 * read:  rec_read_lua: nil when there is no key; {ver, text} for a
 *        record; {"", value} for anything else at that name (1.4.0's key,
 *        a string holding an owner with a TTL; another type: its name).
 * cas:   rec_cas_lua: with expect 0, only where there is no key at all;
 *        else only where the key is a record whose "ver" is expect's
 *        decimal text, byte for byte.  Then INCR rev (2^32 on, the first
 *        write of a server life: below), HSET ver and rec, return the new
 *        version (a string); 0 when the compare failed.
 * The compare and the write are atomic because Redis runs a script whole,
 * no other client's command in between (the scripts declare every key
 * they touch, for ACLs).
 * An error raised inside the script after INCR and before HSET (OOM)
 * moves only the counter: the record is unchanged, and versions still
 * never repeat.
 *
 * Not a record: a value at the record's name that is not a record hash
 * is read as RS_OK with version REC_FOREIGN and its text (at most
 * AG_REC_MAX - 1 bytes, else the read fails; a string that begins "sf2 ",
 * which no agent writes, with "redis-string " before it).  The engine's
 * parse fails on it (ag_rec_parse(): no "sf2 " text): an owner's form is
 * a 1.4.0 agent's key, held by it (record.c, REC_1_4_0), anything else
 * event=mark_invalid, never served, the pair quarantined as an invalid
 * mark is.  No cas ever replaces it: its compare needs a record hash, so
 * a 1.4.0 agent's key stays its own until its TTL ends.
 *
 * 1.4.0's mark key (the rolling upgrade): legacy(), rec_leg_lua, reads
 * PREFIX:CLUSTER:mark:DC:W (and, with redis-allow-non-durable, whether
 * its markrun tag is this server life's: a stale mark reads as missing,
 * as 1.4.0 read it); create() is the cas script given that key as a
 * fourth key and the state and text read as a guard: it commits only
 * where there is no key at the record's name and the mark key is as read,
 * in the same script.  The mark keys are left in place.
 *
 * A server life's first write moves the counter 2^32 on, not 1: the
 * script keeps the run_id (INFO server's, new at every start of
 * redis-server) of the life that last wrote in PREFIX:CLUSTER:revrun, and
 * a write of another life adds 2^32.  A Redis brought back to an older
 * state (a restart from an RDB snapshot or an AOF not fsynced, which
 * redis-allow-non-durable accepts; a restore by an operator) has lost the
 * counter's last values with the records that had them; they are never
 * handed out again unless that life had written 2^32 versions past its
 * snapshot.  (2^53 / 2^32: two million server lives.)  That first version
 * is kept in PREFIX:CLUSTER:revrunbase; with redis-allow-non-durable a
 * record whose version is below it, or read before this life wrote
 * anything, was written before the server's last restart and may be older
 * than what its writer was told (its mark lower): read with "redis-stale "
 * before its text (event=mark_stale), never a record to the engine, so
 * quarantined as an invalid one, as 1.4.0 read a mark of another run_id.
 *
 * Assumed: the counter keys are never deleted nor set by anyone else
 * while agents run (no FLUSHDB, no DEL of them: then versions can
 * repeat); a record deleted by hand is safe (its next version is above
 * every earlier one).  1.4.0's marks' run_id tag (markrun) is not
 * written for records: a record brought back lower is the engine's
 * (event=mark_lowered: the holder raises its mark again, or fences).
 */
/* The largest version a record may have: 2^53 - 1 (Lua numbers are doubles). */
#define REC_VER_MAX	9007199254740991ULL
/* read()'s version of a value at a record's name that is not a record. */
#define REC_FOREIGN	UINT64_MAX

/*
 * 1.4.0's mark key (the rolling upgrade, docs/lease-record.md): leg(k) its
 * state and text, "0" none, "1" a string (its text), "2" anything else
 * (its type's name, or "long": a string of AG_REC_MAX bytes or more,
 * never a mark).  The create's guard is that state and text joined.
 */
#define LUA_LEG \
	"local function leg(k) local t = redis.call('TYPE', k).ok " \
	"if t == 'none' then return '0', '' end " \
	"if t ~= 'string' then return '2', t end " \
	"local m = redis.call('GET', k) " \
	"if #m >= 512 then return '2', 'long' end " \
	"return '1', m end "
_Static_assert(AG_REC_MAX == 512, "LUA_LEG's 512 is AG_REC_MAX");
/*
 * KEYS: 1.4.0's mark, its markrun; ARGV: the server's run_id when the
 * stale check is on (redis-allow-non-durable), else "".  nil: no mark
 * key; {state, text}: state as leg()'s, "3" a string whose markrun is
 * not this server life's (stale).
 */
static const char rec_leg_lua[] = LUA_LEG
	"local s, m = leg(KEYS[1]) "
	"if s == '0' then return false end "
	"if s == '1' and ARGV[1] ~= '' and redis.pcall('GET', KEYS[2]) ~= ARGV[1] then s = '3' end "
	"return {s, m}";

/*
 * KEYS: record, revrun, revbase; ARGV: the longest text to return
 * (AG_REC_MAX), the server's run_id when the stale check is on
 * (redis-allow-non-durable), else "".  A record whose version is below the
 * first of this server life (revbase), or read before this life wrote
 * anything (revrun another life's), gets a third element: stale.
 */
static const char rec_read_lua[] =
	"local t = redis.call('TYPE', KEYS[1]).ok "
	"if t == 'none' then return false end "
	"if t == 'hash' then "
	"local v = redis.call('HMGET', KEYS[1], 'ver', 'rec') "
	"if v[1] and v[2] then "
	"if ARGV[2] ~= '' and (redis.pcall('GET', KEYS[2]) ~= ARGV[2] or "
	"not tonumber(v[1]) or tonumber(v[1]) < (tonumber(redis.pcall('GET', KEYS[3])) or 0)) then "
	"return {v[1], string.sub(v[2], 1, ARGV[1]), 'stale'} end "
	"return {v[1], string.sub(v[2], 1, ARGV[1])} end "
	"return {'', 'hash'} end "
	"if t == 'string' then return {'', string.sub(redis.call('GET', KEYS[1]), 1, ARGV[1])} end "
	"return {'', t}";
/*
 * KEYS: record, rev, revrun, revbase (the first version of the server life
 * in revrun)[, 1.4.0's mark]; ARGV: expect ("0": no key at all), text, the
 * server's run_id[, the mark's guard: leg()'s state and text as read].
 * The new version, or 0 (the record, or 1.4.0's mark, not as expected).
 */
static const char rec_cas_lua[] = LUA_LEG
	"local t = redis.call('TYPE', KEYS[1]).ok "
	"if ARGV[1] == '0' then if t ~= 'none' then return 0 end "
	"elseif t ~= 'hash' or redis.call('HGET', KEYS[1], 'ver') ~= ARGV[1] then return 0 end "
	"if KEYS[5] then local g, m = leg(KEYS[5]) if g .. m ~= ARGV[4] then return 0 end end "
	"local v "
	"if redis.call('GET', KEYS[3]) ~= ARGV[3] then "
	"v = redis.call('INCRBY', KEYS[2], 4294967296) redis.call('SET', KEYS[3], ARGV[3]) "
	"redis.call('SET', KEYS[4], string.format('%d', v)) "
	"else v = redis.call('INCR', KEYS[2]) end "
	"if v > 9007199254740991 then return redis.error_reply('ERR snowflake: the record counter is past 2^53 - 1') end "
	"v = string.format('%d', v) "
	"redis.call('HSET', KEYS[1], 'ver', v, 'rec', ARGV[2]) "
	"return v";

/* The most a reply may take (the largest, INFO server, is a few KiB). */
#define REDIS_REPLY_MAX		(1 << 20)
/* The most elements an array reply may have (CONFIG GET, init's {2, text}). */
#define REDIS_ELEMENTS_MAX	16


/*
 * What this file keeps is the connection and what the server said on it;
 * what was logged is the engine's (ag_condition(): the link, the restart
 * wait, a Redis allowed to be non-durable), never a flag here.
 */
struct rstore {
	redisContext *rc;
	char rec_read_sha[41], rec_cas_sha[41], rec_leg_sha[41];	/* ag_redis_rec_ops' */
	char run_id[41];		/* INFO server's run_id at the connection */
};

static struct rstore *R(const struct agent *a)
{
	return a->store;
}

/* The connection failed: dropped, said once per reason (AG_COND_STORE_DOWN; its event=redis_up only after it). */
static void redis_drop(struct agent *a, const char *why)
{
	struct rstore *r = R(a);

	ag_condition(a, AG_COND_STORE_DOWN, AG_WARN, "event=redis_down host=%s port=%d error=\"%s\"",
		     a->c->redis_host, a->c->redis_port, why);
	if (r->rc) {
		redisFree(r->rc);
		r->rc = NULL;
	}
}

/* Redis can never be used as configured: the agent stops with @code. */
static void redis_fatal(struct agent *a, int code, const char *fmt, const char *detail)
{
	char msg[900];

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

#if HIREDIS_MAJOR < 1
/*
 * hiredis 0.14 allocates an array reply's element table from the count
 * the server announces, before any element has come: "*100000000" would
 * take 800 MB.  Its reader's functions, with arrays bounded.
 */
static redisReplyObjectFunctions bounded_fn;
static void *(*create_array)(const redisReadTask *t, int elements);

static void *bounded_array(const redisReadTask *t, int elements)
{
	if (elements < 0 || elements > REDIS_ELEMENTS_MAX)
		return NULL;	/* the reader fails the reply ("Out of memory") */
	return create_array(t, elements);
}
#endif

/* A new connection's reader: arrays bounded (sizes: by the caller's byte count). */
static void bound_reader(redisContext *rc)
{
#if HIREDIS_MAJOR < 1
	if (!create_array) {
		bounded_fn = *rc->reader->fn;
		create_array = bounded_fn.createArray;
		bounded_fn.createArray = bounded_array;
	}
	rc->reader->fn = &bounded_fn;
#else
	rc->reader->maxelements = REDIS_ELEMENTS_MAX;
#endif
}

/*
 * Send the command hiredis holds in its output buffer and read its reply,
 * all of it by @end (boottime ns): every wait is the engine's ag_wait()
 * (the deadline and the stop signal are asked there, never here), at
 * most REDIS_REPLY_MAX bytes read.  What stays here is the protocol:
 * write until hiredis has sent the command, read until its reader holds
 * one whole reply.  The reply, or NULL with *@why (the caller drops the
 * connection: a reply may still be on its way).
 */
static redisReply *exchange(redisContext *rc, int64_t end, const char **why)
{
	char buf[16384];
	size_t got = 0;
	void *reply = NULL;
	int done = 0;

	for (;;) {
		struct pollfd p = { .fd = rc->fd };
		ssize_t n;
		int r;

		if (done) {
			if (redisReaderGetReply(rc->reader, &reply) != REDIS_OK) {
				*why = rc->reader->errstr[0] ? rc->reader->errstr : "protocol error";
				return NULL;
			}
			if (reply)
				return reply;
		}
		p.events = done ? POLLIN : POLLOUT;
		r = ag_wait(&p, 1, end);
		if (r <= 0) {
			*why = !r ? "no whole reply within the deadline" :
			       errno == ECANCELED ? "stop signal" : strerror(errno);
			return NULL;
		}
		if (!done) {
			if (redisBufferWrite(rc, &done) != REDIS_OK) {
				*why = rc->errstr[0] ? rc->errstr : "write failed";
				return NULL;
			}
			continue;
		}
		n = read(rc->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			*why = n ? strerror(errno) : "connection closed";
			return NULL;
		}
		got += (size_t)n;
		if (got > REDIS_REPLY_MAX) {
			*why = "reply larger than 1 MiB";
			return NULL;
		}
		if (redisReaderFeed(rc->reader, buf, (size_t)n) != REDIS_OK) {
			*why = "protocol error";
			return NULL;
		}
	}
}

/*
 * Run a command that ends by @deadline (0: within redis-timeout-ms), as a
 * whole; NULL when the deadline has passed, or the connection failed (it
 * is dropped), or the reply is fatal (a->fatal set).  *@sent (when not
 * NULL) is set once the command may have reached the server: a NULL
 * after it, without a->fatal, is a request whose outcome is unknown.
 */
static redisReply *cmd_sent(struct agent *a, int64_t deadline, int argc, const char **argv,
			    bool *sent)
{
	struct rstore *rs = R(a);
	int64_t t = ms_left(deadline, a->c->redis_timeout_ms);
	const char *why = "no reply";
	redisReply *r;

	if (!t) {
		logm(AG_DEBUG, "%s: no time left before the fence", argv[0]);
		return NULL;
	}
	if (!rs->rc || redisAppendCommandArgv(rs->rc, argc, argv, NULL) != REDIS_OK) {
		redis_drop(a, "no connection");
		return NULL;
	}
	if (sent)
		*sent = true;	/* from here on, the request may reach the server */
	r = exchange(rs->rc, boot_ns() + t * NS_PER_MS, &why);
	if (!r) {
		redis_drop(a, why);
		return NULL;
	}
	if (fatal_reply(a, r)) {
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

/* cmd_sent() for a command whose outcome matters less than its reply. */
static redisReply *cmd(struct agent *a, int64_t deadline, int argc, const char **argv)
{
	return cmd_sent(a, deadline, argc, argv, NULL);
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

/* INFO's field @name into @out: 0, or -1 (ag_redis_info_field()). */
static int info_field(const redisReply *r, const char *name, char *out, size_t len)
{
	if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS))
		return -1;
	return ag_redis_info_field(r->str, r->len, name, out, len);
}

/* INFO @section, checked to be text; NULL (connection dropped, or logged) when not. */
static redisReply *info(struct agent *a, int64_t deadline, const char *section)
{
	const char *argv[] = { "INFO", section };
	redisReply *r = cmd(a, deadline, 2, argv);

	if (r && r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
		ag_reply_invalid(a, "INFO reply", r->type == REDIS_REPLY_ERROR ? r->str : "", 0);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

/*
 * G5 for the marks: can this Redis bring a mark back lower than it
 * accepted it?  It can when a restart reloads an older state (no AOF, or
 * appendfsync other than always: an RDB snapshot, or an AOF missing its
 * last second) or when a replica can take over (a failover to a replica
 * that lags: this server has replicas, or is one).  Such a Redis is
 * refused (exit 5) unless redis-allow-non-durable; with it, said once
 * by the engine (again when the reason or the server life changes: a
 * replica attached later, a restart), and marks are tagged with the
 * server's run_id (the top of this file).
 * false when refused or the connection failed.
 */
static bool durability(struct agent *a, int64_t deadline)
{
	struct rstore *rs = R(a);
	char aof[16] = "", fsync[16] = "", role[16] = "", slaves[24] = "", why[200], run[48];
	redisReply *r;

	config_get(a, deadline, "appendonly", aof, sizeof(aof));
	if (!rs->rc)
		return false;
	config_get(a, deadline, "appendfsync", fsync, sizeof(fsync));
	if (!rs->rc)
		return false;
	r = info(a, deadline, "replication");
	if (!r)
		return false;
	if (info_field(r, "role", role, sizeof(role)) ||
	    info_field(r, "connected_slaves", slaves, sizeof(slaves))) {
		freeReplyObject(r);
		redis_fatal(a, AG_EXIT_UNSAFE_STORE, "%s",
			    "INFO replication has no role or connected_slaves: cannot check that no replica can take over with older marks");
		return false;
	}
	freeReplyObject(r);
	r = info(a, deadline, "server");
	if (!r)
		return false;
	if (info_field(r, "run_id", run, sizeof(run)) || strlen(run) != 40 ||
	    strspn(run, "0123456789abcdef") != 40) {
		freeReplyObject(r);
		redis_fatal(a, AG_EXIT_UNSAFE_STORE, "%s",
			    "INFO server has no run_id (40 hex digits): cannot tell a restart");
		return false;
	}
	freeReplyObject(r);
	/*
	 * One connection, one server life: a restart cuts connections, but a
	 * proxy in between may hide it.  Then the connection is dropped; the
	 * engine's next call connects again and checks again (nothing is
	 * asked again here).
	 */
	if (rs->run_id[0] && strcmp(run, rs->run_id) != 0) {
		redis_drop(a, "the server's run_id changed: it restarted");
		return false;
	}
	memcpy(rs->run_id, run, sizeof(rs->run_id));
	if (strcmp(aof, "yes") != 0 || strcmp(fsync, "always") != 0)
		snprintf(why, sizeof(why), "appendonly=%s appendfsync=%s", *aof ? aof : "?",
			 *fsync ? fsync : "?");
	else if (strcmp(role, "master") != 0)
		snprintf(why, sizeof(why), "role=%s", role);
	else if (strcmp(slaves, "0") != 0)
		snprintf(why, sizeof(why), "role=master connected_slaves=%s", slaves);
	else
		return true;
	if (!a->c->redis_allow_non_durable) {
		redis_fatal(a, AG_EXIT_UNSAFE_STORE,
			    "%s: this Redis can bring a pair's timestamp mark back lower than it acknowledged (a restart from an older snapshot or an AOF not fsynced at every write, or a failover to a replica), and the next holder would stamp timestamps the last one stamped; set appendonly yes and appendfsync always on one Redis without replicas, or accept it with redis-allow-non-durable = yes (docs/deployment-redis.md)",
			    why);
		return false;
	}
	ag_condition(a, AG_COND_STORE_NOT_DURABLE, AG_WARN,
		     "event=redis_not_durable host=%s port=%d %s run_id=%s: redis-allow-non-durable: marks written before this server's last restart (another run_id) are treated as missing",
		     a->c->redis_host, a->c->redis_port, why, rs->run_id);
	return true;
}

/*
 * The checks of every new connection: Redis keeps a key until its TTL or
 * its owner ends it.  false (a->fatal set, or the connection dropped)
 * when not.
 */
static bool check_redis(struct agent *a, int64_t deadline)
{
	const char *cfg[] = { "CONFIG", "GET", "maxmemory-policy" };
	const char *cl[] = { "INFO", "cluster" };
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
	if (!durability(a, deadline))
		return false;
	r = cmd(a, deadline, 2, cl);
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
	rs->run_id[0] = '\0';	/* a new connection: maybe a new server life */
	if (resolve_bounded(c->redis_host, t, addr, sizeof(addr), err, sizeof(err))) {
		redis_drop(a, err);
		return false;
	}
	/*
	 * A connect that does not block: its wait is the first command's
	 * (exchange(): ag_wait() for POLLOUT, then the write says a refused
	 * connection), bounded by that command's deadline and the stop.
	 */
	rs->rc = redisConnectNonBlock(addr, c->redis_port);
	if (!rs->rc || rs->rc->err) {
		redis_drop(a, rs->rc ? rs->rc->errstr : "out of memory");
		return false;
	}
	bound_reader(rs->rc);
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
	if (!load_script(a, deadline, rec_read_lua, rs->rec_read_sha) ||
	    !load_script(a, deadline, rec_cas_lua, rs->rec_cas_sha) ||
	    !load_script(a, deadline, rec_leg_lua, rs->rec_leg_sha)) {
		if (!a->fatal)
			redis_drop(a, "SCRIPT LOAD failed");
		return false;
	}
	ag_condition_over(a, AG_COND_STORE_DOWN, "event=redis_up host=%s port=%d",
			  c->redis_host, c->redis_port);
	return true;
}

static void odd_reply(struct agent *a, const char *what, const redisReply *r)
{
	ag_reply_invalid(a, what, r->type == REDIS_REPLY_STRING ? r->str : "(another type)",
			 r->type == REDIS_REPLY_STRING ? r->len : 14);
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

/*
 * A Redis that restarted without persistence has forgotten every lease,
 * while their holders still use them until their next renewal fails.  Claim
 * nothing until it has been up for min_uptime_ms (by default one TTL): by
 * then every holder of a forgotten lease has fenced.
 */
static int64_t r_claim_wait(struct agent *a)
{
	struct rstore *rs = R(a);
	long long up_s, need_s;
	char up[32];
	uint64_t v;
	redisReply *r;

	if (!redis_connect(a, 0))
		return -1;
	/* Before every claim walk: still durable, still the same server life. */
	if (!durability(a, 0))
		return -1;
	if (!a->c->min_uptime_ms)
		return 0;
	r = info(a, 0, "server");
	if (!r)
		return -1;
	if (info_field(r, "uptime_in_seconds", up, sizeof(up)) ||
	    ag_parse_u64(up, strlen(up), INT64_MAX / 1000 / NS_PER_MS, &v)) {
		ag_reply_invalid(a, "INFO server uptime_in_seconds", "", 0);
		freeReplyObject(r);
		return -1;
	}
	freeReplyObject(r);
	up_s = (long long)v;
	/* uptime_in_seconds is rounded down. */
	need_s = (a->c->min_uptime_ms + 999) / 1000;
	if (up_s >= need_s)
		return 0;
	/*
	 * Said once per server life (its run_id, read by durability() on
	 * this connection): the uptime, which changes at every look, is
	 * the debug line's, not the condition's.
	 */
	ag_condition(a, AG_COND_STORE_YOUNG, AG_INFO,
		     "event=redis_young run_id=%s need_s=%lld: waiting before claiming (a restart forgets leases)",
		     rs->run_id, need_s);
	logm(AG_DEBUG, "redis uptime_s=%lld need_s=%lld", up_s, need_s);
	return (need_s - up_s) * 1000 * NS_PER_MS;
}

/* G5 while holding (agent.h): durability() again (a replica added, fsync turned off). */
static int r_recheck(struct agent *a, int64_t deadline)
{
	return durability(a, deadline) ? 0 : -1;
}

/*
 * The record design's backend (the layout and the scripts: above
 * rec_read_lua).  One script run on the pair's record and the counter:
 * the reply, or NULL with *@st: RS_REFUSED (NOPERM: an ACL on this pair's
 * keys), RS_UNABLE (MISCONF, LOADING, READONLY, OOM, BUSY, NOREPLICAS,
 * MASTERDOWN: the store as a whole), RS_FAILED (another error reply,
 * nothing sent, a fatal reply), RS_UNKNOWN (sent, no readable reply: the
 * connection is dropped).
 *
 * EVAL after NOSCRIPT is the protocol, not a resend: NOSCRIPT says the
 * server does not know the script (its cache was flushed, or it restarted
 * between our SCRIPT LOAD and now), so nothing ran and EVAL is the first
 * and only run of the step.  Nothing else is ever sent twice here: a call
 * without a reply returns NULL (the connection dropped), and whether the
 * step is asked again, and how, is the engine's (record.c, agent.c).
 */
enum { RE_READ, RE_CAS, RE_LEG, RE_CREATE };

static redisReply *rec_eval(struct agent *a, int64_t deadline, int op, uint32_t dc, uint32_t w,
			    const char *arg1, const char *arg2, const char *arg3, int *st)
{
	struct rstore *rs = R(a);
	/* The store as a whole: a replica (its master away), too few replicas, ... */
	static const char *const unable[] = { "MISCONF", "LOADING", "READONLY", "OOM", "BUSY",
					      "NOREPLICAS", "MASTERDOWN" };
	char key[512], rev[512], revrun[512], revbase[520], mark[512], markrun[512];
	const char *argv[14] = { "EVALSHA" };
	int argc;
	bool sent = false;
	redisReply *r;
	size_t i;

	*st = RS_FAILED;
	if (!redis_connect(a, deadline))
		return NULL;
	key_of(a, dc, w, key, sizeof(key));
	mark_key_of(a, dc, w, mark, sizeof(mark));
	snprintf(markrun, sizeof(markrun), "%s:%s:markrun:%u:%u", a->c->prefix, a->c->cluster, dc, w);
	snprintf(rev, sizeof(rev), "%s:%s:rev", a->c->prefix, a->c->cluster);
	snprintf(revrun, sizeof(revrun), "%s:%s:revrun", a->c->prefix, a->c->cluster);
	snprintf(revbase, sizeof(revbase), "%s:%s:revrunbase", a->c->prefix, a->c->cluster);
	if (op == RE_READ) {
		const char *v[] = { rs->rec_read_sha, "3", key, revrun, revbase, arg1,
				    a->c->redis_allow_non_durable ? rs->run_id : "" };

		memcpy(argv + 1, v, sizeof(v));
		argc = 8;
	} else if (op == RE_LEG) {
		const char *v[] = { rs->rec_leg_sha, "2", mark, markrun,
				    a->c->redis_allow_non_durable ? rs->run_id : "" };

		memcpy(argv + 1, v, sizeof(v));
		argc = 6;
	} else {
		const char *v[] = { rs->rec_cas_sha, op == RE_CAS ? "4" : "5", key, rev, revrun,
				    revbase, op == RE_CAS ? arg1 : mark, op == RE_CAS ? arg2 : arg1,
				    op == RE_CAS ? rs->run_id : arg2, op == RE_CAS ? NULL : rs->run_id,
				    arg3 };

		memcpy(argv + 1, v, sizeof(v));
		argc = op == RE_CAS ? 10 : 12;
	}
	r = cmd_sent(a, deadline, argc, argv, &sent);
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = op == RE_READ ? rec_read_lua : op == RE_LEG ? rec_leg_lua : rec_cas_lua;
		sent = false;
		r = cmd_sent(a, deadline, argc, argv, &sent);
	}
	if (!r) {
		*st = sent && !a->fatal ? RS_UNKNOWN : RS_FAILED;
		return NULL;
	}
	if (r->type != REDIS_REPLY_ERROR) {
		ag_condition_over(a, AG_COND_STORE_DOWN, "event=redis_up host=%s port=%d",
				  a->c->redis_host, a->c->redis_port);
		return r;
	}
	if (!strncmp(r->str, "NOPERM", 6)) {
		logm(AG_WARN, "event=redis_refused host=%s port=%d key=%s error=\"%.200s\": not run",
		     a->c->redis_host, a->c->redis_port, key, r->str);
		*st = RS_REFUSED;
	}
	for (i = 0; i < sizeof(unable) / sizeof(unable[0]) && *st == RS_FAILED; i++) {
		size_t n = strlen(unable[i]);

		if (!strncmp(r->str, unable[i], n) && (r->str[n] == ' ' || !r->str[n])) {
			ag_condition(a, AG_COND_STORE_DOWN, AG_WARN,
				     "event=redis_unable host=%s port=%d error=\"%.200s\": the store cannot run a write now (nothing ran)",
				     a->c->redis_host, a->c->redis_port, r->str);
			*st = RS_UNABLE;
		}
	}
	if (*st == RS_FAILED)
		logm(AG_WARN, "event=redis_error host=%s port=%d key=%s error=\"%.200s\"",
		     a->c->redis_host, a->c->redis_port, key, r->str);
	freeReplyObject(r);
	return NULL;
}

static int rr_read(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *out)
{
	char lim[16];
	const redisReply *v, *t;
	redisReply *r;
	uint64_t ver = REC_FOREIGN;
	int st;

	snprintf(lim, sizeof(lim), "%d", AG_REC_MAX);
	r = rec_eval(a, deadline, RE_READ, dc, w, lim, NULL, NULL, &st);
	if (!r)
		return st == RS_UNKNOWN ? RS_FAILED : st;
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return RS_ABSENT;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->elements > 3 || !r->element[0] ||
	    !r->element[1] || r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    (r->elements == 3 && (!r->element[2] || r->element[2]->type != REDIS_REPLY_STRING ||
				  r->element[2]->len != 5 || memcmp(r->element[2]->str, "stale", 5) != 0))) {
		odd_reply(a, "record read reply", r);
		freeReplyObject(r);
		return RS_FAILED;
	}
	v = r->element[0];
	t = r->element[1];
	if (v->len && (ag_parse_u64(v->str, v->len, REC_VER_MAX, &ver) || !ver)) {
		ag_reply_invalid(a, "record version", v->str, v->len);
		freeReplyObject(r);
		return RS_FAILED;
	}
	if (t->len >= AG_REC_MAX) {
		ag_reply_invalid(a, "record text (longer than a record)", t->str, 64);
		freeReplyObject(r);
		return RS_FAILED;
	}
	out->version = ver;
	out->len = t->len;
	memcpy(out->text, t->str, t->len);
	out->text[t->len] = '\0';
	if (r->elements == 3 || (!v->len && t->len >= 4 && !memcmp(t->str, "sf2 ", 4))) {
		/*
		 * A record's text outside a record hash (no agent writes one), or
		 * a record written before this server life (stale): never a
		 * record, so never served nor taken without a quarantine.
		 */
		const char *tag = r->elements == 3 ? "redis-stale " : "redis-string ";

		if (r->elements == 3)
			logm(AG_WARN, "event=mark_stale datacenter=%u worker=%u run_id=%s: the record was written before this Redis last restarted (redis-allow-non-durable): not trusted, quarantined as an invalid record",
			     dc, w, R(a)->run_id);
		size_t tl = strlen(tag);
		size_t keep = t->len + tl < sizeof(out->text) ? t->len : sizeof(out->text) - 1 - tl;

		memcpy(out->text + tl, t->str, keep);
		memcpy(out->text, tag, tl);
		out->len = keep + tl;
		out->text[out->len] = '\0';
	}
	freeReplyObject(r);
	return RS_OK;
}

/* A cas (@guard NULL), or a create only while 1.4.0's mark is as @guard says. */
static int rr_write(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		    size_t len, int64_t deadline, uint64_t *version, const char *guard)
{
	char ex[24], txt[AG_REC_MAX];
	redisReply *r;
	uint64_t ver = 0;
	int st;

	/* hiredis sends each argument to its NUL: a text with one is not a record's. */
	if (len >= sizeof(txt) || memchr(text, '\0', len))
		return RS_FAILED;
	memcpy(txt, text, len);
	txt[len] = '\0';
	snprintf(ex, sizeof(ex), "%llu", (unsigned long long)expect);
	if (guard)
		r = rec_eval(a, deadline, RE_CREATE, dc, w, ex, txt, guard, &st);
	else
		r = rec_eval(a, deadline, RE_CAS, dc, w, ex, txt, NULL, &st);
	if (!r)
		return st;
	if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
		freeReplyObject(r);
		return RS_MOVED;
	}
	/*
	 * The new version: above @expect (the counter never goes back; one
	 * that did, a store brought back to an older state, is not trusted),
	 * else a reply that says nothing sure: unknown, read back by the engine.
	 */
	if (r->type != REDIS_REPLY_STRING || ag_parse_u64(r->str, r->len, REC_VER_MAX, &ver) ||
	    ver <= expect) {
		odd_reply(a, "record cas reply", r);
		freeReplyObject(r);
		return RS_UNKNOWN;
	}
	freeReplyObject(r);
	*version = ver;
	return RS_OK;
}

static int rr_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
{
	return rr_write(a, dc, w, expect, text, len, deadline, version, NULL);
}

/* 1.4.0's mark key (rec_leg_lua): its state and text, checked as a reply. */
static int rr_legacy(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline,
		     struct ag_legacy *m)
{
	const redisReply *s, *t;
	redisReply *r;
	int st;

	memset(m, 0, sizeof(*m));
	r = rec_eval(a, deadline, RE_LEG, dc, w, NULL, NULL, NULL, &st);
	if (!r)
		return st == RS_UNKNOWN ? RS_FAILED : st;
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return RS_OK;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element[0] || !r->element[1] ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
	    r->element[0]->len != 1 || !strchr("123", r->element[0]->str[0]) ||
	    r->element[1]->len >= sizeof(m->text)) {
		odd_reply(a, "1.4.0 mark reply", r);
		freeReplyObject(r);
		return RS_FAILED;
	}
	s = r->element[0];
	t = r->element[1];
	m->state = s->str[0] == '1' ? AG_LEG_MARK : s->str[0] == '3' ? AG_LEG_STALE : AG_LEG_OTHER;
	m->len = t->len;
	memcpy(m->text, t->str, t->len);
	m->text[t->len] = '\0';
	freeReplyObject(r);
	return RS_OK;
}

/* A record created only where 1.4.0's mark key is as *@m (rr_legacy()) found it. */
static int rr_create(struct agent *a, uint32_t dc, uint32_t w, const struct ag_legacy *m,
		     const char *text, size_t len, int64_t deadline, uint64_t *version)
{
	char guard[AG_REC_MAX + 2];

	if (m->len >= AG_REC_MAX || memchr(m->text, '\0', m->len))
		return RS_FAILED;
	snprintf(guard, sizeof(guard), "%c%.*s",
		 m->state == AG_LEG_NONE ? '0' : m->state == AG_LEG_OTHER ? '2' : '1',
		 (int)m->len, m->text);
	return rr_write(a, dc, w, 0, text, len, deadline, version, guard);
}

const struct rec_ops ag_redis_rec_ops = {
	.name = "redis",
	.init = r_init,
	.fini = r_fini,
	.describe = r_describe,
	.claim_wait = r_claim_wait,
	.recheck = r_recheck,
	.read = rr_read,
	.cas = rr_cas,
	.legacy = rr_legacy,
	.create = rr_create,
};
