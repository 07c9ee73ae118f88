// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the UUIDv7 core (driver/uuid_core.c), built natively with a
 * fake clock and fake random numbers.  Decoding here is written from
 * RFC 9562 section 5.7, independently of the core.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "uuid_core.h"

/* 2026-11-21T00:00:00Z, a fixed "now" for the fake clock. */
#define NOW		1795219200000ULL

struct uuid_fields {
	u64 ms;
	unsigned int version, variant;
	u64 rand_a, rand_b;
};

static struct uuid_fields decode(const u8 *b)
{
	struct uuid_fields f;
	u64 hi = 0, lo = 0;
	int i;

	for (i = 0; i < 8; i++) {
		hi = hi << 8 | b[i];
		lo = lo << 8 | b[8 + i];
	}
	f.ms = hi >> 16;
	f.version = (hi >> 12) & 0xf;
	f.rand_a = hi & 0xfff;
	f.variant = lo >> 62;
	f.rand_b = lo & ((1ULL << 62) - 1);
	return f;
}

/* The counter: rand_a and the top 30 bits of rand_b. */
static u64 counter_of(const u8 *b)
{
	struct uuid_fields f = decode(b);

	return f.rand_a << 30 | f.rand_b >> 32;
}

/* A small xorshift for the fake random numbers. */
static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rnd64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

TEST(format_layout)
{
	static const u8 want[16] = {
		0x01, 0xa1, 0xfb, 0x67, 0x18, 0x00,	/* 1795219200000 */
		0x7a, 0xbc,				/* 7, counter >> 30 */
		0x80 | 0x3d, 0xef, 0x01, 0x23,		/* 10, counter low 30 */
		0xde, 0xad, 0xbe, 0xef,			/* random */
	};
	u64 counter = 0xabcULL << 30 | 0x3def0123ULL;
	struct uuid_fields f;
	u8 out[16];

	ASSERT_EQ(0x1a1fb671800ULL, NOW);
	memset(out, 0xcc, sizeof(out));
	sf_uuid_format(out, NOW, counter, 0xdeadbeef);
	EXPECT_EQ(0, memcmp(want, out, 16));
	f = decode(out);
	EXPECT_EQ(NOW, f.ms);
	EXPECT_EQ(7, f.version);
	EXPECT_EQ(2, f.variant);
	EXPECT_EQ(counter, counter_of(out));
	EXPECT_EQ(0xdeadbeefULL, f.rand_b & 0xffffffffULL);
}

TEST(format_extremes)
{
	u64 cmax = (1ULL << SF_UUID_COUNTER_BITS) - 1;
	struct uuid_fields f;
	u8 out[16];

	sf_uuid_format(out, SF_UUID_MAX_MS, cmax, 0xffffffff);
	f = decode(out);
	EXPECT_EQ(SF_UUID_MAX_MS, f.ms);
	EXPECT_EQ(7, f.version);
	EXPECT_EQ(2, f.variant);
	EXPECT_EQ(cmax, counter_of(out));

	sf_uuid_format(out, 0, 0, 0);
	f = decode(out);
	EXPECT_EQ(0, f.ms);
	EXPECT_EQ(7, f.version);
	EXPECT_EQ(2, f.variant);
	EXPECT_EQ(0, counter_of(out));
	EXPECT_EQ(0, f.rand_b);
}

TEST(bits_add_up)
{
	EXPECT_EQ(128, 48 + 4 + 2 + SF_UUID_COUNTER_BITS + SF_UUID_RANDOM_BITS);
	EXPECT_LE(32, SF_UUID_RANDOM_BITS);
	EXPECT_EQ(16, SNOWFLAKE_UUID_SIZE);
}

TEST(reserve_seeds_below_half)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;
	int i;

	for (i = 0; i < 1000; i++) {
		u64 seed = rnd64();

		sf_uuid_core_init(&u, 0);
		ASSERT_EQ(SF_UUID_COUNTER_BITS, u.counter_bits);
		ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW, 1, seed, &b));
		EXPECT_EQ(NOW, b.ms);
		EXPECT_EQ(seed & ((1ULL << (SF_UUID_COUNTER_BITS - 1)) - 1),
			  b.first);
	}
	/* The highest seed still leaves 2^41 values after the first. */
	sf_uuid_core_init(&u, 0);
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW, 1, ~0ULL, &b));
	EXPECT_EQ((1ULL << 41) - 1, b.first);
	EXPECT_EQ(1ULL << 41, u.counter_max - u.next + 1);
}

TEST(same_ms_counts_up_and_new_ms_reseeds)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 0);
	ASSERT_EQ(10, sf_uuid_core_reserve(&u, NOW, 10, 1000, &b));
	EXPECT_EQ(1000, b.first);
	/* Same ms: the seed is ignored, the counter goes on. */
	ASSERT_EQ(5, sf_uuid_core_reserve(&u, NOW, 5, 77, &b));
	EXPECT_EQ(NOW, b.ms);
	EXPECT_EQ(1010, b.first);
	/* Next ms: a smaller seed is fine, the timestamp orders. */
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW + 1, 1, 3, &b));
	EXPECT_EQ(NOW + 1, b.ms);
	EXPECT_EQ(3, b.first);
	EXPECT_EQ(16, u.issued);
	EXPECT_EQ(3, u.reads);
}

/* A clock behind the last millisecond keeps the last one and its counter. */
TEST(clock_behind_keeps_last_ms)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 0);
	ASSERT_EQ(2, sf_uuid_core_reserve(&u, NOW, 2, 50, &b));
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW - 3600000, 1, 0, &b));
	EXPECT_EQ(NOW, b.ms);
	EXPECT_EQ(52, b.first);
}

TEST(want_zero_and_cap)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 0);
	EXPECT_EQ(-EINVAL, sf_uuid_core_reserve(&u, NOW, 0, 0, &b));
	EXPECT_EQ(SNOWFLAKE_UUID_MAX_PER_READ,
		  sf_uuid_core_reserve(&u, NOW, 0xffffffffU, 0, &b));
	EXPECT_EQ(SNOWFLAKE_UUID_MAX_PER_READ, b.count);
	EXPECT_EQ(1, u.reads);
}

/* A narrow counter runs out: -EAGAIN until the clock moves, never ahead. */
TEST(exhausted_ms_waits_for_clock)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 4);
	ASSERT_EQ(15, u.counter_max);
	/* Seed 7 (masked to 0..7): 9 values left. */
	ASSERT_EQ(9, sf_uuid_core_reserve(&u, NOW, 100, 0xff, &b));
	EXPECT_EQ(7, b.first);
	EXPECT_EQ(0, sf_uuid_core_peek(&u, NOW));
	EXPECT_EQ(-EAGAIN, sf_uuid_core_reserve(&u, NOW, 1, 0, &b));
	EXPECT_EQ(-EAGAIN, sf_uuid_core_reserve(&u, NOW - 5, 1, 0, &b));
	EXPECT_EQ(1, sf_uuid_core_peek(&u, NOW + 1));
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW + 1, 1, 0, &b));
	EXPECT_EQ(NOW + 1, b.ms);
	EXPECT_EQ(10, u.issued);
}

TEST(overflow_past_48_bits)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 0);
	EXPECT_EQ(-EOVERFLOW, sf_uuid_core_peek(&u, SF_UUID_MAX_MS + 1));
	EXPECT_EQ(-EOVERFLOW,
		  sf_uuid_core_reserve(&u, SF_UUID_MAX_MS + 1, 1, 0, &b));
	EXPECT_EQ(0, u.reads);
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, SF_UUID_MAX_MS, 1, 0, &b));
	EXPECT_EQ(SF_UUID_MAX_MS, b.ms);
	EXPECT_EQ(-EOVERFLOW,
		  sf_uuid_core_reserve(&u, SF_UUID_MAX_MS + 1, 1, 0, &b));
	/* A clock back at the maximum goes on within it. */
	EXPECT_EQ(1, sf_uuid_core_reserve(&u, SF_UUID_MAX_MS, 1, 0, &b));
}

TEST(undeliver_counts_only)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;

	sf_uuid_core_init(&u, 0);
	ASSERT_EQ(10, sf_uuid_core_reserve(&u, NOW, 10, 0, &b));
	sf_uuid_core_undeliver(&u, 7, false);
	EXPECT_EQ(3, u.issued);
	EXPECT_EQ(1, u.reads);
	ASSERT_EQ(4, sf_uuid_core_reserve(&u, NOW, 4, 0, &b));
	sf_uuid_core_undeliver(&u, 4, true);
	EXPECT_EQ(3, u.issued);
	EXPECT_EQ(1, u.reads);
	/* The undelivered values are skipped, not reissued. */
	ASSERT_EQ(1, sf_uuid_core_reserve(&u, NOW, 1, 0, &b));
	EXPECT_EQ(14, b.first);
}

/* Full batches within one millisecond never run out with 42 bits. */
TEST(full_speed_never_waits)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;
	int i;

	sf_uuid_core_init(&u, 0);
	for (i = 0; i < 200000; i++)
		ASSERT_EQ(SNOWFLAKE_UUID_MAX_PER_READ,
			  sf_uuid_core_reserve(&u, NOW, SNOWFLAKE_UUID_MAX_PER_READ,
					       ~0ULL, &b));
	EXPECT_EQ(NOW, b.ms);
}

/*
 * Random clocks (forward, back, still), wants, seeds and counter widths:
 * every UUID formatted is memcmp-greater than the one before, has the
 * version and variant, and is never stamped later than the largest clock
 * passed so far.
 */
TEST(random_walk_order)
{
	static u8 buf[64 * 16];
	u8 prev[16] = { 0 };
	u32 rnd[64];
	int round;

	for (round = 0; round < 200; round++) {
		unsigned int bits = 1 + rnd64() % SF_UUID_COUNTER_BITS;
		u64 clock = NOW + rnd64() % 1000, max_clock = 0;
		struct sf_uuid_core u;
		int step;

		sf_uuid_core_init(&u, bits);
		memset(prev, 0, sizeof(prev));
		for (step = 0; step < 2000; step++) {
			struct sf_uuid_block b;
			u32 want = 1 + rnd64() % 64, i;
			int ret;

			switch (rnd64() % 4) {
			case 0:
				clock += rnd64() % 3;
				break;
			case 1:
				clock -= rnd64() % 5;
				break;
			default:
				break;
			}
			if (clock > max_clock)
				max_clock = clock;
			ret = sf_uuid_core_reserve(&u, clock, want, rnd64(), &b);
			if (ret == -EAGAIN) {
				ASSERT_EQ(0, sf_uuid_core_peek(&u, clock));
				continue;
			}
			ASSERT_LT(0, ret);
			ASSERT_GE(want, (u32)ret);
			ASSERT_GE(max_clock, b.ms);
			for (i = 0; i < (u32)ret; i++)
				rnd[i] = (u32)rnd64();
			sf_uuid_fill(buf, &b, 0, ret, rnd);
			for (i = 0; i < (u32)ret; i++) {
				const u8 *p = buf + i * 16;
				struct uuid_fields f = decode(p);

				ASSERT_EQ(7, f.version);
				ASSERT_EQ(2, f.variant);
				ASSERT_EQ(b.ms, f.ms);
				ASSERT_EQ(b.first + i, counter_of(p));
				ASSERT_GT(0, memcmp(prev, p, 16))
					TH_LOG("round %d step %d: not increasing", round, step);
				memcpy(prev, p, 16);
			}
		}
	}
}

TEST_HARNESS_MAIN
