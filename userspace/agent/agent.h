/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snowflake-agent(8): what the lease loop (agent.c) and the stores
 * (redis.c, etcd.c) share.  Times are CLOCK_BOOTTIME nanoseconds: that
 * clock runs on through suspend, so a lease never looks younger than it is.
 */
#ifndef SNOWFLAKE_AGENT_H
#define SNOWFLAKE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <snowflake.h>

#include "conf.h"

#define PROG	"snowflake-agent"
#ifndef SNOWFLAKE_VERSION
#define SNOWFLAKE_VERSION	"unknown"
#endif
#define NS_PER_MS	1000000LL

struct agent;

/* What a claim, a re-adoption or a renewal gives. */
enum { TRY_TAKEN = 1, TRY_HELD = 0, TRY_ERROR = -1 };

/*
 * A lease store.  Every call is bounded in time; a call that finds the
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
	 * Create the pair's key for this run's owner if it does not exist.
	 * TRY_TAKEN with *@sent_ns the time before the request went out;
	 * TRY_HELD when it exists; TRY_ERROR.
	 */
	int (*claim)(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns);
	/*
	 * The pair this run held last: take it back only if its key still
	 * holds this run's own lease (a renewal whose reply was lost).
	 */
	int (*readopt)(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns);
	/* Renew the lease held, all of it by @deadline: 1 renewed, 0 lost, -1 failed. */
	int (*renew)(struct agent *a, int64_t deadline, int64_t *sent_ns);
	/* Give the lease back (after the fence), bounded by the store's timeout. */
	void (*release)(struct agent *a);
};

extern const struct store_ops ag_redis_ops;
extern const struct store_ops ag_etcd_ops;

struct agent {
	struct ag_conf *c;
	char owner[320];		/* label:128-bit random, new at every start */
	const struct store_ops *st;
	void *store;			/* the store's own state */
	int fatal;			/* an exit code that ends the agent */

	struct snowflake *sf;		/* NULL in dry-run */
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
	bool full_logged;
	bool ready_sent;
	int tfd;			/* timerfd (CLOCK_BOOTTIME) for the main loop */
	uint32_t vm_forks;		/* the device's VM forks when this identity was made */

	/* For --metrics-file: counted since the start. */
	uint64_t m_claims, m_renewals, m_fences, m_store_errors;
	int64_t m_renew_ms_sum;		/* the renewals' round trips */
	bool m_write_failed;		/* logged already */
};

int64_t boot_ns(void);
void logm(enum ag_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len);
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
