// SPDX-License-Identifier: GPL-2.0
/*
 * random_sequence: each new tick starts its sequence at a random number in
 * [0, 2^(sequence_bits-1)) instead of 0.  Off by default.
 *
 * These tests are the only reader, so the first ID this process reads in a
 * tick (its timestamp differs from the previous ID's) is the first ID
 * issued in that tick: its sequence is the tick's start.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define MAX_IDS	SNOWFLAKE_MAX_IDS_PER_READ

FIXTURE(rnd) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_VARIANT(rnd) {
	const char *params;
};

FIXTURE_VARIANT_ADD(rnd, defaults) {
	.params = "",
};

FIXTURE_SETUP(rnd)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(variant->params));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(rnd)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void reload(struct __test_metadata *_metadata, FIXTURE_DATA(rnd) *self,
		   const char *params)
{
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(params));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

/*
 * Single reads 2 ms apart (most land in a new tick): collect the sequence
 * numbers that start a tick.  Returns how many were found.
 */
static int tick_starts(struct __test_metadata *_metadata, int fd,
		       const struct snowflake_config *cfg, uint64_t *starts,
		       int max, unsigned int sleep_us)
{
	uint64_t prev, id;
	int i, found = 0;

	EXPECT_EQ(0, sf_read1(fd, &prev));
	for (i = 0; i < 50 && found < max; i++) {
		usleep(sleep_us);
		EXPECT_EQ(0, sf_read1(fd, &id));
		EXPECT_LT(prev, id);
		if (sf_decode(cfg, id).ts != sf_decode(cfg, prev).ts)
			starts[found++] = sf_decode(cfg, id).seq;
		prev = id;
	}
	return found;
}

/* Off by default: every tick starts at 0. */
TEST_F(rnd, off_by_default)
{
	uint64_t starts[50];
	int n, i;

	EXPECT_EQ(0, self->cfg.flags);
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
	n = tick_starts(_metadata, self->fd, &self->cfg, starts, 50, 2000);
	ASSERT_LE(10, n);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, starts[i]) TH_LOG("tick %d starts at %" PRIu64, i, starts[i]);
}

/*
 * With random starts in [0, 2048) (12 sequence bits), P(a start is 0) is
 * 1/2048.  We require at least 10 identified tick starts and that not all
 * of them are 0: a correct driver fails this with probability at most
 * 2048^-10 ~ 7.8e-34.  Every start must be below 2048.
 */
static void check_random_starts(struct __test_metadata *_metadata,
				FIXTURE_DATA(rnd) *self)
{
	const uint64_t limit = 1ULL << (self->cfg.sequence_bits - 1);
	uint64_t starts[50];
	int n, i, nonzero = 0;

	n = tick_starts(_metadata, self->fd, &self->cfg, starts, 50, 2000);
	ASSERT_LE(10, n);
	for (i = 0; i < n; i++) {
		EXPECT_GT(limit, starts[i]) TH_LOG("tick %d starts at %" PRIu64,
						   i, starts[i]);
		nonzero += starts[i] != 0;
	}
	EXPECT_LT(0, nonzero) TH_LOG("%d tick starts, all 0", n);
}

TEST_F(rnd, parameter)
{
	reload(_metadata, self, "random_sequence=1");
	EXPECT_EQ(SNOWFLAKE_CONFIG_RANDOM_SEQUENCE, self->cfg.flags);
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));
	check_random_starts(_metadata, self);
}

TEST_F(rnd, sysfs_on_and_off)
{
	uint64_t starts[50];
	int n, i;

	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "1\n"));
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	EXPECT_EQ(SNOWFLAKE_CONFIG_RANDOM_SEQUENCE, self->cfg.flags);
	check_random_starts(_metadata, self);

	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "0\n"));
	/* the tick now running may have started at random: skip it */
	n = tick_starts(_metadata, self->fd, &self->cfg, starts, 50, 2000);
	ASSERT_LE(10, n);
	for (i = 1; i < n; i++)
		EXPECT_EQ(0, starts[i]);
}

TEST_F(rnd, set_config_flag)
{
	struct snowflake_config c = self->cfg;

	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_set_config(self->fd, &c));
	check_random_starts(_metadata, self);
}

/*
 * A tick that starts at s has 4096 - s IDs: after emptying a tick, a read
 * of 4096 waits for the next one and gets exactly its 4096 - s IDs.  20
 * ticks all starting at 0: probability 2048^-20.
 */
TEST_F(rnd, capacity_of_a_tick)
{
	uint64_t *ids = calloc(MAX_IDS, sizeof(*ids));
	int r, nonzero = 0;

	ASSERT_NE(NULL, ids);
	reload(_metadata, self, "random_sequence=1");
	ASSERT_LT(0, sf_read_ids(self->fd, ids, MAX_IDS));	/* empty the tick */
	for (r = 0; r < 20; r++) {
		ssize_t n = sf_read_ids(self->fd, ids, MAX_IDS), i;
		uint64_t s;

		ASSERT_LT(0, n);
		s = sf_decode(&self->cfg, ids[0]).seq;
		EXPECT_GT(2048, s);
		EXPECT_EQ(MAX_IDS - (ssize_t)s, n) TH_LOG("tick starting at %" PRIu64, s);
		for (i = 1; i < n; i++)
			ASSERT_EQ(ids[i - 1] + 1, ids[i]);
		EXPECT_EQ(4095, sf_decode(&self->cfg, ids[n - 1]).seq);
		nonzero += s != 0;
	}
	EXPECT_LT(0, nonzero);
	free(ids);
}

/*
 * Small sequence widths: 3 bits start in [0, 4): 30 starts all 0 with
 * probability 4^-30 ~ 8.7e-19; 1 bit: [0, 1), always 0.
 */
TEST_F(rnd, small_sequence_widths)
{
	uint64_t starts[50];
	int n, i, nonzero = 0;

	reload(_metadata, self, "random_sequence=1 sequence_bits=3");
	n = tick_starts(_metadata, self->fd, &self->cfg, starts, 50, 2000);
	ASSERT_LE(30, n);
	for (i = 0; i < n; i++) {
		EXPECT_GT(4, starts[i]);
		nonzero += starts[i] != 0;
	}
	EXPECT_LT(0, nonzero);

	reload(_metadata, self, "random_sequence=1 sequence_bits=1");
	n = tick_starts(_metadata, self->fd, &self->cfg, starts, 50, 2000);
	ASSERT_LE(10, n);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, starts[i]);
}

SF_TEST_MAIN()
