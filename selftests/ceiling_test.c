// SPDX-License-Identifier: GPL-2.0
/*
 * The lease's window of timestamps (SNOWFLAKE_IDS_WINDOW): a floor and a
 * ceiling set with the ids.  No ID is stamped above the ceiling: reads are
 * refused there with ENOTCONN (SNOWFLAKE_STATE_CEILING, lease_ceiling_reached,
 * statistics/lease_ceiling_hits), at once when the last tick below it is used
 * up (a blocking read does not sleep into the refusal); neither a floor nor a
 * catch-up to a wall clock stepped forward can make an ID above it; a renewal
 * with a higher ceiling serves again with larger IDs.  Old binaries (16- and
 * 32-byte SET_IDS) work and leave the window alone; with no window (as at
 * load) nothing is ever refused.  A bad window changes nothing at all.
 *
 * The wall clock is stepped by one test; it is put right in that test and
 * again when the binary ends (also after a kill by the outer timeout).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NO_CEILING_STR	"18446744073709551615"

/* struct snowflake_ids as it was before VER1 and before VER2. */
struct ids_ver0 {
	__u32 datacenter_id;
	__u32 worker_id;
	__u32 flags;
	__u32 __reserved;
};

struct ids_ver1 {
	__u32 datacenter_id;
	__u32 worker_id;
	__u32 flags;
	__u32 __reserved;
	__u64 deadline_ns;
	__u32 vm_forks;
	__u32 __reserved2;
};

#define SET_IDS_VER0	_IOW(SNOWFLAKE_IOC_MAGIC, 0x02, struct ids_ver0)
#define SET_IDS_VER1	_IOW(SNOWFLAKE_IOC_MAGIC, 0x02, struct ids_ver1)

#define LEASE_FLAGS	(SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_WINDOW)

static int64_t real_minus_mono_ns;
static bool clock_saved;

static void save_clock(void)
{
	real_minus_mono_ns = (int64_t)(sf_clock_ns(CLOCK_REALTIME) - sf_mono_ns());
	clock_saved = true;
}

/* Set the wall clock to the true time + @delta_ms: 0 or -errno. */
static int step_clock(int64_t delta_ms)
{
	int64_t ns = (int64_t)sf_mono_ns() + real_minus_mono_ns +
		     delta_ms * (int64_t)NSEC_PER_MSEC;
	struct timespec ts = {
		.tv_sec = ns / (int64_t)NSEC_PER_SEC,
		.tv_nsec = ns % (int64_t)NSEC_PER_SEC,
	};

	if (!clock_saved)
		return -EINVAL;
	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

static void restore_clock(void)
{
	if (clock_saved && step_clock(0))
		ksft_print_msg("cannot restore the wall clock: %s\n", strerror(errno));
}

static int set_window(int fd, uint32_t worker, uint32_t flags, uint64_t floor_ms,
		      uint64_t ceiling_ms)
{
	struct snowflake_ids ids = {
		.worker_id = worker,
		.flags = flags,
		.floor_ms = floor_ms,
		.ceiling_ms = ceiling_ms,
	};

	return ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids) ? -errno : 0;
}

static uint64_t clock_ms(int fd)
{
	struct snowflake_stats st;

	return sf_get_stats(fd, &st) ? 0 : st.clock_ms;
}

/* Everything a bad SET_IDS must leave as it was. */
struct snap {
	struct snowflake_config cfg;
	struct snowflake_floor fl;
	struct snowflake_stats st;
	char ceiling[32], deadline[32];
	uint64_t hits, expiries, vm_forked, refusing;
};

static void take(struct __test_metadata *_metadata, int fd, struct snap *s)
{
	memset(s, 0xcc, sizeof(*s));
	ASSERT_EQ(0, sf_get_config(fd, &s->cfg));
	ASSERT_EQ(0, sf_get_floor(fd, &s->fl));
	ASSERT_EQ(0, sf_get_stats(fd, &s->st));
	ASSERT_LT(0, sf_sysfs_read_str("lease_ceiling_ms", s->ceiling, sizeof(s->ceiling)));
	ASSERT_LT(0, sf_sysfs_read_str("lease_deadline_ns", s->deadline, sizeof(s->deadline)));
	s->hits = sf_sysfs_u64("statistics/lease_ceiling_hits");
	s->expiries = sf_sysfs_u64("statistics/lease_expiries");
	s->vm_forked = sf_sysfs_u64("vm_forked");
	s->refusing = sf_sysfs_u64("refusing");
}

static void expect_same(struct __test_metadata *_metadata, int fd,
			const struct snap *a, const char *what)
{
	struct snap b;

	take(_metadata, fd, &b);
	EXPECT_TRUE(sf_config_eq(&a->cfg, &b.cfg)) TH_LOG("%s: config changed", what);
	EXPECT_EQ(a->fl.floor_ms, b.fl.floor_ms) TH_LOG("%s: floor changed", what);
	EXPECT_EQ(a->fl.last_timestamp_ms, b.fl.last_timestamp_ms) TH_LOG("%s", what);
	EXPECT_STREQ(a->ceiling, b.ceiling) TH_LOG("%s: ceiling changed", what);
	EXPECT_STREQ(a->deadline, b.deadline) TH_LOG("%s: deadline changed", what);
	EXPECT_EQ(a->st.state, b.st.state) TH_LOG("%s: state %#x -> %#x", what,
						   a->st.state, b.st.state);
	EXPECT_EQ(a->st.ids_issued, b.st.ids_issued) TH_LOG("%s", what);
	EXPECT_EQ(a->st.refused_reads, b.st.refused_reads) TH_LOG("%s", what);
	EXPECT_EQ(a->st.floor_jumps, b.st.floor_jumps) TH_LOG("%s", what);
	EXPECT_EQ(a->st.clock_offset_ms, b.st.clock_offset_ms) TH_LOG("%s", what);
	EXPECT_EQ(a->st.floor_ms, b.st.floor_ms) TH_LOG("%s", what);
	EXPECT_EQ(a->st.__reserved, b.st.__reserved);
	EXPECT_EQ(a->hits, b.hits) TH_LOG("%s", what);
	EXPECT_EQ(a->expiries, b.expiries) TH_LOG("%s", what);
	EXPECT_EQ(a->vm_forked, b.vm_forked) TH_LOG("%s", what);
	EXPECT_EQ(a->refusing, b.refusing) TH_LOG("%s", what);
}

/* Reads are refused at the ceiling: errno, state, sysfs, poll. */
static void expect_at_ceiling(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_stats st;

	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING));
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_EXPIRED);
	EXPECT_EQ(1, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));
	sf_expect_reads_refused(_metadata, fd);
}

/* Reload the module with @params, open the device, read its config. */
static int reload_open(struct __test_metadata *_metadata, const char *params,
		       struct snowflake_config *cfg)
{
	int fd;

	if (sf_reload(params)) {
		TH_LOG("cannot reload with %s", params);
		return -1;
	}
	fd = sf_open(O_RDONLY);
	if (fd >= 0 && sf_get_config(fd, cfg)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

FIXTURE(cl) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(cl)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(cl)
{
	if (self->fd >= 0)
		close(self->fd);
	restore_clock();
}

/*
 * No window at load: the files say so, and a read-only workload (many
 * reads, some of them blocking on used-up ticks) is never refused.
 */
TEST_F(cl, none_at_load)
{
	struct snowflake_stats st;
	uint64_t ids[4096];
	char buf[64];
	int i;

	ASSERT_LT(0, sf_sysfs_read_str("lease_ceiling_ms", buf, sizeof(buf)));
	EXPECT_STREQ(NO_CEILING_STR "\n", buf);
	EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	for (i = 0; i < 20; i++)
		ASSERT_EQ((ssize_t)sizeof(ids), read(self->fd, ids, sizeof(ids)))
			TH_LOG("read %d: %s", i, strerror(errno));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.state & (SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING));
	EXPECT_EQ(0, st.refused_reads);
	EXPECT_EQ(0, sf_sysfs_u64("statistics/lease_ceiling_hits"));
}

/*
 * Read until refused: every ID at or below the ceiling, the refusal says
 * why, counted once however many reads are refused; the window's floor
 * started the IDs at it.
 *
 * A guest stalled for the whole window before its first read (the debug
 * kernel's guest beside the contract's stores: "0 IDs in [c0 + 100,
 * c0 + 400], then ENOTCONN" in CI's run of 212cecf) did nothing wrong: the
 * window is set again, four times as long, at most twice more.  A refusal
 * while the clock is still below the ceiling fails at once, whatever the
 * attempt; no ID in three windows fails.
 */
TEST_F(cl, refused_at_ceiling)
{
	uint64_t c0, floor, ceiling, id, last = 0, t0, n = 0, span = 300;
	struct sf_id f;
	int attempt;

	for (attempt = 1; ; attempt++, span *= 4) {
		c0 = clock_ms(self->fd);
		floor = c0 + 100;
		ceiling = floor + span;
		ASSERT_EQ(0, set_window(self->fd, 9, LEASE_FLAGS, floor, ceiling));
		EXPECT_EQ(ceiling, sf_sysfs_u64("lease_ceiling_ms"));
		EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));
		EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));

		t0 = sf_mono_ns();
		while (sf_read1(self->fd, &id) == 0) {
			ASSERT_LT(sf_mono_ns() - t0, 60 * NSEC_PER_SEC) TH_LOG("never refused");
			f = sf_decode(&self->cfg, id);
			ASSERT_LE(f.ms, ceiling) TH_LOG("ID stamped %" PRIu64
							" above the ceiling %" PRIu64,
							f.ms, ceiling);
			ASSERT_LE(floor, f.ms);
			EXPECT_EQ(9, f.worker);
			ASSERT_LT(last, id);
			last = id;
			n++;
		}
		EXPECT_EQ(ENOTCONN, errno);
		ASSERT_LE(ceiling, clock_ms(self->fd)) TH_LOG("refused below the ceiling");
		if (n > 0 || attempt == 3)
			break;
		TH_LOG("attempt %d: the clock passed the ceiling %" PRIu64
		       " before the first read; a window of %" PRIu64 " ms",
		       attempt, ceiling, span * 4);
	}
	EXPECT_LT(0, n);
	expect_at_ceiling(_metadata, self->fd);
	EXPECT_EQ(attempt, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	EXPECT_GE(ceiling, sf_sysfs_u64("last_timestamp_ms"));
	TH_LOG("%" PRIu64 " IDs in [%" PRIu64 ", %" PRIu64 "] (attempt %d), then ENOTCONN",
	       n, floor, ceiling, attempt);
}

/*
 * The last tick below the ceiling used up: a blocking read is refused at
 * once (it never sleeps: exhausted_waits stays), where with one more tick
 * below the ceiling it sleeps until that tick and gets an ID.  Ticks of 5 s
 * and one ID per tick make the used-up tick easy to reach.
 */
TEST(used_up_last_tick_refuses_at_once)
{
	struct snowflake_config cfg;
	struct snowflake_stats st;
	uint64_t id, start;
	int fd;

	fd = reload_open(_metadata, "sequence_bits=0 time_unit_ms=5000", &cfg);
	ASSERT_LE(0, fd);
	/* A fresh tick: the floor moves the clock to its start. */
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	ASSERT_EQ(0, sf_set_floor(fd, st.clock_ms + 5000));
	ASSERT_EQ(0, sf_read1(fd, &id));
	start = sf_decode(&cfg, id).ms;

	/* The ceiling inside this tick: the next one starts above it. */
	ASSERT_EQ(0, set_window(fd, 1, LEASE_FLAGS, 0, start + 4999));
	ASSERT_EQ(0, sf_set_nonblock(fd, false));
	EXPECT_EQ(-ENOTCONN, sf_read1(fd, &id));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(0, st.exhausted_waits) TH_LOG("the read slept into the refusal");
	EXPECT_EQ(SNOWFLAKE_STATE_CEILING, st.state & SNOWFLAKE_STATE_CEILING);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	EXPECT_EQ(0, sf_poll_in(fd, 0) & POLLIN);

	/* The next tick's start at the ceiling: wait for it, get an ID. */
	ASSERT_EQ(0, set_window(fd, 1, LEASE_FLAGS, 0, start + 5000));
	EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));
	ASSERT_EQ(0, sf_read1(fd, &id)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(start + 5000, sf_decode(&cfg, id).ms);
	/* And that one used up too: refused at once again. */
	EXPECT_EQ(-ENOTCONN, sf_read1(fd, &id));
	EXPECT_EQ(2, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	close(fd);
}

/* A floor far above the ceiling is taken, and refuses: no ID above it. */
TEST_F(cl, floor_cannot_pass)
{
	uint64_t c0, ceiling, id;

	c0 = clock_ms(self->fd);
	ceiling = c0 + 60000;
	ASSERT_EQ(0, set_window(self->fd, 2, LEASE_FLAGS, 0, ceiling));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_set_floor(self->fd, c0 + HOUR_MS));
	EXPECT_EQ(c0 + HOUR_MS, sf_sysfs_u64("floor_ms"));
	EXPECT_LE(c0 + HOUR_MS, clock_ms(self->fd));
	expect_at_ceiling(_metadata, self->fd);
	EXPECT_GE(ceiling, sf_sysfs_u64("last_timestamp_ms"));
	/* The floor in sysfs too. */
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", c0 + 2 * HOUR_MS));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	/* A renewal above the floor serves; one below it refuses again. */
	ASSERT_EQ(0, set_window(self->fd, 2, LEASE_FLAGS, c0 + 3 * HOUR_MS,
				c0 + 3 * HOUR_MS + 60000));
	EXPECT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(c0 + 3 * HOUR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(c0 + 3 * HOUR_MS + 60000, sf_decode(&self->cfg, id).ms);
	ASSERT_EQ(0, set_window(self->fd, 2, LEASE_FLAGS, 0, c0));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	EXPECT_EQ(2, sf_sysfs_u64("statistics/lease_ceiling_hits"));
}

/*
 * The wall clock stepped an hour forward: the catch-up moves the clock
 * past the ceiling, and reads are refused; no ID is stamped above it.
 */
TEST_F(cl, catch_up_cannot_pass)
{
	uint64_t c0, ceiling, id, catchups, t0;

	c0 = clock_ms(self->fd);
	ceiling = c0 + 600000;
	ASSERT_EQ(0, set_window(self->fd, 3, LEASE_FLAGS, 0, ceiling));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	catchups = sf_sysfs_u64("statistics/clock_catchups");
	ASSERT_EQ(0, step_clock(HOUR_MS));
	/* The catch-up work looks once a second. */
	t0 = sf_mono_ns();
	while (sf_sysfs_u64("statistics/clock_catchups") == catchups) {
		ASSERT_LT(sf_mono_ns() - t0, 60 * NSEC_PER_SEC) TH_LOG("no catch-up");
		sf_sleep_ms(100);
	}
	ASSERT_EQ(0, step_clock(0));
	EXPECT_LT(ceiling, clock_ms(self->fd));
	expect_at_ceiling(_metadata, self->fd);
	EXPECT_GE(ceiling, sf_sysfs_u64("last_timestamp_ms"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
}

/*
 * At the ceiling, a renewal with a higher one serves again, with larger
 * IDs, and wakes a poller; the same ceiling again changes nothing.
 */
TEST_F(cl, renewal_resumes)
{
	uint64_t c0, before, after;
	struct pollfd pfd;

	c0 = clock_ms(self->fd);
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, c0 + 10000));
	ASSERT_EQ(0, sf_read1(self->fd, &before));
	/* At the ceiling by a floor (no need to wait for it). */
	ASSERT_EQ(0, sf_set_floor(self->fd, c0 + 10001));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &after));
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, c0 + 10000));
	EXPECT_EQ(1, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &after));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, c0 + 10001, c0 + 20000));
	EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	ASSERT_EQ(0, sf_read1(self->fd, &after));
	EXPECT_LT(before, after);
	EXPECT_LE(c0 + 10001, sf_decode(&self->cfg, after).ms);
	EXPECT_GE(c0 + 20000, sf_decode(&self->cfg, after).ms);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	/* None: served whatever the time. */
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, SNOWFLAKE_NO_CEILING));
	ASSERT_EQ(0, sf_set_floor(self->fd, c0 + HOUR_MS));
	ASSERT_EQ(0, sf_read1(self->fd, &after));
}

/* A poller asleep when the renewal comes is woken by it. */
TEST_F(cl, renewal_wakes_poller)
{
	uint64_t c0, id;
	pid_t pid;
	int status;

	c0 = clock_ms(self->fd);
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, c0 + 5000, c0 + 65000));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, c0 + 4000));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

		_exit(poll(&pfd, 1, 30000) == 1 && (pfd.revents & POLLIN) ? 0 : 1);
	}
	sf_sleep_ms(300);
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, c0 + 60000));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Old binaries: a 16-byte and a 32-byte SET_IDS still work (with a
 * deadline, the 32-byte one) and leave the window as it is; the window's
 * flag needs the 48-byte structure.
 */
TEST_F(cl, old_binaries_leave_it)
{
	struct ids_ver0 v0 = { .worker_id = 5, .flags = SNOWFLAKE_IDS_ASSIGN_WORKER };
	struct ids_ver1 v1 = {
		.worker_id = 6,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_DEADLINE,
		.deadline_ns = SNOWFLAKE_NO_DEADLINE,
	};
	uint64_t c0, id;

	c0 = clock_ms(self->fd);
	ASSERT_EQ(0, set_window(self->fd, 4, LEASE_FLAGS, 0, c0 + HOUR_MS));
	ASSERT_EQ(0, ioctl(self->fd, SET_IDS_VER0, &v0)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(5, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(c0 + HOUR_MS, sf_sysfs_u64("lease_ceiling_ms"));
	ASSERT_EQ(0, ioctl(self->fd, SET_IDS_VER1, &v1)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(6, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(c0 + HOUR_MS, sf_sysfs_u64("lease_ceiling_ms"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_EQ(6, sf_decode(&self->cfg, id).worker);
	/* The ceiling still holds for them. */
	ASSERT_EQ(0, sf_set_floor(self->fd, c0 + 2 * HOUR_MS));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	/* The sysfs ids do not lift it either. */
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "7"));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));

	/* SNOWFLAKE_IDS_WINDOW in a 32-byte structure: EINVAL. */
	v1.flags |= SNOWFLAKE_IDS_WINDOW;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SET_IDS_VER1, &v1));
	EXPECT_EQ(c0 + HOUR_MS, sf_sysfs_u64("lease_ceiling_ms"));
}

/*
 * Bad windows are refused and change nothing: not the ids, the deadline,
 * the floor, the ceiling, the re-arm, the counters or the state.
 */
TEST_F(cl, bad_windows_change_nothing)
{
	struct snowflake_ids ids;
	struct snap s;
	uint64_t c0, id;

	c0 = clock_ms(self->fd);
	memset(&ids, 0, sizeof(ids));
	ids.worker_id = 5;
	ids.flags = LEASE_FLAGS | SNOWFLAKE_IDS_DEADLINE;
	ids.deadline_ns = sf_clock_ns(CLOCK_BOOTTIME) + 600 * NSEC_PER_SEC;
	ids.floor_ms = c0 + 1000;
	ids.ceiling_ms = c0 + HOUR_MS;
	ASSERT_EQ(0, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	take(_metadata, self->fd, &s);

	/* Each changes the worker, the deadline and the window, and fails. */
	ids.worker_id = 6;
	ids.deadline_ns += NSEC_PER_SEC;

	ids.floor_ms = c0 + 2 * HOUR_MS;
	ids.ceiling_ms = c0 + HOUR_MS + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "floor above the ceiling");

	ids.floor_ms = 0;
	ids.ceiling_ms = self->cfg.epoch_ms - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "ceiling below the epoch");

	ids.floor_ms = self->cfg.epoch_ms + (1ULL << 41);
	ids.ceiling_ms = SNOWFLAKE_NO_CEILING;
	EXPECT_ERRNO(EOVERFLOW, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "floor past timestamp_bits");

	ids.floor_ms = c0 + 2 * HOUR_MS;
	ids.worker_id = 32;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "worker id past its width");

	ids.worker_id = 6;
	ids.flags |= SNOWFLAKE_IDS_VM_FORKS;
	ids.vm_forks = 1;	/* no fork happened */
	EXPECT_ERRNO(ESTALE, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "stale VM fork count");

	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_DEADLINE;
	ids.vm_forks = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "window without its flag");
	ids.floor_ms = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	expect_same(_metadata, self->fd, &s, "ceiling without its flag");

	/* And then a good one takes effect whole. */
	ids.flags = LEASE_FLAGS | SNOWFLAKE_IDS_DEADLINE;
	ids.floor_ms = c0 + 2 * HOUR_MS;
	ids.ceiling_ms = c0 + 3 * HOUR_MS;
	ASSERT_EQ(0, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	EXPECT_EQ(6, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(ids.deadline_ns, sf_sysfs_u64("lease_deadline_ns"));
	EXPECT_EQ(c0 + 2 * HOUR_MS, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(c0 + 3 * HOUR_MS, sf_sysfs_u64("lease_ceiling_ms"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(c0 + 2 * HOUR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(c0 + 3 * HOUR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_EQ(6, sf_decode(&self->cfg, id).worker);
}

/*
 * With a unit above 1 ms, a window in which no tick starts would never
 * serve (issue 23: unit 10 ms, [1001, 1009] past a tick start at 1000):
 * EINVAL, nothing changes.  The next tick's start as the ceiling serves.
 * The unit here is 1000 ms: the floor's jump is measured from the time of
 * the SET_IDS, so the read must come within one unit of it to stamp the
 * ceiling's tick; with 10 ms a guest descheduled that long on a loaded
 * host read one tick later, above the ceiling (ENOTCONN), a failure of
 * the test's timing, not of the window.
 */
TEST(window_without_tick_start_refused)
{
	struct snowflake_config cfg;
	struct snap s;
	uint64_t t, id;
	int fd;

	fd = reload_open(_metadata, "time_unit_ms=1000", &cfg);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1000, cfg.time_unit_ms);
	ASSERT_EQ(0, set_window(fd, 1, LEASE_FLAGS, 0, SNOWFLAKE_NO_CEILING));
	ASSERT_EQ(0, sf_read1(fd, &id));
	/* A tick start a minute ahead. */
	t = sf_decode(&cfg, id).ms + 60000;
	take(_metadata, fd, &s);

	EXPECT_EQ(-EINVAL, set_window(fd, 2, LEASE_FLAGS, t + 1, t + 999));
	expect_same(_metadata, fd, &s, "[t + 1, t + 999]");
	EXPECT_EQ(1, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(-EINVAL, set_window(fd, 2, LEASE_FLAGS, t + 500, t + 500));
	expect_same(_metadata, fd, &s, "[t + 500, t + 500]");

	ASSERT_EQ(0, set_window(fd, 2, LEASE_FLAGS, t + 1, t + 1000));
	ASSERT_EQ(0, sf_read1(fd, &id)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(t + 1000, sf_decode(&cfg, id).ms);
	EXPECT_EQ(2, sf_decode(&cfg, id).worker);
	close(fd);
}

/* A blocked reader (used-up tick) when a renewal lowers the ceiling: refused. */
TEST(blocked_reader_refused_by_lower_ceiling)
{
	struct snowflake_config cfg;
	struct snowflake_stats st;
	uint64_t id, start;
	pid_t pid;
	int fd, status;

	fd = reload_open(_metadata, "sequence_bits=0 time_unit_ms=5000", &cfg);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	ASSERT_EQ(0, sf_set_floor(fd, st.clock_ms + 5000));
	ASSERT_EQ(0, sf_read1(fd, &id));
	start = sf_decode(&cfg, id).ms;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint64_t v;

		/* Blocks until the next tick; must end in ENOTCONN. */
		_exit(sf_read1(fd, &v) == -ENOTCONN ? 0 : 1);
	}
	/* Let it block, then lower the ceiling below the next tick. */
	sf_sleep_ms(500);
	ASSERT_EQ(0, set_window(fd, 1, LEASE_FLAGS, 0, start + 4999));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	EXPECT_GE(start + 4999, sf_sysfs_u64("last_timestamp_ms"));
	close(fd);
}

SF_TEST_MAIN_HOOKS(save_clock, restore_clock)
