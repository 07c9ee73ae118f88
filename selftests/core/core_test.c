// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the pure generator core (driver/snowflake_core.c), built
 * natively with a fake clock: the time is just the argument we pass.
 * Decoding here is written independently of the core, from the layout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "snowflake_core.h"

#define TWITTER		SNOWFLAKE_TWITTER_EPOCH_MS
/* 2026-11-21T00:00:00Z, a fixed "now" for the fake clock. */
#define NOW		1795219200000ULL

struct decoded {
	u64 ts, dc, worker, seq;
};

static u64 mask(unsigned int bits)
{
	return bits ? (~0ULL >> (64 - bits)) : 0;
}

static struct decoded decode(const struct snowflake_config *cfg, u64 id)
{
	struct decoded d;
	unsigned int s = cfg->sequence_bits, w = cfg->worker_bits;
	unsigned int dcb = cfg->datacenter_bits;

	d.seq = id & mask(s);
	d.worker = (id >> s) & mask(w);
	d.dc = (id >> (s + w)) & mask(dcb);
	d.ts = id >> (s + w + dcb);
	return d;
}

static u64 ts_ms(const struct snowflake_config *cfg, u64 id)
{
	return cfg->epoch_ms + decode(cfg, id).ts * cfg->time_unit_ms;
}

static struct snowflake_config default_config(void)
{
	struct snowflake_config cfg = {
		.epoch_ms = TWITTER,
		.time_unit_ms = 1,
		.timestamp_bits = 41,
		.datacenter_bits = 5,
		.worker_bits = 5,
		.sequence_bits = 12,
	};
	return cfg;
}

FIXTURE(core) {
	struct sf_core c;
	struct snowflake_config cfg;
	const char *why;
};

FIXTURE_SETUP(core)
{
	self->cfg = default_config();
	self->cfg.datacenter_id = 3;
	self->cfg.worker_id = 17;
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW, &self->why));
}

FIXTURE_TEARDOWN(core)
{
}

TEST_F(core, first_id_decodes)
{
	struct sf_block b;
	struct decoded d;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(1, b.count);
	d = decode(&self->cfg, b.first);
	EXPECT_EQ(NOW - TWITTER, d.ts);
	EXPECT_EQ(3, d.dc);
	EXPECT_EQ(17, d.worker);
	EXPECT_EQ(0, d.seq);
	EXPECT_EQ(0, b.first >> 63);
	EXPECT_EQ(NOW, sf_core_last_timestamp(&self->c));
}

TEST_F(core, batch_is_consecutive_and_capped_by_tick)
{
	struct sf_block b, b2;

	ASSERT_EQ(4000, sf_core_reserve(&self->c, NOW, 4000, 0, &b));
	/* Only 96 sequence numbers are left in this tick. */
	ASSERT_EQ(96, sf_core_reserve(&self->c, NOW, 4000, 0, &b2));
	EXPECT_EQ(b.first + 4000, b2.first);
	EXPECT_EQ(4095, decode(&self->cfg, b2.first + 95).seq);
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b2));
	EXPECT_EQ(NOW + 1, b2.retry_ms);
	EXPECT_EQ(4096, self->c.stats.ids_issued);
	EXPECT_EQ(2, self->c.stats.reads);
}

TEST_F(core, exhausted_tick_waits_for_next)
{
	struct sf_block b;
	u64 last;
	u64 retry = 0;

	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	last = b.first + 4095;
	EXPECT_EQ(0, sf_core_peek(&self->c, NOW, &retry));
	EXPECT_EQ(NOW + 1, retry);
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	/* Still the same tick: no borrowing from the future. */
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(1, sf_core_peek(&self->c, NOW + 1, &retry));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_GT(b.first, last);
	EXPECT_EQ(NOW + 1, ts_ms(&self->cfg, b.first));
	EXPECT_EQ(0, decode(&self->cfg, b.first).seq);
}

TEST_F(core, time_going_backwards_keeps_order)
{
	struct sf_block b;
	u64 prev;
	int i;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	prev = b.first;
	/* The time input goes back an hour: keep using the last tick. */
	for (i = 0; i < 4095; i++) {
		ASSERT_EQ(1, sf_core_reserve(&self->c, NOW - 3600000, 1, 0, &b));
		ASSERT_GT(b.first, prev);
		ASSERT_EQ(NOW, ts_ms(&self->cfg, b.first));
		prev = b.first;
	}
	/* Tick used up: wait for the input to pass it. */
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW - 3600000, 1, 0, &b));
	EXPECT_EQ(NOW + 1, b.retry_ms);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_GT(b.first, prev);
}

TEST_F(core, floor_moves_clock_forward)
{
	struct sf_block b;
	struct snowflake_stats st;
	u64 floor = NOW + 600000;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, sf_core_set_floor(&self->c, floor, NOW));
	EXPECT_EQ(1, self->c.stats.floor_jumps);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(floor, ts_ms(&self->cfg, b.first));
	/* The clock keeps running from the floor. */
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 5, 1, 0, &b));
	EXPECT_EQ(floor + 5, ts_ms(&self->cfg, b.first));
	sf_core_stats(&self->c, NOW + 5, &st);
	EXPECT_EQ(floor + 5, st.clock_ms);
	EXPECT_EQ(600000, st.clock_offset_ms);
	EXPECT_EQ(floor, st.floor_ms);
	/* Lower floors change nothing. */
	ASSERT_EQ(0, sf_core_set_floor(&self->c, NOW, NOW));
	EXPECT_EQ(floor, self->c.floor_ms);
	EXPECT_EQ(1, self->c.stats.floor_jumps);
	/* A floor behind the clock raises the floor but does not jump. */
	ASSERT_EQ(0, sf_core_set_floor(&self->c, floor + 1, NOW + 5));
	EXPECT_EQ(1, self->c.stats.floor_jumps);
}

TEST_F(core, floor_unaligned_rounds_up)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;

	cfg.time_unit_ms = 1000;
	cfg.epoch_ms = 1000000;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, 5000000, &self->why));
	ASSERT_EQ(0, sf_core_set_floor(&self->c, 7000001, 5000000));
	ASSERT_EQ(1, sf_core_reserve(&self->c, 5000000, 1, 0, &b));
	EXPECT_EQ(7001000, ts_ms(&cfg, b.first));
	EXPECT_GE(ts_ms(&cfg, b.first), 7000001);
}

TEST_F(core, floor_overflow_refused)
{
	u64 max_ms = TWITTER + mask(41);

	EXPECT_EQ(-EOVERFLOW, sf_core_set_floor(&self->c, max_ms + 1, NOW));
	EXPECT_EQ(0, self->c.floor_ms);
	EXPECT_EQ(0, self->c.offset_ms);
	EXPECT_EQ(0, sf_core_set_floor(&self->c, max_ms, NOW));
}

/*
 * A floor whose tick start does not fit 64 bits (found by fuzz/core_fuzz.c:
 * the start wrapped, and reads asked to retry in the past): above 2^63 - 1
 * every floor is refused, even where timestamp_bits would hold its tick.
 */
TEST(floor_above_2_63_refused)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;
	struct sf_core c;
	const char *why;
	u64 retry = 0;

	cfg.timestamp_bits = 63;
	cfg.datacenter_bits = cfg.worker_bits = cfg.sequence_bits = 0;
	cfg.time_unit_ms = 8;
	ASSERT_EQ(0, sf_core_init(&c, &cfg, NOW, &why));
	EXPECT_EQ(-EOVERFLOW, sf_core_set_floor(&c, ~0ULL, NOW));
	EXPECT_EQ(-EOVERFLOW, sf_core_set_floor(&c, SF_MAX_FLOOR_MS + 1, NOW));
	EXPECT_EQ(0, c.floor_ms);
	ASSERT_EQ(0, sf_core_set_floor(&c, SF_MAX_FLOOR_MS, NOW));
	ASSERT_EQ(1, sf_core_reserve(&c, NOW, 1, 0, &b));
	EXPECT_GE(ts_ms(&cfg, b.first), SF_MAX_FLOOR_MS);
	ASSERT_EQ(0, sf_core_peek(&c, NOW, &retry));
	EXPECT_LT(NOW, retry);
}

/* want above the int range returns at most SNOWFLAKE_MAX_IDS_PER_READ. */
TEST(reserve_huge_want)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;
	struct sf_core c;
	const char *why;

	cfg.timestamp_bits = 32;
	cfg.datacenter_bits = cfg.worker_bits = 0;
	cfg.sequence_bits = 31;
	cfg.time_unit_ms = 3600000;
	ASSERT_EQ(0, sf_core_init(&c, &cfg, NOW, &why));
	EXPECT_EQ(SNOWFLAKE_MAX_IDS_PER_READ, sf_core_reserve(&c, NOW, 0xffffffffU, 0, &b));
	EXPECT_EQ(SNOWFLAKE_MAX_IDS_PER_READ, b.count);
}

TEST(check_ids_and_floor)
{
	struct snowflake_ids ids = { .datacenter_id = ~0U, .worker_id = ~0U };
	struct snowflake_floor fl = { .floor_ms = ~0ULL };

	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = 2;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = 1U << 31;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = 0;
	ids.__reserved = 0x80000000U;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	EXPECT_EQ(0, sf_core_check_floor(&fl));
	fl.last_timestamp_ms = 1;
	EXPECT_EQ(-EINVAL, sf_core_check_floor(&fl));
}

TEST_F(core, floor_forced_ticks_run_ahead_when_exhausted)
{
	struct sf_block b;
	u64 floor = NOW + 10;

	ASSERT_EQ(0, sf_core_set_floor(&self->c, floor, NOW));
	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	EXPECT_EQ(floor, ts_ms(&self->cfg, b.first));
	/* Waits for the generator clock (raw + offset) to reach floor + 1. */
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(NOW + 1, b.retry_ms);
}

TEST_F(core, catch_up_only_forward_and_past_threshold)
{
	struct sf_block b;

	/* @ahead_ms: how far the wall clock is ahead of the raw clock. */
	EXPECT_FALSE(sf_core_catch_up(&self->c, 1000, 1000));
	EXPECT_FALSE(sf_core_catch_up(&self->c, 0, 1000));
	EXPECT_FALSE(sf_core_catch_up(&self->c, 7200000, 0));
	EXPECT_EQ(0, self->c.stats.clock_catchups);
	EXPECT_EQ(3, self->c.clock_checks);
	EXPECT_TRUE(sf_core_catch_up(&self->c, 7200000, 1000));
	EXPECT_EQ(1, self->c.stats.clock_catchups);
	EXPECT_EQ(4, self->c.clock_checks);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(NOW + 7200000, ts_ms(&self->cfg, b.first));
	/* The wall clock going back again changes nothing. */
	EXPECT_FALSE(sf_core_catch_up(&self->c, 7199999, 1000));
	EXPECT_FALSE(sf_core_catch_up(&self->c, 0, 1000));
	EXPECT_EQ(7200000, self->c.offset_ms);
	/* Only more than the threshold beyond the offset moves it. */
	EXPECT_FALSE(sf_core_catch_up(&self->c, 7201000, 1000));
	EXPECT_TRUE(sf_core_catch_up(&self->c, 7201001, 1000));
	EXPECT_EQ(7201001, self->c.offset_ms);
}

TEST_F(core, set_ids_lower_worker_keeps_order)
{
	struct sf_block b;
	u64 prev;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	prev = b.first;
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 0, 1, true));
	/* Same time: the tick is retired, so wait for the next one. */
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_GT(b.first, prev);
	EXPECT_EQ(1, decode(&self->cfg, b.first).worker);
	EXPECT_EQ(0, decode(&self->cfg, b.first).dc);
	/* Same ids again: nothing retired. */
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 0, 1, true));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
}

TEST_F(core, set_ids_out_of_range)
{
	EXPECT_EQ(-EINVAL, sf_core_set_ids(&self->c, 32, 0, true));
	EXPECT_EQ(-EINVAL, sf_core_set_ids(&self->c, 0, 32, true));
	EXPECT_EQ(3, self->c.cfg.datacenter_id);
	EXPECT_EQ(17, self->c.cfg.worker_id);
	EXPECT_EQ(0, sf_core_set_ids(&self->c, 31, 31, true));
}

TEST_F(core, layout_fixed_after_first_id)
{
	struct snowflake_config cfg = self->cfg;
	struct sf_block b;

	cfg.sequence_bits = 10;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	EXPECT_EQ(10, self->c.cfg.sequence_bits);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	cfg.sequence_bits = 12;
	EXPECT_EQ(-EBUSY, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	EXPECT_EQ(10, self->c.cfg.sequence_bits);
	cfg.sequence_bits = 10;
	cfg.epoch_ms = TWITTER + 1;
	EXPECT_EQ(-EBUSY, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	cfg.epoch_ms = TWITTER;
	cfg.time_unit_ms = 10;
	EXPECT_EQ(-EBUSY, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	/* Same layout, new ids and flags: allowed. */
	cfg.time_unit_ms = 1;
	cfg.worker_id = 2;
	cfg.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	EXPECT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	EXPECT_EQ(2, self->c.cfg.worker_id);
}

TEST_F(core, bad_configs_change_nothing)
{
	struct snowflake_config before = self->c.cfg, cfg;
	static const struct {
		int field;
		u64 value;
		int err;
	} cases[] = {
		{ 0, 0, -EINVAL },		/* time_unit_ms 0 */
		{ 0, 3600001, -EINVAL },	/* time_unit_ms too long */
		{ 1, 0, -EINVAL },		/* timestamp_bits 0 */
		{ 1, 42, -EINVAL },		/* sum 64 */
		{ 2, 32, -EINVAL },		/* datacenter_bits */
		{ 3, 32, -EINVAL },		/* worker_bits */
		{ 4, 32, -EINVAL },		/* sequence_bits */
		{ 5, 32, -EINVAL },		/* datacenter_id too big */
		{ 6, 32, -EINVAL },		/* worker_id too big */
		{ 7, 2, -EINVAL },		/* unknown flag */
		{ 8, 1, -EINVAL },		/* reserved */
		{ 9, NOW + 1000, -EINVAL },	/* epoch in the future */
		{ 1, 20, -EOVERFLOW },		/* 2^20 ms since 2010 */
		{ 1, 38, -EOVERFLOW },		/* 2^38 ms from 2010 ends in 2019 */
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cfg = before;
		switch (cases[i].field) {
		case 0: cfg.time_unit_ms = cases[i].value; break;
		case 1: cfg.timestamp_bits = cases[i].value; break;
		case 2: cfg.datacenter_bits = cases[i].value; break;
		case 3: cfg.worker_bits = cases[i].value; break;
		case 4: cfg.sequence_bits = cases[i].value; break;
		case 5: cfg.datacenter_id = cases[i].value; break;
		case 6: cfg.worker_id = cases[i].value; break;
		case 7: cfg.flags = cases[i].value; break;
		case 8: cfg.__reserved = cases[i].value; break;
		case 9: cfg.epoch_ms = cases[i].value; break;
		}
		self->why = NULL;
		EXPECT_EQ(cases[i].err,
			  sf_core_set_config(&self->c, &cfg, NOW, &self->why)) {
			TH_LOG("case %u", i);
		}
		EXPECT_NE(NULL, self->why);
		EXPECT_EQ(0, memcmp(&before, &self->c.cfg, sizeof(before)));
	}
}

TEST_F(core, overflow_at_max_timestamp_never_wraps)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;
	u64 retry;

	/* 8 timestamp bits of 1 s from NOW - 255 s: the last tick is now. */
	cfg.timestamp_bits = 8;
	cfg.time_unit_ms = 1000;
	cfg.epoch_ms = NOW - 255000;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	EXPECT_EQ(255, decode(&cfg, b.first).ts);
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(-EOVERFLOW, sf_core_reserve(&self->c, NOW + 1000, 1, 0, &b));
	EXPECT_EQ(-EOVERFLOW, sf_core_peek(&self->c, NOW + 1000, &retry));
	EXPECT_EQ(1, self->c.stats.refused_reads);
	/* The init itself refuses once the clock is past it. */
	EXPECT_EQ(-EOVERFLOW, sf_core_init(&self->c, &cfg, NOW + 1000, &self->why));
}

TEST_F(core, widths_at_maxima)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;
	struct decoded d;

	/* 32-bit seconds, 31-bit worker. */
	cfg.timestamp_bits = 32;
	cfg.time_unit_ms = 1000;
	cfg.datacenter_bits = 0;
	cfg.worker_bits = 31;
	cfg.sequence_bits = 0;
	cfg.worker_id = 0x7fffffff;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 5, 0, &b));
	d = decode(&cfg, b.first);
	EXPECT_EQ(0x7fffffff, d.worker);
	EXPECT_EQ((NOW - TWITTER) / 1000, d.ts);
	EXPECT_EQ(0, b.first >> 63);
	/* One ID per second: the rest of this second has none. */
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(TWITTER + ((NOW - TWITTER) / 1000 + 1) * 1000, b.retry_ms);
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, b.retry_ms - 1, 1, 0, &b));
	EXPECT_EQ(1, sf_core_reserve(&self->c, b.retry_ms, 1, 0, &b));

	/* 31-bit sequence: 2^31 IDs per tick. */
	cfg = default_config();
	cfg.timestamp_bits = 32;
	cfg.time_unit_ms = 1000;
	cfg.datacenter_bits = 0;
	cfg.worker_bits = 0;
	cfg.sequence_bits = 31;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	EXPECT_EQ(0, decode(&cfg, b.first).seq);
	self->c.next_seq = 0x7fffffff - 10;
	ASSERT_EQ(11, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	EXPECT_EQ(0x7fffffff, decode(&cfg, b.first + 10).seq);
	EXPECT_EQ(0, (b.first + 10) >> 63);

	/* 31-bit datacenter with 32-bit seconds: sum 63. */
	cfg = default_config();
	cfg.timestamp_bits = 32;
	cfg.time_unit_ms = 1000;
	cfg.datacenter_bits = 31;
	cfg.worker_bits = 0;
	cfg.sequence_bits = 0;
	cfg.datacenter_id = 0x7fffffff;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(0x7fffffff, decode(&cfg, b.first).dc);

	/* 63-bit timestamp, nothing else: IDs are the ms since epoch. */
	cfg = default_config();
	cfg.timestamp_bits = 63;
	cfg.datacenter_bits = 0;
	cfg.worker_bits = 0;
	cfg.sequence_bits = 0;
	cfg.epoch_ms = 0;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 9, 0, &b));
	EXPECT_EQ(NOW, b.first);
}

TEST_F(core, random_sequence_start)
{
	struct snowflake_config cfg = self->cfg;
	struct sf_block b;

	cfg.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0xffffffff, &b));
	/* The start is masked to the lower half of the sequence space. */
	EXPECT_EQ(2047, decode(&cfg, b.first).seq);
	/* Only a new tick takes a new start. */
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 5, &b));
	EXPECT_EQ(2048, decode(&cfg, b.first).seq);
	/* 4096 - 2049 left in this tick. */
	ASSERT_EQ(2047, sf_core_reserve(&self->c, NOW, 4096, 5, &b));
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 5, &b));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 1234, &b));
	EXPECT_EQ(1234, decode(&cfg, b.first).seq);
	/* Off: every tick starts at 0. */
	cfg.flags = 0;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 2, 1, 1234, &b));
	EXPECT_EQ(0, decode(&cfg, b.first).seq);
}

TEST_F(core, strict_refuses_until_worker_set)
{
	struct sf_block b;
	u64 retry;

	sf_core_set_strict(&self->c, true, false);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW, &retry));
	EXPECT_EQ(1, self->c.stats.refused_reads);
	EXPECT_EQ(0, self->c.stats.ids_issued);
	EXPECT_EQ(-EINVAL, sf_core_set_ids(&self->c, 0, 99, true));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	/* Setting only the datacenter id is not setting the worker id. */
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 4, 17, false));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	/*
	 * Rewriting the ids with the values just read never assigns: not a
	 * SET_IDS without SNOWFLAKE_IDS_ASSIGN_WORKER (the CLI changing the
	 * datacenter id), not a SET_CONFIG round trip (--random-sequence).
	 */
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 4, 0, false));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	self->cfg = self->c.cfg;
	self->cfg.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &self->cfg, NOW, &self->why));
	self->cfg.worker_id = 9;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &self->cfg, NOW, &self->why));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_FALSE(self->c.worker_set);
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 3, 17, true));
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	/* Strict with a worker given at load: no refusal. */
	sf_core_set_strict(&self->c, true, true);
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
}

/*
 * The lease's deadline: reads refused from the raw ms it falls in, counted
 * once per lease; a later deadline (a renewal) serves again, above every
 * earlier ID; peek and the stats agree.
 */
TEST_F(core, deadline_refuses_from_then_on)
{
	struct snowflake_stats st;
	struct sf_block b, b2;
	u64 retry;

	EXPECT_EQ(U64_MAX, self->c.deadline_ms);
	sf_core_set_deadline(&self->c, 5000000000ULL, NOW + 10);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 9, 1, 0, &b));
	EXPECT_EQ(1, sf_core_peek(&self->c, NOW + 9, &retry));
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 10, &retry));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 10, 1, 0, &b2));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 11, 1, 0, &b2));
	EXPECT_EQ(1, self->c.lease_expiries);
	EXPECT_EQ(2, self->c.stats.refused_reads);
	sf_core_stats(&self->c, NOW + 11, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_EXPIRED | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_EXPIRED | SNOWFLAKE_STATE_REFUSING));
	/* A stale reading from before the deadline is still served. */
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 9, 1, 0, &b2));
	EXPECT_LT(b.first, b2.first);
	/* Renewed: served again; a second expiry counts again. */
	sf_core_set_deadline(&self->c, 6000000000ULL, NOW + 20);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 12, 1, 0, &b));
	EXPECT_LT(b2.first, b.first);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 20, 1, 0, &b2));
	EXPECT_EQ(2, self->c.lease_expiries);
	/* None. */
	sf_core_set_deadline(&self->c, SNOWFLAKE_NO_DEADLINE, U64_MAX);
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW + 30, 1, 0, &b2));
	sf_core_stats(&self->c, NOW + 30, &st);
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_EXPIRED);
}

TEST(check_ids_deadline)
{
	struct snowflake_ids ids = { .flags = SNOWFLAKE_IDS_DEADLINE };

	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.deadline_ns = 1;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = SNOWFLAKE_IDS_DEADLINE | SNOWFLAKE_IDS_ASSIGN_WORKER;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = 1U << 4;	/* the first flag that does not exist */
	ids.deadline_ns = 0;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	/* A VM fork count only with its flag; the second reserved field 0. */
	ids.flags = 0;
	ids.vm_forks = 1;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.flags = SNOWFLAKE_IDS_VM_FORKS;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.__reserved2 = 1;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
}

/* Every field of two generators is equal (padding is not compared). */
static bool core_eq(const struct sf_core *a, const struct sf_core *b)
{
	return !memcmp(&a->cfg, &b->cfg, sizeof(a->cfg)) &&
	       a->node == b->node && a->floor_ms == b->floor_ms &&
	       a->floor_tick == b->floor_tick && a->offset_ms == b->offset_ms &&
	       a->last_tick == b->last_tick && a->next_seq == b->next_seq &&
	       a->issued == b->issued && a->strict == b->strict &&
	       a->worker_set == b->worker_set && a->fenced == b->fenced &&
	       a->deadline_ms == b->deadline_ms &&
	       a->deadline_ns == b->deadline_ns && a->expired == b->expired &&
	       a->ceiling_ms == b->ceiling_ms &&
	       a->ceiling_end == b->ceiling_end &&
	       a->ceiling_reached == b->ceiling_reached &&
	       a->ceiling_hits == b->ceiling_hits &&
	       a->vm_forks == b->vm_forks && a->vm_forked == b->vm_forked &&
	       a->refusing == b->refusing &&
	       !memcmp(&a->stats, &b->stats, sizeof(a->stats));
}

/* A SET_IDS argument with the lease's window (and nothing else). */
static struct snowflake_ids window_ids(u32 dc, u32 worker, u64 floor_ms,
				       u64 ceiling_ms)
{
	struct snowflake_ids ids = {
		.datacenter_id = dc,
		.worker_id = worker,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_WINDOW,
		.floor_ms = floor_ms,
		.ceiling_ms = ceiling_ms,
	};
	return ids;
}

/* Set the window as SNOWFLAKE_IOC_SET_IDS does; the ids as in the fixture. */
static int set_window(struct sf_core *c, u64 floor_ms, u64 ceiling_ms, u64 now)
{
	struct snowflake_ids ids = window_ids(c->cfg.datacenter_id,
					      c->cfg.worker_id, floor_ms,
					      ceiling_ms);
	int ret = sf_core_check_ids(&ids, sizeof(ids));

	return ret ? ret : sf_core_set_ids_arg(c, &ids, 0, now);
}

TEST(check_ids_window)
{
	struct snowflake_ids ids = window_ids(0, 1, 0, SNOWFLAKE_NO_CEILING);

	EXPECT_EQ(0, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER2));
	EXPECT_EQ(0, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER2 + 8));
	/* The flag in a shorter structure: its zeros are no window. */
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER1));
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER0));
	/* A floor up to the ceiling, not above it. */
	ids.floor_ms = NOW;
	ids.ceiling_ms = NOW;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	ids.floor_ms = NOW + 1;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	/* Without the flag, both fields zero. */
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	ids.floor_ms = 0;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.ceiling_ms = 0;
	ids.floor_ms = 1;
	EXPECT_EQ(-EINVAL, sf_core_check_ids(&ids, sizeof(ids)));
	ids.floor_ms = 0;
	EXPECT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	EXPECT_EQ(0, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER0));
}

/* No ceiling at load: nothing a read-only workload could notice. */
TEST_F(core, no_ceiling_at_load)
{
	struct snowflake_stats st;

	EXPECT_EQ(SNOWFLAKE_NO_CEILING, self->c.ceiling_ms);
	EXPECT_EQ(U64_MAX, self->c.ceiling_end);
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(0, st.state & (SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING));
}

/*
 * The ceiling: IDs up to its ms, then refused (counted once), the state
 * and peek agree; every ID issued was at or below it.
 */
TEST_F(core, ceiling_refuses_above)
{
	struct snowflake_stats st;
	struct sf_block b;
	u64 retry, now;

	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 5, NOW));
	EXPECT_EQ(NOW + 5, self->c.ceiling_ms);
	for (now = NOW; now <= NOW + 5; now++) {
		EXPECT_EQ(1, sf_core_peek(&self->c, now, &retry));
		ASSERT_EQ(1, sf_core_reserve(&self->c, now, 1, 0, &b));
		EXPECT_EQ(now, ts_ms(&self->cfg, b.first));
	}
	sf_core_stats(&self->c, NOW + 5, &st);
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_CEILING);
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 6, &retry));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 6, 1, 0, &b));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 60000, 1, 0, &b));
	EXPECT_EQ(1, self->c.ceiling_hits);
	EXPECT_TRUE(self->c.ceiling_reached);
	EXPECT_EQ(2, self->c.stats.refused_reads);
	EXPECT_EQ(6, self->c.stats.ids_issued);
	EXPECT_EQ(NOW + 5, sf_core_last_timestamp(&self->c));
	sf_core_stats(&self->c, NOW + 6, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING));
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_EXPIRED);
	/* A stale reading at the ceiling's ms: that tick still has room. */
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 5, 1, 0, &b));
	EXPECT_EQ(NOW + 5, ts_ms(&self->cfg, b.first));
}

/*
 * The last tick below the ceiling used up: refused at once (a blocking
 * reader must not sleep into a refusal), not EAGAIN; below a ceiling one
 * tick later, EAGAIN as always.
 */
TEST_F(core, used_up_tick_before_ceiling_refuses_at_once)
{
	struct sf_block b;
	u64 retry = 0;

	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 1, NOW));
	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW, 4096, 0, &b));
	EXPECT_EQ(0, sf_core_peek(&self->c, NOW, &retry));
	EXPECT_EQ(NOW + 1, retry);
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(4096, sf_core_reserve(&self->c, NOW + 1, 4096, 0, &b));
	/* NOW + 1 is the ceiling's tick, used up: no tick left. */
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 1, &retry));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_EQ(1, self->c.ceiling_hits);
	EXPECT_EQ(0, self->c.stats.exhausted_waits);
}

/* A floor above the ceiling is taken, and refuses; so does a catch-up. */
TEST_F(core, floor_or_catch_up_cannot_pass_ceiling)
{
	struct snowflake_stats st;
	struct sf_block b;
	u64 retry;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 10, NOW));
	/* The wall clock a minute ahead: the clock moves, no ID follows it. */
	EXPECT_TRUE(sf_core_catch_up(&self->c, 60000, 1000));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 1, &retry));
	EXPECT_EQ(NOW, sf_core_last_timestamp(&self->c));

	/* Another generator: a floor above the ceiling. */
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW, &self->why));
	ASSERT_EQ(0, set_window(&self->c, NOW, NOW + 10, NOW));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 10, 1, 0, &b));
	EXPECT_EQ(0, sf_core_set_floor(&self->c, NOW + 100, NOW + 10));
	EXPECT_EQ(NOW + 100, self->c.floor_ms);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 10, 1, 0, &b));
	sf_core_stats(&self->c, NOW + 10, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_CEILING, st.state & SNOWFLAKE_STATE_CEILING);
	EXPECT_EQ(NOW + 10, sf_core_last_timestamp(&self->c));
	/*
	 * A window whose own floor is above its ceiling is refused; one
	 * whose ceiling is below the device's floor is taken, and refuses.
	 */
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW, &self->why));
	EXPECT_EQ(-EINVAL, set_window(&self->c, NOW + 50, NOW + 10, NOW));
	EXPECT_EQ(SNOWFLAKE_NO_CEILING, self->c.ceiling_ms);
	EXPECT_EQ(0, self->c.floor_ms);
	ASSERT_EQ(0, sf_core_set_floor(&self->c, NOW + 50, NOW));
	ASSERT_EQ(0, set_window(&self->c, NOW + 5, NOW + 10, NOW));
	EXPECT_EQ(NOW + 50, self->c.floor_ms);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(0, self->c.stats.ids_issued);
}

/*
 * A renewal with a higher ceiling serves again, above every earlier ID; the
 * same ceiling again changes nothing; a second hit counts again.
 */
TEST_F(core, higher_ceiling_resumes)
{
	struct sf_block b, b2;

	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 2, NOW));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 2, 1, 0, &b));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 3, 1, 0, &b2));
	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 2, NOW + 3));
	EXPECT_TRUE(self->c.ceiling_reached);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 3, 1, 0, &b2));
	EXPECT_EQ(1, self->c.ceiling_hits);
	ASSERT_EQ(0, set_window(&self->c, NOW + 1, NOW + 100, NOW + 3));
	EXPECT_FALSE(self->c.ceiling_reached);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 3, 1, 0, &b2));
	EXPECT_LT(b.first, b2.first);
	EXPECT_EQ(NOW + 3, ts_ms(&self->cfg, b2.first));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 101, 1, 0, &b2));
	EXPECT_EQ(2, self->c.ceiling_hits);
	/* None: served whatever the time. */
	ASSERT_EQ(0, set_window(&self->c, 0, SNOWFLAKE_NO_CEILING, NOW + 101));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 5000, 1, 0, &b2));
}

/*
 * SET_IDS is all or nothing: a bad window, an id that does not fit or a
 * stale VM fork count change nothing; a good one sets the ids, the
 * deadline, the floor, the ceiling and the re-arm together.
 */
TEST_F(core, set_ids_window_all_or_nothing)
{
	struct snowflake_ids ids;
	struct sf_core before;
	struct sf_block b;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, set_window(&self->c, NOW - 10, NOW + 1000, NOW));
	sf_core_vm_fork(&self->c, 1);
	before = self->c;

	/* A ceiling below the epoch. */
	ids = window_ids(1, 2, 0, TWITTER - 1);
	ids.flags |= SNOWFLAKE_IDS_DEADLINE | SNOWFLAKE_IDS_VM_FORKS;
	ids.deadline_ns = 1;
	ids.vm_forks = 1;
	ASSERT_EQ(0, sf_core_check_ids(&ids, sizeof(ids)));
	EXPECT_EQ(-EINVAL, sf_core_set_ids_arg(&self->c, &ids, NOW + 50, NOW));
	EXPECT_TRUE(core_eq(&before, &self->c));
	/* A floor that does not fit 41 bits. */
	ids.floor_ms = TWITTER + (1ULL << 41);
	ids.ceiling_ms = SNOWFLAKE_NO_CEILING;
	EXPECT_EQ(-EOVERFLOW, sf_core_set_ids_arg(&self->c, &ids, NOW + 50, NOW));
	EXPECT_TRUE(core_eq(&before, &self->c));
	/* A good window with a worker id that does not fit. */
	ids.floor_ms = NOW + 20;
	ids.ceiling_ms = NOW + 30;
	ids.worker_id = 32;
	EXPECT_EQ(-EINVAL, sf_core_set_ids_arg(&self->c, &ids, NOW + 50, NOW));
	EXPECT_TRUE(core_eq(&before, &self->c));
	/* A stale fork count. */
	ids.worker_id = 2;
	ids.vm_forks = 0;
	EXPECT_EQ(-ESTALE, sf_core_set_ids_arg(&self->c, &ids, NOW + 50, NOW));
	EXPECT_TRUE(core_eq(&before, &self->c));

	/* All of it. */
	ids.vm_forks = 1;
	ASSERT_EQ(0, sf_core_set_ids_arg(&self->c, &ids, NOW + 50, NOW));
	EXPECT_EQ(1, self->c.cfg.datacenter_id);
	EXPECT_EQ(2, self->c.cfg.worker_id);
	EXPECT_EQ(NOW + 50, self->c.deadline_ms);
	EXPECT_EQ(NOW + 20, self->c.floor_ms);
	EXPECT_EQ(NOW + 30, self->c.ceiling_ms);
	EXPECT_FALSE(self->c.vm_forked);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(NOW + 20, ts_ms(&self->cfg, b.first));
	EXPECT_EQ(2, decode(&self->cfg, b.first).worker);
	/* Without the flag the window stays, whatever else changes. */
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	ids.floor_ms = ids.ceiling_ms = ids.vm_forks = 0;
	ids.deadline_ns = 0;
	ids.worker_id = 3;
	ASSERT_EQ(0, sf_core_check_ids(&ids, SNOWFLAKE_IDS_SIZE_VER0));
	ASSERT_EQ(0, sf_core_set_ids_arg(&self->c, &ids, 0, NOW));
	EXPECT_EQ(NOW + 30, self->c.ceiling_ms);
	EXPECT_EQ(NOW + 50, self->c.deadline_ms);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 31, 1, 0, &b));
}

/*
 * A floor raised with a stale reading: the clock jumps to the floor's start
 * as measured from the latest reading the generator was given, not from the
 * stale one, so it does not run ahead by the staleness (issue 23: a floor of
 * 100010 set with a reading 50 ms stale stamped 100060 at time 100000, and
 * a ceiling was reached 50 ms early).  Through SET_FLOOR and SET_IDS.
 */
TEST_F(core, stale_reading_does_not_overshoot_floor)
{
	struct snowflake_stats st;
	struct sf_block b;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, sf_core_set_floor(&self->c, NOW + 10, NOW - 50));
	EXPECT_EQ(10, self->c.offset_ms);
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(NOW + 10, st.clock_ms);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(NOW + 10, ts_ms(&self->cfg, b.first));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_EQ(NOW + 11, ts_ms(&self->cfg, b.first));

	/* The window's floor, with a ceiling 20 ms above it. */
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW - 1000, &self->why));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, set_window(&self->c, NOW + 10, NOW + 30, NOW - 50));
	EXPECT_EQ(10, self->c.offset_ms);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 20, 1, 0, &b))
		TH_LOG("the ceiling was reached early");
	EXPECT_EQ(NOW + 30, ts_ms(&self->cfg, b.first));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 21, 1, 0, &b));

	/* A reading fresher than any before is used as it is. */
	ASSERT_EQ(0, sf_core_set_floor(&self->c, NOW + 1000, NOW + 500));
	EXPECT_EQ(500, self->c.offset_ms);
	/* Never behind the floor's start, whatever the readings. */
	ASSERT_EQ(0, sf_core_set_floor(&self->c, NOW + 5000, 0));
	sf_core_stats(&self->c, NOW + 500, &st);
	EXPECT_EQ(NOW + 5000, st.clock_ms);
}

/*
 * A window in which no tick starts would never serve (issue 23: unit 10 ms,
 * epoch 0, [1001, 1009]: every read ENOTCONN): refused, nothing changes.
 * One tick start in it, at either end, is enough.
 */
TEST_F(core, window_without_tick_start_refused)
{
	struct snowflake_config cfg = default_config();
	struct sf_core before;
	struct sf_block b;

	cfg.epoch_ms = 0;
	cfg.time_unit_ms = 10;
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, 900, &self->why));
	before = self->c;
	EXPECT_EQ(-EINVAL, set_window(&self->c, 1001, 1009, 900));
	EXPECT_TRUE(core_eq(&before, &self->c));
	EXPECT_EQ(SNOWFLAKE_NO_CEILING, self->c.ceiling_ms);
	EXPECT_EQ(-EINVAL, set_window(&self->c, 1001, 1001, 900));
	EXPECT_TRUE(core_eq(&before, &self->c));

	/* The next tick's start as the ceiling: served, at that start. */
	ASSERT_EQ(0, set_window(&self->c, 1001, 1010, 900));
	ASSERT_EQ(1, sf_core_reserve(&self->c, 900, 1, 0, &b));
	EXPECT_EQ(1010, ts_ms(&cfg, b.first));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, 910, 1, 0, &b));

	/* A tick's start as the floor, a ceiling within that tick. */
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, 900, &self->why));
	ASSERT_EQ(0, set_window(&self->c, 1000, 1009, 900));
	ASSERT_EQ(1, sf_core_reserve(&self->c, 900, 1, 0, &b));
	EXPECT_EQ(1000, ts_ms(&cfg, b.first));
	/* No floor given: tick 0, the epoch, counts. */
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, 900, &self->why));
	ASSERT_EQ(0, set_window(&self->c, 0, 9, 900));
	/* With 1 ms ticks every ms starts one. */
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW, &self->why));
	ASSERT_EQ(0, set_window(&self->c, NOW + 1, NOW + 1, NOW));
}

/*
 * A layout change before the first ID recomputes the ceiling's tick: the
 * ceiling is in ms, its tick depends on the epoch and the unit.
 */
TEST_F(core, layout_change_recomputes_ceiling)
{
	struct snowflake_config cfg = self->cfg;
	struct sf_block b;

	ASSERT_EQ(0, set_window(&self->c, 0, NOW + 25, NOW));
	cfg.time_unit_ms = 10;
	cfg.epoch_ms = NOW - 1000000;	/* NOW starts a tick */
	ASSERT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	EXPECT_EQ(NOW + 25, self->c.ceiling_ms);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 29, 1, 0, &b));
	EXPECT_EQ(NOW + 20, ts_ms(&cfg, b.first));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 30, 1, 0, &b));

	/* An epoch after the ceiling: nothing may be issued. */
	ASSERT_EQ(0, sf_core_init(&self->c, &self->cfg, NOW, &self->why));
	ASSERT_EQ(0, set_window(&self->c, 0, NOW - 100, NOW));
	cfg = self->cfg;
	cfg.epoch_ms = NOW - 50;
	ASSERT_EQ(0, sf_core_set_config(&self->c, &cfg, NOW, &self->why));
	EXPECT_EQ(0, self->c.ceiling_end);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	/* And a window is checked against the epoch it has now. */
	EXPECT_EQ(-EINVAL, set_window(&self->c, 0, NOW - 51, NOW));
	ASSERT_EQ(0, set_window(&self->c, 0, NOW - 50, NOW));
	ASSERT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, set_window(&self->c, 0, NOW, NOW));
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_EQ(50, decode(&cfg, b.first).ts);
}

/*
 * A VM fork refuses reads until a SET_IDS that assigns the worker id for
 * the current count of forks; a stale count is -ESTALE.
 */
TEST_F(core, vm_fork_refuses_until_rearmed)
{
	struct snowflake_ids ids = { .worker_id = 9 };
	struct snowflake_stats st;
	struct sf_block b;
	u64 retry;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	sf_core_vm_fork(&self->c, 1);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 1, &retry));
	sf_core_stats(&self->c, NOW + 1, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_VM_FORKED | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_VM_FORKED | SNOWFLAKE_STATE_REFUSING));
	/* Assigning without the count, or the count without assigning: no. */
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	EXPECT_EQ(0, sf_core_check_vm_forks(&self->c, &ids));
	sf_core_rearm(&self->c, &ids);
	ids.flags = SNOWFLAKE_IDS_VM_FORKS;
	ids.vm_forks = 1;
	sf_core_rearm(&self->c, &ids);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	/* An identity from before the fork: stale. */
	ids.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_VM_FORKS;
	ids.vm_forks = 0;
	EXPECT_EQ(-ESTALE, sf_core_check_vm_forks(&self->c, &ids));
	ids.vm_forks = 1;
	EXPECT_EQ(0, sf_core_check_vm_forks(&self->c, &ids));
	sf_core_rearm(&self->c, &ids);
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b));
	/* The same count again changes nothing; a new one refuses again. */
	sf_core_vm_fork(&self->c, 1);
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW + 2, 1, 0, &b));
	sf_core_vm_fork(&self->c, 2);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 3, 1, 0, &b));
}

TEST_F(core, fence_refuses_until_lifted)
{
	struct snowflake_stats st;
	struct sf_block b, b2;
	u64 retry;

	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	EXPECT_TRUE(sf_core_set_fence(&self->c, true));
	EXPECT_EQ(1, self->c.fences);
	/* Fencing again changes nothing and does not count. */
	EXPECT_FALSE(sf_core_set_fence(&self->c, true));
	EXPECT_EQ(1, self->c.fences);
	EXPECT_EQ(SF_REFUSE_FENCED, self->c.refusing);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW + 5, 1, 0, &b2));
	EXPECT_EQ(-ENOTCONN, sf_core_peek(&self->c, NOW + 5, &retry));
	EXPECT_EQ(1, self->c.stats.refused_reads);
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_WORKER_SET | SNOWFLAKE_STATE_LOCKED |
		  SNOWFLAKE_STATE_REFUSING | SNOWFLAKE_STATE_FENCED, st.state);
	/* Ids may change while fenced; the fence stays. */
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 3, 2, true));
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b2));
	EXPECT_TRUE(sf_core_set_fence(&self->c, false));
	EXPECT_FALSE(sf_core_set_fence(&self->c, false));
	EXPECT_EQ(0, self->c.refusing);
	/* A lower worker id (the tick was retired): still above b. */
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 1, 1, 0, &b2));
	EXPECT_GT(b2.first, b.first);
	EXPECT_EQ(2, decode(&self->cfg, b2.first).worker);
	EXPECT_TRUE(sf_core_set_fence(&self->c, true));
	EXPECT_EQ(2, self->c.fences);
}

TEST_F(core, fence_and_strict_both_must_allow)
{
	struct sf_block b;

	sf_core_set_strict(&self->c, true, false);
	sf_core_set_fence(&self->c, true);
	EXPECT_EQ(SF_REFUSE_NO_WORKER | SF_REFUSE_FENCED, self->c.refusing);
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 3, 17, true));
	EXPECT_EQ(SF_REFUSE_FENCED, self->c.refusing);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	sf_core_set_strict(&self->c, true, false);
	sf_core_set_fence(&self->c, false);
	EXPECT_EQ(SF_REFUSE_NO_WORKER, self->c.refusing);
	EXPECT_EQ(-ENOTCONN, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	ASSERT_EQ(0, sf_core_set_ids(&self->c, 3, 17, true));
	EXPECT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
}

TEST_F(core, undelivered_ids_are_skipped_not_counted)
{
	struct sf_block b, b2;

	ASSERT_EQ(10, sf_core_reserve(&self->c, NOW, 10, 0, &b));
	sf_core_undeliver(&self->c, 10, true);
	EXPECT_EQ(0, self->c.stats.ids_issued);
	EXPECT_EQ(0, self->c.stats.reads);
	ASSERT_EQ(10, sf_core_reserve(&self->c, NOW, 10, 0, &b2));
	sf_core_undeliver(&self->c, 4, false);
	EXPECT_EQ(6, self->c.stats.ids_issued);
	EXPECT_EQ(1, self->c.stats.reads);
	/* The skipped IDs are not issued again. */
	EXPECT_EQ(b.first + 10, b2.first);
}

TEST_F(core, zero_want_is_invalid)
{
	struct sf_block b;

	EXPECT_EQ(-EINVAL, sf_core_reserve(&self->c, NOW, 0, 0, &b));
	EXPECT_EQ(0, self->c.stats.reads);
}

TEST_F(core, stats_state_bits)
{
	struct snowflake_stats st;
	struct sf_block b;

	memset(&st, 0xcc, sizeof(st));
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_WORKER_SET, st.state);
	EXPECT_EQ(0, st.last_timestamp_ms);
	EXPECT_EQ(0, st.__reserved);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW, 1, 0, &b));
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_WORKER_SET | SNOWFLAKE_STATE_LOCKED, st.state);
	EXPECT_EQ(NOW, st.last_timestamp_ms);
	EXPECT_EQ(NOW, st.clock_ms);
	sf_core_set_strict(&self->c, true, false);
	sf_core_stats(&self->c, NOW, &st);
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING |
		  SNOWFLAKE_STATE_LOCKED, st.state);
}

TEST_F(core, time_unit_ticks)
{
	struct snowflake_config cfg = default_config();
	struct sf_block b;

	cfg.time_unit_ms = 10;
	cfg.sequence_bits = 2;
	cfg.epoch_ms = NOW - 1000000;	/* NOW starts a tick */
	ASSERT_EQ(0, sf_core_init(&self->c, &cfg, NOW + 3, &self->why));
	ASSERT_EQ(4, sf_core_reserve(&self->c, NOW + 3, 9, 0, &b));
	EXPECT_EQ(NOW, ts_ms(&cfg, b.first));
	EXPECT_EQ(-EAGAIN, sf_core_reserve(&self->c, NOW + 9, 1, 0, &b));
	EXPECT_EQ(NOW + 10, b.retry_ms);
	ASSERT_EQ(1, sf_core_reserve(&self->c, NOW + 10, 1, 0, &b));
	EXPECT_EQ(NOW + 10, ts_ms(&cfg, b.first));
}

/*
 * A long random walk: the time input jumps back and forth, ids change, the
 * floor rises, catch-ups happen.  Every ID must exceed every earlier one,
 * and no timestamp may be later than the generator's clock or below the
 * floor.
 */
TEST(random_walk_order)
{
	struct snowflake_config cfg = default_config();
	struct sf_core c;
	struct sf_block b;
	struct snowflake_stats st;
	const char *why;
	u64 now = NOW, prev = 0, issued = 0, max_clock = 0, ceilings = 0;
	unsigned int seed = 12345, i;

	cfg.sequence_bits = 3;
	ASSERT_EQ(0, sf_core_init(&c, &cfg, now, &why));
	for (i = 0; i < 2000000; i++) {
		unsigned int r = rand_r(&seed);
		int n;

		switch (r % 16) {
		case 0:
			now -= r % 5000;	/* input steps back */
			break;
		case 1: case 2: case 3:
			now += r % 3;
			break;
		case 4:
			ASSERT_EQ(0, sf_core_set_ids(&c, r % 32, (r >> 8) % 32, true));
			break;
		case 5:
			if (r % 64 == 0)
				ASSERT_EQ(0, sf_core_set_floor(&c, now + r % 100, now));
			break;
		case 6:
			if (r % 64 == 0)
				sf_core_catch_up(&c, c.offset_ms + r % 3000, 1000);
			break;
		case 7:
			/* A lease's window near the clock, or none. */
			if ((r >> 8) % 32 == 0) {
				sf_core_stats(&c, now, &st);
				/* The clock has been here (a floor may be it). */
				if (st.clock_ms > max_clock)
					max_clock = st.clock_ms;
				ASSERT_EQ(0, set_window(&c, (r >> 13) % 3 ? 0 : st.clock_ms,
							(r >> 15) % 5 ? st.clock_ms + (r >> 18) % 200 :
							SNOWFLAKE_NO_CEILING, now));
			}
			break;
		default:
			n = sf_core_reserve(&c, now, 1 + r % 9, r, &b);
			if (n == -ENOTCONN) {
				/* Only the ceiling refuses here: a renewal. */
				sf_core_stats(&c, now, &st);
				ASSERT_TRUE(st.state & SNOWFLAKE_STATE_CEILING);
				ceilings++;
				ASSERT_EQ(0, set_window(&c, 0, st.clock_ms + r % 300, now));
				break;
			}
			if (n == -EAGAIN) {
				ASSERT_GT(b.retry_ms, now);
				now = b.retry_ms;
				break;
			}
			ASSERT_GT(n, 0);
			ASSERT_LE(n, 9);
			if (issued)
				ASSERT_GT(b.first, prev);
			prev = b.first + n - 1;
			issued += n;
			sf_core_stats(&c, now, &st);
			if (st.clock_ms > max_clock)
				max_clock = st.clock_ms;
			/* Never later than the clock has been; never below the floor. */
			ASSERT_LE(ts_ms(&c.cfg, b.first), max_clock);
			ASSERT_GE(ts_ms(&c.cfg, b.first), c.floor_ms);
			/* Never above the lease's ceiling. */
			ASSERT_LE(ts_ms(&c.cfg, b.first), c.ceiling_ms);
			break;
		}
	}
	EXPECT_EQ(issued, c.stats.ids_issued);
	EXPECT_LT(0, ceilings);
	TH_LOG("%llu IDs in strict order, %llu refusals at a ceiling",
	       (unsigned long long)issued, (unsigned long long)ceilings);
}

TEST_HARNESS_MAIN
