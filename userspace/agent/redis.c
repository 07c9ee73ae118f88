// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in a single Redis instance.
 *
 * Two designs live here while the agent moves (issue 40): 1.4.0's key,
 * mark and TTL (ag_redis_ops, this comment), and the record design's
 * backend (ag_redis_rec_ops: its layout and scripts above rec_read_lua),
 * which share the connection, AUTH, the checks and the recheck.
 *
 * The lease is the key PREFIX:CLUSTER:worker:DC:W with this run's owner as
 * its value; the pair's timestamp mark is PREFIX:CLUSTER:mark:DC:W (no TTL:
 * it outlives every lease).  Every step is one Lua script, which Redis runs
 * atomically (no other command runs in between):
 *
 *   claim:   if the key exists: held; if the mark is missing: no mark;
 *            if it is invalid: the text, nothing written; else SET key
 *            owner PX ttl and return the mark (G1, G4)
 *   renew:   if GET key == owner: PEXPIRE key ttl, and raise the mark to
 *            at least the value given (never lower it; an invalid one is
 *            replaced); else lost (G3, G4)
 *   release: if GET key == owner: DEL key (the mark stays): give_back(),
 *            the engine's one way to give a pair back (the lease after
 *            the fence, a claim whose reply was lost: G6, agent.c)
 *
 * A claim answers committed (the script's reply), not committed (an
 * error reply: the script never ran; NOPERM of an ACL on this pair's keys
 * is this pair's refusal, TRY_REFUSED; any other, MISCONF, LOADING,
 * READONLY, OOM, BUSY, is the store unable to write at all, said as
 * event=redis_unable, TRY_ERROR: the engine asks again as for a store
 * error, nothing quarantined) or unknown (no reply, a reply that cannot
 * be read: TRY_UNKNOWN).
 *
 * The scripts check a mark's form themselves (20 digits, at most the
 * layout's last timestamp, given as ARGV): "1000", "-1" or a hash is
 * never compared as a number.  What they return is checked again here
 * (ag_mark_check(), exact reply types).
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
 *
 * G5: a mark read lower than it was accepted lets the next holder stamp
 * below the old holder's ceiling.  A Redis that can do that (an RDB
 * snapshot or an AOF not fsynced at every write brought back by a
 * restart; a replica promoted by a failover) is refused (exit 5) unless
 * redis-allow-non-durable: then every mark is written with the run_id of
 * the server that took it (PREFIX:CLUSTER:markrun:DC:W, in the same
 * script), and a mark whose run_id is not the server's current one (the
 * server restarted, or is another one since) reads as missing.
 *
 * Every call ends by its deadline as a whole (not per read: a server that
 * trickles its reply holds nothing past it) and reads at most
 * REDIS_REPLY_MAX bytes (a larger reply drops the connection); every wait,
 * the connect's too, is the engine's ag_wait() (the deadline, the stop
 * signal).  This file keeps no orphan and resends nothing: a claim without
 * a reply is TRY_UNKNOWN, resolved by the engine (agent.c
 * resolve_unknown()); a call that failed drops the connection, and the
 * next call the engine makes connects again.
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

_Static_assert(INIT_PRESENT == 0 && INIT_CREATED == 1 && INIT_REPLACED == 2 && INIT_INVALID == 3,
	       "init_lua's codes are agent.h's INIT_*");

/*
 * Every script starts with these: ok(m), the mark's form (ARGV[1]: the
 * layout's last timestamp, 20 digits; 20 digits compare as numbers);
 * getm(), the mark's text (a non-string reads as its type's name: invalid)
 * and whether it is stale (ARGV[2]: the server's run_id when the stale
 * check is on, else "": a mark whose markrun key differs); tag(), the
 * run_id beside a mark written.
 */
#define LUA_COMMON \
	"local function ok(m) return #m == 20 and not string.find(m, '%D') and m <= ARGV[1] end " \
	"local function getm() " \
	"local m = redis.pcall('GET', KEYS[2]) " \
	"if type(m) == 'table' then m = 'WRONGTYPE' end " \
	"if not m then return nil, false end " \
	"return m, ARGV[2] ~= '' and redis.pcall('GET', KEYS[3]) ~= ARGV[2] end " \
	"local function setm(v) redis.call('SET', KEYS[2], v) " \
	"if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2]) end end "

/*
 * KEYS: key, mark, markrun; ARGV: max, run, owner, ttl, init ("": none).
 * -1 held; -2 no mark; -3 a stale mark (a restart since); {text} an
 * invalid mark; else the mark (the key set).  With init: a missing, stale
 * or invalid mark is first made init (a stale one: the higher of the two).
 */
static const char claim_lua[] = LUA_COMMON
	"if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end "
	"local m, stale = getm() "
	"if ARGV[5] ~= '' and (not m or stale or not ok(m)) then "
	"local v = ARGV[5] "
	"if m and ok(m) and m > v then v = m end "
	"setm(v) m = v stale = false end "
	"if not m then return -2 end "
	"if not ok(m) then return {m} end "
	"if stale then return -3 end "
	"redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4]) "
	"return m";
/*
 * KEYS: key, mark, markrun; ARGV: max, run, owner, ttl, raise ("": none).
 * 0 lost; -2 ours but no mark (and none to create); {text} ours, an
 * invalid mark and nothing to raise; else the mark after the raise (an
 * invalid or stale mark is replaced by the raise).
 */
static const char renew_lua[] = LUA_COMMON
	"if redis.call('GET', KEYS[1]) ~= ARGV[3] then return 0 end "
	"redis.call('PEXPIRE', KEYS[1], ARGV[4]) "
	"local m, stale = getm() "
	"if ARGV[5] ~= '' and (not m or stale or not ok(m) or m < ARGV[5]) then "
	"setm(ARGV[5]) m = ARGV[5] end "
	"if not m then return -2 end "
	"if not ok(m) then return {m} end "
	"return m";
/*
 * KEYS: -, mark, markrun; ARGV: max, run, value, replace ("1": replace an
 * invalid or stale mark).  {1} created; {0} a valid mark, left; {2, text}
 * replaced (a stale one: by the higher of the two); {3, text} invalid or
 * stale, left.
 */
static const char init_lua[] = LUA_COMMON
	"local m, stale = getm() "
	"if not m then setm(ARGV[3]) return {1} end "
	"if ok(m) and not stale then return {0} end "
	"if ARGV[4] ~= '1' then return {3, m} end "
	"local v = ARGV[3] "
	"if ok(m) and m > v then v = m end "
	"setm(v) return {2, m}";
/* KEYS: key, -, -; ARGV: -, -, owner.  1 deleted, 0 not ours (the mark stays). */
static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[3] then "
	"return redis.call('DEL', KEYS[1]) else return 0 end";

/*
 * The record design (issue 40, docs/lease-record.md; ag_redis_rec_ops at
 * the end of this file): the backend of record.c's engine, two scripts on
 * the connection, the checks and the recheck above.
 *
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
 * parse fails on it (ag_rec_parse(): no "sf2 " text): event=mark_invalid,
 * never served, the pair quarantined as an invalid mark is.  No cas ever
 * replaces it: its compare needs a record hash, so a 1.4.0 agent's key
 * stays its own until its TTL ends (after which the pair is absent: a
 * missing mark, quarantined as today, then created).  Reading 1.4.0's
 * key as held by a 1.4.0 agent, and taking its mark key's value over, is
 * step 3 (the rolling upgrade), not done here.
 *
 * A server life's first write moves the counter 2^32 on, not 1: the
 * script keeps the run_id (INFO server's, new at every start of
 * redis-server) of the life that last wrote in PREFIX:CLUSTER:revrun, and
 * a write of another life adds 2^32.  A Redis brought back to an older
 * state (a restart from an RDB snapshot or an AOF not fsynced, which
 * redis-allow-non-durable accepts; a restore by an operator) has lost the
 * counter's last values with the records that had them; they are never
 * handed out again unless that life had written 2^32 versions past its
 * snapshot.  (2^53 / 2^32: two million server lives.)
 *
 * Assumed: the counter keys are never deleted nor set by anyone else
 * while agents run (no FLUSHDB, no DEL of them: then versions can
 * repeat); a record deleted by hand is safe (its next version is above
 * every earlier one).  1.4.0's marks' run_id tag (markrun, below) is not
 * used by records: a record brought back lower is the engine's
 * (event=mark_lowered: the holder raises its mark again, or fences).
 */
/* The largest version a record may have: 2^53 - 1 (Lua numbers are doubles). */
#define REC_VER_MAX	9007199254740991ULL
/* read()'s version of a value at a record's name that is not a record. */
#define REC_FOREIGN	UINT64_MAX

/* KEYS: record; ARGV: the longest text to return (AG_REC_MAX). */
static const char rec_read_lua[] =
	"local t = redis.call('TYPE', KEYS[1]).ok "
	"if t == 'none' then return false end "
	"if t == 'hash' then "
	"local v = redis.call('HMGET', KEYS[1], 'ver', 'rec') "
	"if v[1] and v[2] then return {v[1], string.sub(v[2], 1, ARGV[1])} end "
	"return {'', 'hash'} end "
	"if t == 'string' then return {'', string.sub(redis.call('GET', KEYS[1]), 1, ARGV[1])} end "
	"return {'', t}";
/*
 * KEYS: record, rev, revrun; ARGV: expect ("0": no key at all), text, the
 * server's run_id.  The new version, or 0.
 */
static const char rec_cas_lua[] =
	"local t = redis.call('TYPE', KEYS[1]).ok "
	"if ARGV[1] == '0' then if t ~= 'none' then return 0 end "
	"elseif t ~= 'hash' or redis.call('HGET', KEYS[1], 'ver') ~= ARGV[1] then return 0 end "
	"local v "
	"if redis.call('GET', KEYS[3]) ~= ARGV[3] then "
	"v = redis.call('INCRBY', KEYS[2], 4294967296) redis.call('SET', KEYS[3], ARGV[3]) "
	"else v = redis.call('INCR', KEYS[2]) end "
	"if v > 9007199254740991 then return redis.error_reply('ERR snowflake: the record counter is past 2^53 - 1') end "
	"v = string.format('%d', v) "
	"redis.call('HSET', KEYS[1], 'ver', v, 'rec', ARGV[2]) "
	"return v";

/* The most a reply may take (the largest, INFO server, is a few KiB). */
#define REDIS_REPLY_MAX		(1 << 20)
/* The most elements an array reply may have (CONFIG GET, init's {2, text}). */
#define REDIS_ELEMENTS_MAX	16

/* eval3()'s *refused: why a script got no usable reply. */
enum { EV_UNKNOWN, EV_PAIR_REFUSED, EV_STORE_UNABLE };

/*
 * What this file keeps is the connection and what the server said on it;
 * what was logged is the engine's (ag_condition(): the link, the restart
 * wait, a Redis allowed to be non-durable), never a flag here.
 */
struct rstore {
	redisContext *rc;
	char claim_sha[41], renew_sha[41], release_sha[41], init_sha[41];
	char rec_read_sha[41], rec_cas_sha[41];	/* the record design's (ag_redis_rec_ops) */
	char run_id[41];		/* INFO server's run_id at the connection */
	char max[24];			/* a->mark_max_ms as MARK_FMT */
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
	if (!load_script(a, deadline, claim_lua, rs->claim_sha) ||
	    !load_script(a, deadline, renew_lua, rs->renew_sha) ||
	    !load_script(a, deadline, release_lua, rs->release_sha) ||
	    !load_script(a, deadline, init_lua, rs->init_sha) ||
	    !load_script(a, deadline, rec_read_lua, rs->rec_read_sha) ||
	    !load_script(a, deadline, rec_cas_lua, rs->rec_cas_sha)) {
		if (!a->fatal)
			redis_drop(a, "SCRIPT LOAD failed");
		return false;
	}
	ag_condition_over(a, AG_COND_STORE_DOWN, "event=redis_up host=%s port=%d",
			  c->redis_host, c->redis_port);
	return true;
}

/*
 * EVALSHA of one of our scripts on the pair's key, mark and markrun keys
 * with ARGV: the layout's last timestamp, the run_id (when the stale check
 * is on), then @argc arguments.  The reply (the caller frees it), or NULL
 * on a connection error or timeout (*@refused EV_UNKNOWN: the outcome is
 * unknown) or an error reply (the script never ran): *@refused
 * EV_PAIR_REFUSED for NOPERM (an ACL on this pair's keys), EV_STORE_UNABLE
 * for any other (MISCONF, LOADING, READONLY, OOM, BUSY: the store cannot
 * write at all; AG_COND_STORE_DOWN, event=redis_unable).
 *
 * EVAL after NOSCRIPT is the protocol, not a resend: NOSCRIPT says the
 * server does not know the script (its cache was flushed, or it restarted
 * between our SCRIPT LOAD and now), so nothing ran and EVAL is the first
 * and only run of the step.  Nothing else is ever sent twice here: a call
 * without a reply returns NULL (the connection dropped), and whether the
 * step is asked again, and how, is the engine's (agent.c).
 */
static redisReply *eval3(struct agent *a, int64_t deadline, const char *sha, const char *lua,
			 uint32_t dc, uint32_t w, int argc, const char **args, int *refused)
{
	struct rstore *rs = R(a);
	char key[512], mark[512], run[512];
	const char *argv[12] = { "EVALSHA", sha, "3", key, mark, run, rs->max,
				 a->c->redis_allow_non_durable ? rs->run_id : "" };
	redisReply *r;
	int i;

	*refused = EV_UNKNOWN;
	key_of(a, dc, w, key, sizeof(key));
	mark_key_of(a, dc, w, mark, sizeof(mark));
	snprintf(run, sizeof(run), "%s:%s:markrun:%u:%u", a->c->prefix, a->c->cluster, dc, w);
	for (i = 0; i < argc && i < 4; i++)
		argv[8 + i] = args[i];
	r = cmd(a, deadline, 8 + i, argv);
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = lua;
		r = cmd(a, deadline, 8 + i, argv);
	}
	if (r && r->type == REDIS_REPLY_ERROR) {
		/*
		 * NOPERM: an ACL that leaves out this pair's keys, this pair
		 * only.  Any other error (MISCONF, LOADING, READONLY, OOM,
		 * BUSY, ...) is the store unable to run a write at all, for
		 * every pair: said as such, never one pair's refusal.
		 */
		if (!strncmp(r->str, "NOPERM", 6)) {
			logm(AG_WARN, "event=redis_refused host=%s port=%d command=%s error=\"%.200s\": not run",
			     a->c->redis_host, a->c->redis_port, argv[0], r->str);
			*refused = EV_PAIR_REFUSED;
		} else {
			ag_condition(a, AG_COND_STORE_DOWN, AG_WARN,
				     "event=redis_unable host=%s port=%d error=\"%.200s\": the store cannot run a write now (nothing ran); trying again",
				     a->c->redis_host, a->c->redis_port, r->str);
			*refused = EV_STORE_UNABLE;
		}
		freeReplyObject(r);
		return NULL;
	}
	if (r)
		ag_condition_over(a, AG_COND_STORE_DOWN, "event=redis_up host=%s port=%d",
				  a->c->redis_host, a->c->redis_port);
	return r;
}

/*
 * What a script returned, for the pair (@dc, @w) (ag_redis_script_reply()):
 * an invalid mark, or a string that is not a valid mark, is logged.
 */
static enum ag_redis_kind script_reply(struct agent *a, const redisReply *r, uint32_t dc,
				       uint32_t w, long long *code, uint64_t *mark,
				       const char *action)
{
	enum ag_redis_kind k;
	const char *text = NULL;
	size_t len = 0;

	k = ag_redis_script_reply(r, a->mark_max_ms, code, mark, &text, &len);
	if (k == AG_RS_INVALID)
		ag_mark_invalid(a, dc, w, text, len, action);
	else if (k == AG_RS_ODD && r->type == REDIS_REPLY_STRING)
		ag_mark_invalid(a, dc, w, r->str, r->len, "not-served");
	return k;
}

static void odd_reply(struct agent *a, const char *what, const redisReply *r)
{
	ag_reply_invalid(a, what, r->type == REDIS_REPLY_STRING ? r->str : "(another type)",
			 r->type == REDIS_REPLY_STRING ? r->len : 14);
}

/*
 * The renewal script: 1 renewed (*@mark the mark after it), 0 lost, -1
 * failed, TRY_NO_MARK ours but no mark, TRY_BAD_MARK ours with an invalid
 * mark and nothing to raise.
 */
static int renew_script(struct agent *a, int64_t deadline, uint32_t dc, uint32_t w,
			uint64_t raise, uint64_t *mark)
{
	char ttl[16], rs[24];
	const char *args[] = { a->owner, ttl, rs };
	redisReply *r;
	long long code = 0;
	int ret = -1;
	int refused;

	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	if (raise)
		snprintf(rs, sizeof(rs), MARK_FMT, (unsigned long long)raise);
	else
		rs[0] = '\0';
	r = eval3(a, deadline, R(a)->renew_sha, renew_lua, dc, w, 3, args, &refused);
	if (!r)
		return -1;
	switch (script_reply(a, r, dc, w, &code, mark, "left")) {
	case AG_RS_INT:
		ret = code == 0 ? 0 : code == -2 ? TRY_NO_MARK : -1;
		break;
	case AG_RS_MARK:
		ret = 1;
		break;
	case AG_RS_INVALID:
		ret = TRY_BAD_MARK;
		break;
	case AG_RS_ODD:
		break;
	}
	if (ret == -1)
		odd_reply(a, "renew script reply", r);
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
	snprintf(R(a)->max, sizeof(R(a)->max), MARK_FMT, (unsigned long long)a->mark_max_ms);
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
 * give_back(): the release script on pair (@dc, @w)'s key (G6, agent.c):
 * 1 deleted, 0 not ours, -1 no answer, or refused (an error reply: the
 * key is left as it was, and ends with its TTL).
 */
static int r_give_back(struct agent *a, uint32_t dc, uint32_t w)
{
	const char *args[] = { a->owner };
	redisReply *r;
	int v = -1;
	int refused;

	if (!redis_connect(a, 0))
		return -1;
	r = eval3(a, 0, R(a)->release_sha, release_lua, dc, w, 1, args, &refused);
	if (r && r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
		v = (int)r->integer;
	else if (r)
		odd_reply(a, "release script reply", r);
	freeReplyObject(r);
	return v;
}

/* The claim script (see the top of this file). */
static int r_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark,
		   uint64_t init_mark)
{
	char ttl[16], init[24];
	const char *args[] = { a->owner, ttl, init };
	redisReply *r;
	long long code = 0;
	int ret = TRY_ERROR;
	int refused;

	if (!redis_connect(a, 0))
		return TRY_ERROR;
	snprintf(ttl, sizeof(ttl), "%u", a->c->ttl_ms);
	if (init_mark)
		snprintf(init, sizeof(init), MARK_FMT, (unsigned long long)init_mark);
	else
		init[0] = '\0';
	*sent = boot_ns();
	r = eval3(a, 0, R(a)->claim_sha, claim_lua, dc, w, 3, args, &refused);
	/* An error reply: the script never ran (not committed); no reply: unknown (G6). */
	if (!r)
		return refused == EV_PAIR_REFUSED ? TRY_REFUSED :
		       refused == EV_STORE_UNABLE ? TRY_ERROR : TRY_UNKNOWN;
	switch (script_reply(a, r, dc, w, &code, mark, "not-served")) {
	case AG_RS_INT:
		if (code == -1)
			ret = TRY_HELD;
		else if (code == -2)
			ret = TRY_NO_MARK;
		else if (code == -3) {
			logm(AG_WARN, "event=mark_stale datacenter=%u worker=%u run_id=%s: the mark was written before this Redis last restarted (redis-allow-non-durable): treated as missing",
			     dc, w, R(a)->run_id);
			ret = TRY_NO_MARK;
		}
		break;
	case AG_RS_MARK:
		ret = TRY_TAKEN;
		break;
	case AG_RS_INVALID:
		ret = TRY_BAD_MARK;
		break;
	case AG_RS_ODD:
		break;
	}
	/* An odd reply says nothing of the key: unknown, undone by the engine. */
	if (ret == TRY_ERROR) {
		odd_reply(a, "claim script reply", r);
		ret = TRY_UNKNOWN;
	}
	freeReplyObject(r);
	return ret;
}

/*
 * The key still holds this run's owner: renew it with the renewal script,
 * re-creating a missing (or replacing an invalid) mark at the highest this
 * run had raised it to.
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
	if (ret == TRY_BAD_MARK || ret == TRY_NO_MARK)
		return TRY_BAD_MARK;
	return ret == 1 ? TRY_TAKEN : TRY_HELD;
}

static int r_renew(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise_to,
		   uint64_t *mark)
{
	int ret;

	*mark = AG_MARK_UNREAD;
	if (!redis_connect(a, deadline))
		return -1;
	*sent = boot_ns();
	ret = renew_script(a, deadline, a->dc, a->w, raise_to, mark);
	/*
	 * Ours, but the mark is gone or invalid and nothing to raise: 0, a
	 * mark below every one this holder raised (the engine raises it).
	 */
	if (ret == TRY_NO_MARK || ret == TRY_BAD_MARK) {
		*mark = 0;
		return 1;
	}
	if (ret != 1)
		*mark = AG_MARK_UNREAD;
	return ret;
}

/* --init-store: the init script (see init_lua). */
static int r_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t mark,
		       bool replace_invalid)
{
	char v[24];
	const char *args[] = { v, replace_invalid ? "1" : "0" };
	const char *text = NULL;
	size_t len = 0;
	redisReply *r;
	int ret;
	int refused;

	if (!redis_connect(a, 0))
		return -1;
	snprintf(v, sizeof(v), MARK_FMT, (unsigned long long)mark);
	r = eval3(a, 0, R(a)->init_sha, init_lua, dc, w, 2, args, &refused);
	if (!r)
		return -1;
	ret = ag_redis_init_reply(r, &text, &len);
	if (ret == INIT_REPLACED || ret == INIT_INVALID)
		ag_mark_invalid(a, dc, w, text, len, ret == INIT_REPLACED ? "replaced" : "left");
	if (ret < 0)
		odd_reply(a, "init script reply", r);
	freeReplyObject(r);
	return ret;
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

const struct store_ops ag_redis_ops = {
	.name = "redis",
	.init = r_init,
	.fini = r_fini,
	.describe = r_describe,
	.claim_wait = r_claim_wait,
	.claim = r_claim,
	.readopt = r_readopt,
	.renew = r_renew,
	.give_back = r_give_back,
	.recheck = r_recheck,
	.init_mark = r_init_mark,
};

/*
 * The record design's backend (the layout and the scripts: above
 * rec_read_lua).  One script run on the pair's record and the counter:
 * the reply, or NULL with *@st: RS_REFUSED (NOPERM: an ACL on this pair's
 * keys), RS_UNABLE (MISCONF, LOADING, READONLY, OOM, BUSY, NOREPLICAS,
 * MASTERDOWN: the store as a whole), RS_FAILED (another error reply,
 * nothing sent, a fatal reply), RS_UNKNOWN (sent, no readable reply: the
 * connection is dropped).
 * NOSCRIPT and EVAL: as eval3()'s, the protocol, not a resend.
 */
static redisReply *rec_eval(struct agent *a, int64_t deadline, bool cas, uint32_t dc, uint32_t w,
			    const char *arg1, const char *arg2, int *st)
{
	struct rstore *rs = R(a);
	/* The store as a whole: a replica (its master away), too few replicas, ... */
	static const char *const unable[] = { "MISCONF", "LOADING", "READONLY", "OOM", "BUSY",
					      "NOREPLICAS", "MASTERDOWN" };
	char key[512], rev[512], revrun[512];
	const char *argv[] = { "EVALSHA", cas ? rs->rec_cas_sha : rs->rec_read_sha, cas ? "3" : "1",
			       key, cas ? rev : arg1, cas ? revrun : NULL, cas ? arg1 : NULL,
			       cas ? arg2 : NULL, cas ? rs->run_id : NULL };
	int argc = cas ? 9 : 5;
	bool sent = false;
	redisReply *r;
	size_t i;

	*st = RS_FAILED;
	if (!redis_connect(a, deadline))
		return NULL;
	key_of(a, dc, w, key, sizeof(key));
	snprintf(rev, sizeof(rev), "%s:%s:rev", a->c->prefix, a->c->cluster);
	snprintf(revrun, sizeof(revrun), "%s:%s:revrun", a->c->prefix, a->c->cluster);
	r = cmd_sent(a, deadline, argc, argv, &sent);
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = cas ? rec_cas_lua : rec_read_lua;
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
	r = rec_eval(a, deadline, false, dc, w, lim, NULL, &st);
	if (!r)
		return st == RS_UNKNOWN ? RS_FAILED : st;
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return RS_ABSENT;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element[0] || !r->element[1] ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING) {
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
	if (!v->len && t->len >= 4 && !memcmp(t->str, "sf2 ", 4)) {
		/* A record's text outside a record hash: no agent writes one; never a record. */
		static const char tag[] = "redis-string ";
		size_t tl = sizeof(tag) - 1;
		size_t keep = t->len + tl < sizeof(out->text) ? t->len : sizeof(out->text) - 1 - tl;

		memcpy(out->text + tl, t->str, keep);
		memcpy(out->text, tag, tl);
		out->len = keep + tl;
		out->text[out->len] = '\0';
	}
	freeReplyObject(r);
	return RS_OK;
}

static int rr_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
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
	r = rec_eval(a, deadline, true, dc, w, ex, txt, &st);
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

const struct rec_ops ag_redis_rec_ops = {
	.name = "redis",
	.init = r_init,
	.fini = r_fini,
	.describe = r_describe,
	.claim_wait = r_claim_wait,
	.recheck = r_recheck,
	.read = rr_read,
	.cas = rr_cas,
};
