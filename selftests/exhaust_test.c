// SPDX-License-Identifier: GPL-2.0
/*
 * An exhausted tick: short reads, EAGAIN for non-blocking readers, poll
 * readiness, blocking readers waiting for the next tick, signals while
 * waiting.
 *
 * The module is loaded with sequence_bits=2 time_unit_ms=1000 (4 IDs a
 * second) or with a single ID per tick of 60 s or 2 s.  A non-blocking read
 * that fails with EAGAIN proves the tick is empty at that moment; whether
 * it is still the same tick when the next operation runs is checked with
 * the generator's clock read afterwards (GET_STATS clock_ms), which never
 * goes back: when it still lies in the tick of the last ID, the operation
 * ran in that tick too.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define FUTURE_TOL_MS	50

FIXTURE(exh) {
	int fd;
	struct snowflake_config cfg;
	uint64_t last;		/* last ID read */
	unsigned int eagains;	/* EAGAINs seen */
};

FIXTURE_SETUP(exh)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("sequence_bits=2 time_unit_ms=1000"));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	ASSERT_EQ(2, self->cfg.sequence_bits);
	ASSERT_EQ(1000, self->cfg.time_unit_ms);
}

FIXTURE_TEARDOWN(exh)
{
	if (self->fd >= 0)
		close(self->fd);
}

static uint64_t tick_of_id(const struct snowflake_config *cfg, uint64_t id)
{
	return sf_decode(cfg, id).ts;
}

/*
 * Read with O_NONBLOCK until EAGAIN: the tick is empty now.  Leaves the
 * file non-blocking.
 */
static void exhaust(struct __test_metadata *_metadata, int fd,
		    uint64_t *last, unsigned int *eagains)
{
	uint64_t ids[8];
	int i;

	ASSERT_EQ(0, sf_set_nonblock(fd, true));
	for (i = 0; i < 16; i++) {
		ssize_t n = sf_read_ids(fd, ids, 8);

		if (n == -EAGAIN) {
			(*eagains)++;
			return;
		}
		ASSERT_LT(0, n) TH_LOG("read: %s", strerror((int)-n));
		ASSERT_GE(4, n);
		ASSERT_LT(*last, ids[0]);
		*last = ids[n - 1];
	}
	ASSERT_TRUE(false) TH_LOG("no EAGAIN after 16 reads");
}

/* Is the generator's clock still in the tick of @id? */
static bool same_tick(struct __test_metadata *_metadata, int fd,
		      const struct snowflake_config *cfg, uint64_t id)
{
	struct snowflake_stats st;

	if (sf_get_stats(fd, &st)) {
		EXPECT_TRUE(false) TH_LOG("GET_STATS: %s", strerror(errno));
		return false;
	}
	return sf_tick_of(cfg, st.clock_ms) == tick_of_id(cfg, id);
}

/* A fresh tick has 4 IDs: asking for 8 gets 4, seq 0..3. */
TEST_F(exh, short_read_whole_tick)
{
	struct snowflake_stats st;
	uint64_t ids[8], before, after;
	ssize_t n, i;

	before = sf_real_ms();
	n = sf_read_ids(self->fd, ids, 8);
	after = sf_real_ms();
	ASSERT_EQ(4, n);
	for (i = 0; i < n; i++) {
		struct sf_id f = sf_decode(&self->cfg, ids[i]);

		EXPECT_EQ((uint64_t)i, f.seq);
		EXPECT_EQ(tick_of_id(&self->cfg, ids[0]), f.ts);
		EXPECT_GE(after + FUTURE_TOL_MS, f.ms);
		EXPECT_LE(before - self->cfg.time_unit_ms - FUTURE_TOL_MS, f.ms);
	}
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(4, st.ids_issued);
	EXPECT_EQ(1, st.reads);
	EXPECT_EQ(0, st.exhausted_waits);
}

/* One ID taken from a new tick: a read of 8 gets the 3 left. */
TEST_F(exh, short_read_rest_of_tick)
{
	int attempt;

	for (attempt = 0; attempt < 5; attempt++) {
		uint64_t first, ids[8];
		ssize_t n, i;

		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		ASSERT_EQ(0, sf_set_nonblock(self->fd, false));
		/* Blocks until the next tick, takes its first ID. */
		ASSERT_EQ(0, sf_read1(self->fd, &first));
		ASSERT_LT(self->last, first);
		ASSERT_EQ(0, sf_decode(&self->cfg, first).seq);
		n = sf_read_ids(self->fd, ids, 8);
		ASSERT_LT(0, n);
		self->last = ids[n - 1];
		if (tick_of_id(&self->cfg, ids[0]) != tick_of_id(&self->cfg, first))
			continue;	/* the tick ended in between */
		ASSERT_EQ(3, n);
		for (i = 0; i < n; i++)
			EXPECT_EQ(first + 1 + i, ids[i]);
		return;
	}
	ASSERT_TRUE(false) TH_LOG("never read twice in one tick");
}

/* O_NONBLOCK on an empty tick: EAGAIN, counted in eagain. */
TEST_F(exh, nonblock_eagain)
{
	struct snowflake_stats st0, st1;
	bool seen = false;
	int attempt, fd2;

	for (attempt = 0; attempt < 5 && !seen; attempt++) {
		uint64_t id;
		int ret;

		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		ret = sf_read1(self->fd, &id);
		if (ret == -EAGAIN) {
			self->eagains++;
			seen = true;
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("read: %s", strerror(-ret));
		/* Only legitimate when a new tick began. */
		ASSERT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
		self->last = id;
	}
	ASSERT_TRUE(seen);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	EXPECT_EQ(self->eagains, st0.eagain);
	EXPECT_EQ(0, st0.exhausted_waits);

	/* A file opened with O_NONBLOCK behaves the same. */
	fd2 = sf_open(O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd2);
	for (attempt = 0; attempt < 5; attempt++) {
		uint64_t id;
		int ret;

		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		ret = sf_read1(fd2, &id);
		if (ret == -EAGAIN) {
			self->eagains++;
			break;
		}
		ASSERT_EQ(0, ret);
		ASSERT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
		self->last = id;
	}
	ASSERT_GT(5, attempt);
	close(fd2);

	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(self->eagains, st1.eagain);
	EXPECT_EQ(0, st1.exhausted_waits);
}

/* preadv2(RWF_NOWAIT) on a blocking file with an empty tick: EAGAIN. */
TEST_F(exh, rwf_nowait_eagain)
{
	struct snowflake_stats st;
	uint64_t ids[4];
	struct iovec iov = { .iov_base = ids, .iov_len = sizeof(ids) };
	int attempt;

	for (attempt = 0; attempt < 5; attempt++) {
		ssize_t ret;

		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		ASSERT_EQ(0, sf_set_nonblock(self->fd, false));
		errno = 0;
		ret = preadv2(self->fd, &iov, 1, -1, RWF_NOWAIT);
		if (ret == -1) {
			ASSERT_EQ(EAGAIN, errno) TH_LOG("preadv2: %s", strerror(errno));
			self->eagains++;
			break;
		}
		ASSERT_LT(0, ret);
		ASSERT_LT(tick_of_id(&self->cfg, self->last),
			  tick_of_id(&self->cfg, ids[0]));
		self->last = ids[ret / 8 - 1];
	}
	ASSERT_GT(5, attempt);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(self->eagains, st.eagain);
}

/*
 * A blocking read on an empty tick sleeps until the next one and gets its
 * IDs (all 4 of them), counted in exhausted_waits; the IDs are not from
 * the future.
 */
TEST_F(exh, blocking_read_waits_for_next_tick)
{
	bool waited = false;
	int attempt;

	for (attempt = 0; attempt < 3 && !waited; attempt++) {
		struct snowflake_stats st0, st1;
		uint64_t ids[8], after;
		ssize_t n, i;

		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		ASSERT_EQ(0, sf_set_nonblock(self->fd, false));
		ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
		n = sf_read_ids(self->fd, ids, 8);
		after = sf_real_ms();
		ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
		ASSERT_EQ(4, n) TH_LOG("read: %zd", n);
		ASSERT_LT(tick_of_id(&self->cfg, self->last),
			  tick_of_id(&self->cfg, ids[0]));
		for (i = 0; i < n; i++) {
			struct sf_id f = sf_decode(&self->cfg, ids[i]);

			EXPECT_EQ((uint64_t)i, f.seq);
			EXPECT_GE(after + FUTURE_TOL_MS, f.ms)
				TH_LOG("ID from %" PRIu64 " ms, wall clock %" PRIu64,
				       f.ms, after);
		}
		self->last = ids[n - 1];
		ASSERT_GE(1, st1.exhausted_waits - st0.exhausted_waits);
		EXPECT_EQ(st0.reads + 1, st1.reads);
		EXPECT_EQ(st0.ids_issued + 4, st1.ids_issued);
		waited = st1.exhausted_waits == st0.exhausted_waits + 1;
	}
	ASSERT_TRUE(waited) TH_LOG("no blocking read was counted as waiting");
}

/*
 * One ID per blocking read for 3 s: every ID is from the current tick (not
 * later than the wall clock, not older than one tick), 4 per tick.
 */
TEST_F_TIMEOUT(exh, not_from_the_future, 60)
{
	uint64_t prev = 0, prev_ts = 0, seq_expect = 0;
	int i;

	for (i = 0; i < 14; i++) {
		uint64_t id, before, after;
		struct sf_id f;

		before = sf_real_ms();
		ASSERT_EQ(0, sf_read1(self->fd, &id));
		after = sf_real_ms();
		f = sf_decode(&self->cfg, id);
		ASSERT_LT(prev, id);
		EXPECT_GE(after + FUTURE_TOL_MS, f.ms)
			TH_LOG("ID %d from %" PRIu64 " ms, wall clock %" PRIu64,
			       i, f.ms, after);
		EXPECT_LE(before - self->cfg.time_unit_ms - FUTURE_TOL_MS, f.ms)
			TH_LOG("ID %d from %" PRIu64 " ms, wall clock %" PRIu64,
			       i, f.ms, before);
		if (i && f.ts == prev_ts) {
			EXPECT_EQ(seq_expect, f.seq);
		} else {
			EXPECT_EQ(0, f.seq);
		}
		EXPECT_GT(4, f.seq);
		seq_expect = f.seq + 1;
		prev = id;
		prev_ts = f.ts;
	}
}

/* Empty tick: poll/select/epoll report nothing; the tick timer wakes them. */
TEST_F(exh, poll_empty_tick)
{
	bool conclusive = false;
	uint64_t id;
	int attempt, r;

	for (attempt = 0; attempt < 5 && !conclusive; attempt++) {
		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		r = sf_poll_in(self->fd, 0);
		ASSERT_LE(0, r);
		if (same_tick(_metadata, self->fd, &self->cfg, self->last)) {
			EXPECT_EQ(0, r) TH_LOG("poll on an empty tick: %#x", r);
			conclusive = true;
		}
	}
	ASSERT_TRUE(conclusive);

	r = sf_poll_in(self->fd, 3000);
	ASSERT_LT(0, r) TH_LOG("not woken at the next tick");
	EXPECT_EQ(POLLIN | POLLRDNORM, r & (POLLIN | POLLRDNORM | POLLERR | POLLHUP));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
	EXPECT_EQ(0, sf_decode(&self->cfg, id).seq);
	self->last = id;
}

TEST_F(exh, select_empty_tick)
{
	bool conclusive = false;
	struct timeval tv;
	fd_set rfds;
	uint64_t id;
	int attempt, r;

	for (attempt = 0; attempt < 5 && !conclusive; attempt++) {
		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		FD_ZERO(&rfds);
		FD_SET(self->fd, &rfds);
		tv.tv_sec = 0;
		tv.tv_usec = 0;
		r = select(self->fd + 1, &rfds, NULL, NULL, &tv);
		ASSERT_LE(0, r);
		if (same_tick(_metadata, self->fd, &self->cfg, self->last)) {
			EXPECT_EQ(0, r);
			conclusive = true;
		}
	}
	ASSERT_TRUE(conclusive);

	FD_ZERO(&rfds);
	FD_SET(self->fd, &rfds);
	tv.tv_sec = 3;
	tv.tv_usec = 0;
	ASSERT_EQ(1, select(self->fd + 1, &rfds, NULL, NULL, &tv));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
	self->last = id;
}

TEST_F(exh, epoll_empty_tick)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	bool conclusive = false;
	uint64_t id;
	int attempt, r, ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	for (attempt = 0; attempt < 5 && !conclusive; attempt++) {
		exhaust(_metadata, self->fd, &self->last, &self->eagains);
		r = epoll_wait(ep, &out, 1, 0);
		ASSERT_LE(0, r);
		if (same_tick(_metadata, self->fd, &self->cfg, self->last)) {
			EXPECT_EQ(0, r);
			conclusive = true;
		}
	}
	ASSERT_TRUE(conclusive);

	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 3000));
	EXPECT_TRUE(out.events & EPOLLIN);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
	close(ep);
}

/*
 * An edge-triggered poller that reads with O_NONBLOCK until EAGAIN (what
 * Go's runtime does with every file it opens): epoll reports the file
 * again only after a wakeup, and sf_poll() is not called in between, so a
 * non-blocking read that finds the tick used up must arm the tick timer
 * itself.  Without that the reader waits forever.
 */
TEST_F(exh, epoll_edge_triggered_after_eagain)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, out;
	uint64_t id;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	/* The edge of the add: readable now.  Consumed here. */
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 3000));
	exhaust(_metadata, self->fd, &self->last, &self->eagains);
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 3000))
		TH_LOG("no edge after EAGAIN: the next tick woke nobody");
	EXPECT_TRUE(out.events & EPOLLIN);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(tick_of_id(&self->cfg, self->last), tick_of_id(&self->cfg, id));
	close(ep);
}

/* ------------------------------------------------------------------ */
/* Signals while a reader sleeps.                                       */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void arm_alarm(struct __test_metadata *_metadata, bool restart,
		      unsigned int ms)
{
	struct sigaction sa;
	struct itimerval it = {
		.it_value = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 },
	};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarms = 0;
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
}

FIXTURE(sig) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_VARIANT(sig) {
	const char *params;
	unsigned int unit_ms;
};

/* One ID a minute: a blocked reader stays blocked long enough. */
FIXTURE_VARIANT_ADD(sig, minute) {
	.params = "sequence_bits=0 time_unit_ms=60000",
	.unit_ms = 60000,
};

FIXTURE_SETUP(sig)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(variant->params));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	ASSERT_EQ(0, self->cfg.sequence_bits);
	ASSERT_EQ(variant->unit_ms, self->cfg.time_unit_ms);
}

FIXTURE_TEARDOWN(sig)
{
	struct itimerval off = { 0 };

	setitimer(ITIMER_REAL, &off, NULL);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Take the one ID of a tick that has at least @min_left_ms to go: the
 * ID is returned, the tick is empty.
 */
static uint64_t take_tick(struct __test_metadata *_metadata, int fd,
			  const struct snowflake_config *cfg, uint64_t min_left_ms)
{
	struct snowflake_stats st;
	uint64_t id, end;

	ASSERT_EQ(0, sf_read1(fd, &id)) TH_LOG("read: %s", strerror(errno));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	end = sf_decode(cfg, id).ms + cfg->time_unit_ms;
	if (st.clock_ms >= end || end - st.clock_ms < min_left_ms) {
		/* Too close to the end: wait for the next tick, take it. */
		ASSERT_EQ(0, sf_read1(fd, &id));
	}
	return id;
}

/* No SA_RESTART: a reader sleeping for the next tick gets EINTR. */
TEST_F_TIMEOUT(sig, eintr_without_sa_restart, 120)
{
	struct snowflake_stats st0, st1;
	uint64_t id, buf[2];
	int i;

	id = take_tick(_metadata, self->fd, &self->cfg, 10000);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));

	for (i = 0; i < 2; i++) {
		arm_alarm(_metadata, false, 200);
		errno = 0;
		EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
		EXPECT_EQ(EINTR, errno);
		EXPECT_EQ(1, alarms);
	}

	/* Nothing was issued or lost. */
	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(st0.ids_issued, st1.ids_issued);
	EXPECT_EQ(st0.reads, st1.reads);
	EXPECT_EQ(st0.last_timestamp_ms, st1.last_timestamp_ms);
	EXPECT_EQ(sf_decode(&self->cfg, id).ms, st1.last_timestamp_ms);
	EXPECT_EQ(0, st1.refused_reads);
	EXPECT_EQ(0, st1.eagain);
	/* Still the same tick, still empty. */
	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	EXPECT_ERRNO(EAGAIN, read(self->fd, buf, 8));
}

/*
 * SA_RESTART: the read restarts after the handler and returns the next
 * tick's ID.  A 2 s tick keeps the wait short.
 */
FIXTURE(restart) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(restart)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=2000"));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(restart)
{
	struct itimerval off = { 0 };

	setitimer(ITIMER_REAL, &off, NULL);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * A blocked reader wakes when the floor moves the clock on, not at the end
 * of the old tick.  Ticks of 60 s, one ID each: the floor first moves the
 * clock to the start of a fresh tick (60 s left), its one ID is taken, a
 * child blocks in read(), and the floor is raised into the next tick.
 * Before readers slept on the wait queue, the child slept on a private
 * timer until the old tick ended, some 60 s; now it returns at once (the
 * bound of 20 s only tells the two apart, it measures nothing).
 */
TEST_F_TIMEOUT(restart, floor_wakes_blocked_reader, 120)
{
	struct snowflake_stats st;
	struct snowflake_config cfg;
	uint64_t id, t0;
	int status;
	pid_t pid;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=60000"));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &cfg));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	ASSERT_EQ(0, sf_set_floor(self->fd, st.clock_ms + 60000));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	EXPECT_EQ(-EAGAIN, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_set_nonblock(self->fd, false));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint64_t next, start = sf_mono_ns();
		int fd = sf_open(O_RDONLY);

		alarm(90);
		CHILD_CHECK(fd >= 0, "open: %s", strerror(errno));
		CHILD_CHECK(sf_read1(fd, &next) == 0, "read: %s", strerror(errno));
		CHILD_CHECK(next > id, "%#" PRIx64 " after %#" PRIx64, next, id);
		CHILD_CHECK(sf_mono_ns() - start < 20 * NSEC_PER_SEC,
			    "the blocked read took %llu ms: not woken by the floor",
			    (unsigned long long)((sf_mono_ns() - start) / NSEC_PER_MSEC));
		_exit(0);
	}
	/* Let the child block (not required for the check, only likely). */
	t0 = sf_mono_ns();
	do {
		sf_sleep_ms(100);
		ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	} while (!st.exhausted_waits && sf_mono_ns() - t0 < 10 * NSEC_PER_SEC);
	EXPECT_LE(1, st.exhausted_waits);
	ASSERT_EQ(0, sf_set_floor(self->fd, st.clock_ms + 60000));
	status = sf_wait_child(pid);
	EXPECT_EQ(0, status);
}

/*
 * Once the timestamp no longer fits, poll reports EPOLLERR (reads fail
 * with EOVERFLOW for good) instead of leaving pollers asleep for ever.
 * Ticks of 1 s, 10 timestamp bits, the epoch 1021 ticks ago: the last
 * tick, 1023, ends some 3 s after the load.
 */
TEST_F_TIMEOUT(restart, poll_reports_overflow, 60)
{
	struct pollfd pfd;
	uint64_t id, t0;
	ssize_t r;
	int n;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_fmt("time_unit_ms=1000 timestamp_bits=10 epoch_ms=%llu",
				   (unsigned long long)(sf_real_ms() - 1021 * 1000ULL)));
	self->fd = sf_open(O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents);

	/* Read until the last tick is over. */
	t0 = sf_mono_ns();
	do {
		r = sf_read1(self->fd, &id);
		if (r == -EAGAIN)
			sf_sleep_ms(50);
	} while (r != -EOVERFLOW && sf_mono_ns() - t0 < 30 * NSEC_PER_SEC);
	ASSERT_EQ(-EOVERFLOW, r);

	pfd.revents = 0;
	n = poll(&pfd, 1, 2000);
	EXPECT_EQ(1, n) TH_LOG("poll slept: no EPOLLERR for the overflow");
	EXPECT_EQ(POLLERR, pfd.revents & (POLLERR | POLLIN));
	EXPECT_EQ(-EOVERFLOW, sf_read1(self->fd, &id));
}

TEST_F_TIMEOUT(restart, sa_restart_restarts, 60)
{
	struct snowflake_stats st;
	uint64_t id, next;

	id = take_tick(_metadata, self->fd, &self->cfg, 800);
	arm_alarm(_metadata, true, 150);
	ASSERT_EQ(0, sf_read1(self->fd, &next)) TH_LOG("read: %s", strerror(errno));
	EXPECT_EQ(1, alarms);
	EXPECT_LT(sf_decode(&self->cfg, id).ts, sf_decode(&self->cfg, next).ts);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_LE(1, st.exhausted_waits);
}

SF_TEST_MAIN()
