/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snowflake-agent(8): what the lease loop (agent.c) and the stores
 * (redis.c, etcd.c, zookeeper.c) share: the one store interface.  Times are CLOCK_BOOTTIME nanoseconds: that
 * clock runs on through suspend, so a lease never looks younger than it is.
 */
#ifndef SNOWFLAKE_AGENT_H
#define SNOWFLAKE_AGENT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <snowflake.h>

#include "conf.h"
#include "validate.h"

#define PROG	"snowflake-agent"
#ifndef SNOWFLAKE_VERSION
#define SNOWFLAKE_VERSION	"unknown"
#endif
#define NS_PER_MS	1000000LL

struct agent;
struct dev_ops;

/*
 * What a claim, a re-adoption or a renewal gives.  TRY_BAD_MARK: the
 * pair's mark is present but invalid (see "Values read from the store"
 * below); nothing was written.  TRY_ERROR: not committed (nothing was
 * sent, or the store refused: an error reply, a failed compare).
 * TRY_UNKNOWN (a claim only): the request may have committed (no reply,
 * a reply that cannot be read); the engine (agent.c) resolves it with
 * give_back() before its next step, and nothing is resent by a backend.
 * TRY_REFUSED (a claim only): the store refused this one pair (an ACL
 * that does not allow its key: Redis NOPERM, ZooKeeper ZNOAUTH on its
 * node, etcd permission denied): not committed; the walk moves on to the
 * next pair, and the agent never stops over one pair's refusal.
 */
enum { TRY_TAKEN = 1, TRY_HELD = 0, TRY_ERROR = -1, TRY_NO_MARK = 2, TRY_BAD_MARK = 3,
       TRY_UNKNOWN = 4, TRY_REFUSED = 5 };

/* What init_mark() gives (besides -1: failed). */
enum {
	INIT_PRESENT = 0,	/* a valid mark is there: left alone (never lowered) */
	INIT_CREATED = 1,	/* it was missing: created */
	INIT_REPLACED = 2,	/* it was invalid and @replace_invalid: replaced */
	INIT_INVALID = 3,	/* it is invalid and not @replace_invalid: left alone */
	INIT_REFUSED = 4,	/* the pair's record refuses this client (its ACL): said, */
				/* counted failed, not asked again; the walk goes on */
};

/*
 * A lease store: the one interface every backend (redis.c, etcd.c, zookeeper.c) sits
 * behind.  The loop, the deadline, the fencing, the window and the
 * history live once, in agent.c; a backend speaks only its store's client
 * library and answers these calls.
 *
 * What a backend must guarantee (each deployment guide, docs/deployment-*.md,
 * says how its store meets it):
 *
 * G1 Exclusive claim.  claim() takes a pair only if no other owner holds
 *    it, atomically (one conditional write): two claims of one free pair
 *    never both succeed.
 * G2 The lease never outlives what the agent assumes.  The store starts a
 *    lease's time when it handles the request, never before the agent sent
 *    it, and counts it at about the agent's CLOCK_BOOTTIME rate (the
 *    margin covers the drift): *@sent_ns, read before the request went
 *    out, plus ttl - margin ends before the store can hand the pair on.
 * G3 A renewal proves the claim itself.  renew() succeeds only while the
 *    pair's key is still this run's (still bound to our lease, still our
 *    owner, still the very key our claim created), not merely while some
 *    session of ours lives: a key deleted, expired or taken fences at the
 *    next renewal.
 * G4 The pair's mark.  For every pair the store keeps a high-water mark of
 *    generator timestamps (Unix ms), outside the lease: it survives the
 *    holder, its expiry and its release.  claim() returns it, read
 *    atomically with the claim; renew() raises it (never lowers it) to
 *    @raise_to atomically with G3's proof, so a holder that has lost the
 *    pair can never raise it.  Only the holder raises it.  renew() also
 *    returns the mark as the store holds it after the step (*@mark, 0
 *    when it was not read): one below what this holder raised it to (the
 *    store lost it: a crash, a failover to a lagging replica, a restore,
 *    an operator) makes the engine raise it again at once, before it
 *    serves further (event=mark_lowered), or stop serving.
 * G5 Durability.  What the store acknowledged (a claim, a renewal, a mark)
 *    is not lost later, or, where it can be (a Redis without persistence
 *    that restarts), the backend delays claims until every lease the store
 *    forgot has ended (claim_wait()); a lost mark reads as missing
 *    (TRY_NO_MARK), never as a lower value.
 * G6 A claim whose outcome is unknown is undone, by the engine.  A claim
 *    whose request may have gone out without a readable answer (no
 *    reply, a reply that cannot be read) returns TRY_UNKNOWN, never
 *    TRY_ERROR, and is never resent by the backend (a resend of a claim
 *    that committed finds our own key and reads it as another's).  A
 *    refusal (an error reply: the request did not run) is TRY_ERROR.
 *    Before its next store step (a claim walk, a re-adoption, the stop)
 *    agent.c gives the pair back with give_back(), which deletes the key
 *    only where it still holds this run's owner, and takes no other step
 *    until that has an answer (resolve_unknown()).  So such a key is
 *    never renewed nor re-adopted with an old floor, and its pair is free
 *    again at once, not a TTL later (contract scenarios claim_reply_lost,
 *    claim_resent, sigterm_claim_lost).
 *
 * Values read from the store are input (validate.h).  A mark is valid only
 * in the exact form the backend writes it (MARK_FMT: AG_MARK_FIXED20;
 * MySQL's BIGINT: AG_MARK_PLAIN) and within [0, a->mark_max_ms] (the last
 * Unix ms the device's layout can stamp); the backend checks every mark it
 * reads with ag_mark_check(), which logs event=mark_invalid.  An invalid
 * mark is never served and is treated like a missing one:
 *  - claim() without @init_mark: TRY_BAD_MARK, nothing written (the loop
 *    quarantines the pair exactly as for TRY_NO_MARK);
 *  - claim() with @init_mark: the mark is replaced by @init_mark and the
 *    pair claimed, in one atomic step that replaces only the very text
 *    found invalid (a compare on the old value, or inside one Redis
 *    script): never a valid mark;
 *  - readopt(): TRY_BAD_MARK (the loop moves on as for TRY_HELD), or, as
 *    renew(), replaced by a->mark_ms (the highest this run raised it to);
 *  - renew(): with @raise_to, replaced by @raise_to in the same atomic step
 *    as the proof (safe for the same reason a missing mark is: this
 *    holder's floor is above every earlier holder's timestamps); without,
 *    left alone, and the renewal succeeds;
 *  - init_mark(): INIT_INVALID, unless @replace_invalid (the operator gave
 *    --init-mark-ms): INIT_REPLACED, replacing only the text found invalid.
 * Owners, lease ids, revisions, versions, row counts, session ids: parsed
 * strictly too (ag_parse_u64(), exact owner compare); one that fails is
 * reported with ag_reply_invalid() (event=store_reply_invalid) and the call
 * fails (TRY_ERROR, -1): never read as held, lost or taken.
 *
 * With these the agent's argument holds (agent.c): a holder gives its
 * device a ceiling only up to a mark the store has accepted; the next
 * holder reads that mark at its claim and gives its device a floor above
 * it.  So no two holders of a pair can stamp one timestamp, whatever their
 * wall clocks say.  Every call is bounded in time; a call that finds the
 * store unusable for good (wrong password, a Redis that may evict keys)
 * sets a->fatal to the exit code and returns TRY_ERROR.
 */
struct store_ops {
	const char *name;
	/* Set up (no I/O yet): 0, or an exit code. */
	int (*init)(struct agent *a);
	void (*fini)(struct agent *a);
	/* Where it is, for the start line. */
	void (*describe)(const struct agent *a, char *buf, size_t len);
	/*
	 * Before claiming: 0 when claims may go ahead, else how many ns to
	 * wait (a Redis that restarted without persistence); -1 on an error.
	 */
	int64_t (*claim_wait)(struct agent *a);
	/*
	 * Create the pair's key for this run's owner if it does not exist
	 * and the pair's mark does.  TRY_TAKEN with *@sent_ns the time before
	 * the request went out and *@mark the pair's mark; TRY_HELD when the
	 * key exists; TRY_NO_MARK when it does not but the mark is missing
	 * (nothing was written); TRY_BAD_MARK when it does not but the mark
	 * is invalid (nothing was written); TRY_ERROR.  @init_mark, when not
	 * 0: first create the mark at that value if it is missing or replace
	 * it if it is invalid (a quarantine that has passed).
	 */
	int (*claim)(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns,
		     uint64_t *mark, uint64_t init_mark);
	/*
	 * The pair this run held last: take it back only if its key still
	 * holds this run's own lease (a renewal whose reply was lost), with
	 * its mark in *@mark.  TRY_TAKEN, TRY_HELD (not ours), TRY_BAD_MARK,
	 * TRY_ERROR.
	 */
	int (*readopt)(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns,
		       uint64_t *mark);
	/*
	 * Renew the lease held and prove the key is still ours (G3), all of it
	 * by @deadline; with @raise_to (not 0), raise the mark to at least
	 * @raise_to in the same atomic step (G4); a missing mark is created at
	 * @raise_to (safe: the holder's own timestamps are all below it).
	 * 1 renewed (and raised), 0 lost, -1 failed.
	 */
	int (*renew)(struct agent *a, int64_t deadline, int64_t *sent_ns, uint64_t raise_to,
		     uint64_t *mark);
	/*
	 * Delete-if-owner: end pair (@dc, @w)'s key only where it holds
	 * this run's owner, bounded by the store's timeout.  The engine's one
	 * way to give a pair back: a claim whose outcome is unknown (G6),
	 * and the lease held, after the fence, at the stop or when the device
	 * failed (agent.c: release()).  1 it was ours and is gone, 0 it was
	 * not ours (nothing done), -1 no answer (the engine asks again, or
	 * leaves the key to expire).
	 */
	int (*give_back)(struct agent *a, uint32_t dc, uint32_t w);
	/*
	 * G5 while holding (NULL: the store is durable by construction,
	 * etcd's and ZooKeeper's quorum logs): is the store still as durable
	 * as it was found at the connection (Redis: AOF fsynced at every
	 * write, no replica; MySQL: innodb_flush_log_at_trx_commit = 1, no
	 * replica)?  The engine asks every ttl while it holds a pair, by
	 * @deadline.  0 yes, -1 could not tell (asked again), or a->fatal set
	 * (the agent fences, gives the lease back and exits 5).
	 */
	int (*recheck)(struct agent *a, int64_t deadline);
	/*
	 * --init-store: create the mark of pair (@dc, @w) at @mark where it is
	 * missing; where it is invalid, replace it only with @replace_invalid
	 * (the operator gave --init-mark-ms).  INIT_*, or -1 failed.  A
	 * record that refuses this client is INIT_REFUSED (said by the
	 * backend with its key or node), never fatal.
	 */
	int (*init_mark)(struct agent *a, uint32_t dc, uint32_t w, uint64_t mark,
			 bool replace_invalid);
};

/*
 * The record store (issue 40, docs/lease-record.md): what a backend of
 * the record design is, and all it is.  One record per pair, its text
 * ag_rec_format()'s, written only by cas() on the store's own version of
 * it (etcd mod_revision; ZooKeeper the node's mzxid; Redis a counter
 * each write increments atomically with it; MySQL a counter row each write
 * advances in the same request, before it): a takeover moves
 * the version, so no delayed write of an earlier holder can land after it.
 * Versions are above 0 and grow with every write of one record; 0 means
 * "absent".  Every call is one bounded request (ag_wait(), by @deadline,
 * 0: the store's timeout) that is never resent; what it answers is
 * input, checked by the engine (record.c) and never acted on here.  The
 * engine decides everything else: when a holder has expired (on its own
 * clock: ag_observe), what an unknown outcome was (its nonce read back),
 * what an error means.
 */
enum {
	RS_OK = 0,	/* read: the record (text, version); cas: committed, *@version the new */
	RS_ABSENT,	/* read: no record at the pair's name */
	RS_MOVED,	/* cas: not committed, the version was not @expect */
	RS_REFUSED,	/* not committed: this record refuses this client (an ACL) */
	RS_UNABLE,	/* not committed: the store as a whole cannot (READONLY, no quorum, ...) */
	RS_FAILED,	/* not committed: nothing sent, or an error reply */
	RS_UNKNOWN,	/* cas only: sent, no readable answer: it may have committed */
};

struct ag_rec {
	uint64_t version;
	size_t len;
	char text[AG_REC_MAX];
};

/*
 * 1.4.0's mark key of a pair whose record is absent, as legacy() found
 * it (docs/lease-record.md, "1.4.0 beside it"): @state AG_LEG_NONE (no
 * key), AG_LEG_MARK (a string: @text), AG_LEG_STALE (a string written
 * before the store last restarted: Redis' markrun, redis-allow-non-durable),
 * AG_LEG_OTHER (another type: its name in @text, never a mark); @guard what
 * create() compares besides @state and @text (etcd: the key's mod_revision).
 */
enum { AG_LEG_NONE, AG_LEG_MARK, AG_LEG_STALE, AG_LEG_OTHER };
struct ag_legacy {
	int state;
	uint64_t guard;
	size_t len;
	char text[AG_REC_MAX];
};

struct rec_ops {
	const char *name;
	int (*init)(struct agent *a);
	void (*fini)(struct agent *a);
	void (*describe)(const struct agent *a, char *buf, size_t len);
	int64_t (*claim_wait)(struct agent *a);		/* as store_ops' (NULL: 0) */
	int (*recheck)(struct agent *a, int64_t deadline);	/* as store_ops' (NULL: durable) */
	/* Pair (@dc, @w)'s record: RS_OK (*@r), RS_ABSENT, RS_REFUSED, RS_UNABLE, RS_FAILED. */
	int (*read)(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *r);
	/*
	 * Write @text (@len bytes) as pair (@dc, @w)'s record if its version is
	 * @expect (0: only if there is none): RS_OK with *@version, RS_MOVED,
	 * RS_REFUSED, RS_UNABLE, RS_FAILED or RS_UNKNOWN.
	 */
	int (*cas)(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		   size_t len, int64_t deadline, uint64_t *version);
	/*
	 * A store 1.4.0 ran on (NULL: none): pair (@dc, @w)'s 1.4.0 mark key,
	 * RS_OK (*@m), RS_REFUSED, RS_UNABLE, RS_FAILED; and cas(@expect 0)
	 * that commits only where that key is still as *@m found it, in the
	 * same atomic step (one script, one Txn): RS_MOVED when either moved.
	 */
	int (*legacy)(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline,
		      struct ag_legacy *m);
	int (*create)(struct agent *a, uint32_t dc, uint32_t w, const struct ag_legacy *m,
		      const char *text, size_t len, int64_t deadline, uint64_t *version);
};

/*
 * The engine's side of the record design (record.c): the lease steps of
 * store_ops (claim, readopt, renew, give_back, init_mark) made of a
 * rec_ops' reads and compare-and-sets, once for every store.  a->rec is
 * the backend; ag_record_use() makes a->st the record engine over it.
 */
extern const struct store_ops ag_record_ops;
int ag_record_use(struct agent *a, const struct rec_ops *r);
/* The store's name (a record backend's: "redis", not "record"), for the logs. */
const char *ag_store_name(const struct agent *a);

/* renew()'s *@mark when the step did not read the mark. */
#define AG_MARK_UNREAD	UINT64_MAX

/* The mark's text in the stores: 20 decimal digits, so that byte order is number order. */
#define MARK_FMT	"%020llu"

extern const struct store_ops ag_redis_ops;
/* The record design's Redis backend (redis.c): a hash per pair, a store-wide counter. */
extern const struct rec_ops ag_redis_rec_ops;
extern const struct store_ops ag_etcd_ops;
/* The record design's etcd backend (etcd.c): a plain key per pair, its mod_revision the version. */
extern const struct rec_ops ag_etcd_rec_ops;
extern const struct store_ops ag_mysql_ops;
/* The record design's MySQL backend (mysql.c): the pair's row, its ver from a counter row. */
extern const struct rec_ops ag_mysql_rec_ops;
extern const struct store_ops ag_zookeeper_ops;
/*
 * The record design's ZooKeeper backend (zookeeper.c): a persistent node per
 * pair, its mzxid the version, a setData at the data version read with it.
 */
extern const struct rec_ops ag_zk_rec_ops;

/*
 * For a backend whose client library learns on a thread of its own that
 * the lease may be gone before any call of the loop could (ZooKeeper: the
 * connection to the ensemble dropped).  Fences the device at once, from
 * the calling thread, and makes the loop drop the lease (fence, forget)
 * at its next step; a claim or a re-adoption sent after the call is not
 * affected.  Thread-safe, and async-signal-safe; never blocks.
 */
void ag_store_lost(void);

/*
 * A stop signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT) has come and the agent
 * has not begun to stop yet: a backend's wait for a reply asks this
 * between polls (at least every 100 ms) and gives up the call (TRY_ERROR,
 * -1) when it is true: the agent then fences, releases and exits.  While
 * it stops, true again once a second stop signal came or the stop's store
 * calls are over their bound (550 ms after the first signal): the release
 * is given up.  Main thread only.
 */
bool ag_stop_pending(void);

/*
 * 0 while no stop signal was seen; else the time (boot_ns()) by which
 * the agent must have exited (800 ms after the signal was seen): a
 * backend's close (fini()) waits no longer for its store.
 */
int64_t ag_stop_exit_by(void);

/*
 * The one wait of every store call (agent.c), main thread only: poll
 * @p[0..@n) until one is ready, @end (boot_ns()) has passed, or a stop
 * signal is pending (ag_stop_pending(), asked at least every 100 ms).
 * >0 the number ready (their revents set), 0 @end has passed, -1 a stop
 * signal (errno ECANCELED) or poll() failed (errno).  A store's own
 * timer (a client library's) is a shorter @end, told apart by its caller.
 */
int ag_wait(struct pollfd *p, unsigned int n, int64_t end);

/*
 * A store's standing condition, said once (agent.c keeps what was said):
 * @what (AG_COND_*) is logged at @level when it is first met and again
 * only when its text changes (a Redis allowed to be non-durable whose role
 * changed); at debug otherwise.  A store keeps no "said" flag of its own.
 */
enum ag_cond {
	AG_COND_STORE_NOT_DURABLE,	/* Redis: allowed, but can lose a mark */
	AG_COND_SESSION_TIMEOUT,	/* ZooKeeper: the session's timeout */
	AG_COND_STORE_DOWN,		/* the store (a connection, an endpoint, a session) does not answer */
	AG_COND_STORE_YOUNG,		/* Redis: a server life too young to claim in */
	AG_COND_STORE_SCHEMA,		/* MySQL: the database or table missing, or found */
	AG_COND_N
};
void ag_condition(struct agent *a, enum ag_cond what, enum ag_level level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * The condition @what is over (the store answers again): @fmt is logged at
 * info only if the condition was said, and the next ag_condition() of it
 * is said as new.
 */
void ag_condition_over(struct agent *a, enum ag_cond what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct agent {
	struct ag_conf *c;
	char owner[320];		/* label:128-bit random, new at every start */
	const struct store_ops *st;
	void *store;			/* the store's own state */
	/*
	 * The record design (record.c): the backend, the state of the record
	 * this run holds (its version, its last write's nonce and beat, the
	 * mark as written), the nonce of a claim whose outcome is unknown,
	 * and the observations of records held by others.
	 */
	const struct rec_ops *rec;
	uint64_t rec_version;		/* 0: not known (read before the next write) */
	uint64_t rec_nonce, rec_beat, rec_mark;
	uint64_t rec_unknown_nonce;
	struct ag_observe *observe;
	int fatal;			/* an exit code that ends the agent */

	struct snowflake *sf;		/* NULL in dry-run */
	const struct dev_ops *dev;	/* the module's, or the dry-run simulator (agent.c) */
	bool fenced;
	int hist_fd;			/* -1: no history */

	uint32_t dc_lo, dc_hi, w_lo, w_hi;
	uint64_t pool;			/* number of pairs */

	bool held;			/* a lease is held (valid until fence_at) */
	bool serving;			/* ... and given to the device */
	int64_t settle_until;		/* a new claim: not served before this */
	bool ever_held;
	uint32_t dc, w;			/* the pair held, or last held by this run */
	char key[512];			/* its key */
	bool have_pref;			/* a pair to try first (state file, last held) */
	uint32_t pref_dc, pref_w;
	int64_t sent_ns;		/* before the last claim/renewal was sent */
	int64_t fence_at;		/* sent_ns + ttl - margin */
	int64_t next_renew;
	int64_t next_acquire;
	int64_t claim_wait_ns;		/* the store asked to wait before claiming */
	int64_t full_backoff_ns;	/* the pool was full: wait this long */
	int64_t walk_ns;		/* the last whole walk of the pool took this long */
	/*
	 * The walk in progress (acquire()): a failed request ends a call of
	 * acquire(), not the walk; the next call goes on from the pair whose
	 * request failed (walk_i of the order from walk_start).
	 */
	bool walk_on;
	bool walk_no_mark;		/* a pair of this walk had no valid mark */
	uint64_t walk_start, walk_i;
	int64_t walk_active_ns;		/* its time in acquire(), the waits between not counted */
	bool full_logged;
	bool ready_sent;
	int tfd;			/* timerfd (CLOCK_BOOTTIME) for the main loop */
	uint32_t vm_forks;		/* the device's VM forks when this identity was made */

	/*
	 * The timestamp window (see program_pair()): the device stamps this
	 * lease's IDs within [floor_ms, mark_ms]; mark_ms is never above the
	 * mark the store has accepted for the pair.
	 */
	uint64_t floor_ms;		/* the mark read at the claim + 1 */
	uint64_t mark_ms;		/* the pair's mark as the store last accepted it */
	/* The last Unix ms the device's layout can stamp: a mark above it is invalid. */
	uint64_t mark_max_ms;
	/* A claim whose outcome is unknown (TRY_UNKNOWN): given back before the next step. */
	bool unknown;
	uint32_t unknown_dc, unknown_w;
	int64_t next_recheck;		/* store_ops.recheck while holding, at this time */
	/* Per pair: when its mark was first seen missing or invalid (agent.c). */
	struct ag_quarantine *quarantine;
	bool missing_logged;		/* event=mark_missing said at warn since the last claim */

	/*
	 * The dry-run device: the kernel's rules on a simulated clock, the
	 * wall clock at start + CLOCK_BOOTTIME since + the offset of
	 * --dry-run-clock-offset-ms + its forward moves to floors.
	 */
	int64_t sim_anchor_ms;		/* wall - boottime at start, + the offset */
	uint64_t sim_jump_ms;		/* forward moves (floors) */
	uint64_t sim_floor_ms, sim_ceiling_ms;

	/* For --metrics-file: counted since the start. */
	uint64_t m_claims, m_renewals, m_fences, m_store_errors, m_mark_raises;
	int64_t m_renew_ms_sum;		/* the renewals' round trips */
	bool m_write_failed;		/* logged already */

	/* ag_condition(): a hash of each condition's text as last said, 0 never. */
	uint64_t cond_said[AG_COND_N];
};

int64_t boot_ns(void);
/*
 * A mark read from the store for pair (@dc, @w): @len bytes at @text in
 * @form.  0 with *@out set, or -1 after logging event=mark_invalid with the
 * mark's key and the text shortened.
 */
int ag_mark_check(const struct agent *a, uint32_t dc, uint32_t w, const char *text, size_t len,
		  enum ag_mark_form form, uint64_t *out);
/* Log event=mark_invalid for pair (@dc, @w) with what is done (@action: "replaced", ...). */
void ag_mark_invalid(const struct agent *a, uint32_t dc, uint32_t w, const char *text,
		     size_t len, const char *action);
/* Log event=store_reply_invalid: @what (e.g. "lease id") was @text, not a valid value. */
void ag_reply_invalid(const struct agent *a, const char *what, const char *text, size_t len);
void logm(enum ag_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len);
/* The key of the pair's timestamp mark: PREFIX:CLUSTER:mark:DC:W. */
void mark_key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len);
/* ms left until @deadline (0: none, the whole @timeout_ms), at most @timeout_ms; 0 if past. */
int64_t ms_left(int64_t deadline, int64_t timeout_ms);
/*
 * @host as a numeric address in @out, resolved within @timeout_ms (the
 * C library's resolver has no timeout of its own).  0, or -ETIMEDOUT /
 * -ENOENT with a message in @err.
 */
int resolve_bounded(const char *host, int64_t timeout_ms, char *out, size_t len,
		    char *err, size_t errlen);

#endif /* SNOWFLAKE_AGENT_H */
