// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency: many processes (and threads sharing one file) read IDs at
 * once, with single and batch reads.  Every ID is unique, each reader's
 * IDs strictly increase, and the host-wide order holds: when read A
 * returned before read B started (CLOCK_MONOTONIC taken after A returned
 * and before B was called), every ID of A is below every ID of B.
 *
 * Also with a tiny tick (8 IDs per 5 ms), so readers keep running into an
 * empty tick: blocking readers sleep, non-blocking ones poll.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define FUTURE_TOL_MS	50

struct rec {
	uint64_t start, end;	/* CLOCK_MONOTONIC ns around the read */
	uint64_t min, max;	/* first and last ID */
	uint32_t n;
	uint32_t reader;
};

struct run {
	unsigned int readers;
	unsigned int ids_per_reader;
	const char *params;
	bool nonblock_half;	/* odd readers use O_NONBLOCK + poll */
	bool check_clock;	/* IDs not later than the wall clock */
	bool step_clock;	/* a process steps the wall clock meanwhile */
	struct snowflake_config cfg;
	/* shared results */
	uint64_t *ids;		/* readers * ids_per_reader */
	struct rec *recs;	/* readers * ids_per_reader */
	uint32_t *nrecs;	/* per reader */
	uint32_t *failed;	/* per reader: nonzero on error */
	int fd;			/* shared fd for threads, or -1 */
	volatile int *go;
	volatile int *steps;		/* wall clock steps so far */
	volatile int *readers_done;
	volatile int *stepper_done;
};

/* Batch sizes a reader cycles through: mostly single reads. */
static const unsigned int batches[] = { 1, 1, 3, 1, 1, 8, 1, 2, 1, 64, 1, 1, 17, 1, 5 };

static int reader(struct run *run, unsigned int r, int fd)
{
	uint64_t *ids = run->ids + (size_t)r * run->ids_per_reader;
	struct rec *recs = run->recs + (size_t)r * run->ids_per_reader;
	unsigned int got = 0, nrec = 0, b = r;
	bool nonblock = run->nonblock_half && (r % 2);

	while (!*run->go)
		sched_yield();
	while (got < run->ids_per_reader) {
		unsigned int want = batches[b++ % SF_ARRAY_SIZE(batches)];
		uint64_t start, end, real;
		ssize_t n, i;

		if (want > run->ids_per_reader - got)
			want = run->ids_per_reader - got;
		/*
		 * With a clock stepper: at least one step per 100000 IDs,
		 * paced by count so that TCG's scheduling cannot skip them.
		 */
		while (run->step_clock && *run->steps < (int)(got / 100000) &&
		       !*run->stepper_done)
			sched_yield();
		start = sf_mono_ns();
		n = read(fd, ids + got, want * 8);
		end = sf_mono_ns();
		if (n < 0 && nonblock && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (poll(&pfd, 1, 5000) != 1) {
				fprintf(stderr, "# reader %u: poll timed out\n", r);
				return 1;
			}
			continue;
		}
		if (n <= 0 || n % 8 || (size_t)n > want * 8) {
			fprintf(stderr, "# reader %u: read %u IDs: %zd (%s)\n", r, want,
				n, n < 0 ? strerror(errno) : "");
			return 1;
		}
		n /= 8;
		if (run->check_clock) {
			real = sf_real_ms();
			for (i = 0; i < n; i++) {
				if (sf_decode(&run->cfg, ids[got + i]).ms >
				    real + FUTURE_TOL_MS) {
					fprintf(stderr, "# reader %u: ID from the future\n", r);
					return 1;
				}
			}
		}
		recs[nrec].start = start;
		recs[nrec].end = end;
		recs[nrec].min = ids[got];
		recs[nrec].max = ids[got + n - 1];
		recs[nrec].n = n;
		recs[nrec].reader = r;
		nrec++;
		got += n;
	}
	run->nrecs[r] = nrec;
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_end(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return (x->end > y->end) - (x->end < y->end);
}

/* All the checks on the collected IDs and reads. */
static void check_run(struct __test_metadata *_metadata, struct run *run)
{
	const size_t total = (size_t)run->readers * run->ids_per_reader;
	struct rec *all, *by_end;
	uint64_t *sorted, max_done = 0;
	size_t nall = 0, i, j, e;
	unsigned int r;

	for (r = 0; r < run->readers; r++)
		ASSERT_EQ(0, run->failed[r]) TH_LOG("reader %u failed", r);

	/* Within a read: consecutive.  Within a reader: strictly increasing. */
	for (r = 0; r < run->readers; r++) {
		uint64_t *ids = run->ids + (size_t)r * run->ids_per_reader;
		struct rec *recs = run->recs + (size_t)r * run->ids_per_reader;
		size_t k = 0;

		for (i = 1; i < run->ids_per_reader; i++)
			ASSERT_LT(ids[i - 1], ids[i]) TH_LOG("reader %u, ID %zu", r, i);
		for (i = 0; i < run->nrecs[r]; i++) {
			ASSERT_EQ(recs[i].min + recs[i].n - 1, recs[i].max)
				TH_LOG("reader %u read %zu: not consecutive", r, i);
			for (j = 1; j < recs[i].n; j++)
				ASSERT_EQ(ids[k + j - 1] + 1, ids[k + j]);
			k += recs[i].n;
		}
		ASSERT_EQ(run->ids_per_reader, k);
		for (i = 0; i < run->ids_per_reader; i++) {
			struct sf_id f = sf_decode(&run->cfg, ids[i]);

			ASSERT_EQ(0, f.high);
			ASSERT_EQ(run->cfg.worker_id, f.worker);
			ASSERT_EQ(run->cfg.datacenter_id, f.dc);
		}
		nall += run->nrecs[r];
	}

	/* Host-wide: unique. */
	sorted = malloc(total * sizeof(*sorted));
	ASSERT_NE(NULL, sorted);
	memcpy(sorted, run->ids, total * sizeof(*sorted));
	qsort(sorted, total, sizeof(*sorted), sf_cmp_u64);
	for (i = 1; i < total; i++)
		ASSERT_NE(sorted[i - 1], sorted[i]) TH_LOG("duplicate %#" PRIx64, sorted[i]);
	free(sorted);

	/*
	 * Host-wide order: sweep the reads by start time; max_done is the
	 * largest ID of all reads that ended before the current one started.
	 */
	all = malloc(nall * sizeof(*all));
	by_end = malloc(nall * sizeof(*by_end));
	ASSERT_NE(NULL, all);
	ASSERT_NE(NULL, by_end);
	nall = 0;
	for (r = 0; r < run->readers; r++) {
		memcpy(all + nall, run->recs + (size_t)r * run->ids_per_reader,
		       run->nrecs[r] * sizeof(*all));
		nall += run->nrecs[r];
	}
	memcpy(by_end, all, nall * sizeof(*all));
	qsort(all, nall, sizeof(*all), cmp_start);
	qsort(by_end, nall, sizeof(*by_end), cmp_end);
	for (i = 0, e = 0; i < nall; i++) {
		while (e < nall && by_end[e].end < all[i].start) {
			if (by_end[e].max > max_done)
				max_done = by_end[e].max;
			e++;
		}
		ASSERT_LT(max_done, all[i].min)
			TH_LOG("reader %u got %#" PRIx64 " after a read that ended earlier "
			       "returned %#" PRIx64, all[i].reader, all[i].min, max_done);
	}
	free(all);
	free(by_end);
	TH_LOG("%zu IDs in %zu reads by %u readers: unique, each reader strictly increasing, "
	       "no read below one that ended before it started", total, nall, run->readers);
}

static void *thread_main(void *arg);

struct thread_arg {
	struct run *run;
	unsigned int r;
};

static void *thread_main(void *arg)
{
	struct thread_arg *ta = arg;

	ta->run->failed[ta->r] = reader(ta->run, ta->r, ta->run->fd);
	return NULL;
}

static void setup_run(struct __test_metadata *_metadata, struct run *run)
{
	const size_t total = (size_t)run->readers * run->ids_per_reader;
	int fd;

	ASSERT_EQ(0, sf_reload(run->params)) TH_LOG("load '%s'", run->params);
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_config(fd, &run->cfg));
	close(fd);
	run->ids = sf_shared_alloc(total * sizeof(*run->ids));
	run->recs = sf_shared_alloc(total * sizeof(*run->recs));
	run->nrecs = sf_shared_alloc(run->readers * sizeof(*run->nrecs));
	run->failed = sf_shared_alloc(run->readers * sizeof(*run->failed));
	run->go = sf_shared_alloc(sizeof(*run->go));
	run->steps = sf_shared_alloc(sizeof(*run->steps));
	run->readers_done = sf_shared_alloc(sizeof(*run->readers_done));
	run->stepper_done = sf_shared_alloc(sizeof(*run->stepper_done));
	ASSERT_NE(NULL, (void *)run->steps);
	ASSERT_NE(NULL, (void *)run->readers_done);
	ASSERT_NE(NULL, (void *)run->stepper_done);
	ASSERT_NE(NULL, run->ids);
	ASSERT_NE(NULL, run->recs);
	ASSERT_NE(NULL, run->nrecs);
	ASSERT_NE(NULL, run->failed);
	ASSERT_NE(NULL, (void *)run->go);
}

static int64_t realtime_minus_mono_ns(void)
{
	return (int64_t)(sf_real_ms() * 1000000) - (int64_t)sf_mono_ns();
}

static int set_realtime_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	return clock_settime(CLOCK_REALTIME, &ts);
}

/*
 * Step the wall clock back and forth by up to an hour every ~100 ms until
 * the readers are done, then put it back where it would have been.
 */
static int stepper(struct run *run, int64_t offset_ns)
{
	unsigned int seed = 42;
	int steps = 0, ret = 0;

	while (!*run->go)
		sched_yield();
	while (*run->readers_done < (int)run->readers) {
		int64_t delta_ms = (int64_t)(rand_r(&seed) % 7200001) - 3600000;

		if (set_realtime_ns(offset_ns + (int64_t)sf_mono_ns() + delta_ms * 1000000)) {
			fprintf(stderr, "# clock_settime: %s\n", strerror(errno));
			ret = 1;
			break;
		}
		*run->steps = ++steps;
		usleep(100000);
	}
	*run->stepper_done = 1;
	if (set_realtime_ns(offset_ns + (int64_t)sf_mono_ns()))
		ret = 1;
	return ret;
}

/* Readers in separate processes, each with its own file. */
static void run_processes(struct __test_metadata *_metadata, struct run *run)
{
	struct snowflake_stats st;
	int64_t offset_ns = realtime_minus_mono_ns();
	pid_t pids[64], step_pid = -1;
	unsigned int r;
	int fd;

	setup_run(_metadata, run);
	if (run->step_clock) {
		step_pid = fork();
		ASSERT_LE(0, step_pid);
		if (step_pid == 0)
			_exit(stepper(run, offset_ns));
	}
	for (r = 0; r < run->readers; r++) {
		pids[r] = fork();
		ASSERT_LE(0, pids[r]);
		if (pids[r] == 0) {
			int flags = O_RDONLY;

			if (run->nonblock_half && (r % 2))
				flags |= O_NONBLOCK;
			fd = sf_open(flags);
			if (fd < 0)
				_exit(2);
			fd = reader(run, r, fd);
			__atomic_add_fetch(run->readers_done, 1, __ATOMIC_SEQ_CST);
			_exit(fd);
		}
	}
	*run->go = 1;
	for (r = 0; r < run->readers; r++) {
		int status = sf_wait_child(pids[r]);

		EXPECT_EQ(0, status) TH_LOG("reader %u exited with %d", r, status);
		if (status) {
			run->failed[r] = 1;
			/* Dead readers never count themselves done. */
			__atomic_add_fetch(run->readers_done, 1, __ATOMIC_SEQ_CST);
		}
	}
	if (step_pid > 0) {
		EXPECT_EQ(0, sf_wait_child(step_pid)) TH_LOG("clock stepper failed");
		TH_LOG("%d wall clock steps of up to an hour while reading", *run->steps);
		EXPECT_LE((int)(run->ids_per_reader / 100000) - 1, *run->steps);
	}
	check_run(_metadata, run);

	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ((uint64_t)run->readers * run->ids_per_reader, st.ids_issued);
	close(fd);
}

FIXTURE(conc) {
	int unused;
};

FIXTURE_SETUP(conc)
{
}

FIXTURE_TEARDOWN(conc)
{
}

/* 8 processes x 20000 IDs, default layout. */
TEST_F_TIMEOUT(conc, processes, 120)
{
	struct run run = {
		.readers = 8,
		.ids_per_reader = 20000,
		.params = "datacenter_id=7 worker_id=19",
		.check_clock = true,
	};

	run_processes(_metadata, &run);
}

/* 8 threads sharing one file. */
TEST_F_TIMEOUT(conc, threads_sharing_a_file, 120)
{
	struct run run = {
		.readers = 8,
		.ids_per_reader = 10000,
		.params = "worker_id=3",
		.check_clock = true,
	};
	struct thread_arg args[8];
	pthread_t th[8];
	struct snowflake_stats st;
	unsigned int r;

	setup_run(_metadata, &run);
	run.fd = sf_open(O_RDONLY);
	ASSERT_LE(0, run.fd);
	for (r = 0; r < run.readers; r++) {
		args[r].run = &run;
		args[r].r = r;
		ASSERT_EQ(0, pthread_create(&th[r], NULL, thread_main, &args[r]));
	}
	*run.go = 1;
	for (r = 0; r < run.readers; r++)
		ASSERT_EQ(0, pthread_join(th[r], NULL));
	check_run(_metadata, &run);
	ASSERT_EQ(0, sf_get_stats(run.fd, &st));
	EXPECT_EQ((uint64_t)run.readers * run.ids_per_reader, st.ids_issued);
	close(run.fd);
}

/*
 * 8 IDs per 5 ms tick: 4 processes keep emptying ticks; half of them
 * block, half poll.  The blocking ones must have slept.
 */
TEST_F_TIMEOUT(conc, empty_ticks, 120)
{
	struct run run = {
		.readers = 4,
		.ids_per_reader = 400,
		.params = "sequence_bits=3 time_unit_ms=5",
		.nonblock_half = true,
		.check_clock = true,
	};
	struct snowflake_stats st;
	int fd;

	run_processes(_metadata, &run);
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_LT(0, st.exhausted_waits);
	EXPECT_LT(0, st.eagain);
	close(fd);
}

/*
 * The torture lane: 8 processes x 1,000,000 IDs, single and batch reads,
 * while another process steps the wall clock back and forth by up to an
 * hour every ~100 ms.  SNOWFLAKE_TORTURE_IDS sets the IDs a process takes
 * (100,000 to 10,000,000; tests/vmtest/run.sh gives 250,000 to the kernels
 * after the first but the PREEMPT_RT one: the driver's code is the same
 * on each); anything else there fails the test.
 */
TEST_F_TIMEOUT(conc, torture_8x1M_clock_steps, 900)
{
	const char *env = getenv("SNOWFLAKE_TORTURE_IDS");
	struct run run = {
		.readers = 8,
		.ids_per_reader = 1000000,
		.params = "datacenter_id=5 worker_id=11",
		.step_clock = true,
	};

	if (env && *env) {
		unsigned long v;
		char *end;

		errno = 0;
		v = strtoul(env, &end, 10);
		ASSERT_TRUE(!errno && !*end && v >= 100000 && v <= 10000000)
			TH_LOG("SNOWFLAKE_TORTURE_IDS=%s: not a count from 100000 to 10000000", env);
		run.ids_per_reader = (unsigned int)v;
	}
	ksft_print_msg("torture: 8 processes x %u IDs\n", run.ids_per_reader);
	run_processes(_metadata, &run);
}

SF_TEST_MAIN()
