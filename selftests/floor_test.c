// SPDX-License-Identifier: GPL-2.0
/*
 * The floor: SET_FLOOR/GET_FLOOR, the floor_ms sysfs file and module
 * parameter, the clock jumping forward to a floor, EOVERFLOW at the end of
 * the timestamp range and reads failing instead of wrapping.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NEAR_MS		3000
#define TEN_MIN_MS	(10 * 60 * 1000ULL)

FIXTURE(fl) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(fl)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(fl)
{
	if (self->fd >= 0)
		close(self->fd);
}

static uint64_t clock_now(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_stats st;

	EXPECT_EQ(0, sf_get_stats(fd, &st));
	return st.clock_ms;
}

/* Reopen after a reload done by the test. */
static void reload(struct __test_metadata *_metadata, FIXTURE_DATA(fl) *self,
		   const char *params)
{
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(params)) TH_LOG("load '%s'", params);
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

/* A floor 10 min ahead: the clock jumps there, IDs are not below it. */
TEST_F(fl, raise_floor_jumps_clock)
{
	struct snowflake_stats st;
	struct snowflake_floor f;
	uint64_t floor, ids[64], prev = 0;
	int r;

	floor = clock_now(_metadata, self->fd) + TEN_MIN_MS;
	ASSERT_EQ(0, sf_set_floor(self->fd, floor)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	EXPECT_EQ(floor, f.floor_ms);
	EXPECT_EQ(0, f.last_timestamp_ms);
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(floor, st.floor_ms);
	/* no ID yet: the layout may still change */
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_LOCKED);

	for (r = 0; r < 10; r++) {
		ssize_t n, i;

		n = sf_read_ids(self->fd, ids, 1 + r * 7);
		ASSERT_LT(0, n);
		for (i = 0; i < n; i++) {
			struct sf_id id = sf_decode(&self->cfg, ids[i]);

			EXPECT_LE(floor, id.ms) TH_LOG("ID below the floor");
			EXPECT_GE(floor + NEAR_MS, id.ms);
			EXPECT_LT(prev, ids[i]);
			prev = ids[i];
		}
	}
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(1, st.floor_jumps);
	EXPECT_LE(floor, st.clock_ms);
	EXPECT_LE(TEN_MIN_MS - NEAR_MS, st.clock_offset_ms);
	EXPECT_GE(TEN_MIN_MS + NEAR_MS, st.clock_offset_ms);
	EXPECT_EQ(0, st.clock_catchups);
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	EXPECT_EQ(floor, f.floor_ms);
	EXPECT_EQ(sf_decode(&self->cfg, prev).ms, f.last_timestamp_ms);
	EXPECT_EQ(f.last_timestamp_ms, sf_sysfs_u64("last_timestamp_ms"));
	EXPECT_EQ(st.clock_offset_ms, sf_sysfs_u64("clock_offset_ms"));
	EXPECT_LE(floor, sf_sysfs_u64("clock_ms"));

	/* The clock moved forward; it never moves back. */
	sf_sleep_ms(20);
	EXPECT_LE(st.clock_ms, clock_now(_metadata, self->fd));
}

/* A floor at or below the current one is accepted and changes nothing. */
TEST_F(fl, lower_floor_ignored)
{
	struct snowflake_stats st0, st1;
	struct snowflake_floor f;
	uint64_t floor, lower[4];
	size_t i;

	floor = clock_now(_metadata, self->fd) + TEN_MIN_MS;
	ASSERT_EQ(0, sf_set_floor(self->fd, floor));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	lower[0] = floor;
	lower[1] = floor - 1;
	lower[2] = floor - TEN_MIN_MS;
	lower[3] = 0;
	for (i = 0; i < SF_ARRAY_SIZE(lower); i++) {
		ASSERT_EQ(0, sf_set_floor(self->fd, lower[i]))
			TH_LOG("floor %" PRIu64 ": %s", lower[i], strerror(errno));
		ASSERT_EQ(0, sf_get_floor(self->fd, &f));
		EXPECT_EQ(floor, f.floor_ms);
	}
	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(st0.floor_jumps, st1.floor_jumps);
	EXPECT_EQ(floor, st1.floor_ms);
}

/* A floor below the clock is recorded but moves nothing. */
TEST_F(fl, floor_below_clock)
{
	struct snowflake_stats st;
	struct snowflake_floor f;
	uint64_t floor, id, before, after;

	floor = clock_now(_metadata, self->fd) - HOUR_MS;
	ASSERT_EQ(0, sf_set_floor(self->fd, floor));
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	EXPECT_EQ(floor, f.floor_ms);
	before = sf_real_ms();
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	after = sf_real_ms();
	EXPECT_LE(before - NEAR_MS, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(after + 50, sf_decode(&self->cfg, id).ms);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.floor_jumps);
	EXPECT_EQ(0, st.clock_offset_ms);
}

TEST_F(fl, last_timestamp_nonzero_einval)
{
	struct snowflake_floor in = { .floor_ms = 0, .last_timestamp_ms = 1 }, f;

	in.floor_ms = clock_now(_metadata, self->fd) + TEN_MIN_MS;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FLOOR, &in));
	in.last_timestamp_ms = in.floor_ms;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FLOOR, &in));
	in.floor_ms = 0;
	in.last_timestamp_ms = ~0ULL;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FLOOR, &in));
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	EXPECT_EQ(0, f.floor_ms);
	EXPECT_EQ(0, f.last_timestamp_ms);
}

/* A floor past what timestamp_bits hold: EOVERFLOW, nothing changes. */
TEST_F(fl, floor_overflow)
{
	const uint64_t end = self->cfg.epoch_ms +
			     (1ULL << self->cfg.timestamp_bits) * self->cfg.time_unit_ms;
	const uint64_t bad[] = { end, end + 1, end + HOUR_MS, ~0ULL, ~0ULL >> 1 };
	struct snowflake_stats st;
	struct snowflake_floor f;
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(bad); i++) {
		struct snowflake_floor in = { .floor_ms = bad[i] };

		EXPECT_ERRNO(EOVERFLOW, ioctl(self->fd, SNOWFLAKE_IOC_SET_FLOOR, &in));
		ASSERT_EQ(0, sf_get_floor(self->fd, &f));
		EXPECT_EQ(0, f.floor_ms);
	}
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.floor_ms);
	EXPECT_EQ(0, st.floor_jumps);
	EXPECT_EQ(0, st.clock_offset_ms);
}

/*
 * The floor at the last timestamp the width holds: that tick's IDs are
 * issued, then reads fail with EOVERFLOW instead of wrapping; poll shows
 * nothing; refused_reads counts.  1 s ticks and 32 bits: the last tick
 * lasts long enough to be read, and lies in 2146.
 */
TEST_F(fl, never_wraps)
{
	struct snowflake_stats st0, st1;
	uint64_t *ids, prev = 0, got = 0, max_ts, floor;
	int r, ret;

	reload(_metadata, self, "time_unit_ms=1000 timestamp_bits=32");
	max_ts = sf_mask(self->cfg.timestamp_bits);
	floor = self->cfg.epoch_ms + max_ts * self->cfg.time_unit_ms;
	ids = calloc(SNOWFLAKE_MAX_IDS_PER_READ, sizeof(*ids));
	ASSERT_NE(NULL, ids);
	ASSERT_EQ(0, sf_set_floor(self->fd, floor)) TH_LOG("%s", strerror(errno));
	for (r = 0; r < 4; r++) {
		ssize_t n = sf_read_ids(self->fd, ids, SNOWFLAKE_MAX_IDS_PER_READ), i;

		if (n == -EOVERFLOW)
			break;
		ASSERT_LT(0, n) TH_LOG("read: %s", strerror((int)-n));
		for (i = 0; i < n; i++) {
			struct sf_id f = sf_decode(&self->cfg, ids[i]);

			EXPECT_EQ(max_ts, f.ts);
			EXPECT_EQ(0, f.high);
			EXPECT_EQ(0, ids[i] >> 63);
			EXPECT_LT(prev, ids[i]);
			prev = ids[i];
		}
		got += n;
	}
	/* The whole last tick was handed out, then reads failed. */
	EXPECT_EQ(1ULL << self->cfg.sequence_bits, got);
	ASSERT_GT(4, r) TH_LOG("no EOVERFLOW");
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	EXPECT_LE(1, st0.refused_reads);
	EXPECT_EQ(got, st0.ids_issued);

	/* It stays that way: blocking or not, poll says nothing. */
	EXPECT_ERRNO(EOVERFLOW, read(self->fd, ids, 8));
	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	EXPECT_ERRNO(EOVERFLOW, read(self->fd, ids, 64));
	ret = sf_poll_in(self->fd, 0);
	EXPECT_EQ(0, ret & (POLLIN | POLLRDNORM)) TH_LOG("poll: %#x", ret);
	ret = sf_poll_in(self->fd, 300);
	EXPECT_EQ(0, ret & (POLLIN | POLLRDNORM)) TH_LOG("poll: %#x", ret);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(st0.refused_reads + 2, st1.refused_reads);
	EXPECT_EQ(st0.ids_issued, st1.ids_issued);
	EXPECT_EQ(st0.reads, st1.reads);
	free(ids);
}

/* floor_ms in sysfs: reads the floor, writes raise it. */
TEST_F(fl, sysfs_floor_ms)
{
	struct snowflake_floor f;
	uint64_t floor, id;
	int ret;

	EXPECT_EQ(0, sf_sysfs_u64("floor_ms"));
	floor = clock_now(_metadata, self->fd) + TEN_MIN_MS;
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", floor));
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	EXPECT_EQ(floor, f.floor_ms);

	/*
	 * A lower value: "writes only raise it".  Whether the write itself
	 * succeeds (like SET_FLOOR) or fails is not specified; the floor
	 * must stay.
	 */
	ret = sf_sysfs_write_u64("floor_ms", floor - 1000);
	EXPECT_TRUE(ret == 0 || ret == -EINVAL) TH_LOG("%s", strerror(-ret));
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));

	/* Past the timestamp range: refused, unchanged. */
	ret = sf_sysfs_write_u64("floor_ms", self->cfg.epoch_ms +
				 (1ULL << self->cfg.timestamp_bits));
	EXPECT_TRUE(ret == -EOVERFLOW || ret == -EINVAL) TH_LOG("%s", strerror(-ret));
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));

	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(floor, sf_decode(&self->cfg, id).ms);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/floor_jumps"));
}

/* The floor_ms parameter: the initial floor. */
TEST_F(fl, floor_ms_parameter)
{
	struct snowflake_stats st;
	char params[64];
	uint64_t floor, id;

	floor = sf_real_ms() + TEN_MIN_MS;
	snprintf(params, sizeof(params), "floor_ms=%" PRIu64, floor);
	reload(_metadata, self, params);
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(floor, sf_decode(&self->cfg, id).ms);
	EXPECT_GE(floor + NEAR_MS, sf_decode(&self->cfg, id).ms);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(1, st.floor_jumps);
	EXPECT_EQ(floor, st.floor_ms);
}

/*
 * A floor that does not fall on a tick boundary: the IDs' tick is the
 * first one that starts at or after it.
 */
TEST_F(fl, floor_rounds_up_to_a_tick)
{
	uint64_t floor, id;
	struct sf_id f;

	reload(_metadata, self, "time_unit_ms=1000 sequence_bits=4");
	floor = clock_now(_metadata, self->fd) + TEN_MIN_MS;
	floor += 500 - (floor - self->cfg.epoch_ms) % 1000;	/* mid-tick */
	ASSERT_EQ(0, sf_set_floor(self->fd, floor));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	f = sf_decode(&self->cfg, id);
	EXPECT_LE(floor, f.ms) TH_LOG("ID at %" PRIu64 " below floor %" PRIu64,
				      f.ms, floor);
	EXPECT_GE(floor + 500 + 1000, f.ms);
}

/* SET_CONFIG checks the floor against timestamp_bits too. */
TEST_F(fl, set_config_overflow_by_floor)
{
	struct snowflake_config c, got;
	uint64_t now, floor, id;

	now = clock_now(_metadata, self->fd);
	floor = now + TEN_MIN_MS;
	ASSERT_EQ(0, sf_set_floor(self->fd, floor));
	/* 2^19 ms = 8.7 min from an epoch 5 min ago: now fits, the floor not. */
	c = self->cfg;
	c.epoch_ms = now - 5 * 60 * 1000;
	c.timestamp_bits = 19;
	EXPECT_ERRNO(EOVERFLOW, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, sf_get_config(self->fd, &got));
	EXPECT_TRUE(sf_config_eq(&self->cfg, &got));
	/* 2^21 ms = 35 min: both fit. */
	c.timestamp_bits = 21;
	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LE(floor, sf_decode(&c, id).ms);
	EXPECT_EQ(0, sf_decode(&c, id).high);
}

/*
 * Restoring last_timestamp_ms + time_unit_ms as the floor after a reload:
 * no earlier ID is issued again, whatever the clock says.
 */
TEST_F(fl, restore_after_reload)
{
	struct snowflake_floor f;
	uint64_t a, b, last;

	/* Issue IDs 10 min ahead of the clock... */
	ASSERT_EQ(0, sf_set_floor(self->fd, clock_now(_metadata, self->fd) + TEN_MIN_MS));
	ASSERT_EQ(0, sf_read1(self->fd, &a));
	ASSERT_EQ(0, sf_get_floor(self->fd, &f));
	last = f.last_timestamp_ms;
	EXPECT_EQ(sf_decode(&self->cfg, a).ms, last);
	/* ...reload: the clock is back to now... */
	reload(_metadata, self, "");
	/* ...restore the floor: the next ID is above the old ones. */
	ASSERT_EQ(0, sf_set_floor(self->fd, last + self->cfg.time_unit_ms));
	ASSERT_EQ(0, sf_read1(self->fd, &b));
	EXPECT_LT(a, b);
	EXPECT_LT(last, sf_decode(&self->cfg, b).ms);
}

SF_TEST_MAIN()
