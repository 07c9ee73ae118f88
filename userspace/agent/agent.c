// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): hold a unique (datacenter, worker) id pair for this
 * host as a lease in a store (etcd: etcd.c, Redis: redis.c), set it on
 * /dev/snowflake, and fence the device whenever the lease could have
 * expired.
 *
 * Safety argument: a lease is taken as valid from the moment *before* the
 * request that created or renewed it was sent, for ttl - margin of
 * CLOCK_BOOTTIME (which, unlike CLOCK_MONOTONIC, runs on in suspend).  The
 * store starts its own ttl when the request arrives, which is later, so as
 * long as the two clocks run at nearly the same rate (the margin covers the
 * drift) our validity ends before the store can give the pair to another
 * host.  Every store call ends no later than the fence time, and a
 * CLOCK_BOOTTIME timer fences the device from a signal handler at the fence
 * time whatever the main loop is blocked in (a log write, a name lookup, a
 * slow store).  Only a stopped process escapes that timer: the deadline
 * given to the device with the pair (program_pair()) is what covers it.
 *
 * Across hosts that is not enough: an ID is stamped with its host's clock,
 * and hosts' wall clocks disagree.  So every lease also carries a window of
 * generator timestamps that the kernel enforces (program_pair()): a floor
 * above the pair's mark as the store held it at the claim, and a ceiling
 * that is never above the mark the store has accepted since.  The mark
 * lives in the store beside the pair's key, survives the holder, and only
 * the holder raises it, atomically with the proof that it still holds the
 * pair (store_ops.renew, G3 and G4 in agent.h).  Whatever the clocks say,
 * holder N stamps at most its ceiling <= the mark when it stopped <= the
 * mark holder N+1 read < holder N+1's floor: no timestamp is ever stamped
 * by two holders of one pair.  A missing mark (a new key space, a store
 * that lost its data) is never taken as zero: see acquire().
 *
 * The owner written into the store is a label (the host name, or --owner)
 * and 128 random bits drawn at every start: two agents never share one,
 * even with one configuration (a templated file, a cloned VM image), and
 * the agent takes back only a key that holds the owner of this very run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "backoff.h"

/* The signals that stop the agent (fence, release, exit 0). */
static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
#define SIG_WATCHDOG	(SIGRTMIN + 1)
#define SIG_WAKE	(SIGRTMIN + 2)	/* ag_store_lost() wakes the main loop */

static volatile sig_atomic_t stop_signal;
/*
 * The agent is stopping (fenced, releasing): ag_stop_pending() is false,
 * until a second stop signal comes (stop_again): then the release is
 * given up too (it expires by itself).  Contract scenario
 * sigterm_release_slow (mutant i31-10).
 */
static bool stopping, stop_again;
/*
 * When the first stop signal was seen (boot_ns(); 0 none): the stop is
 * bounded from then (issue 40 D9): the store calls of the stop (the
 * release, an unknown claim's give-back) end by STOP_STORE_MS, the
 * store's close by STOP_EXIT_MS (ag_stop_exit_by()), so the agent exits
 * within 1 s of the signal whatever the store does (seen within 100 ms:
 * ag_wait()); what was not given back expires by itself.  Contract scenario stop_within_1s.
 */
#define STOP_STORE_MS	550
#define STOP_EXIT_MS	800
static volatile int64_t stop_seen_ns;
static bool stop_bound_said;
/* The mark quarantine's table (missing_mark()): fixed size, ~96 KiB. */
static struct ag_quarantine quarantine;
static enum ag_level log_level = AG_INFO;
static bool log_journal;

/*
 * The watchdog: a CLOCK_BOOTTIME timer armed at the fence time; its signal
 * handler fences the device with one ioctl (async-signal-safe), so that
 * nothing the main loop blocks in can hold the fence back.
 */
static int wd_dev_fd = -1;		/* the device, -1 in dry-run */
static volatile sig_atomic_t wd_fired;
static timer_t wd_timer;
static bool wd_ok;

/*
 * ag_store_lost(): set by a store library's thread, read and cleared by
 * the main loop (atomics: two threads).  The main thread's id, for its
 * wake-up signal.
 */
static int store_lost;
static pthread_t main_thread;
static bool main_thread_set;

int64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ms_left(int64_t deadline, int64_t timeout_ms)
{
	int64_t left;

	if (!deadline)
		return timeout_ms;
	left = (deadline - boot_ns()) / NS_PER_MS;
	if (left < timeout_ms)
		return left > 0 ? left : 0;
	return timeout_ms;
}

void logm(enum ag_level l, const char *fmt, ...)
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

void key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s:worker:%u:%u", a->c->prefix, a->c->cluster, dc, w);
}

void mark_key_of(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s:mark:%u:%u", a->c->prefix, a->c->cluster, dc, w);
}

/* The pair's place in the pool (the quarantine's key). */
static uint64_t pair_index(const struct agent *a, uint32_t dc, uint32_t w)
{
	return (uint64_t)(w - a->w_lo) * (a->dc_hi - a->dc_lo + 1) + (dc - a->dc_lo);
}

void ag_mark_invalid(const struct agent *a, uint32_t dc, uint32_t w, const char *text,
		     size_t len, const char *action)
{
	char key[512], shown[96];

	bool again = !strcmp(action, "not-served") && a->quarantine &&
		     ag_quarantine_since(a->quarantine, pair_index(a, dc, w));

	mark_key_of(a, dc, w, key, sizeof(key));
	ag_shorten(text, len, shown, sizeof(shown));
	/* Once per quarantine at warn: a walk sees every invalid mark again. */
	logm(again ? AG_DEBUG : AG_WARN, "event=mark_invalid datacenter=%u worker=%u key=%s value=\"%s\" max_ms=%llu action=%s: not a mark in the form this agent writes (up to the layout's last timestamp); %s",
	     dc, w, key, shown, (unsigned long long)a->mark_max_ms, action,
	     !strcmp(action, "replaced") ? "replaced" :
	     !strcmp(action, "left") ? "left as it is (never served)" :
	     "never served, treated as missing (mark-quarantine-ms)");
}

int ag_mark_check(const struct agent *a, uint32_t dc, uint32_t w, const char *text, size_t len,
		  enum ag_mark_form form, uint64_t *out)
{
	if (!ag_mark_parse(text, len, form, a->mark_max_ms, out))
		return 0;
	ag_mark_invalid(a, dc, w, text, len, "not-served");
	return -1;
}

const char *ag_store_name(const struct agent *a)
{
	if (a->rec)
		return a->rec->name;
	return a->st ? a->st->name : "?";
}

void ag_reply_invalid(const struct agent *a, const char *what, const char *text, size_t len)
{
	char shown[96];

	ag_shorten(text, len, shown, sizeof(shown));
	logm(AG_WARN, "event=store_reply_invalid backend=%s what=\"%s\" value=\"%s\": not a value this agent accepts; the call failed",
	     ag_store_name(a), what, shown);
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
	if (!stop_seen_ns)
		stop_seen_ns = boot_ns();	/* clock_gettime: async-signal-safe */
}

int64_t ag_stop_exit_by(void)
{
	return stop_seen_ns ? stop_seen_ns + STOP_EXIT_MS * NS_PER_MS : 0;
}

/* The stop's store calls are over their time (STOP_STORE_MS): said once. */
static bool stop_bound_over(void)
{
	if (!stopping || !stop_seen_ns || boot_ns() < stop_seen_ns + STOP_STORE_MS * NS_PER_MS)
		return false;
	if (!stop_bound_said)
		logm(AG_WARN, "event=stop_bound stop_ms=%d: the store did not answer the stop's calls within %d ms of the stop signal; they are given up (what was not given back expires by itself)",
		     STOP_STORE_MS, STOP_STORE_MS);
	stop_bound_said = true;
	return true;
}

/*
 * The stop signals are blocked but inside sleep_until(); work that runs
 * long between two sleeps (the claim walk, --init-store, a store call
 * that waits for its reply) asks here, between steps: a pending stop
 * signal is taken (sigtimedwait, no wait) and stop_signal set.  While the
 * agent stops (fenced, giving its lease back) the stop runs to its end,
 * unless another stop signal comes: an operator who asks twice is not
 * kept waiting on a store that does not answer.
 */
bool ag_stop_pending(void)
{
	static const struct timespec zero;
	sigset_t set;
	size_t i;
	int sig;

	if (stop_signal && !stopping)
		return true;
	if (stop_again || stop_bound_over())
		return true;
	sigemptyset(&set);
	for (i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaddset(&set, stop_signals[i]);
	sig = sigtimedwait(&set, NULL, &zero);
	if (sig > 0 && stopping) {
		/* A second stop signal while stopping: the release is given up. */
		logm(AG_WARN, "event=stop_again signal=%d: the release is given up; the lease expires by itself",
		     sig);
		stop_again = true;
		return true;
	}
	if (sig > 0) {
		stop_signal = sig;
		if (!stop_seen_ns)
			stop_seen_ns = boot_ns();
	}
	return stop_signal != 0 && !stopping;
}

/*
 * ag_wait() (agent.h): the stop is asked before every poll and the poll
 * lasts at most 100 ms, so a stop signal ends any store call within
 * 100 ms, whichever store it is (and the stop's own calls end by its
 * bound, STOP_STORE_MS); @end is checked before every poll, so no
 * call outlives its deadline by more than a poll's rounding (1 ms).
 */
int ag_wait(struct pollfd *p, unsigned int n, int64_t end)
{
	for (;;) {
		int64_t left = end - boot_ns();
		int r;

		if (ag_stop_pending()) {
			errno = ECANCELED;
			return -1;
		}
		if (left <= 0)
			return 0;
		if (left > 100 * NS_PER_MS)
			left = 100 * NS_PER_MS;
		r = poll(p, n, (int)((left + NS_PER_MS - 1) / NS_PER_MS));
		if (r > 0)
			return r;
		if (r < 0 && errno != EINTR)
			return -1;
		/* 0 or EINTR (the watchdog's or the wake signal): asked again. */
	}
}

/* ag_condition() (agent.h): FNV-1a of the text, never 0. */
void ag_condition(struct agent *a, enum ag_cond what, enum ag_level level, const char *fmt, ...)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char buf[1024];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (i = 0; buf[i]; i++)
		h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
	h |= 1;
	logm(a->cond_said[what] == h ? AG_DEBUG : level, "%s", buf);
	a->cond_said[what] = h;
}

/* ag_condition_over() (agent.h). */
void ag_condition_over(struct agent *a, enum ag_cond what, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!a->cond_said[what])
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	logm(AG_INFO, "%s", buf);
	a->cond_said[what] = 0;
}

static void on_watchdog(int sig)
{
	struct snowflake_fence f = { .flags = SNOWFLAKE_FENCE_ON };
	int saved = errno;

	(void)sig;
	if (wd_dev_fd >= 0)
		(void)ioctl(wd_dev_fd, SNOWFLAKE_IOC_SET_FENCE, &f);
	wd_fired = 1;
	errno = saved;
}

/* SIG_WAKE: nothing to do; its delivery ends the main loop's sleep. */
static void on_wake(int sig)
{
	(void)sig;
}

/*
 * The flag first, then the fence: program_pair() lifts the fence and only
 * then reads the flag, so whichever order the two threads run in, the
 * device ends fenced (a fence before the lift is seen by the read after
 * it; a fence after the lift stays).
 */
void ag_store_lost(void)
{
	struct snowflake_fence f = { .flags = SNOWFLAKE_FENCE_ON };
	int saved = errno;

	__atomic_store_n(&store_lost, 1, __ATOMIC_SEQ_CST);
	if (wd_dev_fd >= 0)
		(void)ioctl(wd_dev_fd, SNOWFLAKE_IOC_SET_FENCE, &f);
	if (__atomic_load_n(&main_thread_set, __ATOMIC_ACQUIRE))
		pthread_kill(main_thread, SIG_WAKE);
	errno = saved;
}

static bool store_lost_seen(void)
{
	return __atomic_load_n(&store_lost, __ATOMIC_SEQ_CST);
}

/* Arm the watchdog at @at (boottime ns), or disarm it (0). */
static void wd_arm(int64_t at)
{
	struct itimerspec its;

	if (!wd_ok)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = at / 1000000000LL;
	its.it_value.tv_nsec = at % 1000000000LL;
	timer_settime(wd_timer, at ? TIMER_ABSTIME : 0, &its, NULL);
}

static void wd_block(sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIG_WATCHDOG);
	sigprocmask(SIG_BLOCK, &s, old);
}

/* ---------------------------------------------------------------- */
/* The history: one line per validity interval given to the device    */
/* ---------------------------------------------------------------- */

/*
 * One write(2) per line on an O_APPEND file: agents may share one file.
 * Written only after the device was programmed or fenced: it never delays
 * a fence.
 */
static void __attribute__((format(printf, 2, 3))) hist(struct agent *a, const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	int n;

	if (a->hist_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(a->hist_fd, buf, (size_t)n) != n)
		logm(AG_DEBUG, "history: %s", strerror(errno));
}

/* ---------------------------------------------------------------- */
/* The device                                                        */
/* ---------------------------------------------------------------- */

/*
 * The device behind one interface, two implementations: the module
 * (/dev/snowflake through libsnowflake) and, with --dry-run, a simulator
 * that follows the kernel's rules on a simulated clock.  fence_now() and
 * program_pair() call only these: the dry-run path is the same code.
 */
struct dev_ops {
	const char *tag;	/* in the log lines: "" or " dry_run=1" */
	/* The fence on (@on) or off.  0 or -errno. */
	int (*fence)(struct agent *a, bool on);
	/* The lowest timestamp (Unix ms) it would stamp now.  0 or -errno. */
	int (*next_ts)(struct agent *a, uint64_t *ts);
	/*
	 * The pair (a->dc, a->w), the deadline @until and the window
	 * [a->floor_ms, a->mark_ms], in one step, at boottime @from;
	 * *@ts_from its clock then, *@ts_until the last timestamp it can
	 * stamp by @until (at most the ceiling).  0 or -errno (-ESTALE: a VM
	 * fork since this identity was made).
	 */
	int (*set_lease)(struct agent *a, int64_t from, int64_t until, uint64_t *ts_from,
			 uint64_t *ts_until);
};

static int mod_fence(struct agent *a, bool on)
{
	return snowflake_set_fence(a->sf, on);
}

static int mod_next_ts(struct agent *a, uint64_t *ts)
{
	struct snowflake_stats st;
	int ret = snowflake_get_stats(a->sf, &st);

	if (ret)
		return ret;
	*ts = st.clock_ms;
	if (*ts < st.floor_ms)
		*ts = st.floor_ms;
	if (*ts < st.last_timestamp_ms)
		*ts = st.last_timestamp_ms;
	return 0;
}

/*
 * SNOWFLAKE_IDS_DEADLINE | SNOWFLAKE_IDS_WINDOW in one ioctl, with the VM
 * forks of this identity (snowflake_set_lease_window()).
 */
static int mod_set_lease(struct agent *a, int64_t from, int64_t until, uint64_t *ts_from,
			 uint64_t *ts_until)
{
	struct snowflake_stats st;
	int ret = snowflake_get_stats(a->sf, &st);

	(void)from;
	if (ret)
		return ret;
	*ts_from = st.clock_ms;
	*ts_until = a->mark_ms;
	return snowflake_set_lease_window(a->sf, a->dc, a->w, (uint64_t)until, a->vm_forks,
					  a->floor_ms, a->mark_ms);
}

static const struct dev_ops module_dev = {
	.tag = "",
	.fence = mod_fence,
	.next_ts = mod_next_ts,
	.set_lease = mod_set_lease,
};

/*
 * The dry-run device follows the kernel's rules on a simulated clock: the
 * wall clock at start plus CLOCK_BOOTTIME since (like the module's raw
 * clock), offset by --dry-run-clock-offset-ms, moved forward by floors and
 * never back.  Its clock at boottime @t, Unix ms:
 */
static uint64_t sim_clock_ms(const struct agent *a, int64_t t)
{
	int64_t raw = a->sim_anchor_ms + t / NS_PER_MS;

	return (raw > 0 ? (uint64_t)raw : 0) + a->sim_jump_ms;
}

static int sim_fence(struct agent *a, bool on)
{
	(void)a;
	(void)on;
	return 0;
}

static int sim_next_ts(struct agent *a, uint64_t *ts)
{
	*ts = sim_clock_ms(a, boot_ns());
	if (*ts < a->sim_floor_ms)
		*ts = a->sim_floor_ms;
	return 0;
}

/* The kernel's floor: the clock jumps forward to it, never back. */
static int sim_set_lease(struct agent *a, int64_t from, int64_t until, uint64_t *ts_from,
			 uint64_t *ts_until)
{
	uint64_t now = sim_clock_ms(a, from);

	*ts_from = now;
	if (a->floor_ms > now)
		a->sim_jump_ms += a->floor_ms - now;
	if (a->floor_ms > a->sim_floor_ms)
		a->sim_floor_ms = a->floor_ms;
	a->sim_ceiling_ms = a->mark_ms;
	*ts_until = a->mark_ms;
	if (sim_clock_ms(a, until) < *ts_until)
		*ts_until = sim_clock_ms(a, until);
	return 0;
}

static const struct dev_ops sim_dev = {
	.tag = " dry_run=1",
	.fence = sim_fence,
	.next_ts = sim_next_ts,
	.set_lease = sim_set_lease,
};

/*
 * Fence now: the watchdog off, the ioctl, then (only then) the history
 * and the log.  0 or -errno.
 */
static int fence_now(struct agent *a, const char *why)
{
	bool was = a->fenced;
	int ret;
	int64_t at;

	wd_arm(0);
	ret = a->dev->fence(a, true);
	at = boot_ns();
	if (ret) {
		logm(AG_ERR, "event=fence_failed error=\"%s\"", snowflake_strerror(ret));
		return ret;
	}
	a->fenced = true;
	wd_fired = 0;
	if (!was)
		a->m_fences++;
	if (a->ever_held)
		hist(a, "fence pair=%u:%u space=%s:%s owner=%s at=%lld", a->dc, a->w,
		     a->c->prefix, a->c->cluster, a->owner, (long long)at);
	if (!was)
		logm(AG_WARN, "event=fenced%s datacenter=%u worker=%u reason=%s",
		     a->dev->tag, a->dc, a->w, why);
	return 0;
}

/*
 * The lowest timestamp (Unix ms) the device would stamp now: its clock,
 * raised to its floor and its last timestamp.  0 or -errno.
 */
static int dev_next_ts(struct agent *a, uint64_t *ts)
{
	return a->dev->next_ts(a, ts);
}

/*
 * Every programming of the device goes through here: the pair (assigned
 * when @assign: a new claim), valid until @until (boottime ns: the sent
 * time of the request that gave the lease + ttl - margin), with the
 * window [a->floor_ms, a->mark_ms], then the fence lifted.  The watchdog
 * is armed at @until.  -ETIME when @until has passed already (a reply that
 * came too late): nothing is changed.
 *
 * The device gets @until as the lease's deadline and the window with the
 * pair, at every claim and every renewal (snowflake_set_lease_window():
 * SNOWFLAKE_IDS_DEADLINE | SNOWFLAKE_IDS_WINDOW), in one ioctl: from then
 * on the kernel refuses reads by itself past the deadline and above the
 * ceiling, so a stalled or killed agent can never extend its host's right
 * to issue IDs, in time or in timestamps; the watchdog only makes the
 * fence visible sooner.  The ceiling is a->mark_ms, which only ever holds
 * a mark the store has accepted (renew()); the floor is the mark read at
 * the claim + 1.  The call carries the VM forks the device had seen when
 * this identity was made: -ESTALE when the VM was cloned or restored since
 * (the caller drops the identity: vm_forked()).
 *
 * The history line gives the interval in boottime and the window of
 * timestamps the device could stamp in it: from its clock at the start
 * (raised to the floor) to the ceiling (the dry-run device: to its clock
 * at @until, if that is lower).
 */
static int program_pair(struct agent *a, bool assign, int64_t until)
{
	uint64_t ts_from = 0, ts_until = 0;
	bool lift, was_fenced;
	sigset_t old;
	int64_t from;
	int ret = 0;

	wd_block(&old);
	if (wd_fired) {		/* the watchdog fenced the device */
		wd_fired = 0;
		a->fenced = true;
	}
	was_fenced = a->fenced;
	from = boot_ns();
	if (from >= until) {
		ret = -ETIME;
		goto out;
	}
	if (store_lost_seen()) {
		ret = -ENOLINK;
		goto out;
	}
	if (a->mark_ms < a->floor_ms) {
		ret = -ERANGE;	/* no mark above the floor yet: a bug */
		goto out;
	}
	ret = a->dev->set_lease(a, from, until, &ts_from, &ts_until);
	if (ret)
		goto out;
	if (ts_from < a->floor_ms)
		ts_from = a->floor_ms;
	wd_arm(until);
	lift = a->fenced;
	if (lift)
		ret = a->dev->fence(a, false);
	if (ret) {
		wd_arm(0);
		goto out;
	}
	a->fenced = false;
	/*
	 * The store's library saw the connection drop (ag_store_lost()): it
	 * may have fenced the device before the lift above, which undid it.
	 * Fenced again, and the lease dropped by the caller.
	 */
	if (store_lost_seen()) {
		wd_arm(0);
		(void)a->dev->fence(a, true);
		a->fenced = true;
		ret = -ENOLINK;
	}
out:
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (ret == -ETIME) {
		logm(AG_WARN, "event=reply_too_late datacenter=%u worker=%u late_ms=%lld",
		     a->dc, a->w, (long long)((from - until) / NS_PER_MS));
		return ret;
	}
	if (ret == -ESTALE || ret == -ENOLINK)
		return ret;	/* a VM fork: vm_forked() logs it; the loop drops a lost store's lease */
	if (ret == -EOPNOTSUPP) {
		logm(AG_ERR, "event=set_lease_failed datacenter=%u worker=%u: the module has no timestamp window (SNOWFLAKE_IDS_WINDOW): it is older than this agent, which needs snowflake 1.4; update the module",
		     a->dc, a->w);
		return -EIO;
	}
	if (ret) {
		logm(AG_ERR, "event=%s_failed datacenter=%u worker=%u error=\"%s\"",
		     assign ? "set_lease" : "renew_lease", a->dc, a->w,
		     ret == -ERANGE ? "no mark above the floor" : snowflake_strerror(ret));
		return ret;
	}
	hist(a, "interval pair=%u:%u space=%s:%s owner=%s from=%lld until=%lld ts_from=%llu ts_until=%llu",
	     a->dc, a->w, a->c->prefix, a->c->cluster, a->owner, (long long)from, (long long)until,
	     (unsigned long long)ts_from, (unsigned long long)ts_until);
	if (was_fenced)
		logm(AG_INFO, "event=unfenced%s datacenter=%u worker=%u reason=lease-held floor_ms=%llu ceiling_ms=%llu",
		     a->dev->tag, a->dc, a->w, (unsigned long long)a->floor_ms,
		     (unsigned long long)a->mark_ms);
	return 0;
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

/* FNV-1a, 64 bits: a host name or a machine id spread over the pool. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

/*
 * The host's IPv4 address as a number: the first one, in the kernel's
 * order of the interfaces, that is up and neither loopback nor link-local
 * (169.254/16).  0 when there is none.
 */
static uint32_t host_ipv4(char *text, size_t len)
{
	struct ifaddrs *ifs, *i;
	uint32_t v = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (i = ifs; i && !v; i = i->ifa_next) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;
		uint32_t h;

		if (!in || in->sin_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		h = ntohl(in->sin_addr.s_addr);
		if ((h >> 16) == 0xa9fe || (h >> 24) == 127 || !h)
			continue;
		v = h;
		inet_ntop(AF_INET, &in->sin_addr, text, (socklen_t)len);
	}
	freeifaddrs(ifs);
	return v;
}

/*
 * prefer = ip, hostname or machine-id: a pair derived from the host (what
 * the ID generators that take worker ids from a store do: the low bits of
 * the address, a hash of a name), so that a host tends to get the same
 * pair each time, which helps operators read IDs.  Only a hint for which
 * free pair to try first (acquire()): it is claimed like any other, a held
 * one is skipped, and it never replaces a lease.  The number, modulo the
 * pool, is the pair's place in the order acquire() walks the pool in.
 */
static void prefer_derived(struct agent *a)
{
	const struct ag_conf *c = a->c;
	uint32_t ndc = a->dc_hi - a->dc_lo + 1;
	char from[256] = "", line[128];
	uint64_t v = 0, n;
	FILE *f;

	switch (c->prefer) {
	case AG_PREFER_IP:
		v = host_ipv4(from, sizeof(from));
		break;
	case AG_PREFER_HOSTNAME:
		if (!gethostname(from, sizeof(from) - 1) && from[0])
			v = fnv1a(from);
		break;
	case AG_PREFER_MACHINE_ID:
		f = fopen("/etc/machine-id", "re");
		if (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (line[0]) {
				v = fnv1a(line);
				snprintf(from, sizeof(from), "%s", line);
			}
		}
		if (f)
			fclose(f);
		break;
	default:
		return;
	}
	if (!v) {
		logm(AG_WARN, "event=prefer_unavailable prefer=%s: %s; no pair is preferred",
		     ag_prefer_name(c->prefer),
		     c->prefer == AG_PREFER_IP ? "no IPv4 address on an interface that is up" :
		     c->prefer == AG_PREFER_HOSTNAME ? "no host name" : "no /etc/machine-id");
		return;
	}
	n = v % a->pool;
	a->have_pref = true;
	a->pref_dc = a->dc_lo + (uint32_t)(n % ndc);
	a->pref_w = a->w_lo + (uint32_t)(n / ndc);
	logm(AG_INFO, "event=preferred datacenter=%u worker=%u prefer=%s from=%s",
	     a->pref_dc, a->pref_w, ag_prefer_name(c->prefer), from);
}

/*
 * The pair held becomes the preferred one (also without a state file);
 * the file is written crash-safe: a temporary file, fsync, rename, fsync
 * of the directory.
 */
static void state_save(struct agent *a)
{
	const char *path = a->c->state_file;
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	char buf[64];
	int fd, n, dfd;

	if (a->have_pref && a->pref_dc == a->dc && a->pref_w == a->w)
		return;
	a->have_pref = true;
	a->pref_dc = a->dc;
	a->pref_w = a->w;
	if (!*path)
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
}

/* ---------------------------------------------------------------- */
/* The lease                                                         */
/* ---------------------------------------------------------------- */

/* The lease is gone or may be: fence first, then everything else. */
static void lease_lost(struct agent *a, const char *why)
{
	(void)fence_now(a, why);
	a->held = false;
	a->serving = false;
	a->next_acquire = boot_ns();
	notify("STATUS=fenced: no lease");
}

/*
 * A new claim (@readopt false): the pair's mark as the store held it at
 * the claim bounds every timestamp an earlier holder may have stamped, so
 * this lease's floor is just above it.  A re-adoption of this run's own
 * lease (@readopt) keeps the floor: nobody else held the pair meanwhile.
 */
static void lease_taken(struct agent *a, uint32_t dc, uint32_t w, int64_t sent, uint64_t mark,
			bool readopt)
{
	const struct ag_conf *c = a->c;

	if (!readopt) {
		a->floor_ms = mark + 1;
		a->mark_ms = mark;
	} else if (mark > a->mark_ms) {
		a->mark_ms = mark;
	}
	ag_quarantine_clear(a->quarantine, pair_index(a, dc, w));
	a->missing_logged = false;
	a->walk_on = false;	/* the next walk, after this lease, starts afresh */
	a->held = true;
	a->serving = false;
	/*
	 * A re-adoption keeps the settle time of the claim it re-adopts: the
	 * pair's earlier holder may serve until its fence, and a connection
	 * lost while settling must not cut that wait short (seen in the lease
	 * lane: 263 ms of two owners at once on ZooKeeper; the contract's
	 * settle_readopt).  After a claim, claim_one() sets it anew.
	 */
	if (!readopt)
		a->settle_until = 0;
	a->dc = dc;
	a->w = w;
	key_of(a, dc, w, a->key, sizeof(a->key));
	a->sent_ns = sent;
	a->fence_at = sent + (int64_t)(c->ttl_ms - c->margin_ms) * NS_PER_MS;
	a->next_renew = sent + (int64_t)c->renew_ms * NS_PER_MS;
	a->m_claims++;
	logm(AG_INFO, "event=claimed datacenter=%u worker=%u key=%s ttl_ms=%u owner=%s mark_ms=%llu",
	     dc, w, a->key, c->ttl_ms, a->owner, (unsigned long long)mark);
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)boot_ns() * 6364136223846793005ULL + (uint64_t)getpid();
	return v;
}

/*
 * A pair whose mark is missing (or invalid: ag_mark_check()): the key
 * space is new (nobody ran snowflake-agent --init-store), the store lost
 * its data, or someone wrote something else.  Taking it as 0 would let
 * this host stamp timestamps an earlier holder stamped, so the pair is not
 * claimed: by default never (until an operator initialises the marks), or,
 * with mark-quarantine-ms, once this run has seen *this pair's* mark
 * missing for that long, without a gap (a->quarantine, per pair: a
 * sighting of another pair, or of this one long ago, counts for nothing),
 * with the mark started at this host's own clock.  The quarantine is safe
 * when it is longer than the largest clock difference between hosts plus
 * the TTL plus mark-step-ms (snowflake-agent(8)).  Returns the mark to
 * create (0: none yet).
 */
static uint64_t missing_mark(struct agent *a, uint32_t dc, uint32_t w, bool invalid)
{
	const struct ag_conf *c = a->c;
	int64_t now = boot_ns(), since, gap;
	uint64_t ts;

	/*
	 * Two sightings farther apart than the longest backoff between two
	 * walks of the pool (full_backoff(): max(ttl, 1 s)) plus a walk and
	 * its store timeouts are not one quarantine: it starts again.
	 */
	gap = (int64_t)(c->ttl_ms > 1000 ? c->ttl_ms : 1000) * NS_PER_MS + 2 * a->walk_ns +
	      (int64_t)(2 * ag_conf_timeout_ms(c) + 1000) * NS_PER_MS;
	since = ag_quarantine_seen(a->quarantine, pair_index(a, dc, w), now, gap);
	/* Warn once until a lease is taken (a walk of a new key space sees every pair so). */
	if (since == now) {
		logm(a->missing_logged ? AG_DEBUG : AG_WARN,
		     "event=mark_missing datacenter=%u worker=%u prefix=%s cluster=%s%s: the store has no valid timestamp mark for this pair: a new key space (run snowflake-agent --init-store once) or a store that lost its data; %s",
		     dc, w, c->prefix, c->cluster, invalid ? " invalid=1" : "",
		     c->mark_quarantine_ms < 0 ? "not claiming it (mark-quarantine-ms = never)" :
		     "claiming it only after mark-quarantine-ms");
		a->missing_logged = true;
	}
	if (c->mark_quarantine_ms < 0 || now - since < c->mark_quarantine_ms * NS_PER_MS)
		return 0;
	if (dev_next_ts(a, &ts))
		return 0;
	if (ts > a->mark_max_ms)
		return 0;
	logm(AG_WARN, "event=mark_quarantine_over datacenter=%u worker=%u mark_ms=%llu quarantine_ms=%lld",
	     dc, w, (unsigned long long)ts, c->mark_quarantine_ms);
	return ts;
}

/*
 * G6, once for every store: a claim whose outcome is unknown (TRY_UNKNOWN:
 * no reply, or one that cannot be read) may have bound the pair's key to
 * this run's owner, a lease the loop does not know it holds.  Before any
 * other store step (a claim walk, a re-adoption, the stop) the pair is
 * given back where its key still holds this run's owner (give_back():
 * delete-if-owner); until that has an answer no other step is taken, and
 * nothing is resent.  It was never served (the claim never returned), so
 * its next holder's settle is all the wait it needs.  0 done (or nothing
 * to do), -1 not yet (the store did not answer: asked again next time).
 */
static int resolve_unknown(struct agent *a)
{
	char key[512];
	int v;

	if (!a->unknown)
		return 0;
	v = a->st->give_back(a, a->unknown_dc, a->unknown_w);
	if (v < 0)
		return -1;
	/*
	 * A claim of the pair this run held last, committed and given back:
	 * that tenure is over for good.  The claim was made because the pair
	 * was lost (a held pair is never claimed), so another holder may have
	 * served it in between; a store whose give-back keeps the owner
	 * (MySQL: the row names who held it last) would answer the next
	 * readopt() with "ours", and lease_taken() would keep the floor of
	 * the tenure before that holder: two windows of one pair overlapping
	 * (the simulator's seed 81 on MySQL; the contract's
	 * claim_undone_after_tenure).  Forgotten, the pair is claimed afresh,
	 * its floor above the mark.  (Not when the claim had not committed:
	 * then the pair's key may still be this run's own from that tenure,
	 * which the next readopt() must be offered.)
	 */
	if (v == 1 && a->key[0] && a->dc == a->unknown_dc && a->w == a->unknown_w)
		a->key[0] = '\0';
	key_of(a, a->unknown_dc, a->unknown_w, key, sizeof(key));
	logm(AG_WARN, "event=claim_undone datacenter=%u worker=%u key=%s: a claim whose reply was lost %s",
	     a->unknown_dc, a->unknown_w, key,
	     v == 1 ? "had committed: given back" : "had not committed");
	a->unknown = false;
	return 0;
}

/*
 * Give the lease held back, after the fence (the stop, a device that
 * failed): give_back() on its pair, the same delete-if-owner that undoes
 * an unknown claim, asked once and bounded by the store's timeout.  The
 * device is fenced first, so whether the store answers or not nothing is
 * stamped with the pair any more; a key not given back ends with its
 * lease within the TTL, as a dead holder's does (G2).
 */
static void release(struct agent *a)
{
	int v = a->st->give_back(a, a->dc, a->w);

	if (v == 1)
		logm(AG_INFO, "event=released datacenter=%u worker=%u key=%s", a->dc, a->w, a->key);
	else
		logm(AG_WARN, "event=release_failed key=%s: %s", a->key,
		     v == 0 ? "not ours any more" : "the store did not answer; it expires by itself");
	a->held = false;
}

/* One claim of (@dc, @w), with a missing or invalid mark handled; TRY_*. */
static int claim_one(struct agent *a, uint32_t dc, uint32_t w, bool *no_mark)
{
	uint64_t mark = 0, init = 0;
	int64_t sent;
	int ret;

	for (;;) {
		ret = a->st->claim(a, dc, w, &sent, &mark, init);
		if ((ret != TRY_NO_MARK && ret != TRY_BAD_MARK) || init)
			break;
		init = missing_mark(a, dc, w, ret == TRY_BAD_MARK);
		if (!init)
			break;
	}
	if (ret == TRY_UNKNOWN) {
		/* Maybe committed: given back now, or before the next step. */
		a->unknown = true;
		a->unknown_dc = dc;
		a->unknown_w = w;
		(void)resolve_unknown(a);
		return TRY_ERROR;
	}
	if (ret == TRY_NO_MARK || ret == TRY_BAD_MARK) {
		*no_mark = true;
		return TRY_NO_MARK;
	}
	if (ret == TRY_REFUSED) {
		/* Not committed, this pair only (an ACL): the walk moves on. */
		logm(AG_WARN, "event=claim_refused datacenter=%u worker=%u: the store refused this pair's claim (see above); trying the other pairs",
		     dc, w);
		return TRY_HELD;
	}
	if (ret == TRY_HELD)	/* a holder: the next sighting of a missing mark starts afresh */
		ag_quarantine_clear(a->quarantine, pair_index(a, dc, w));
	if (ret == TRY_TAKEN) {
		lease_taken(a, dc, w, sent, mark, false);
		a->settle_until = boot_ns() + (int64_t)a->c->settle_ms * NS_PER_MS;
	}
	return ret;
}

/*
 * Claim a pair: first the pair this run held or claimed last, only if its
 * key still holds this run's owner; then the preferred pair (the state
 * file's, or the last held) if free, then every pair of the pool from a
 * random start.  Returns TRY_TAKEN, TRY_HELD (the whole pool is held),
 * TRY_NO_MARK (no pair is free with a mark) or TRY_ERROR.
 *
 * A walk outlives a failed request: TRY_ERROR ends this call, and the
 * next one (after the retry's wait) goes on from the pair whose request
 * failed, not from a new random start.  A walk that started again after
 * every failure never ended under a store that fails one request in a
 * few hundred: the 1,025th agent of a fleet of 1,024 on ZooKeeper walked
 * for 300 s and never said pool_full (BENCHMARKS.md, P10).  Going on is
 * safe because nothing is skipped that was not seen held or markless in
 * this walk, and because a claim whose outcome is unknown is resolved
 * (resolve_unknown(), at the top) before the walk takes another step: the
 * walk never goes past a claim that may have committed.
 *
 * The pair claimed last is offered back even when it was never served (it
 * settled, then its renewals failed and the device fenced): its key may
 * still be bound to this run's lease, which a store keeps alive for the
 * next claim (etcd's lease, ZooKeeper's session); left alone, the walk
 * would find it held by another and, with a pool of one pair, never claim
 * again.  So no store undoes an earlier claim of its own (etcd.c
 * e_claim()): the engine takes it back here, or learns it is not ours.
 */
static int acquire(struct agent *a)
{
	uint32_t ndc = a->dc_hi - a->dc_lo + 1;
	bool no_mark = false;
	uint64_t mark = 0;
	int64_t wait, sent, seg_from;
	int ret;

	if (resolve_unknown(a))
		return TRY_ERROR;
	if (a->key[0]) {	/* a pair this run claimed, served or not (lease_taken() sets the key) */
		ret = a->st->readopt(a, a->dc, a->w, &sent, &mark);
		if (ret == TRY_TAKEN) {
			/* Our own lease all along: nobody else can have used the pair. */
			lease_taken(a, a->dc, a->w, sent, mark, true);
			return ret;
		}
		/* Not ours any more, or its mark invalid: claimed afresh like any pair. */
		if (ret != TRY_HELD && ret != TRY_BAD_MARK)
			return ret;
	}
	wait = a->st->claim_wait(a);
	if (wait) {
		a->claim_wait_ns = wait;
		return TRY_ERROR;
	}
	if (a->have_pref) {
		ret = claim_one(a, a->pref_dc, a->pref_w, &no_mark);
		if (ret != TRY_HELD && ret != TRY_NO_MARK)
			return ret;
		if (ret == TRY_HELD)
			logm(AG_INFO, "event=preferred_busy datacenter=%u worker=%u",
			     a->pref_dc, a->pref_w);
	}
	if (!a->walk_on) {
		a->walk_on = true;
		a->walk_start = rnd64() % a->pool;
		a->walk_i = 0;
		a->walk_no_mark = false;
		a->walk_active_ns = 0;
	}
	a->walk_no_mark |= no_mark;	/* the preferred pair's */
	seg_from = boot_ns();
	for (; a->walk_i < a->pool && !ag_stop_pending(); a->walk_i++) {
		uint64_t n = (a->walk_start + a->walk_i) % a->pool;
		uint32_t dc = a->dc_lo + (uint32_t)(n % ndc);
		uint32_t w = a->w_lo + (uint32_t)(n / ndc);

		if (a->have_pref && dc == a->pref_dc && w == a->pref_w)
			continue;
		ret = claim_one(a, dc, w, &a->walk_no_mark);
		if (ret != TRY_HELD && ret != TRY_NO_MARK) {
			/* TRY_TAKEN: lease_taken() ended the walk; else resumed here */
			a->walk_active_ns += boot_ns() - seg_from;
			return ret;
		}
	}
	a->walk_active_ns += boot_ns() - seg_from;
	if (stop_signal)
		return TRY_ERROR;
	/*
	 * A whole walk: how long the next may take (missing_mark()'s gap), its
	 * time in store calls, not the retries' waits between its parts.
	 */
	a->walk_on = false;
	a->walk_ns = a->walk_active_ns;
	return a->walk_no_mark ? TRY_NO_MARK : TRY_HELD;
}

static int renew(struct agent *a, bool for_serve);

/*
 * After a claim has settled: a renewal that raises the mark above the
 * floor (the ceiling must be a mark the store accepted), then the pair on
 * the device, the fence lifted.  1 served; 0 the lease is lost; -EAGAIN
 * the store failed (try again); -ESTALE, -ETIME, or another -errno: the
 * device failed.
 */
static int serve(struct agent *a)
{
	int ret = renew(a, true);

	if (ret == -1)
		return -EAGAIN;	/* not -1: that is -EPERM from the device */
	if (ret != 1)
		return ret;
	ret = program_pair(a, true, a->fence_at);
	if (ret)
		return ret;
	a->serving = true;
	a->ever_held = true;
	state_save(a);
	if (!a->ready_sent) {
		notify("READY=1");
		a->ready_sent = true;
	}
	notify("STATUS=serving");
	return 1;
}

static int make_owner(struct agent *a);

/*
 * The device refused the pair with ESTALE: the VM was cloned or restored
 * from a snapshot since this identity was made.  This process may be the
 * clone of an agent that runs on in the parent, with the same owner and
 * the same lease: drop all of it without a word to the store (no renewal,
 * no release: the lease is the parent's), start the store afresh, draw a
 * new owner (getrandom(2) is reseeded after a VM fork) and claim a new
 * pair.  The device refuses reads meanwhile (vm_forked).  0 or an exit code.
 */
static int vm_forked(struct agent *a)
{
	uint32_t was = a->vm_forks, n = was;
	int ret;

	(void)fence_now(a, "vm-fork");
	ret = snowflake_get_vm_forks(a->sf, &n);
	logm(AG_WARN, "event=vm_fork vm_forks=%u was=%u datacenter=%u worker=%u old_owner=%s: the lease is the parent's; a new owner claims a new pair%s%s",
	     n, was, a->dc, a->w, a->owner, ret ? " error=" : "", ret ? snowflake_strerror(ret) : "");
	a->held = false;
	a->serving = false;
	a->ever_held = false;
	a->have_pref = false;
	a->st->fini(a);
	ret = a->st->init(a);
	if (!ret)
		ret = make_owner(a);
	if (ret)
		return ret;
	a->vm_forks = n;
	a->next_acquire = boot_ns();
	notify("STATUS=fenced: VM fork, claiming a new pair");
	return 0;
}

/*
 * The kernel range (docs/reference.md, "Kernel range"): can this kernel
 * tell the module of a VM fork at all (sysfs vm_fork_notifier: Linux 5.18
 * with CONFIG_VMGENID)?  If not, a clone or snapshot restore of this VM
 * would run on with this lease's pair beside its parent: say so once, at
 * start (event=no_vm_fork_notifier); the agent still runs, since a VM that
 * is never cloned is safe.  A module without the file says nothing.
 */
static void warn_if_no_vm_fork_notifier(int dev_fd)
{
	char path[64], v = '1';
	struct stat st;
	FILE *f;

	if (fstat(dev_fd, &st) || !S_ISCHR(st.st_mode))
		return;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/vm_fork_notifier",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(path, "re");
	if (!f)
		return;
	if (fread(&v, 1, 1, f) != 1)
		v = '1';
	fclose(f);
	if (v == '0')
		logm(AG_WARN, "event=no_vm_fork_notifier: this kernel cannot report a VM fork to the module (Linux 5.18 with CONFIG_VMGENID can): a clone or snapshot restore of this VM would keep this lease's pair beside its parent and issue duplicate IDs; never clone or restore this VM while the agent runs");
}

/* Has the device seen another VM fork count than this identity's? */
static bool vm_fork_reported(struct agent *a)
{
	uint32_t n;

	return !snowflake_get_vm_forks(a->sf, &n) && n != a->vm_forks;
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
	int64_t left = a->held ? (a->fence_at - boot_ns()) / NS_PER_MS : 0;
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
	put_metric(f, "store_errors_total", "counter",
		   "Failed claims and renewals (the store unreachable or failing).");
	fprintf(f, "snowflake_agent_store_errors_total %llu\n",
		(unsigned long long)a->m_store_errors);
	put_metric(f, "mark_raises_total", "counter",
		   "Times the agent raised its pair's timestamp mark in the store.");
	fprintf(f, "snowflake_agent_mark_raises_total %llu\n", (unsigned long long)a->m_mark_raises);
	put_metric(f, "mark_timestamp_seconds", "gauge",
		   "The pair's timestamp mark (Unix time) as the store last accepted it: the device's ceiling (0: no lease).");
	fprintf(f, "snowflake_agent_mark_timestamp_seconds %llu.%03llu\n",
		a->held ? (unsigned long long)(a->mark_ms / 1000) : 0ULL,
		a->held ? (unsigned long long)(a->mark_ms % 1000) : 0ULL);
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

/*
 * Renew: 1 renewed, 0 lost (the key is gone or someone else's), -1 failed,
 * -ESTALE (a VM fork).  While the pair is served (or is about to be,
 * @for_serve), the mark is raised in the same store call when less than
 * half of mark-step-ms is left above the device's next timestamp: to that
 * timestamp + mark-step-ms.  Only once the store has accepted it does
 * a->mark_ms, and with it the ceiling the device gets, move up: a reply
 * that never comes leaves the device at the old ceiling, which is at most
 * the store's mark whatever happened to the request.
 */
static int renew(struct agent *a, bool for_serve)
{
	const struct ag_conf *c = a->c;
	uint64_t next = 0, raise = 0, held = AG_MARK_UNREAD, want;
	int64_t sent, until;
	int ret;

	if (a->serving || for_serve) {
		ret = dev_next_ts(a, &next);
		if (ret) {
			logm(AG_ERR, "event=device_failed error=\"%s\"", snowflake_strerror(ret));
			return -1;
		}
		if (next < a->floor_ms)
			next = a->floor_ms;
		if (a->mark_ms < next + c->mark_step_ms / 2)
			raise = next + c->mark_step_ms;
	}
	/* Nothing may run past the fence time. */
	ret = a->st->renew(a, a->fence_at, &sent, raise, &held);
	if (ret <= 0)
		return ret;
	/*
	 * The store holds a mark below what it accepted from this holder
	 * (lost by a crash, a failover to a lagging replica, a restore, an
	 * operator): the next holder would read it and set its floor inside
	 * this holder's window.  Raised again at once, in the same proof,
	 * before anything is served further; when that does not succeed the
	 * device is fenced (the lease dropped, the pair re-adopted only with
	 * the mark raised: readopt()).  Only a mark the store has now
	 * accepted again is the ceiling.
	 */
	want = raise > a->mark_ms ? raise : a->mark_ms;
	if (held != AG_MARK_UNREAD && held < want && held >= a->mark_ms) {
		/*
		 * Not lowered: the raise was refused (ZooKeeper: the mark's
		 * version moved, a raise of this holder's that landed late) and
		 * the store holds what this holder accepted or more.
		 */
		logm(AG_INFO, "event=mark_raise_again datacenter=%u worker=%u key=%s store_mark_ms=%llu mark_ms=%llu: the raise was refused (the mark moved, still this holder's); raising it again",
		     a->dc, a->w, a->key, (unsigned long long)held, (unsigned long long)want);
	} else if (held != AG_MARK_UNREAD && held < want) {
		logm(AG_WARN, "event=mark_lowered datacenter=%u worker=%u key=%s store_mark_ms=%llu mark_ms=%llu: the store lost the mark this holder raised; raising it again before serving further",
		     a->dc, a->w, a->key, (unsigned long long)held, (unsigned long long)want);
	}
	if (held != AG_MARK_UNREAD && held < want) {
		ret = a->st->renew(a, a->fence_at, &sent, want, &held);
		if (ret != 1 || (held != AG_MARK_UNREAD && held < want)) {
			(void)fence_now(a, "mark-lowered");
			a->serving = false;
			return ret == 0 ? 0 : -1;
		}
		raise = want;
	}
	until = sent + (int64_t)(c->ttl_ms - c->margin_ms) * NS_PER_MS;
	a->m_renewals++;
	a->m_renew_ms_sum += (boot_ns() - sent) / NS_PER_MS;
	if (raise > a->mark_ms) {
		a->mark_ms = raise;
		a->m_mark_raises++;
		hist(a, "mark pair=%u:%u space=%s:%s owner=%s value=%llu at=%lld", a->dc, a->w,
		     c->prefix, c->cluster, a->owner, (unsigned long long)raise,
		     (long long)boot_ns());
	}
	if (a->serving) {
		ret = program_pair(a, false, until);
		if (ret)
			return ret == -ESTALE ? -ESTALE : -1;
	}
	a->sent_ns = sent;
	a->fence_at = until;
	a->next_renew = sent + (int64_t)c->renew_ms * NS_PER_MS;
	logm(AG_DEBUG, "event=renewed key=%s mark_ms=%llu", a->key, (unsigned long long)a->mark_ms);
	/*
	 * G5 while holding: a store that became able to lose the mark (a
	 * replica added, fsync turned off) is seen within a TTL, not only at
	 * the next connection.  a->fatal ends the loop: fence, release, exit.
	 */
	if (a->st->recheck && boot_ns() >= a->next_recheck) {
		if (!a->st->recheck(a, a->fence_at))
			a->next_recheck = boot_ns() + (int64_t)c->ttl_ms * NS_PER_MS;
		if (a->fatal)
			(void)fence_now(a, "store-unusable");
	}
	return 1;
}

/*
 * Sleep until @until (boottime ns) or a stop signal.  Those are blocked
 * everywhere else and let in only here, atomically, so one that arrives
 * while the agent works is not missed: it ends this sleep at once.  The
 * timer is a CLOCK_BOOTTIME timerfd: a suspend does not stretch it.
 */
static void sleep_until(struct agent *a, int64_t until)
{
	struct itimerspec its;
	struct pollfd p = { .fd = a->tfd, .events = POLLIN };
	sigset_t none;
	uint64_t n;

	if (until <= boot_ns() || stop_signal)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = until / 1000000000LL;
	its.it_value.tv_nsec = until % 1000000000LL;
	if (timerfd_settime(a->tfd, TFD_TIMER_ABSTIME, &its, NULL))
		return;
	sigemptyset(&none);
	if (ppoll(&p, 1, NULL, &none) > 0)
		(void)!read(a->tfd, &n, sizeof(n));
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

/*
 * A full pool (or no pair with a valid mark): try again after
 * ag_full_backoff() (backoff.c): doubling from min(renew-ms, 1 s) up to
 * max(ttl, 1 s), jittered down to half, never up, which the liveness bound
 * (a pair freed while the store answers is served within ttl + settle-ms
 * + 1 s, snowflake-agent(8)) needs.  (It used to be up to 1.25 x max(ttl,
 * 1 s): past the bound for a TTL above 4 s.)
 */
static int64_t full_backoff(struct agent *a)
{
	return ag_full_backoff(&a->full_backoff_ns, a->c->ttl_ms, a->c->renew_ms, rnd64());
}

static int run(struct agent *a)
{
	const struct ag_conf *c = a->c;
	int64_t now, wake;
	int ret;

	for (;;) {
		if (stop_signal || a->fatal)
			break;
		/*
		 * A VM fork the kernel has reported: drop the identity before
		 * anything else talks to the store, so that a clone never
		 * renews (nor releases) its parent's lease.  What the kernel
		 * has not reported yet, set_lease's ESTALE catches.
		 */
		if (a->sf && vm_fork_reported(a)) {
			a->fatal = vm_forked(a);
			continue;
		}
		now = boot_ns();

		/* The store's library saw the connection drop: fenced already. */
		if (a->held && store_lost_seen()) {
			lease_lost(a, "store-connection-lost");
			continue;
		}
		if (a->held && (now >= a->fence_at || wd_fired)) {
			lease_lost(a, "lease-not-renewed");
			if (!a->fenced)
				return AG_EXIT_RUNTIME;
			/* How long after the last renewal was sent the fence was up. */
			logm(AG_WARN, "event=fence_latency datacenter=%u worker=%u since_renew_ms=%lld ttl_ms=%u margin_ms=%u",
			     a->dc, a->w, (long long)((boot_ns() - a->sent_ns) / NS_PER_MS),
			     c->ttl_ms, c->margin_ms);
			continue;
		}
		if (a->held && !a->serving && now >= a->settle_until) {
			ret = serve(a);
			if (ret == 1)
				continue;
			if (ret == -ESTALE) {
				a->fatal = vm_forked(a);
				continue;
			}
			if (ret == -ETIME) {
				lease_lost(a, "reply-too-late");
				continue;
			}
			if (ret == -ENOLINK) {
				lease_lost(a, "store-connection-lost");
				continue;
			}
			if (ret == 0) {
				lease_lost(a, "lease-lost");
				logm(AG_WARN, "event=lease_lost datacenter=%u worker=%u key=%s",
				     a->dc, a->w, a->key);
				continue;
			}
			if (ret == -EAGAIN) {
				/* The store failed: try again soon, never past the fence. */
				a->m_store_errors++;
				a->settle_until = boot_ns() +
					(int64_t)(c->renew_ms / 5 > 50 ? c->renew_ms / 5 : 50) * NS_PER_MS;
				continue;
			}
			(void)fence_now(a, "device-failed");
			release(a);
			return AG_EXIT_RUNTIME;
		}
		if (a->held && now >= a->next_renew) {
			ret = renew(a, false);
			if (ret == 0) {
				lease_lost(a, "lease-lost");
				logm(AG_WARN, "event=lease_lost datacenter=%u worker=%u key=%s",
				     a->dc, a->w, a->key);
				if (!a->fenced)
					return AG_EXIT_RUNTIME;
			} else if (ret == -ESTALE) {
				a->fatal = vm_forked(a);
			} else if (ret < 0) {
				a->m_store_errors++;
				/* Try again soon, but never past the fence. */
				a->next_renew = boot_ns() +
					(int64_t)(c->renew_ms / 5 > 50 ? c->renew_ms / 5 : 50) * NS_PER_MS;
			}
			continue;
		}
		if (!a->held && now >= a->next_acquire) {
			/*
			 * A connection lost while no lease was held says nothing
			 * of a claim sent from now on (ag_store_lost()).
			 */
			__atomic_store_n(&store_lost, 0, __ATOMIC_SEQ_CST);
			ret = acquire(a);
			if (ret == TRY_TAKEN) {
				/* Served by the settle step above, at once or after settle-ms. */
				a->full_backoff_ns = 0;
				a->full_logged = false;
				if (a->settle_until > boot_ns())
					logm(AG_INFO, "event=settling datacenter=%u worker=%u settle_ms=%d",
					     a->dc, a->w, c->settle_ms);
				continue;
			}
			if (ret == TRY_NO_MARK) {
				/* missing_mark() said why; try again as for a full pool. */
				a->next_acquire = boot_ns() + full_backoff(a);
				continue;
			}
			if (ret == TRY_HELD) {
				logm(a->full_logged ? AG_DEBUG : AG_WARN,
				     "event=pool_full datacenters=%u-%u workers=%u-%u pairs=%llu prefix=%s cluster=%s: every id is held by another owner; trying again",
				     a->dc_lo, a->dc_hi, a->w_lo, a->w_hi,
				     (unsigned long long)a->pool, c->prefix, c->cluster);
				a->full_logged = true;
				a->next_acquire = boot_ns() + full_backoff(a);
				continue;
			}
			a->next_acquire = boot_ns() + ag_retry_wait(c->renew_ms, rnd64());
			if (a->claim_wait_ns <= 0)
				a->m_store_errors++;
			if (a->claim_wait_ns > 0) {
				a->next_acquire = boot_ns() +
					(a->claim_wait_ns < 1000 * NS_PER_MS ? a->claim_wait_ns
									     : 1000 * NS_PER_MS);
				a->claim_wait_ns = 0;
			}
			continue;
		}
		wake = a->held ? (a->next_renew < a->fence_at ? a->next_renew : a->fence_at)
			       : a->next_acquire;
		if (a->held && !a->serving && a->settle_until < wake)
			wake = a->settle_until;
		metrics_write(a);
		sleep_until(a, wake);
	}

	/* Fence first: the id must not be used once it may be someone else's. */
	stopping = true;
	(void)fence_now(a, a->fatal ? "store-unusable" : "agent-stopped");
	logm(AG_INFO, "event=stopping signal=%d", (int)stop_signal);
	notify("STOPPING=1");
	if (a->held) {
		release(a);
	}
	/*
	 * A claim whose outcome is unknown: given back too, not left for a
	 * TTL; asked again (a store reconnecting) for up to half a TTL, or
	 * until a second stop signal or the stop's bound (ag_stop_pending()).
	 */
	if (a->unknown) {
		int64_t end = boot_ns() + (int64_t)c->ttl_ms / 2 * NS_PER_MS;

		while (resolve_unknown(a) && !ag_stop_pending() && boot_ns() < end)
			(void)poll(NULL, 0, 50);
		if (a->unknown)
			logm(AG_WARN, "event=release_failed datacenter=%u worker=%u: a claim whose reply was lost could not be given back; it expires by itself",
			     a->unknown_dc, a->unknown_w);
	}
	metrics_write(a);
	return a->fatal ? a->fatal : AG_EXIT_OK;
}

/* The device: open, layout, strict mode, fenced.  0 or an exit code. */
static int setup_device(struct agent *a)
{
	struct ag_conf *c = a->c;
	struct snowflake_config layout;
	struct snowflake_stats st;
	int ret;

	/* For writing: the fence and the lease need the right to configure. */
	ret = snowflake_open(&a->sf, c->device, SNOWFLAKE_CONFIGURE);
	if (!ret)
		ret = snowflake_get_config(a->sf, &layout);
	if (!ret)
		ret = snowflake_get_stats(a->sf, &st);
	if (ret) {
		logm(AG_ERR, "cannot use %s: %s", c->device ? c->device : "the device",
		     snowflake_strerror(ret));
		return AG_EXIT_RUNTIME;
	}
	wd_dev_fd = snowflake_fd(a->sf);
	warn_if_no_vm_fork_notifier(wd_dev_fd);
	/* The identity made now belongs to this VM's current fork count. */
	ret = snowflake_get_vm_forks(a->sf, &a->vm_forks);
	if (ret) {
		logm(AG_ERR, "cannot read the device's VM forks (statistics/vm_forks): %s; the module is older than this agent (it needs the lease deadline and VM-fork fencing of snowflake 1.2)",
		     snowflake_strerror(ret));
		return AG_EXIT_RUNTIME;
	}
	/* Nothing is served until a lease is held. */
	if (fence_now(a, "no-lease-yet"))
		return AG_EXIT_RUNTIME;
	if (!(st.state & SNOWFLAKE_STATE_STRICT)) {
		logm(AG_ERR, "event=not_strict device=%s: the module is not in strict mode, so it issues IDs with its own ids before any lease is held (and after a reload); load it with strict=1 (modprobe snowflake strict=1, /etc/modprobe.d/snowflake.conf)",
		     c->device ? c->device : "(default)");
		return AG_EXIT_NOT_STRICT;
	}
	/*
	 * The window holds whole ticks: with a time unit longer than half the
	 * step, the floor's tick could start above the ceiling (an empty
	 * window, every read refused).
	 */
	if (c->mark_step_ms < 2ULL * layout.time_unit_ms) {
		logm(AG_WARN, "event=mark_step_raised mark_step_ms=%u time_unit_ms=%u: the step must hold two ticks of the layout; using %llu",
		     c->mark_step_ms, layout.time_unit_ms, 2ULL * layout.time_unit_ms);
		c->mark_step_ms = 2 * layout.time_unit_ms;
	}
	a->mark_max_ms = ag_layout_max_ms(layout.epoch_ms, layout.timestamp_bits, layout.time_unit_ms);
	return setup_pool(a, layout.datacenter_bits, layout.worker_bits);
}

static int setup_signals(struct agent *a)
{
	struct sigaction sa;
	struct sigevent sev;
	sigset_t block;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
		sigaction(stop_signals[i], &sa, NULL);
		sigaddset(&block, stop_signals[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	/*
	 * ag_store_lost()'s wake-up of this thread, sent by a library's thread:
	 * blocked like the stop signals, so that it is let in only where the
	 * loop sleeps (sleep_until()), and one sent while the loop works is
	 * not lost but ends the next sleep at once.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_WAKE, &sa, NULL);
	sigaddset(&block, SIG_WAKE);
	sigprocmask(SIG_BLOCK, &block, NULL);
	main_thread = pthread_self();
	__atomic_store_n(&main_thread_set, true, __ATOMIC_RELEASE);

	/* The watchdog: never blocked but around its own re-arming. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watchdog;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(SIG_WATCHDOG, &sa, NULL);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIG_WATCHDOG;
	if (timer_create(CLOCK_BOOTTIME, &sev, &wd_timer)) {
		logm(AG_ERR, "timer_create(CLOCK_BOOTTIME): %s", strerror(errno));
		return AG_EXIT_RUNTIME;
	}
	wd_ok = true;
	a->tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
	if (a->tfd < 0) {
		logm(AG_ERR, "timerfd_create(CLOCK_BOOTTIME): %s", strerror(errno));
		return AG_EXIT_RUNTIME;
	}
	return 0;
}

/* label:32 hex digits from getrandom(2): a new owner at every start. */
static int make_owner(struct agent *a)
{
	const char *label = a->c->owner;
	unsigned char r[16];
	char host[128], hex[33];
	size_t i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		logm(AG_ERR, "getrandom: %s", strerror(errno));
		return AG_EXIT_RUNTIME;
	}
	for (i = 0; i < sizeof(r); i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	if (!label) {
		if (gethostname(host, sizeof(host)))
			strcpy(host, "unknown");
		host[sizeof(host) - 1] = '\0';
		label = host;
		/* The owner's one definition (validate.h), as for --owner. */
		if (!ag_owner_ok(host, strlen(host), sizeof(host) - 1)) {
			logm(AG_ERR, "event=owner_invalid: the host name is not printable ASCII, which every store keeps the owner as; give --owner LABEL");
			return AG_EXIT_USAGE;
		}
	}
	snprintf(a->owner, sizeof(a->owner), "%s:%s", label, hex);
	return 0;
}

/*
 * --init-store: create the mark of every pair of the pool where it is
 * missing, at init-mark-ms, and exit.  The pool comes from datacenter-ids
 * and worker-ids; where they are not given, from the device's layout when
 * it can be read, else from dry-run-bits.  A valid mark is never changed
 * (never lowered); an invalid one (event=mark_invalid) is replaced only
 * when the operator gave --init-mark-ms, and left otherwise (the pairs
 * stay unclaimable: exit 1).  A stop signal ends it between two pairs
 * (each one is a single atomic write: nothing is left half-written) with
 * exit 1 and interrupted=1.  0, or an exit code.
 */
static int init_store(struct agent *a)
{
	const struct ag_conf *c = a->c;
	uint64_t created = 0, present = 0, replaced = 0, invalid = 0, failed = 0, i;
	uint32_t ndc = a->dc_hi - a->dc_lo + 1;
	bool stopped;

	if (a->pool > (1u << 20)) {
		logm(AG_ERR, "--init-store: the pool has %llu pairs; give datacenter-ids and worker-ids to name the pairs this cluster uses",
		     (unsigned long long)a->pool);
		return AG_EXIT_USAGE;
	}
	if (c->init_mark_ms > a->mark_max_ms) {
		logm(AG_ERR, "--init-store: init-mark-ms %llu is above the layout's last timestamp %llu",
		     (unsigned long long)c->init_mark_ms, (unsigned long long)a->mark_max_ms);
		return AG_EXIT_USAGE;
	}
	for (i = 0; i < a->pool && !ag_stop_pending() && !a->fatal; i++) {
		uint32_t dc = a->dc_lo + (uint32_t)(i % ndc), w = a->w_lo + (uint32_t)(i / ndc);
		int r = -1, tries;

		/*
		 * A pair that failed (no answer: the store's next call goes to
		 * its next endpoint or connection; or the mark changed under
		 * the store's read) is asked again, up to 3 times: the engine
		 * decides it, never a store.  Each init_mark() is conditional
		 * (created only where absent, replaced only over the text read),
		 * so asking again after a lost reply finds the mark present.
		 * A pair whose record refuses us (INIT_REFUSED) is not asked
		 * again: counted failed, and the walk goes on.
		 */
		for (tries = 0; tries < 3 && r < 0 && !a->fatal && (!tries || !ag_stop_pending()); tries++)
			r = a->st->init_mark(a, dc, w, c->init_mark_ms, c->init_mark_given);

		if (r == INIT_CREATED)
			created++;
		else if (r == INIT_PRESENT)
			present++;
		else if (r == INIT_REPLACED)
			replaced++;
		else if (r == INIT_INVALID)
			invalid++;
		else
			failed++;
	}
	stopped = i < a->pool && !a->fatal;
	logm(failed || invalid || stopped || a->fatal ? AG_ERR : AG_INFO,
	     "event=store_initialised prefix=%s cluster=%s datacenters=%u-%u workers=%u-%u pairs=%llu created=%llu present=%llu replaced=%llu invalid=%llu failed=%llu mark_ms=%llu%s%s",
	     c->prefix, c->cluster, a->dc_lo, a->dc_hi, a->w_lo, a->w_hi,
	     (unsigned long long)a->pool, (unsigned long long)created,
	     (unsigned long long)present, (unsigned long long)replaced,
	     (unsigned long long)invalid, (unsigned long long)failed,
	     (unsigned long long)c->init_mark_ms, stopped ? " interrupted=1" : "",
	     invalid ? ": invalid marks were left (give --init-mark-ms above every ID ever issued to replace them)" :
	     replaced ? ": invalid marks were replaced at init-mark-ms (--init-mark-ms given)" : "");
	if (a->fatal)
		return a->fatal;
	return failed || invalid || stopped ? AG_EXIT_RUNTIME : AG_EXIT_OK;
}

/* The pool for --init-store: the device's layout if readable, else dry-run-bits. */
static int init_store_pool(struct agent *a)
{
	struct snowflake_config layout;
	struct snowflake *sf = NULL;

	if (!a->c->dry_run && !snowflake_open(&sf, a->c->device, 0) &&
	    !snowflake_get_config(sf, &layout)) {
		snowflake_close(sf);
		a->mark_max_ms = ag_layout_max_ms(layout.epoch_ms, layout.timestamp_bits,
						  layout.time_unit_ms);
		return setup_pool(a, layout.datacenter_bits, layout.worker_bits);
	}
	snowflake_close(sf);
	return setup_pool(a, a->c->dry_run_bits[0], a->c->dry_run_bits[1]);
}

int main(int argc, char **argv)
{
	struct ag_conf conf;
	struct agent a;
	char err[1024], where[512];
	int ret;

	memset(&a, 0, sizeof(a));
	a.hist_fd = -1;
	a.tfd = -1;
	/* The default layout's; the device's replaces it (setup_device(), init_store_pool()). */
	a.mark_max_ms = ag_layout_max_ms(SNOWFLAKE_TWITTER_EPOCH_MS, SNOWFLAKE_DEFAULT_TIMESTAMP_BITS,
					 SNOWFLAKE_DEFAULT_TIME_UNIT_MS);
	a.quarantine = &quarantine;
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
	/* Redis and etcd: the record design (record.c over the store's rec_ops). */
	if (conf.backend == AG_ETCD)
		ag_record_use(&a, &ag_etcd_rec_ops);
	else if (conf.backend == AG_MYSQL)
		a.st = &ag_mysql_ops;
	else if (conf.backend == AG_ZOOKEEPER)
		a.st = &ag_zookeeper_ops;
	else
		ag_record_use(&a, &ag_redis_rec_ops);
	log_level = conf.level;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	setvbuf(stderr, NULL, _IOLBF, 0);

	ret = setup_signals(&a);
	if (!ret)
		ret = make_owner(&a);
	if (!ret && *conf.history) {
		a.hist_fd = open(conf.history, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (a.hist_fd < 0) {
			logm(AG_ERR, "cannot open the history %s: %s", conf.history, strerror(errno));
			ret = AG_EXIT_RUNTIME;
		}
	}
	if (conf.argv_secret)
		logm(AG_WARN, "event=secret_on_command_line option=%s hint=\"every local user can read a command line (ps, /proc/PID/cmdline): put the password in the configuration file (0600) or hand it over with LoadCredential=\"",
		     conf.argv_secret);
	if (!ret && conf.init_store) {
		ret = init_store_pool(&a);
		if (!ret)
			ret = a.st->init(&a);
		if (!ret)
			ret = init_store(&a);
		if (a.store)
			a.st->fini(&a);
		ag_conf_free(&conf);
		return ret;
	}
	/* The dry-run device's raw clock: the wall clock at start, on CLOCK_BOOTTIME. */
	a.sim_anchor_ms = wall_ms() - boot_ns() / NS_PER_MS + conf.dry_run_clock_offset_ms;
	if (!ret) {
		if (conf.dry_run) {
			a.dev = &sim_dev;
			ret = setup_pool(&a, conf.dry_run_bits[0], conf.dry_run_bits[1]);
			a.fenced = true;
		} else {
			a.dev = &module_dev;
			ret = setup_device(&a);
		}
	}
	if (!ret)
		ret = a.st->init(&a);
	if (ret) {
		if (a.st && a.store)
			a.st->fini(&a);
		snowflake_close(a.sf);
		ag_conf_free(&conf);
		return ret;
	}
	a.st->describe(&a, where, sizeof(where));
	logm(AG_INFO, "event=start owner=%s backend=%s %s prefix=%s cluster=%s datacenters=%u-%u workers=%u-%u ttl_ms=%u renew_ms=%u margin_ms=%u mark_step_ms=%u%s",
	     a.owner, ag_store_name(&a), where, conf.prefix, conf.cluster,
	     a.dc_lo, a.dc_hi, a.w_lo, a.w_hi, conf.ttl_ms, conf.renew_ms, conf.margin_ms,
	     conf.mark_step_ms, conf.dry_run ? " dry_run=1" : "");
	hist(&a, "start owner=%s space=%s:%s pid=%d at=%lld clock_offset_ms=%lld", a.owner,
	     conf.prefix, conf.cluster, (int)getpid(), (long long)boot_ns(),
	     conf.dry_run_clock_offset_ms);
	if (conf.prefer == AG_PREFER_STATE)
		state_load(&a);
	else
		prefer_derived(&a);
	a.next_acquire = boot_ns();

	ret = run(&a);

	hist(&a, "exit owner=%s code=%d at=%lld", a.owner, ret, (long long)boot_ns());
	a.st->fini(&a);
	if (a.hist_fd >= 0)
		close(a.hist_fd);
	if (a.tfd >= 0)
		close(a.tfd);
	snowflake_close(a.sf);
	ag_conf_free(&conf);
	return ret;
}
