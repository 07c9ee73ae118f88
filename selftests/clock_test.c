// SPDX-License-Identifier: GPL-2.0
/*
 * The wall clock: stepping it back and forth (clock_settime) changes
 * nothing for the IDs (unique, increasing, no failed or stalled read);
 * a forward step is caught up with (clock_catchups) once it exceeds
 * catchup_threshold_ms, a backward one never; catchup_threshold_ms=0
 * turns catch-up off.
 *
 * The true time is kept as CLOCK_MONOTONIC + (CLOCK_REALTIME -
 * CLOCK_MONOTONIC at start); steps are relative to it, and it is restored
 * in every teardown and again when the binary ends (also after a test was
 * killed by its timeout).
 */
#define _GNU_SOURCE
#include <sched.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NEAR_MS		3000
#define FUTURE_TOL_MS	50
#define TWO_HOURS_MS	(2 * HOUR_MS)

static int64_t real_minus_mono_ns;
static bool clock_saved;

static void save_clock(void)
{
	real_minus_mono_ns = (int64_t)(sf_clock_ns(CLOCK_REALTIME) - sf_mono_ns());
	clock_saved = true;
}

static uint64_t true_real_ms(void)
{
	return (uint64_t)((int64_t)sf_mono_ns() + real_minus_mono_ns) / NSEC_PER_MSEC;
}

/* Set the wall clock to the true time + @delta_ns: 0 or -errno. */
static int step_clock_ns(int64_t delta_ns)
{
	int64_t ns = (int64_t)sf_mono_ns() + real_minus_mono_ns + delta_ns;
	struct timespec ts = {
		.tv_sec = ns / (int64_t)NSEC_PER_SEC,
		.tv_nsec = ns % (int64_t)NSEC_PER_SEC,
	};

	if (!clock_saved)
		return -EINVAL;
	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

/* Set the wall clock to the true time + @delta_ms: 0 or -errno. */
static int step_clock(int64_t delta_ms)
{
	return step_clock_ns(delta_ms * (int64_t)NSEC_PER_MSEC);
}

static void restore_clock(void)
{
	if (clock_saved && step_clock(0))
		ksft_print_msg("cannot restore the wall clock: %s\n", strerror(errno));
}

/* Put the wall clock right, reload the module with @params and open it. */
static void load_fresh(struct __test_metadata *_metadata, int *fd,
		       struct snowflake_config *cfg, const char *params)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	ASSERT_EQ(0, step_clock(0));
	ASSERT_EQ(0, sf_reload(params)) TH_LOG("load '%s'", params);
	*fd = sf_open(O_RDONLY);
	ASSERT_LE(0, *fd);
	ASSERT_EQ(0, sf_get_config(*fd, cfg));
}

FIXTURE(clk) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_VARIANT(clk) {
	const char *params;
	bool catchup_off;
};

FIXTURE_VARIANT_ADD(clk, catchup_default) {
	.params = "",
};

FIXTURE_VARIANT_ADD(clk, catchup_off) {
	.params = "catchup_threshold_ms=0",
	.catchup_off = true,
};

FIXTURE_SETUP(clk)
{
	self->fd = -1;
	ASSERT_TRUE(clock_saved);
	load_fresh(_metadata, &self->fd, &self->cfg, variant->params);
}

FIXTURE_TEARDOWN(clk)
{
	restore_clock();
	if (self->fd >= 0)
		close(self->fd);
}


/* ------------------------------------------------------------------ */

#define READERS		4
#define PER_READER	50000
#define STEPS		300

struct shared {
	uint64_t ids[READERS][PER_READER];
	unsigned int got[READERS];
	volatile int go;
	volatile int readers_done;
	volatile int stepper_done;
	volatile int steps;
};

static const unsigned int batches[] = { 1, 1, 2, 1, 9, 1, 1, 40, 1, 3 };

static int step_reader(struct shared *sh, unsigned int r)
{
	unsigned int got = 0, b = r;
	uint64_t *ids = sh->ids[r];
	int fd = sf_open(O_RDONLY);

	if (fd < 0)
		return 2;
	while (!sh->go)
		sched_yield();
	while (got < PER_READER && !sh->stepper_done) {
		unsigned int want = batches[b++ % SF_ARRAY_SIZE(batches)];
		ssize_t n;

		if (want > PER_READER - got)
			want = PER_READER - got;
		/*
		 * Pace the readers by the stepper, not by time: at least one
		 * wall clock step per 500 IDs read, however TCG schedules us.
		 */
		while (sh->steps < (int)(got / 500) && !sh->stepper_done)
			sched_yield();
		n = read(fd, ids + got, want * 8);
		if (n <= 0 || n % 8) {
			fprintf(stderr, "# reader %u: read: %zd (%s)\n", r, n,
				n < 0 ? strerror(errno) : "");
			return 1;
		}
		got += n / 8;
	}
	sh->got[r] = got;
	close(fd);
	__atomic_add_fetch(&sh->readers_done, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int stepper(struct shared *sh)
{
	int i = 0;

	while (!sh->go)
		sched_yield();
	while (__atomic_load_n(&sh->readers_done, __ATOMIC_SEQ_CST) < READERS &&
	       i < STEPS) {
		/* -1 h, +2 h, -3 h, +4 h, -5 h, +1 h, ... */
		int64_t h = 1 + i % 5;
		int64_t delta = (i % 2 ? 1 : -1) * h * (int64_t)HOUR_MS;

		if (step_clock(delta)) {
			fprintf(stderr, "# clock_settime: %s\n", strerror(errno));
			return 1;
		}
		sh->steps = ++i;
		usleep(200);
	}
	sh->stepper_done = 1;
	return step_clock(0) ? 1 : 0;
}

/*
 * Readers in 4 processes while a fifth steps the wall clock by hours, back
 * and forth: no duplicate, each reader strictly increasing, no failure.
 */
TEST_F_TIMEOUT(clk, steps_do_no_harm, 120)
{
	struct shared *sh = sf_shared_alloc(sizeof(*sh));
	struct snowflake_stats st;
	pid_t pids[READERS + 1];
	uint64_t *all, id, total = 0;
	unsigned int r;
	size_t i;

	ASSERT_NE(NULL, sh);
	for (r = 0; r <= READERS; r++) {
		pids[r] = fork();
		ASSERT_LE(0, pids[r]);
		if (pids[r] == 0)
			_exit(r < READERS ? step_reader(sh, r) : stepper(sh));
	}
	sh->go = 1;
	for (r = 0; r <= READERS; r++)
		EXPECT_EQ(0, sf_wait_child(pids[r])) TH_LOG("child %u", r);
	for (r = 0; r < READERS; r++)
		total += sh->got[r];
	TH_LOG("%d clock steps while reading %" PRIu64 " IDs", sh->steps, total);
	EXPECT_LE(50, sh->steps);
	restore_clock();

	all = malloc(sizeof(sh->ids));
	ASSERT_NE(NULL, all);
	total = 0;
	for (r = 0; r < READERS; r++) {
		for (i = 1; i < sh->got[r]; i++)
			ASSERT_LT(sh->ids[r][i - 1], sh->ids[r][i])
				TH_LOG("reader %u, ID %zu", r, i);
		memcpy(all + total, sh->ids[r], sh->got[r] * sizeof(*all));
		total += sh->got[r];
	}
	qsort(all, total, sizeof(*all), sf_cmp_u64);
	for (i = 1; i < total; i++) {
		uint64_t dup = all[i];

		ASSERT_NE(all[i - 1], dup) TH_LOG("duplicate %#" PRIx64, dup);
	}
	free(all);

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(total, st.ids_issued);
	if (variant->catchup_off) {
		/* The IDs followed the true time throughout. */
		EXPECT_EQ(0, st.clock_catchups);
		EXPECT_EQ(0, st.clock_offset_ms);
		ASSERT_EQ(0, sf_read1(self->fd, &id));
		EXPECT_LE(true_real_ms() - NEAR_MS, sf_decode(&self->cfg, id).ms);
		EXPECT_GE(true_real_ms() + FUTURE_TOL_MS, sf_decode(&self->cfg, id).ms);
	}
	munmap(sh, sizeof(*sh));
}

/* Catch-up tests: a fresh default load each. */
FIXTURE(cu) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(cu)
{
	self->fd = -1;
	ASSERT_TRUE(clock_saved);
	load_fresh(_metadata, &self->fd, &self->cfg, "");
}

FIXTURE_TEARDOWN(cu)
{
	restore_clock();
	if (self->fd >= 0)
		close(self->fd);
}


/* Poll the stats up to @secs seconds for clock_catchups to exceed @was. */
/*
 * How long to wait for a catch-up: the clock is checked once a second by
 * deferrable work, which on a loaded TCG host can run many seconds late
 * (10 s was once not enough on 5.10 with two other guests running).
 */
#define CATCHUP_WAIT_S	30

static uint64_t wait_catchup(struct __test_metadata *_metadata, int fd,
			     uint64_t was, int secs)
{
	struct snowflake_stats st;
	int i;

	for (i = 0; i < secs * 10; i++) {
		EXPECT_EQ(0, sf_get_stats(fd, &st));
		if (st.clock_catchups > was)
			return st.clock_catchups;
		sf_sleep_ms(100);
	}
	return was;
}

/*
 * Wall clock 2 h ahead: within a few seconds the generator catches up,
 * once; back to the true time: the generator stays ahead, IDs keep
 * increasing, no more catch-ups.
 */
TEST_F_TIMEOUT(cu, catchup_forward_not_back, 90)
{
	struct snowflake_stats st0, st;
	uint64_t a, b, c, before, after, catchups;

	ASSERT_EQ(0, sf_read1(self->fd, &a));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	EXPECT_EQ(0, st0.clock_catchups);

	ASSERT_EQ(0, step_clock(TWO_HOURS_MS));
	catchups = wait_catchup(_metadata, self->fd, st0.clock_catchups, CATCHUP_WAIT_S);
	ASSERT_EQ(st0.clock_catchups + 1, catchups) TH_LOG("no catch-up within 10 s");
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_LE(TWO_HOURS_MS - NEAR_MS, st.clock_offset_ms);
	EXPECT_GE(TWO_HOURS_MS + NEAR_MS, st.clock_offset_ms);
	EXPECT_EQ(st.clock_offset_ms, sf_sysfs_u64("clock_offset_ms"));

	before = sf_real_ms();
	ASSERT_EQ(0, sf_read1(self->fd, &b));
	after = sf_real_ms();
	EXPECT_LT(a, b);
	EXPECT_LE(before - NEAR_MS, sf_decode(&self->cfg, b).ms)
		TH_LOG("ID at %" PRIu64 ", wall clock %" PRIu64,
		       sf_decode(&self->cfg, b).ms, before);
	EXPECT_GE(after + FUTURE_TOL_MS, sf_decode(&self->cfg, b).ms);

	/* Back to the true time: nothing moves back. */
	ASSERT_EQ(0, step_clock(0));
	sf_sleep_ms(2500);
	ASSERT_EQ(0, sf_read1(self->fd, &c));
	EXPECT_LT(b, c);
	EXPECT_LE(sf_decode(&self->cfg, b).ms, sf_decode(&self->cfg, c).ms);
	EXPECT_LE(true_real_ms() + TWO_HOURS_MS - NEAR_MS, sf_decode(&self->cfg, c).ms);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	EXPECT_EQ(catchups, st0.clock_catchups);
	EXPECT_LE(st.clock_offset_ms, st0.clock_offset_ms);
	EXPECT_LE(true_real_ms() + TWO_HOURS_MS - NEAR_MS, st0.clock_ms);
}

/* catchup_threshold_ms=0: a forward step is ignored. */
TEST_F_TIMEOUT(cu, catchup_off_ignores_forward_step, 45)
{
	struct snowflake_stats st;
	uint64_t id;

	load_fresh(_metadata, &self->fd, &self->cfg, "catchup_threshold_ms=0");
	ASSERT_EQ(0, step_clock(TWO_HOURS_MS));
	sf_sleep_ms(3000);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.clock_catchups);
	/* Off means off: the work that compares the clocks never ran. */
	EXPECT_EQ(0, sf_sysfs_u64("statistics/clock_checks"));
	EXPECT_EQ(0, st.clock_offset_ms);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(true_real_ms() - NEAR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(true_real_ms() + FUTURE_TOL_MS, sf_decode(&self->cfg, id).ms);
}

/* The default threshold: the wall clock is compared about once a second. */
TEST_F_TIMEOUT(cu, clock_checked_once_a_second, 45)
{
	uint64_t a, b;
	int waited = 0;

	a = sf_sysfs_u64("statistics/clock_checks");
	ASSERT_NE(UINT64_MAX, a) TH_LOG("no statistics/clock_checks");
	/*
	 * Once a second, deferrable: on a loaded TCG host the work may run
	 * late, so wait for two more checks for up to 30 s rather than
	 * counting them in a fixed time (tests assert no timing).
	 */
	do {
		sf_sleep_ms(500);
		waited += 500;
		b = sf_sysfs_u64("statistics/clock_checks");
	} while (b < a + 2 && waited < 30000);
	EXPECT_LE(a + 2, b) TH_LOG("%" PRIu64 " checks, then %" PRIu64 " after %d ms", a, b, waited);
}

/*
 * Zero tolerance: after a catch-up, no ID is stamped later than the wall
 * clock read right after the read returned.  The offset of a catch-up was
 * once made of two clocks already truncated to ms, which could put the
 * generator up to 1 ms ahead of the wall clock (when the sub-ms part of the
 * raw clock at the catch-up exceeded the wall clock's); it is now the ns
 * difference rounded down.  Twelve catch-ups, each to a new sub-ms phase of
 * the wall clock against the raw one, each followed by 300 ms of single and
 * batch reads.
 */
TEST_F_TIMEOUT(cu, catchup_never_ahead_of_wall_clock, 420)
{
	uint64_t ids[64], catchups = 0, reads = 0, late = 0, worst = 0;
	int k;

	for (k = 1; k <= 12; k++) {
		uint64_t t0;

		/* k * 5 s plus a sub-ms part that differs each time. */
		ASSERT_EQ(0, step_clock_ns(k * 5 * (int64_t)NSEC_PER_SEC +
					   (k * 387403) % NSEC_PER_MSEC));
		catchups = wait_catchup(_metadata, self->fd, catchups, CATCHUP_WAIT_S);
		ASSERT_EQ((uint64_t)k, catchups) TH_LOG("no catch-up within %d s", CATCHUP_WAIT_S);
		t0 = sf_mono_ns();
		while (sf_mono_ns() - t0 < 300 * NSEC_PER_MSEC) {
			ssize_t n = sf_read_ids(self->fd, ids, reads % 2 ? 64 : 1);
			uint64_t wall = sf_real_ms(), ms;

			ASSERT_LT(0, n);
			reads++;
			ms = sf_decode(&self->cfg, ids[n - 1]).ms;
			if (ms > wall) {
				late++;
				if (ms - wall > worst)
					worst = ms - wall;
			}
		}
	}
	EXPECT_EQ(0, late) TH_LOG("%" PRIu64 " of %" PRIu64 " reads stamped up to %" PRIu64
				  " ms after the wall clock", late, reads, worst);
	if (!late)
		TH_LOG("%" PRIu64 " reads after 12 catch-ups, none later than the wall clock",
		       reads);
}

/* catchup_threshold_ms=600000: 5 min ahead is ignored, 20 min is not. */
TEST_F_TIMEOUT(cu, catchup_threshold, 90)
{
	struct snowflake_stats st;
	uint64_t id;

	load_fresh(_metadata, &self->fd, &self->cfg, "catchup_threshold_ms=600000");
	ASSERT_EQ(0, step_clock(5 * 60 * 1000));
	sf_sleep_ms(2500);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.clock_catchups);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_GE(true_real_ms() + FUTURE_TOL_MS, sf_decode(&self->cfg, id).ms);

	ASSERT_EQ(0, step_clock(20 * 60 * 1000));
	EXPECT_EQ(1, wait_catchup(_metadata, self->fd, 0, CATCHUP_WAIT_S));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_LE(20 * 60 * 1000 - NEAR_MS, st.clock_offset_ms);
	EXPECT_GE(20 * 60 * 1000 + NEAR_MS, st.clock_offset_ms);
}

/*
 * Readers waiting for the next tick do not depend on the wall clock: a
 * backward step does not stall them, a forward step (catch-up off) does
 * not wake them early.  5 ticks a second, one ID each.
 */
TEST_F_TIMEOUT(clk, waiting_readers_ignore_steps, 45)
{
	const int64_t steps[] = { -TWO_HOURS_MS, TWO_HOURS_MS };
	size_t s;

	load_fresh(_metadata, &self->fd, &self->cfg, variant->catchup_off ?
	       "catchup_threshold_ms=0 sequence_bits=0 time_unit_ms=200" :
	       "sequence_bits=0 time_unit_ms=200");
	for (s = 0; s < SF_ARRAY_SIZE(steps); s++) {
		uint64_t prev, id;
		int i, r;

		ASSERT_EQ(0, step_clock(0));
		ASSERT_EQ(0, sf_read1(self->fd, &prev));
		ASSERT_EQ(0, step_clock(steps[s]));
		for (i = 0; i < 5; i++) {
			struct sf_id f;

			ASSERT_EQ(0, sf_read1(self->fd, &id)) TH_LOG("%s", strerror(errno));
			f = sf_decode(&self->cfg, id);
			EXPECT_LT(prev, id);
			EXPECT_LT(sf_decode(&self->cfg, prev).ts, f.ts);
			if (variant->catchup_off || steps[s] < 0)
				EXPECT_GE(true_real_ms() + FUTURE_TOL_MS, f.ms)
					TH_LOG("step %" PRId64 ": ID from the future", steps[s]);
			prev = id;
		}
		/* A poller on an empty tick is woken by the next tick. */
		ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
		for (i = 0; i < 100 && sf_read1(self->fd, &id) == 0; i++)
			prev = id;
		ASSERT_GT(100, i) TH_LOG("no empty tick");
		r = sf_poll_in(self->fd, 3000);
		EXPECT_TRUE(r & POLLIN) TH_LOG("step %" PRId64 ": poll %d", steps[s], r);
		ASSERT_EQ(0, sf_set_nonblock(self->fd, false));
	}
}

/* A backward step: IDs keep the true time, nothing is caught up. */
TEST_F_TIMEOUT(cu, backward_step_ignored, 45)
{
	struct snowflake_stats st;
	uint64_t prev, id;
	int i;

	ASSERT_EQ(0, sf_read1(self->fd, &prev));
	ASSERT_EQ(0, step_clock(-TWO_HOURS_MS));
	for (i = 0; i < 2000; i++) {
		ASSERT_EQ(0, sf_read1(self->fd, &id));
		ASSERT_LT(prev, id);
		prev = id;
	}
	sf_sleep_ms(2500);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(prev, id);
	EXPECT_LE(true_real_ms() - NEAR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(true_real_ms() + FUTURE_TOL_MS, sf_decode(&self->cfg, id).ms);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.clock_catchups);
	EXPECT_EQ(0, st.clock_offset_ms);
}

SF_TEST_MAIN_HOOKS(save_clock, restore_clock)
