// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in ZooKeeper (3.5 and later; Debian's 3.8),
 * through the C client's multithreaded library (libzookeeper_mt).
 *
 * Two designs live here while the agent moves (issue 40): 1.4.0's key,
 * mark and session (ag_zookeeper_ops, this comment), and the record
 * design's backend (ag_zk_rec_ops: its layout above seen_of(), at the
 * end), which share the session (zk_ready(): the handle, its reply
 * relay, ROOT) and the one wait (call_wait()).
 *
 * The session is the lease.  The pair's key is the ephemeral znode
 * ROOT/PREFIX:CLUSTER:worker:DC:W, created by this run's session; the
 * ensemble deletes it when the session ends (closed, or expired: not
 * heard from for the session timeout).  The pair's mark is the persistent
 * znode ROOT/PREFIX:CLUSTER:mark:DC:W beside it, its data "MARK OWNER" (20
 * digits, then the owner of the run that claimed the pair or raised the
 * mark last; --init-store writes the digits alone); its data version is
 * the pair's fencing token (G4).  ROOT (zookeeper-root) is created if
 * absent; a chroot is the C client's own (zookeeper-hosts
 * "h1:2181,h2:2181/chroot").
 *
 *   claim:   sync; get(mark); exists(key)      (one pipeline)
 *            multi(create(key, owner, EPHEMERAL),
 *                  setData(mark, MARK OWNER, the version read))
 *   renew:   sync; [get(mark);] exists(key): its ephemeralOwner is our
 *            session id, the mark ours or nobody's
 *            [raise: multi(check(key, version), setData(mark, RAISE OWNER,
 *             the version our claim wrote, our last raise wrote, or our
 *             last proof read)), sent once; refused on the mark: the
 *             proof again, the mark as read answered to the engine]
 *   readopt: after a reconnection with the same session: renew's proof,
 *            and the mark raised again to what this run raised it to
 *            when it is lower (missing, invalid, lowered)
 *   give_back: exists(key) ours: delete(key, its version); at the end the
 *            session is closed (the ensemble deletes whatever else is ours)
 *
 * G1: the create fails when the key exists, whoever's it is.
 *
 * G2: the ensemble's leader expires a session it has not heard from for
 * the session timeout, which is the negotiated one, never below ttl-ms
 * (the agent refuses a lower one: see timeout_ok()).  Each of our requests
 * reaches a server after *sent, read before the pipeline's first request
 * went out, and counts there as the session's sign of life; a follower
 * hands its sessions' signs to the leader at its next ping (every half
 * tickTime).  So the leader does not expire the session before *sent +
 * timeout - (tickTime / 2 + the servers' network delay): the margin
 * covers that (margin-ms >= tickTime; docs/deployment-zookeeper.md).  A
 * leader change gives every session a full timeout again.  The library's
 * own pings are not counted: they are invisible here.
 *
 * G3: a follower answers reads from its own copy, which may lag the
 * leader (one cut off from the leader answers until it notices, up to
 * syncLimit ticks later).  So every proof starts with a sync: the server
 * catches up with the leader before it answers the exists that follows
 * (one session's requests are answered in order), and the leader checks
 * that the session lives when it handles the sync.  The proof says: the
 * key was this session's at an instant after *sent.  The owner is the
 * node's ephemeralOwner, the session id, not a string: a key deleted (an
 * operator) and created again by another agent is another session's.
 * Whoever takes the pair after a deletion or an expiry after that instant
 * serves settle-ms (one TTL) later, after this holder's validity (*sent +
 * ttl - margin) has ended.
 *
 * The connection: the library's watcher runs on its own thread.  A
 * connection lost while a lease is held (ZOO_CONNECTING_STATE after
 * ZOO_CONNECTED_STATE: ZooKeeper's "Disconnected") fences the device at
 * once (ag_store_lost()); the lease is taken back (readopt) only after
 * the library reconnected with the same session and the key is still
 * this session's.  An expired session (ZOO_EXPIRED_SESSION_STATE) has
 * lost its key: the handle is closed and a new session claims again.
 *
 * G4: the mark node's data version is the pair's fencing token.  Every
 * claim writes the mark (its value as read, our owner) at the version it
 * read, in the multi that creates the key, so a takeover always changes
 * the version.  A holder raises the mark only by a setData at a version
 * it knows: its claim's write, its own last raise's, or one read in a
 * pipeline whose exists proved the key ours (after a sync: the get comes
 * first, so a claim by anyone else before that read shows as their key,
 * and one after it changes the version).  So a raise of an old holder
 * whose key was deleted (or expired) and the pair claimed by another
 * fails (ZBADVERSION) whenever it reaches the ensemble: the key's own
 * check cannot tell, a key created again has version 0 as well.  A new
 * holder raises the mark before it serves (agent.c, serve()), its floor
 * the value read + 1: above every ceiling given before its claim, and
 * every ceiling after it is a raise of its own or of a later holder.  The
 * raise is one multi, sent once; the multi also checks the key at the
 * version seen (a raise after the key's deletion fails).  Refused on the
 * mark, the proof is made again and the mark read: a mark whose data names
 * another owner is never overwritten (the pair is lost: event=mark_taken);
 * one that names ours (a raise of ours abandoned at its deadline that
 * landed) or nobody (--init-store's, an operator's, a restore's: lowered)
 * is answered to the engine as read, at its version, and the engine
 * raises it again (event=mark_raise_again, event=mark_lowered) or fences.
 * A re-adoption raises a lowered, missing or invalid mark again itself
 * before the pair is taken back.
 *
 * A pair's nodes that refuse us (ZNOAUTH: their ACL) refuse that pair
 * only: a claim answers TRY_REFUSED, a renewal or a re-adoption gives the
 * pair up (its session with its key); only the root's refusal or a failed
 * authentication is fatal.
 *
 * G5: ZooKeeper acknowledges a write once a quorum has it in its
 * transaction log, fsynced (forceSync=yes, the default; do not turn it
 * off).
 *
 * Every call ends by its deadline: the library's requests are asynchronous;
 * their completions write an eventfd that the main thread waits on with
 * ag_wait(), the engine's one wait (its deadline and stop checks are the
 * only ones: call_wait()); a request abandoned at its deadline is
 * answered to nobody.  The library's threads run with every signal
 * blocked, so the agent's signals (the watchdog's among them) reach the
 * main thread only.
 */
#define _GNU_SOURCE
#include "agent.h"

#ifdef AG_NO_ZOOKEEPER
/* A build without libzookeeper_mt. */
static int z_init(struct agent *a)
{
	(void)a;
	logm(AG_ERR, "backend zookeeper: this snowflake-agent was built without it (libzookeeper-mt-dev)");
	return AG_EXIT_USAGE;
}

const struct store_ops ag_zookeeper_ops = { .name = "zookeeper", .init = z_init };
const struct rec_ops ag_zk_rec_ops = { .name = "zookeeper", .init = z_init };
#else
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "store_parse.h"
#include "zk_bound.h"

#define ZDATA_MAX	512	/* a mark's data: 20 digits, a space, the owner; a record's */

/*
 * The record design (ag_zk_rec_ops, at the end of this file): a pair's
 * node as this handle last read or wrote it, the version the engine was
 * given (mzxid) with the data version a compare must name.
 */
#define ZREC_SLOTS	64
_Static_assert(ZDATA_MAX >= AG_REC_MAX, "a call's data holds a record's text");
struct zrec_seen {
	bool used, ephemeral;
	uint32_t dc, w;
	uint64_t mzxid;
	int32_t version;
};

/*
 * The library reads every reply into a buffer of the size its length
 * prefix says, with no limit of its own: the agent hands it the servers'
 * replies through a relay that cuts a connection at a prefix above
 * ZKB_REPLY_MAX (zk_bound.c), in the static agent as in the shared one.
 */

/*
 * Guards what the library's threads write (the session's state, the
 * calls' results) and the calls' reference counts.
 */
static pthread_mutex_t zk_mu = PTHREAD_MUTEX_INITIALIZER;

struct zstore {
	zhandle_t *zh;
	struct zkb *relay;		/* the reply bound, the handle's (zk_bound.c) */
	int evfd;			/* a completion or a state change: wakes the waiter */
	const struct ACL_vector *acl;	/* of the nodes we create */

	/* Written by the library's threads, under zk_mu. */
	int state;			/* the session's last state */
	int64_t session;		/* its id, once connected */
	bool expired, auth_failed;
	bool holding;			/* a lease is held: a lost connection fences */

	/* The main thread's. */
	bool root_ok;			/* ROOT exists (checked by this handle) */
	bool drop;			/* close the session before the next claim */
	int session_ms;			/* the session's timeout, once connected */
	int64_t unconnected_since;	/* boot_ns() this handle was first seen not connected */
	/*
	 * Protocol state, not an orphan: which key this handle's session
	 * created (a committed create, or our own key found at a claim),
	 * and that session's id, the ephemeralOwner every proof compares
	 * (G3).  It is never set on a claim whose outcome is unknown: that
	 * one is the engine's (TRY_UNKNOWN, give_back()).  One key per
	 * session: the library's pings keep every ephemeral of a live
	 * session alive, so a second key would be held for as long as the
	 * agent runs, renewed by nobody; z_claim() answers TRY_HELD for any
	 * other pair while this is set.
	 */
	bool mine;
	uint32_t mine_dc, mine_w;
	int64_t mine_session;
	int32_t key_version;		/* of our key, as last seen */
	/*
	 * Of the mark: our claim's write, our last raise's, or a read made
	 * with a proof of our key whose data is ours or nobody's (G4).
	 */
	int32_t mark_version;
	bool mark_gone;			/* that read found no mark: the next raise creates it */
	/* The record design (ag_zk_rec_ops): each pair's node as last read or written. */
	struct zrec_seen seen[ZREC_SLOTS];
};

/* One request in flight, shared by the caller and the completion. */
struct zcall {
	int refs;			/* the caller's and the completion's; under zk_mu */
	bool done;			/* under zk_mu */
	bool abandoned;			/* the caller's own: its deadline or a stop came first */
	int rc;
	struct zstore *z;
	struct Stat stat;		/* exists, get; the multi's setData */
	int len;
	bool too_long;			/* the data was longer than ZDATA_MAX - 1: invalid */
	char data[ZDATA_MAX];
	zoo_op_result_t res[2];
	char created[16];		/* the multi's create writes its path here (unused) */
};

static struct zstore *Z(const struct agent *a)
{
	return a->store;
}

/*
 * The handle's session id (0 before its first connection).  A handle
 * keeps one session for life: the library reconnects with it, and an
 * expired one ends the handle (zk_connect() makes a new one).
 */
static int64_t session_of(struct zstore *z)
{
	int64_t s;

	pthread_mutex_lock(&zk_mu);
	s = z->session;
	pthread_mutex_unlock(&zk_mu);
	return s;
}

static void wake(struct zstore *z)
{
	uint64_t one = 1;

	(void)!write(z->evfd, &one, sizeof(one));
}

/* Drop one reference (zk_mu held); the last frees. */
static void call_put_locked(struct zcall *c)
{
	if (--c->refs == 0)
		free(c);
}

static void call_put(struct zcall *c)
{
	pthread_mutex_lock(&zk_mu);
	call_put_locked(c);
	pthread_mutex_unlock(&zk_mu);
}

static void call_done(struct zcall *c, int rc, const struct Stat *st, const char *v, int len)
{
	struct zstore *z = c->z;

	pthread_mutex_lock(&zk_mu);
	c->rc = rc;
	if (st)
		c->stat = *st;
	if (v && len > 0) {
		c->too_long = len > ZDATA_MAX - 1;
		c->len = len < ZDATA_MAX - 1 ? len : ZDATA_MAX - 1;
		memcpy(c->data, v, (size_t)c->len);
	}
	c->data[c->len] = '\0';
	c->done = true;
	call_put_locked(c);
	pthread_mutex_unlock(&zk_mu);
	wake(z);
}

/* The library's completions (its completion thread, or zookeeper_close()). */
static void cb_void(int rc, const void *data)
{
	call_done((struct zcall *)data, rc, NULL, NULL, 0);
}

static void cb_string(int rc, const char *value, const void *data)
{
	(void)value;
	call_done((struct zcall *)data, rc, NULL, NULL, 0);
}

static void cb_stat(int rc, const struct Stat *stat, const void *data)
{
	call_done((struct zcall *)data, rc, rc == ZOK ? stat : NULL, NULL, 0);
}

static void cb_string_stat(int rc, const char *value, const struct Stat *stat, const void *data)
{
	(void)value;
	call_done((struct zcall *)data, rc, rc == ZOK ? stat : NULL, NULL, 0);
}

static void cb_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
	call_done((struct zcall *)data, rc, rc == ZOK ? stat : NULL, value, len);
}

static struct zcall *call_new(struct zstore *z)
{
	struct zcall *c = calloc(1, sizeof(*c));

	if (c) {
		c->refs = 2;
		c->z = z;
	}
	return c;
}

/*
 * A call holds two references, the caller's (call_put() once it has read
 * the results) and the completion's.  After zoo_a*(): a request the
 * library refused gets no completion.
 */
static void call_started(struct zcall *c, int ret)
{
	if (ret == ZOK)
		return;
	pthread_mutex_lock(&zk_mu);
	c->rc = ret;
	c->done = true;
	c->refs--;
	pthread_mutex_unlock(&zk_mu);
}

/*
 * The one wait of this backend: ag_wait() (agent.c) on the eventfd that
 * the library's threads write after every completion and every state
 * change (wake()), then the eventfd drained.  The deadline and the stop
 * are asked there only; a caller loops on what it waits for (a call done,
 * the session connected), which it reads under zk_mu after every wake:
 * a completion sets its result before it writes the eventfd, so one that
 * comes between the caller's look and its wait leaves the eventfd
 * readable, and none is missed.  ag_wait()'s answer: >0 woken, 0 @end
 * passed, -1 a stop signal or poll() failed.
 */
static int ev_wait(struct zstore *z, int64_t end)
{
	struct pollfd p = { .fd = z->evfd, .events = POLLIN };
	uint64_t n;
	int r = ag_wait(&p, 1, end);

	if (r > 0)
		(void)!read(z->evfd, &n, sizeof(n));
	return r;
}

/*
 * Wait for @c until @deadline (boottime ns): its result code, or
 * ZOPERATIONTIMEOUT with c->abandoned set when the deadline or a stop
 * signal came first.  An abandoned call is safe to leave: the completion
 * holds its own reference (call_new(): 2, the caller's and the
 * completion's; call_started(): 1 when the library refused it, so no
 * completion comes), the caller drops its own with call_put() and reads
 * no result of it, and whichever of the two comes last frees it, under
 * zk_mu.  So a completion that comes after the caller gave up (even
 * from zookeeper_close(), which completes every pending call with
 * ZCLOSING) writes into memory still allocated, and wakes an eventfd
 * that lives as long as the store (z_fini() closes the handle first).
 */
static int call_wait(struct zstore *z, struct zcall *c, int64_t deadline)
{
	for (;;) {
		int rc = 0;
		bool done;

		pthread_mutex_lock(&zk_mu);
		done = c->done;
		if (done)
			rc = c->rc;
		pthread_mutex_unlock(&zk_mu);
		if (done)
			return rc;
		if (ev_wait(z, deadline) <= 0) {
			c->abandoned = true;
			return ZOPERATIONTIMEOUT;
		}
	}
}

/* The deadline of a call: @deadline, or zookeeper-timeout-ms from now. */
static int64_t dl_of(const struct agent *a, int64_t deadline)
{
	return deadline ? deadline : boot_ns() + (int64_t)a->c->zk_timeout_ms * NS_PER_MS;
}

static void path_of(const struct agent *a, bool mark, uint32_t dc, uint32_t w, char *buf,
		    size_t len)
{
	const char *root = a->c->zk_root;
	char key[512];

	if (mark)
		mark_key_of(a, dc, w, key, sizeof(key));
	else
		key_of(a, dc, w, key, sizeof(key));
	snprintf(buf, len, "%s/%s", strcmp(root, "/") ? root : "", key);
}

/*
 * A mark's data as read by @m (a finished get) for pair (@dc, @w), "MARK
 * OWNER" or "MARK", strictly (ag_zk_mark_data()): AG_VAL_OK with *@mark
 * and @owner ("" when there is none, else exactly as stored), or
 * AG_VAL_INVALID, logged as event=mark_invalid with @action (NULL: not
 * logged).  Data longer than ZDATA_MAX - 1 bytes is invalid.
 */
static int mark_parse(const struct agent *a, const struct zcall *m, uint32_t dc, uint32_t w,
		      uint64_t *mark, char *owner, size_t owner_len, const char *action)
{
	const char *o;
	size_t olen;

	if (!m->too_long && m->len > 0 &&
	    ag_zk_mark_data(m->data, (size_t)m->len, a->mark_max_ms, mark, &o, &olen) == AG_VAL_OK &&
	    olen < owner_len) {
		if (olen)
			memcpy(owner, o, olen);
		owner[olen] = '\0';
		return AG_VAL_OK;
	}
	if (action)
		ag_mark_invalid(a, dc, w, m->data, m->len > 0 ? (size_t)m->len : 0, action);
	return AG_VAL_INVALID;
}

/* ---------------------------------------------------------------- */
/* The session                                                       */
/* ---------------------------------------------------------------- */

static const char *state_name(int s)
{
	if (s == ZOO_CONNECTED_STATE)
		return "connected";
	if (s == ZOO_CONNECTING_STATE)
		return "connecting";
	if (s == ZOO_ASSOCIATING_STATE)
		return "associating";
	if (s == ZOO_EXPIRED_SESSION_STATE)
		return "expired";
	if (s == ZOO_AUTH_FAILED_STATE)
		return "auth-failed";
	if (s == ZOO_READONLY_STATE)
		return "read-only";	/* never asked for: not a connection */
	return "closed";
}

/*
 * The library's watcher, on its completion thread: the session's state.
 * Disconnected, expired or refused while a lease is held: the device is
 * fenced now (ag_store_lost()).
 */
static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zstore *z = ctx;
	bool lost = false;
	int64_t id = 0;

	(void)path;
	if (type != ZOO_SESSION_EVENT)
		return;
	if (state == ZOO_CONNECTED_STATE)
		id = zoo_client_id(zh)->client_id;
	pthread_mutex_lock(&zk_mu);
	if (state == ZOO_CONNECTED_STATE) {
		z->session = id;
	} else {
		lost = z->holding;
		z->holding = false;
		if (state == ZOO_EXPIRED_SESSION_STATE)
			z->expired = true;
		if (state == ZOO_AUTH_FAILED_STATE)
			z->auth_failed = true;
	}
	z->state = state;
	pthread_mutex_unlock(&zk_mu);
	if (lost)
		ag_store_lost();
	if (state == ZOO_CONNECTED_STATE)
		logm(AG_DEBUG, "event=zookeeper_connected session=0x%" PRIx64, id);
	else
		logm(lost ? AG_WARN : AG_DEBUG, "event=zookeeper_%s%s", state_name(state),
		     lost ? " fenced=1: the lease is dropped until the same session is back with its key" : "");
	wake(z);
}

/* The library's log lines, at debug level (its own level: warnings). */
static void on_log(const char *msg)
{
	size_t n = strlen(msg);

	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		n--;
	logm(AG_DEBUG, "zookeeper: %.*s", (int)n, msg);
}

/* The ensemble does not answer: said once (ag_condition()), until it answers again. */
static void zk_down(struct agent *a, const char *why)
{
	ag_condition(a, AG_COND_STORE_DOWN, AG_WARN, "event=zookeeper_down hosts=%s error=\"%s\"",
		     a->c->zk_hosts, why);
}

/* Close the handle: the session ends (the ensemble deletes our key). */
static void zk_close(struct zstore *z)
{
	if (!z->zh)
		return;
	zookeeper_close(z->zh);
	z->zh = NULL;
	zkb_stop(z->relay);
	z->relay = NULL;
	pthread_mutex_lock(&zk_mu);
	z->state = 0;
	z->session = 0;
	z->expired = false;
	z->auth_failed = false;
	z->holding = false;
	pthread_mutex_unlock(&zk_mu);
	z->mine = false;
	z->root_ok = false;
	z->session_ms = 0;
	z->unconnected_since = 0;
}

/*
 * A result that means the configuration can never work: a->fatal set.
 * ZNOAUTH: the root's ACL refuses us (a wrong or missing password); one
 * pair's nodes that refuse us are that pair's matter (TRY_REFUSED,
 * node_refused()), never given here.
 */
static bool zk_fatal(struct agent *a, int rc, const char *what)
{
	if (rc != ZNOAUTH && rc != ZAUTHFAILED)
		return false;
	logm(AG_ERR, "event=zookeeper_auth_failed %s: %s: the nodes' ACL refuses this client (zookeeper-user, zookeeper-password)",
	     what, zerror(rc));
	a->fatal = AG_EXIT_AUTH;
	return true;
}

/* A call lost (no answer, the connection or the session gone): not refused. */
static bool rc_lost(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONMOVED ||
	       rc == ZCLOSING || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE;
}

/* An error of a call: logged; an expired session noted. */
static void zk_error(struct agent *a, int rc, const char *what)
{
	struct zstore *z = Z(a);

	if (zk_fatal(a, rc, what))
		return;
	if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE) {
		pthread_mutex_lock(&zk_mu);
		z->expired = true;
		pthread_mutex_unlock(&zk_mu);
	}
	if (rc_lost(rc)) {
		char why[128];

		snprintf(why, sizeof(why), "%s: %s", what, zerror(rc));
		zk_down(a, why);
		return;
	}
	logm(AG_WARN, "zookeeper %s: %s", what, zerror(rc));
}

/*
 * The session's timeout is what the ensemble negotiated, within its
 * minSessionTimeout..maxSessionTimeout: a lower one than ttl-ms would
 * expire the key before the agent's validity ends.  false (a->fatal set)
 * when it is lower.
 */
static bool timeout_ok(struct agent *a)
{
	struct zstore *z = Z(a);
	int t = zoo_recv_timeout(z->zh);

	if (t > 0 && (unsigned int)t < a->c->ttl_ms) {
		logm(AG_ERR, "event=zookeeper_timeout_too_short negotiated_ms=%d ttl_ms=%u: the ensemble's maxSessionTimeout is below ttl-ms, so a key could expire before the agent fences; lower ttl-ms or raise maxSessionTimeout (default 20 tickTime)",
		     t, a->c->ttl_ms);
		a->fatal = AG_EXIT_USAGE;
		return false;
	}
	/* Said once per session and timeout (ag_condition()): at debug after. */
	if (t > 0)
		ag_condition(a, AG_COND_SESSION_TIMEOUT,
			     (unsigned int)t > a->c->ttl_ms ? AG_INFO : AG_DEBUG,
			     "event=zookeeper_session session=0x%" PRIx64 " timeout_ms=%d ttl_ms=%u%s",
			     session_of(z), t, a->c->ttl_ms,
			     (unsigned int)t > a->c->ttl_ms ?
			     " (above ttl-ms: a dead holder's pair stays held that long; minSessionTimeout is 2 tickTime)" : "");
	z->session_ms = t;
	return true;
}

/*
 * zookeeper-hosts with every name resolved by @dl (the library would
 * resolve them itself, without a bound): "a:p,b:p[/chroot]" in @out.  0,
 * -EINVAL (not a host:port list: a->fatal set), or -1 (a name that does
 * not resolve now: logged).
 */
static int resolve_hosts(struct agent *a, int64_t dl, char *out, size_t len)
{
	char list[1024], *chroot, *tok, *save = NULL, addr[256], err[512];
	size_t n = 0;

	if (snprintf(list, sizeof(list), "%s", a->c->zk_hosts) >= (int)sizeof(list))
		goto bad;
	chroot = strchr(list, '/');
	if (chroot)
		*chroot = '\0';
	out[0] = '\0';
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *port = strrchr(tok, ':'), *end;
		unsigned long p;
		int w;

		if (!port || port == tok)
			goto bad;
		*port++ = '\0';
		p = strtoul(port, &end, 10);
		if (!*port || *end || !p || p > 65535)
			goto bad;
		if (tok[0] == '[' && tok[strlen(tok) - 1] == ']') {
			tok[strlen(tok) - 1] = '\0';
			tok++;
		}
		if (resolve_bounded(tok, ms_left(dl, a->c->zk_timeout_ms), addr, sizeof(addr), err,
				    sizeof(err))) {
			zk_down(a, err);
			return -1;
		}
		/* The library takes the port after the last colon, IPv6 too. */
		w = snprintf(out + n, len - n, "%s%s:%lu", n ? "," : "", addr, p);
		if (w < 0 || (size_t)w >= len - n)
			goto bad;
		n += (size_t)w;
	}
	if (!n)
		goto bad;
	if (chroot && snprintf(out + n, len - n, "/%s", chroot + 1) >= (int)(len - n))
		goto bad;
	return 0;
bad:
	logm(AG_ERR, "zookeeper-hosts %s: not a valid host:port list (with an optional /chroot at its end)",
	     a->c->zk_hosts);
	a->fatal = AG_EXIT_USAGE;
	return -EINVAL;
}

/*
 * A handle not connected for longer than its session's timeout (ttl-ms
 * before its first connection) whose timeout is no longer that session's:
 * the library may never try again by itself.  A connect reply that is not one (a 256 MB length
 * prefix, then junk) is taken by the library as a read-only session with
 * a timeout of 0x78787878 ms: its connection "times out" at once (the
 * library's 2/3 of it overflows an int) and its next try waits a 60th of
 * that, 9 hours.  true: to be closed (logged).
 */
static bool handle_stuck(struct agent *a)
{
	struct zstore *z = Z(a);
	int64_t limit = z->session_ms > (int64_t)a->c->ttl_ms ? z->session_ms : (int64_t)a->c->ttl_ms;
	int state, t;

	pthread_mutex_lock(&zk_mu);
	state = z->state;
	pthread_mutex_unlock(&zk_mu);
	if (state == ZOO_CONNECTED_STATE) {
		z->unconnected_since = 0;
		return false;
	}
	if (!z->unconnected_since) {
		z->unconnected_since = boot_ns();
		return false;
	}
	if (boot_ns() - z->unconnected_since <= limit * NS_PER_MS)
		return false;
	/*
	 * Only a handle whose session timeout is no longer the one it asked
	 * for or was given (a connect reply of junk: 0x78787878 ms, and a
	 * retry delay of hours derived from it).  A handle that still holds
	 * our session's timeout reconnects by itself with that session (an
	 * ensemble restarting, however slowly, keeps the session and its key:
	 * dropping it would only make the pair wait for that key's expiry).
	 */
	t = zoo_recv_timeout(z->zh);
	if (t == (z->session_ms > 0 ? z->session_ms : (int)a->c->ttl_ms))
		return false;
	logm(AG_WARN, "event=zookeeper_session_dropped key=%s: not connected for %lld ms, longer than the session's timeout (%lld ms, state %s), and the handle's timeout is now %d ms: the session is over; a new one",
	     a->key, (long long)((boot_ns() - z->unconnected_since) / NS_PER_MS), (long long)limit,
	     state_name(state), t);
	return true;
}

/*
 * The main loop's heartbeat (zk_bound.c), given at every store step: while
 * this session holds our key, the relay serves it for ttl-ms after the
 * step only, so that a main loop stuck anywhere lets the session expire
 * (the library's pings would keep it, and the pair, alive); none (0) while
 * it holds no key.
 */
static void heartbeat(struct agent *a)
{
	struct zstore *z = Z(a);

	zkb_live(z->relay, z->mine ? boot_ns() + (int64_t)a->c->ttl_ms * NS_PER_MS : 0);
}

/*
 * A session to work with, connected by @deadline (0: within
 * zookeeper-timeout-ms): a new one when there is none or the last one
 * expired.  false when not connected in time (or a->fatal).
 */
static bool zk_connect(struct agent *a, int64_t deadline)
{
	struct zstore *z = Z(a);
	int64_t dl = dl_of(a, deadline);
	bool expired, auth_failed;
	int state;

	if (a->fatal)
		return false;
	pthread_mutex_lock(&zk_mu);
	expired = z->expired;
	auth_failed = z->auth_failed;
	pthread_mutex_unlock(&zk_mu);
	if (auth_failed) {
		zk_fatal(a, ZAUTHFAILED, "session");
		return false;
	}
	if (z->zh && expired) {
		logm(AG_WARN, "event=zookeeper_session_expired session=0x%" PRIx64 ": a new session claims again",
		     z->session);
		zk_close(z);
	}
	if (z->zh && z->drop)
		zk_close(z);
	z->drop = false;
	if (z->zh && handle_stuck(a))
		zk_close(z);
	if (!z->zh) {
		char hosts[2048], relayed[2048], err[256];
		sigset_t all, old;

		if (resolve_hosts(a, dl, hosts, sizeof(hosts)))
			return false;
		z->relay = zkb_start(hosts, relayed, sizeof(relayed), err, sizeof(err));
		if (!z->relay) {
			zk_down(a, err);
			return false;
		}
		/* The library's threads inherit a mask that blocks every signal. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		errno = 0;
		z->zh = zookeeper_init2(relayed, on_event, (int)a->c->ttl_ms, NULL, z,
					ZOO_NO_LOG_CLIENTENV, on_log);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!z->zh) {
			zkb_stop(z->relay);
			z->relay = NULL;
			if (errno == EINVAL) {
				logm(AG_ERR, "zookeeper-hosts %s: not a valid host:port list (with an optional /chroot at its end)",
				     a->c->zk_hosts);
				a->fatal = AG_EXIT_USAGE;
			} else {
				zk_down(a, strerror(errno ? errno : ENOMEM));
			}
			return false;
		}
		if (a->c->zk_user) {
			char cred[512];
			int len = snprintf(cred, sizeof(cred), "%s:%s", a->c->zk_user, a->c->zk_password);

			/* Digest: sent at every (re)connection, before any request. */
			if (len >= (int)sizeof(cred) ||
			    zoo_add_auth(z->zh, "digest", cred, len, NULL, NULL) != ZOK) {
				logm(AG_ERR, "zookeeper: cannot add the digest authentication");
				a->fatal = AG_EXIT_USAGE;
				return false;
			}
		}
	}
	heartbeat(a);
	/* The library connects by itself: woken at every state change (ev_wait()). */
	for (;;) {
		int r;

		pthread_mutex_lock(&zk_mu);
		state = z->state;
		expired = z->expired;
		pthread_mutex_unlock(&zk_mu);
		if (state == ZOO_CONNECTED_STATE)
			break;
		if (expired)
			return false;	/* the next call starts a new session */
		r = ev_wait(z, dl);
		if (r == 0)
			zk_down(a, "not connected");
		if (r <= 0)
			return false;
	}
	if (!timeout_ok(a))
		return false;
	/* Said (at info) only when it follows event=zookeeper_down, as etcd's. */
	ag_condition_over(a, AG_COND_STORE_DOWN, "event=zookeeper_up hosts=%s session=0x%" PRIx64,
			  a->c->zk_hosts, session_of(z));
	return true;
}

static void set_holding(struct zstore *z, bool on)
{
	pthread_mutex_lock(&zk_mu);
	z->holding = on;
	pthread_mutex_unlock(&zk_mu);
}

/* create(@path) with @data: ZOK, ZNODEEXISTS, or an error. */
static int create_node(struct agent *a, int64_t deadline, const char *path, const char *data,
		       int flags)
{
	struct zstore *z = Z(a);
	struct zcall *c = call_new(z);
	int rc;

	if (!c)
		return ZSYSTEMERROR;
	call_started(c, zoo_acreate(z->zh, path, data, data ? (int)strlen(data) : -1, z->acl,
				    flags, cb_string, c));
	rc = call_wait(z, c, dl_of(a, deadline));
	call_put(c);
	return rc;
}

/*
 * ROOT and its parents, created where absent (once per session).  A chroot
 * that does not exist shows as ZNONODE on the first component: fatal.
 */
static bool root_ready(struct agent *a, int64_t deadline)
{
	struct zstore *z = Z(a);
	char path[512], *s;
	struct zcall *c;
	int rc;

	if (z->root_ok)
		return true;
	if (!strcmp(a->c->zk_root, "/")) {
		z->root_ok = true;
		return true;
	}
	snprintf(path, sizeof(path), "%s", a->c->zk_root);
	for (s = path + 1;; s++) {
		bool last = !*s;

		if (*s != '/' && !last)
			continue;
		*s = '\0';
		rc = create_node(a, deadline, path, NULL, ZOO_PERSISTENT);
		if (rc != ZOK && rc != ZNODEEXISTS) {
			if (rc == ZNONODE) {
				logm(AG_ERR, "event=zookeeper_no_chroot hosts=%s: creating %s: %s: the chroot named in zookeeper-hosts does not exist; create it first",
				     a->c->zk_hosts, path, zerror(rc));
				a->fatal = AG_EXIT_USAGE;
			} else {
				zk_error(a, rc, "creating zookeeper-root");
			}
			return false;
		}
		if (last)
			break;
		*s = '/';
	}
	/*
	 * The root must be readable by this client: one that refuses it
	 * (made by another digest user: a wrong or missing password) is
	 * fatal (exit 4), while a pair whose nodes refuse it is that pair's
	 * matter (z_claim(): TRY_REFUSED).
	 */
	c = call_new(z);
	if (!c)
		return false;
	call_started(c, zoo_aget(z->zh, a->c->zk_root, 0, cb_data, c));
	rc = call_wait(z, c, dl_of(a, deadline));
	call_put(c);
	if (rc != ZOK) {
		zk_error(a, rc, "reading zookeeper-root");
		return false;
	}
	z->root_ok = true;
	return true;
}

/* Connected, with ROOT. */
static bool zk_ready(struct agent *a, int64_t deadline)
{
	return zk_connect(a, deadline) && root_ready(a, deadline);
}

/*
 * The session is given up: closed before the next claim (after the loop
 * has fenced: closing may wait for the socket), so that the ensemble
 * deletes a key of ours that may still exist (the only way to delete
 * exactly our own).  Nothing is claimed or renewed on it meanwhile.  Not
 * an undo of a claim whose outcome is unknown (that is the engine's,
 * give_back()): only a key this run held and lost (renew_key(),
 * z_readopt(): the key or the mark changed under it, or the pair's nodes
 * refused us), whose ephemeral the library's pings would otherwise keep
 * alive.
 */
static void zk_drop_session(struct agent *a, const char *why)
{
	struct zstore *z = Z(a);

	logm(AG_WARN, "event=zookeeper_session_dropped key=%s: %s", a->key, why);
	z->drop = true;
	z->mine = false;
	set_holding(z, false);
}

/* ---------------------------------------------------------------- */
/* The store's calls                                                 */
/* ---------------------------------------------------------------- */

static int z_init(struct agent *a)
{
	struct zstore *z = calloc(1, sizeof(*z));

	if (!z) {
		logm(AG_ERR, "out of memory");
		return AG_EXIT_RUNTIME;
	}
	z->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (z->evfd < 0) {
		logm(AG_ERR, "eventfd: %s", strerror(errno));
		free(z);
		return AG_EXIT_RUNTIME;
	}
	z->acl = a->c->zk_user ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
	a->store = z;
	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
	return 0;
}

/* The handle closed on a thread of its own (z_fini()): done writes @fd. */
struct closer {
	zhandle_t *zh;
	struct zkb *relay;
	int fd;
};

static void *closer_run(void *arg)
{
	struct closer *k = arg;
	uint64_t one = 1;

	zookeeper_close(k->zh);
	zkb_stop(k->relay);
	(void)!write(k->fd, &one, sizeof(one));
	return NULL;
}

/*
 * The agent exits: the handle closed (the session ends, the ensemble
 * deletes its ephemerals) by the stop's bound (ag_stop_exit_by(), issue
 * 40 D9).  zookeeper_close() waits up to 1.5 s for the ensemble's reply
 * to its close, and longer to send it: it runs on a thread of its own,
 * waited for until the bound; one that ensemble has not answered by then
 * is left (the process exits): the session, and its key if any, expire
 * by themselves after the session's timeout (said).  No stop signal (a
 * fatal error): waited for as before.
 */
static void z_fini(struct agent *a)
{
	struct zstore *z = Z(a);
	int64_t by = ag_stop_exit_by(), left;
	struct closer *k;
	struct pollfd p = { .events = POLLIN };
	sigset_t all, old;
	pthread_t t;
	int r = 1;

	if (!z)
		return;
	if (!by || !z->zh) {
		zk_close(z);
		close(z->evfd);
		free(z);
		a->store = NULL;
		return;
	}
	/* The thread's own (freed by nobody when it is left running). */
	k = calloc(1, sizeof(*k));
	if (k) {
		k->zh = z->zh;
		k->relay = z->relay;
		k->fd = eventfd(0, EFD_CLOEXEC);
	}
	/* The thread with every signal blocked: the agent's are the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!k || k->fd < 0 || pthread_create(&t, NULL, closer_run, k)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (k && k->fd >= 0)
			close(k->fd);
		free(k);
		logm(AG_WARN, "event=zookeeper_not_closed session=0x%" PRIx64 " timeout_ms=%d: no thread to close it: the session and its key, if any, expire by themselves after its timeout",
		     session_of(z), z->session_ms);
		return;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p.fd = k->fd;
	left = (by - boot_ns()) / NS_PER_MS;
	if (left > 0)
		do
			r = poll(&p, 1, (int)left);
		while (r < 0 && errno == EINTR && (left = (by - boot_ns()) / NS_PER_MS) > 0);
	if (left <= 0 || r <= 0) {
		/* Left to the thread: it may still use z; the process exits. */
		logm(AG_WARN, "event=zookeeper_not_closed session=0x%" PRIx64 " timeout_ms=%d: the ensemble did not answer the session's close by the stop's bound: the session and its ephemeral key, if any, are not released; they expire by themselves after the session's timeout",
		     session_of(z), z->session_ms);
		return;
	}
	pthread_join(t, NULL);
	close(k->fd);
	free(k);
	z->zh = NULL;
	z->relay = NULL;
	zk_close(z);
	close(z->evfd);
	free(z);
	a->store = NULL;
}

static void z_describe(const struct agent *a, char *buf, size_t len)
{
	snprintf(buf, len, "zookeeper=%s root=%s", a->c->zk_hosts, a->c->zk_root);
}

static int64_t z_claim_wait(struct agent *a)
{
	(void)a;
	return 0;	/* a quorum keeps every write in its fsynced log */
}

static int prove(struct agent *a, int64_t deadline, uint32_t dc, uint32_t w, int64_t *sent,
		 struct zcall **kc, struct zcall **mc);

/*
 * Create the mark of (@dc, @w) at @value where it is missing; replace it
 * where it is invalid and @replace_invalid (setData at the version read:
 * only the very data found invalid).  INIT_*, or -1 failed.
 *
 * --init-store is an operator's command, often run just after the
 * ensemble was started: a server still starting refuses connections or
 * closes them, and a JVM just started can take seconds to open the first
 * session.  So the session is waited for up to INIT_WAIT_MS (or
 * zookeeper-timeout-ms when that is longer): the library connects again
 * by itself meanwhile, and zk_connect() waits for it (ev_wait()).  Nothing
 * is sent twice: a create or a setData refused because the node changed
 * since it was read (another agent, an operator) fails this pair, counted
 * by the engine (failed=, exit 1: run it again).  A store that has not
 * answered (not connected by then, or a call lost) ends --init-store
 * (a->fatal, exit 1) with the reason, rather than one pair given up and
 * the next ones tried, or each of them waiting as long again.
 */
/*
 * --init-store: a node of the pair refuses this client (ZNOAUTH: its
 * ACL): said with the node, and this pair is refused (INIT_REFUSED,
 * counted failed by the engine, which goes on with the next pair); only
 * the root's refusal (root_ready()) or a failed authentication is fatal.
 */
static int init_refused(uint32_t dc, uint32_t w, const char *path,
			const char *what)
{
	logm(AG_ERR, "event=zookeeper_node_refused datacenter=%u worker=%u node=%s: --init-store %s: %s: the node's ACL refuses this client; this pair is not initialised, the others are",
	     dc, w, path, what, zerror(ZNOAUTH));
	return INIT_REFUSED;
}

#define INIT_WAIT_MS	10000
static int z_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t value,
		       bool replace_invalid)
{
	struct zstore *z = Z(a);
	int64_t wait = a->c->zk_timeout_ms > INIT_WAIT_MS ? a->c->zk_timeout_ms : INIT_WAIT_MS;
	int64_t t0 = boot_ns(), dl = t0 + wait * NS_PER_MS, sent;
	char path[600], v[32], owner[AG_OWNER_MAX + 1];
	struct zcall *k, *m, *c;
	uint64_t cur;
	bool up = zk_ready(a, dl);
	int rc = ZCONNECTIONLOSS;

	if (!up)
		goto failed;
	path_of(a, true, dc, w, path, sizeof(path));
	snprintf(v, sizeof(v), MARK_FMT, (unsigned long long)value);
	rc = create_node(a, dl, path, v, ZOO_PERSISTENT);
	if (rc == ZOK)
		return INIT_CREATED;
	if (rc == ZNODEEXISTS)
		rc = prove(a, dl, dc, w, &sent, &k, &m);
	if (rc == ZNOAUTH)
		return init_refused(dc, w, path, "creating or reading the mark");
	if (rc != ZOK) {
		zk_error(a, rc, "creating a mark");
		goto failed;
	}
	call_put(k);
	if (m->rc != ZOK) {
		logm(AG_WARN, "--init-store: the mark of datacenter=%u worker=%u was deleted while being created: %s",
		     dc, w, zerror(m->rc));
		call_put(m);
		return -1;
	}
	if (!mark_parse(a, m, dc, w, &cur, owner, sizeof(owner), NULL)) {
		call_put(m);
		return INIT_PRESENT;
	}
	if (!replace_invalid) {
		ag_mark_invalid(a, dc, w, m->data, (size_t)m->len, "left");
		call_put(m);
		return INIT_INVALID;
	}
	c = call_new(z);
	if (!c) {
		call_put(m);
		return -1;
	}
	call_started(c, zoo_aset(z->zh, path, v, (int)strlen(v), m->stat.version, cb_stat, c));
	rc = call_wait(z, c, dl);
	call_put(c);
	if (rc == ZOK)
		ag_mark_invalid(a, dc, w, m->data, (size_t)m->len, "replaced");
	call_put(m);
	if (rc == ZOK)
		return INIT_REPLACED;
	if (rc == ZNOAUTH)
		return init_refused(dc, w, path, "replacing an invalid mark");
	zk_error(a, rc, "replacing an invalid mark");
failed:
	/* Refused (an ACL, the node changed): this pair failed; a stop: the engine's. */
	if (a->fatal || ag_stop_pending() || !rc_lost(rc))
		return -1;
	if (!up)
		logm(AG_ERR, "--init-store: ZooKeeper (%s) did not answer within %lld ms (last: not connected); stopped at datacenter=%u worker=%u: the pairs not counted as created or present are not initialised; run it again once the store answers",
		     a->c->zk_hosts, (long long)wait, dc, w);
	else
		logm(AG_ERR, "--init-store: ZooKeeper (%s) lost a call after %lld ms (%s); stopped at datacenter=%u worker=%u: the pairs not counted as created or present are not initialised; run it again once the store answers",
		     a->c->zk_hosts, (long long)((boot_ns() - t0) / NS_PER_MS), zerror(rc), dc, w);
	a->fatal = AG_EXIT_RUNTIME;
	return -1;
}

/*
 * The proof (G3) and, with @mark, the mark's read, one pipeline by
 * @deadline: sync; [get(mark);] exists(key).  *@sent before it.  Results:
 * the exists' code and stat in *@kc, the get's in *@mc (NULL: none).
 * ZOK, or the first failed step's code (a missing node is not a failure).
 */
static int prove(struct agent *a, int64_t deadline, uint32_t dc, uint32_t w, int64_t *sent,
		 struct zcall **kc, struct zcall **mc)
{
	struct zstore *z = Z(a);
	int64_t dl = dl_of(a, deadline);
	char kpath[600], mpath[600];
	struct zcall *s, *k, *m = NULL;
	int rc, krc, mrc = ZOK;

	path_of(a, false, dc, w, kpath, sizeof(kpath));
	path_of(a, true, dc, w, mpath, sizeof(mpath));
	s = call_new(z);
	k = call_new(z);
	if (mc)
		m = call_new(z);
	if (!s || !k || (mc && !m)) {
		free(s);
		free(k);
		free(m);
		return ZSYSTEMERROR;
	}
	*sent = boot_ns();
	call_started(s, zoo_async(z->zh, a->c->zk_root, cb_string, s));
	if (m)
		call_started(m, zoo_aget(z->zh, mpath, 0, cb_data, m));
	call_started(k, zoo_aexists(z->zh, kpath, 0, cb_stat, k));
	rc = call_wait(z, s, dl);
	call_put(s);
	if (m)
		mrc = call_wait(z, m, dl);
	krc = call_wait(z, k, dl);
	if (rc == ZOK && mrc != ZOK && mrc != ZNONODE)
		rc = mrc;
	if (rc == ZOK && krc != ZOK && krc != ZNONODE)
		rc = krc;
	if (rc != ZOK) {
		call_put(k);
		if (m)
			call_put(m);
		return rc;
	}
	*kc = k;
	if (mc)
		*mc = m;
	return ZOK;
}

/* Whose a mark is, as read with a proof of our key (mark_state()). */
enum { MK_OURS, MK_NOBODY, MK_OTHER, MK_INVALID, MK_MISSING };

/*
 * The mark as read by @m (a finished get) for the pair this run holds,
 * with a proof of its key: MK_OURS (valid, its owner this run's: our
 * claim's or our raise's write, one abandoned at its deadline that landed
 * among them), MK_NOBODY (valid, without an owner: --init-store's, or an
 * operator's or a restore's), MK_OTHER (valid, another owner's: never
 * overwritten, G4), MK_INVALID (logged as event=mark_invalid with
 * @action), MK_MISSING.  *@value: the mark (0 unless valid).  Ours or
 * nobody's, its version becomes the one our next raise writes at; invalid
 * too (the raise replaces only the very data read); missing: the next
 * raise creates it.
 */
static int mark_state(struct agent *a, const struct zcall *m, uint64_t *value, const char *action)
{
	struct zstore *z = Z(a);
	char owner[AG_OWNER_MAX + 1];
	int st;

	*value = 0;
	if (m->rc == ZNONODE) {
		z->mark_gone = true;
		return MK_MISSING;
	}
	if (mark_parse(a, m, a->dc, a->w, value, owner, sizeof(owner), action)) {
		*value = 0;
		st = MK_INVALID;
	} else if (!owner[0]) {
		st = MK_NOBODY;
	} else if (!strcmp(owner, a->owner)) {
		st = MK_OURS;
	} else {
		return MK_OTHER;
	}
	z->mark_version = m->stat.version;
	z->mark_gone = false;
	return st;
}

/* The mark names another owner while our key lives: the pair is not ours (G4). */
static void mark_taken(struct agent *a, const char *when)
{
	logm(AG_WARN, "event=mark_taken key=%s: the pair's mark names another owner (%s): the pair is not ours; the mark is left as it is",
	     a->key, when);
	zk_drop_session(a, "the pair's mark names another owner");
}

/*
 * One pair's nodes refuse us (ZNOAUTH: their ACL) while this run holds it:
 * that pair only, never fatal.  The session is given up with its key (one
 * key per session: a key kept alive by the library's pings would hold the
 * pair for nobody); the claims that follow find the pair refused
 * (TRY_REFUSED: the walk moves on).
 */
static void node_refused(struct agent *a, const char *what)
{
	logm(AG_WARN, "event=zookeeper_node_refused datacenter=%u worker=%u: %s: %s on the pair's nodes; the pair is given up",
	     a->dc, a->w, what, zerror(ZNOAUTH));
	zk_drop_session(a, "the pair's nodes refuse this client");
}

/*
 * One claim: the pipeline (sync; get(mark); exists(key)), then one multi
 * (create the key, check the mark at the version read).  Nothing here is
 * sent twice: a multi refused because the mark moved between the read and
 * the create (another agent's step came between) answers TRY_HELD, and the
 * engine's walk moves on (it comes back to the pair at its next walk); a
 * multi without an answer is TRY_UNKNOWN, for the engine to give back.
 */
static int z_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark,
		   uint64_t init_mark)
{
	struct zstore *z = Z(a);
	char kpath[600], mpath[600], owner[AG_OWNER_MAX + 1], iv[32], mv[ZDATA_MAX];
	struct zcall *k, *m, *c;
	zoo_op_t ops[2];
	int rc, ret;
	int64_t session;
	bool bad;

	if (!zk_ready(a, 0))
		return TRY_ERROR;
	/* One key per session (struct zstore): the loop comes to ours (readopt, or here). */
	if (z->mine && (z->mine_dc != dc || z->mine_w != w))
		return TRY_HELD;
	path_of(a, false, dc, w, kpath, sizeof(kpath));
	path_of(a, true, dc, w, mpath, sizeof(mpath));
	if (init_mark) {
		/* A missing mark is created first; an invalid one is replaced by the claim's multi. */
		snprintf(iv, sizeof(iv), MARK_FMT, (unsigned long long)init_mark);
		rc = create_node(a, 0, mpath, iv, ZOO_PERSISTENT);
		if (rc != ZOK && rc != ZNODEEXISTS) {
			zk_error(a, rc, "creating a mark");
			return TRY_ERROR;
		}
	}
	session = session_of(z);
	rc = prove(a, 0, dc, w, sent, &k, &m);
	if (rc == ZNOAUTH) {
		/* This pair's nodes' ACL refuses us: this pair only (the root was ours). */
		logm(AG_WARN, "event=zookeeper_node_refused datacenter=%u worker=%u: %s on the pair's nodes",
		     dc, w, zerror(rc));
		return TRY_REFUSED;
	}
	if (rc != ZOK) {
		zk_error(a, rc, "claim");
		return TRY_ERROR;
	}
	bad = m->rc == ZOK && mark_parse(a, m, dc, w, mark, owner, sizeof(owner), NULL);
	if (k->rc == ZOK) {
		if (!session || k->stat.ephemeralOwner != session) {
			z->mine = false;	/* another session's (ours is gone) */
			ret = TRY_HELD;
		} else if (m->rc != ZOK) {
			ret = TRY_NO_MARK;	/* ours, but no mark to read */
		} else if (bad) {
			ag_mark_invalid(a, dc, w, m->data, (size_t)m->len, "not-served");
			ret = TRY_BAD_MARK;
		} else if (owner[0] && strcmp(owner, a->owner) != 0) {
			/* Our key, the mark another's (G4): not ours; the key goes with the session. */
			logm(AG_WARN, "event=mark_taken datacenter=%u worker=%u: the pair's mark names another owner: not claimed",
			     dc, w);
			z->drop = true;
			z->mine = false;
			ret = TRY_HELD;
		} else {
			/* Our own key, claimed before and not served: ours still. */
			z->mine = true;
			heartbeat(a);
			z->mine_dc = dc;
			z->mine_w = w;
			z->mine_session = session;
			z->key_version = k->stat.version;
			z->mark_version = m->stat.version;
			z->mark_gone = false;
			set_holding(z, true);
			ret = TRY_TAKEN;
		}
		goto out;
	}
	z->mine = false;
	if (m->rc == ZNONODE || (bad && !init_mark)) {
		/* An invalid mark: never served, never a floor (a missing mark's rules). */
		if (bad)
			ag_mark_invalid(a, dc, w, m->data, (size_t)m->len, "not-served");
		ret = bad ? TRY_BAD_MARK : TRY_NO_MARK;
		goto out;
	}
	/* Free, with a mark: create the key while the mark is as read. */
	c = call_new(z);
	if (!c) {
		ret = TRY_ERROR;
		goto out;
	}
	zoo_create_op_init(&ops[0], kpath, a->owner, (int)strlen(a->owner), z->acl,
			   ZOO_EPHEMERAL, c->created, sizeof(c->created));
	/*
	 * The mark written with our owner at the version read, its value
	 * kept (G4: the version is the fencing token, and a takeover changes
	 * it); an invalid mark with @init_mark is replaced so (only the very
	 * data found invalid).
	 */
	snprintf(mv, sizeof(mv), MARK_FMT " %s", (unsigned long long)(bad ? init_mark : *mark),
		 a->owner);
	zoo_set_op_init(&ops[1], mpath, mv, (int)strlen(mv), m->stat.version, &c->stat);
	call_started(c, zoo_amulti(z->zh, 2, ops, c->res, cb_void, c));
	rc = call_wait(z, c, dl_of(a, 0));
	if (rc == ZOK) {
		z->mine = true;
		heartbeat(a);
		z->mine_dc = dc;
		z->mine_w = w;
		z->mine_session = session;
		z->key_version = 0;
		z->mark_version = c->stat.version;
		z->mark_gone = false;
		if (bad) {
			ag_mark_invalid(a, dc, w, m->data, (size_t)m->len, "replaced");
			*mark = init_mark;
		}
		set_holding(z, true);
		ret = TRY_TAKEN;
	} else if (!c->abandoned && (c->res[0].err == ZNODEEXISTS || c->res[1].err == ZBADVERSION ||
				     c->res[1].err == ZNONODE)) {
		/* Taken, or its mark moved, since the read: not committed, busy for this walk. */
		ret = TRY_HELD;
	} else if (!c->abandoned && rc == ZNOAUTH) {
		logm(AG_WARN, "event=zookeeper_node_refused datacenter=%u worker=%u: %s on the pair's nodes",
		     dc, w, zerror(rc));
		ret = TRY_REFUSED;
	} else {
		zk_error(a, rc, "claim (multi)");
		/*
		 * No answer (the connection lost, the deadline): the multi may
		 * have created the key, as an ephemeral of this session.
		 * Unknown: the engine gives it back before its next step
		 * (give_back(), G6).
		 */
		ret = !a->fatal && (c->abandoned || rc_lost(rc)) ? TRY_UNKNOWN : TRY_ERROR;
	}
	call_put(c);
out:
	call_put(k);
	call_put(m);
	return ret;
}

/*
 * Raise the mark to @raise in one multi with a check of our key at its
 * version (G4): setData at the version we know, or create when the last
 * read found the mark gone.  Sent once.  ZOK, or the multi's code with
 * the failed step in *@step (0 the key, 1 the mark; -1 none known).
 */
static int raise_mark(struct agent *a, int64_t deadline, uint64_t raise, int *step)
{
	struct zstore *z = Z(a);
	char kpath[600], mpath[600], v[ZDATA_MAX];
	struct zcall *c = call_new(z);
	bool create = z->mark_gone;
	zoo_op_t ops[2];
	int rc;

	*step = -1;
	if (!c)
		return ZSYSTEMERROR;
	path_of(a, false, a->dc, a->w, kpath, sizeof(kpath));
	path_of(a, true, a->dc, a->w, mpath, sizeof(mpath));
	snprintf(v, sizeof(v), MARK_FMT " %s", (unsigned long long)raise, a->owner);
	zoo_check_op_init(&ops[0], kpath, z->key_version);
	if (create)
		zoo_create_op_init(&ops[1], mpath, v, (int)strlen(v), z->acl, ZOO_PERSISTENT,
				   c->created, sizeof(c->created));
	else
		zoo_set_op_init(&ops[1], mpath, v, (int)strlen(v), z->mark_version, &c->stat);
	call_started(c, zoo_amulti(z->zh, 2, ops, c->res, cb_void, c));
	rc = call_wait(z, c, dl_of(a, deadline));
	if (rc == ZOK) {
		/* create: version 0; setData: the stat the server returned. */
		z->mark_version = create ? 0 : c->stat.version;
		z->mark_gone = false;
	} else if (!c->abandoned) {
		if (c->res[0].err != ZOK && c->res[0].err != ZRUNTIMEINCONSISTENCY)
			*step = 0;
		else if (c->res[1].err != ZOK && c->res[1].err != ZRUNTIMEINCONSISTENCY)
			*step = 1;
	}
	call_put(c);
	return rc;
}

/* Our key gone or another session's: lost (G3). */
static int key_lost(struct agent *a, const struct zcall *k)
{
	struct zstore *z = Z(a);

	logm(AG_WARN, "event=key_lost key=%s: %s", a->key,
	     k->rc != ZOK ? "the key is gone (deleted, or its session expired)" :
			    "the key is another session's now");
	z->mine = false;
	set_holding(z, false);
	return 0;
}

/*
 * Is @k (a finished exists, with *@session the handle's session read
 * before the pipeline) our key?
 */
static bool key_ours(const struct zstore *z, const struct zcall *k, int64_t session)
{
	return k->rc == ZOK && session && k->stat.ephemeralOwner == z->mine_session &&
	       session == z->mine_session;
}

/*
 * Prove the key is ours and, with @raise, raise the mark (see the top of
 * this file).  1 ours (*@held: the mark as the store holds it, read or
 * written), 0 not ours any more, -1 failed.
 */
static int renew_key(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise,
		     uint64_t *held)
{
	struct zstore *z = Z(a);
	struct zcall *k, *m = NULL;
	int64_t session = session_of(z), again;
	uint64_t cur;
	int rc, step, st;

	*held = AG_MARK_UNREAD;
	if (!z->zh || !z->mine || z->drop)
		return 0;
	if (!timeout_ok(a))
		return -1;
	/* Without a raise the mark is read with the proof: the engine checks it (G4). */
	rc = prove(a, deadline, a->dc, a->w, sent, &k, raise ? NULL : &m);
	if (rc == ZNOAUTH) {
		node_refused(a, "renewal");
		return 0;
	}
	if (rc != ZOK) {
		zk_error(a, rc, "renewal");
		/* An expired session (the handle too): the ensemble has deleted the key. */
		return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE ? 0 : -1;
	}
	if (!key_ours(z, k, session)) {
		rc = key_lost(a, k);
		call_put(k);
		if (m)
			call_put(m);
		return rc;
	}
	z->key_version = k->stat.version;
	call_put(k);
	if (m) {
		/* Missing or invalid: 0, below every mark this holder raised. */
		st = mark_state(a, m, &cur, NULL);
		call_put(m);
		if (st == MK_OTHER) {
			mark_taken(a, "read with the renewal");
			return 0;
		}
		*held = cur;
		set_holding(z, true);
		return 1;
	}
	/*
	 * The raise is one compare-and-set on the mark's version (ZooKeeper
	 * has no "at least" write), sent once, never again here.  A raise
	 * without an answer (abandoned, the connection lost) is -1: the
	 * engine renews at its next step, and a raise that landed meanwhile
	 * is found as ours (its owner in the data).  A raise refused on the
	 * mark (a definite answer: nothing written) reads the mark and the key
	 * again, and answers with the mark as read when both are ours (or the
	 * mark nobody's): the engine raises again (event=mark_raise_again,
	 * event=mark_lowered), or fences.  A mark another owner's is never
	 * overwritten.
	 */
	rc = raise_mark(a, deadline, raise, &step);
	if (rc == ZOK) {
		*held = raise;
		set_holding(z, true);
		return 1;
	}
	if (rc == ZNOAUTH) {
		node_refused(a, "raising the mark");
		return 0;
	}
	if (step == 0) {
		/* Our key changed or went between the proof and the multi. */
		zk_drop_session(a, "the key changed while raising the mark");
		return 0;
	}
	if (step != 1 || (rc != ZBADVERSION && rc != ZNONODE && rc != ZNODEEXISTS)) {
		zk_error(a, rc, "raising the mark");
		return -1;
	}
	/* Refused on the mark: read it, and the key, again (*@sent stays the proof's). */
	rc = prove(a, deadline, a->dc, a->w, &again, &k, &m);
	if (rc == ZNOAUTH) {
		node_refused(a, "reading the mark");
		return 0;
	}
	if (rc != ZOK) {
		zk_error(a, rc, "reading the mark");
		return -1;
	}
	if (!key_ours(z, k, session)) {
		rc = key_lost(a, k);
		call_put(k);
		call_put(m);
		return rc;
	}
	z->key_version = k->stat.version;
	call_put(k);
	st = mark_state(a, m, &cur, "replaced");
	call_put(m);
	if (st == MK_OTHER) {
		mark_taken(a, "after a refused raise");
		return 0;
	}
	if (st == MK_MISSING)
		logm(AG_WARN, "event=mark_recreated key=%s mark_ms=%llu: the pair's mark was gone while this host held the pair",
		     a->key, (unsigned long long)raise);
	*held = cur;	/* ours and as high: our abandoned raise landed */
	set_holding(z, true);
	return 1;
}

/*
 * The same session (after a reconnection), the key still its own: ours
 * again, with the mark raised again to what this run raised it to when it
 * is lower (lost, lowered, invalid), as renew() would (G4): never left
 * for the next holder.  A mark another owner's: not ours.
 */
static int z_readopt(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark)
{
	struct zstore *z = Z(a);
	struct zcall *k, *m;
	int64_t session;
	uint64_t cur;
	int rc, st, step;

	if (!z->mine || dc != z->mine_dc || w != z->mine_w)
		return TRY_HELD;
	if (!zk_ready(a, 0))
		return TRY_ERROR;
	session = session_of(z);
	if (!z->mine || session != z->mine_session) {
		z->mine = false;	/* a new session: the old one's key is gone */
		return TRY_HELD;
	}
	rc = prove(a, 0, dc, w, sent, &k, &m);
	if (rc == ZNOAUTH) {
		node_refused(a, "re-adoption");
		return TRY_HELD;
	}
	if (rc != ZOK) {
		zk_error(a, rc, "re-adoption");
		return TRY_ERROR;
	}
	if (!key_ours(z, k, session)) {
		call_put(k);
		call_put(m);
		z->mine = false;
		return TRY_HELD;
	}
	z->key_version = k->stat.version;
	call_put(k);
	st = mark_state(a, m, &cur, "replaced");
	call_put(m);
	if (st == MK_OTHER) {
		mark_taken(a, "at the re-adoption");
		return TRY_HELD;
	}
	*mark = cur;
	if (cur < a->mark_ms) {
		logm(AG_WARN, "event=mark_lowered datacenter=%u worker=%u key=%s store_mark_ms=%llu mark_ms=%llu%s: the store lost the mark this holder raised; raised again at the re-adoption",
		     dc, w, a->key, (unsigned long long)cur, (unsigned long long)a->mark_ms,
		     st == MK_MISSING ? " missing=1" : st == MK_INVALID ? " invalid=1" : "");
		rc = raise_mark(a, 0, a->mark_ms, &step);
		if (rc == ZNOAUTH) {
			node_refused(a, "raising the mark at the re-adoption");
			return TRY_HELD;
		}
		if (step == 0) {
			zk_drop_session(a, "the key changed while raising the mark");
			return TRY_HELD;
		}
		if (rc != ZOK) {
			/* Not raised: not taken back now (the engine asks again). */
			zk_error(a, rc, "raising the mark at the re-adoption");
			return TRY_ERROR;
		}
		*mark = a->mark_ms;
	}
	set_holding(z, true);
	return TRY_TAKEN;
}

static int z_renew(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise_to,
		   uint64_t *mark)
{
	int ret;

	heartbeat(a);
	ret = renew_key(a, deadline, sent, raise_to, mark);

	if (ret != 1)
		*mark = AG_MARK_UNREAD;
	return ret;
}

/*
 * give_back(): pair (@dc, @w)'s key deleted where it is an ephemeral of
 * this session (G6, agent.c), at the version read.  1 deleted, 0 not ours
 * (absent, another session's: a session of ours that ended took its
 * ephemerals with it), -1 no answer.
 */
static int z_give_back(struct agent *a, uint32_t dc, uint32_t w)
{
	struct zstore *z = Z(a);
	char kpath[600];
	struct zcall *k, *c;
	int64_t sent, session;
	int rc;

	if (!zk_ready(a, 0))
		return -1;
	session = session_of(z);
	rc = prove(a, 0, dc, w, &sent, &k, NULL);
	if (rc != ZOK) {
		zk_error(a, rc, "giving back a claim");
		return -1;
	}
	if (k->rc != ZOK || !session || k->stat.ephemeralOwner != session) {
		call_put(k);
		return 0;
	}
	path_of(a, false, dc, w, kpath, sizeof(kpath));
	c = call_new(z);
	if (!c) {
		call_put(k);
		return -1;
	}
	call_started(c, zoo_adelete(z->zh, kpath, k->stat.version, cb_void, c));
	rc = call_wait(z, c, dl_of(a, 0));
	call_put(c);
	call_put(k);
	if (z->mine && z->mine_dc == dc && z->mine_w == w && (rc == ZOK || rc == ZNONODE)) {
		z->mine = false;
		set_holding(z, false);
	}
	if (rc == ZOK)
		return 1;
	if (rc == ZNONODE || rc == ZBADVERSION)
		return 0;
	zk_error(a, rc, "giving back a claim");
	return -1;
}

const struct store_ops ag_zookeeper_ops = {
	.name = "zookeeper",
	.init = z_init,
	.fini = z_fini,
	.describe = z_describe,
	.claim_wait = z_claim_wait,
	.claim = z_claim,
	.readopt = z_readopt,
	.renew = z_renew,
	.give_back = z_give_back,
	.init_mark = z_init_mark,
};
/*
 * The record design (issue 40, docs/lease-record.md): ag_zk_rec_ops, the
 * backend of record.c's engine, on this file's session (zk_ready(): the
 * handle, its relay that bounds replies, ROOT) and its one wait
 * (call_wait(): the engine's ag_wait(), a request abandoned at its
 * deadline answered to nobody).  No loop, resend or deadline of its own.
 *
 * Layout.  Pair (DC, W)'s record is the persistent node at 1.4.0's key
 * name, ROOT/PREFIX:CLUSTER:worker:DC:W (path_of()), its data the record's
 * text (at most AG_REC_MAX - 1 bytes), its ACL the one this file gives
 * every node it creates.  The session is no lease here: a record outlives
 * every session, and nothing of it is ephemeral.
 *
 * The version.  ZooKeeper's data version of a node restarts at 0 when the
 * node is deleted and created again, so it cannot be the engine's
 * version: a delayed write naming it could land on a record its writer
 * never read (ABA).  The engine is given the node's mzxid instead: the
 * zxid of the transaction that last wrote the node (its create or its
 * last setData), which the ensemble hands out in one sequence for the
 * whole store, above every earlier one (a new leader's epoch is the high
 * 32 bits): it never repeats for one record, even across a delete and a
 * create, and it is above 0.  The compare itself can only name a data
 * version (setData's, a multi's check: ZooKeeper has no compare on a
 * zxid), so this handle keeps, per pair, the mzxid it last read or wrote
 * with the data version that came with it (struct zrec_seen), and a cas
 * over version V is a setData at the data version read with V:
 *
 * read:  sync(ROOT); getData(node)      (one pipeline, one deadline)
 *        The sync makes the server catch up with the leader first, so the
 *        read shows every write committed before it (as etcd's Range).
 *        No node: RS_ABSENT.  Else RS_OK, the text and the mzxid; a stat
 *        that is not one (mzxid 0 or below, a negative data version) or
 *        data longer than a record: RS_FAILED (event=store_reply_invalid).
 * cas:   expect 0: create(node, text, PERSISTENT) (NODEEXISTS: RS_MOVED);
 *        else setData(node, text, the data version read with @expect)
 *        (BADVERSION, NONODE: RS_MOVED).  Committed: the new mzxid, which
 *        must be above @expect with the data version one up (0 for a
 *        create), else the reply says nothing sure: RS_UNKNOWN.  A version
 *        this handle never saw for the pair is not sent (RS_FAILED), or
 *        RS_MOVED where it has since seen a later one (mzxids only grow).
 *        The table has ZREC_SLOTS slots, one per pair by a hash, and never
 *        misses for the engine (record.c): a cas names the version of the
 *        read of that pair just before it, or of its own last cas of the
 *        pair it holds (renewals, while it reads no other pair).
 *
 * What is still excluded only by the assumption "no operator deletes a
 * record while agents run" (docs/lease-record.md): agent A reads the
 * record at (mzxid M, data version d); then, before A's setData at d
 * reaches the leader, the node is deleted by hand, created again (by the
 * operator, or by an agent's --init-store or a claim after the
 * quarantine) and written exactly d times more (its data version is d
 * again, its mzxid above M).  A's setData then commits on a record A never
 * read.  Any other delete, create or write in between makes it fail
 * (BADVERSION: the data version is not d; NONODE).  Agents never delete a
 * record, nor do 1.4.0 agents (they delete only their own ephemeral
 * node), so only a delete by hand opens this (contract: rec-contract.sh
 * zookeeper basic, "a stale cas after ... the same data version").
 *
 * 1.4.0's key at that name is an ephemeral node (ephemeralOwner its
 * session), whose data is its owner (never "sf2 "): read as RS_OK with
 * its text, which the engine's parse refuses (event=mark_invalid, never
 * served); an ephemeral node whose data does begin "sf2 " (no agent
 * writes one) is read with "zk-ephemeral=0xSESSION " before it, so that
 * it too is never taken as a record.  No cas ever replaces it: its
 * create answers NODEEXISTS, and a setData over a version read from an
 * ephemeral node is never sent (RS_MOVED): the pair is taken only once the
 * 1.4.0 session ended and its node is gone (a missing mark then,
 * quarantined as today).  Reading it as held by a 1.4.0 agent, and taking
 * its mark node's value over, is step 3 (the rolling upgrade).
 *
 * Errors:
 *  - ZNOAUTH: this record's ACL (or, for a create, its parent's) refuses
 *    this client: RS_REFUSED, this pair only (never fatal here, unlike
 *    zk_fatal(): a failed authentication of the session still is);
 *  - no session by the deadline (no server of the ensemble serves one: no
 *    quorum, none reachable): nothing sent, RS_UNABLE; a stop signal or
 *    a->fatal: RS_FAILED;
 *  - ZNOTREADONLY (a read-only server), ZTHROTTLEDOP (the server shed the
 *    request), QuotaExceeded (-125, a hard quota of ROOT's subtree, 3.7
 *    and later): nothing ran, the store as a whole: RS_UNABLE;
 *  - sent, no readable answer (the connection lost: the relay cut a reply
 *    it would not hand on, or the server went; the deadline; a stop): a
 *    read RS_FAILED, a cas RS_UNKNOWN (the engine reads its nonce back);
 *  - another error: RS_FAILED (said).
 * A record written 2^31 - 1 times (ZooKeeper's data version is an int32:
 * twenty years of renewals every 300 ms) is not written again (RS_FAILED:
 * its data version would wrap, and -1 means "any version" to setData).
 */
/* ZooKeeper 3.7's QuotaExceeded, not in the 3.8 C client's enum. */
#define ZK_QUOTA_EXCEEDED	(-125)

static struct zrec_seen *seen_of(struct zstore *z, uint32_t dc, uint32_t w)
{
	return &z->seen[(dc * 131u + w) % ZREC_SLOTS];
}

static void seen_set(struct zstore *z, uint32_t dc, uint32_t w, const struct Stat *st)
{
	*seen_of(z, dc, w) = (struct zrec_seen){ .used = true, .ephemeral = st->ephemeralOwner != 0,
						 .dc = dc, .w = w, .mzxid = (uint64_t)st->mzxid,
						 .version = st->version };
}

/* Connected, with ROOT, by @dl: RS_OK, or why not (above). */
static int zr_ready(struct agent *a, int64_t dl)
{
	struct zstore *z = Z(a);
	int state;

	if (zk_ready(a, dl))
		return RS_OK;
	if (a->fatal || ag_stop_pending())
		return RS_FAILED;
	pthread_mutex_lock(&zk_mu);
	state = z->state;
	pthread_mutex_unlock(&zk_mu);
	return state == ZOO_CONNECTED_STATE ? RS_FAILED : RS_UNABLE;
}

/* A record request's answer @rc (not ZOK) on @path, as RS_* (above). */
static int zr_error(struct agent *a, int rc, const char *path, bool cas, bool abandoned)
{
	char what[700];

	snprintf(what, sizeof(what), "record %s of %s", cas ? "cas" : "read", path);
	if (!abandoned && rc == ZNOAUTH) {
		logm(AG_WARN, "event=zookeeper_node_refused node=%s: %s: this record's ACL refuses this client; not run",
		     path, zerror(rc));
		return RS_REFUSED;
	}
	if (!abandoned && (rc == ZNOTREADONLY || rc == ZTHROTTLEDOP || rc == ZK_QUOTA_EXCEEDED)) {
		ag_condition(a, AG_COND_STORE_DOWN, AG_WARN,
			     "event=zookeeper_unable node=%s code=%d error=\"%s\": the store cannot run a write now (nothing ran)",
			     path, rc, rc == ZK_QUOTA_EXCEEDED ? "quota exceeded" : zerror(rc));
		return RS_UNABLE;
	}
	zk_error(a, rc, what);
	if (abandoned || rc_lost(rc))
		return cas && !a->fatal ? RS_UNKNOWN : RS_FAILED;
	return RS_FAILED;
}

static int zr_read(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *out)
{
	struct zstore *z = Z(a);
	int64_t dl = dl_of(a, deadline);
	char path[600];
	struct zcall *s, *g;
	int st = zr_ready(a, dl), rc;
	bool abandoned;

	if (st != RS_OK)
		return st;
	path_of(a, false, dc, w, path, sizeof(path));
	s = call_new(z);
	g = call_new(z);
	if (!s || !g) {
		free(s);
		free(g);
		return RS_FAILED;
	}
	call_started(s, zoo_async(z->zh, a->c->zk_root, cb_string, s));
	call_started(g, zoo_aget(z->zh, path, 0, cb_data, g));
	rc = call_wait(z, s, dl);
	abandoned = s->abandoned;
	call_put(s);
	if (rc == ZOK) {
		rc = call_wait(z, g, dl);
		abandoned = g->abandoned;
	}
	if (rc == ZNONODE && !abandoned) {
		st = RS_ABSENT;
	} else if (rc != ZOK) {
		st = zr_error(a, rc, path, false, abandoned);
	} else if (g->too_long || ag_zk_rec_stat(g->stat.mzxid, g->stat.version,
						 g->stat.ephemeralOwner, false, 0, 0)) {
		if (g->too_long)
			ag_reply_invalid(a, "zookeeper record data (longer than a record)", g->data,
					 (size_t)g->len);
		else
			ag_reply_invalid(a, "zookeeper record stat (mzxid, data version)", path,
					 strlen(path));
		st = RS_FAILED;
	} else {
		out->len = (size_t)g->len;
		memcpy(out->text, g->data, out->len);
		out->text[out->len] = '\0';
		if (g->stat.ephemeralOwner) {
			/* A record's text on an ephemeral node: no agent writes one; never a record. */
			char tag[40];

			snprintf(tag, sizeof(tag), "zk-ephemeral=0x%" PRIx64 " ",
				 (uint64_t)g->stat.ephemeralOwner);
			ag_rec_tag(out->text, &out->len, sizeof(out->text), tag);
		}
		out->version = (uint64_t)g->stat.mzxid;
		seen_set(z, dc, w, &g->stat);
		st = RS_OK;
	}
	call_put(g);
	return st;
}

static int zr_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
{
	struct zstore *z = Z(a);
	const struct zrec_seen *seen = seen_of(z, dc, w);
	bool mine = seen->used && seen->dc == dc && seen->w == w;
	int64_t dl = dl_of(a, deadline);
	int32_t dv = 0;
	char path[600];
	struct zcall *c;
	int st, rc, ret;

	if (len >= AG_REC_MAX)
		return RS_FAILED;
	path_of(a, false, dc, w, path, sizeof(path));
	if (expect) {
		if (mine && seen->mzxid > expect)
			return RS_MOVED;	/* seen at a later version since: mzxids only grow */
		if (!mine || seen->mzxid != expect) {
			logm(AG_WARN, "event=zookeeper_record_version_unknown node=%s version=%llu: not a version this handle read; not sent",
			     path, (unsigned long long)expect);
			return RS_FAILED;
		}
		if (seen->ephemeral)
			return RS_MOVED;	/* 1.4.0's key: never replaced */
		if (seen->version == INT32_MAX) {
			logm(AG_ERR, "event=zookeeper_record_worn node=%s: its data version is at 2^31 - 1 and would wrap: not written (docs/deployment-zookeeper.md, the record)",
			     path);
			return RS_FAILED;
		}
		dv = seen->version;
	}
	st = zr_ready(a, dl);
	if (st != RS_OK)
		return st;
	c = call_new(z);
	if (!c)
		return RS_FAILED;
	if (expect)
		ret = zoo_aset(z->zh, path, text, (int)len, dv, cb_stat, c);
	else
		ret = zoo_acreate2(z->zh, path, text, (int)len, z->acl, ZOO_PERSISTENT,
				   cb_string_stat, c);
	call_started(c, ret);
	if (ret != ZOK) {
		/* Refused by the library: nothing sent. */
		zk_error(a, ret, "record cas (not sent)");
		call_put(c);
		return RS_FAILED;
	}
	rc = call_wait(z, c, dl);
	if (rc == ZOK) {
		/* Above @expect, the data version one up (0 for a create): else nothing sure. */
		if (ag_zk_rec_stat(c->stat.mzxid, c->stat.version, c->stat.ephemeralOwner, true,
				   expect, dv)) {
			ag_reply_invalid(a, "zookeeper record cas stat (mzxid, data version)", path,
					 strlen(path));
			st = RS_UNKNOWN;
		} else {
			seen_set(z, dc, w, &c->stat);
			*version = (uint64_t)c->stat.mzxid;
			st = RS_OK;
		}
	} else if (!c->abandoned && (rc == ZBADVERSION || (expect && rc == ZNONODE) ||
				     (!expect && rc == ZNODEEXISTS))) {
		st = RS_MOVED;
	} else if (!c->abandoned && !expect && rc == ZNONODE) {
		z->root_ok = false;	/* ROOT is gone: created again by the next call */
		logm(AG_WARN, "event=zookeeper_no_root node=%s: its parent is missing: not created", path);
		st = RS_FAILED;
	} else {
		st = zr_error(a, rc, path, true, c->abandoned);
	}
	call_put(c);
	return st;
}

const struct rec_ops ag_zk_rec_ops = {
	.name = "zookeeper",
	.init = z_init,
	.fini = z_fini,
	.describe = z_describe,
	.read = zr_read,
	.cas = zr_cas,
};
#endif /* AG_NO_ZOOKEEPER */
