/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The UUIDv7 generator core (RFC 9562 section 5.7, monotonicity by section
 * 6.2 method 1): pure arithmetic on a state structure.
 *
 * Like snowflake_core.c: no locking, no clock, no randomness, no kernel
 * calls.  The caller passes in the generator's clock (Unix ms, already
 * moved forward by catch-up and floor), random numbers from a CSPRNG, and
 * serialises calls.  The same file builds in the kernel and in userspace.
 *
 * A UUID, 16 bytes, big-endian:
 *
 *   127..80  unix_ts_ms (48 bits)
 *    79..76  version, 0b0111
 *    75..64  rand_a: the counter's top 12 bits
 *    63..62  variant, 0b10
 *    61..32  rand_b: the counter's low 30 bits
 *    31..0   rand_b: 32 fresh random bits per UUID
 *
 * The 42-bit counter starts each millisecond at a random value below 2^41
 * (41 random bits, 2^41 values of headroom) and counts up by one per UUID.
 * (unix_ts_ms, counter) never repeats and only grows, so every UUID is
 * greater, compared with memcmp(), than every one before it.
 */
#ifndef _SNOWFLAKE_UUID_CORE_H
#define _SNOWFLAKE_UUID_CORE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>
typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;
#endif

#include <linux/snowflake.h>

#define SF_UUID_BYTES		16
/* Width of the counter: rand_a (12 bits) and the top 30 bits of rand_b. */
#define SF_UUID_COUNTER_BITS	42
/* Fresh random bits in every UUID: the rest of rand_b. */
#define SF_UUID_RANDOM_BITS	32
/* The largest unix_ts_ms: 2^48 - 1 (year 10889). */
#define SF_UUID_MAX_MS		((1ULL << 48) - 1)

/**
 * struct sf_uuid_core - state of the UUIDv7 generator
 * @counter_bits:	width of the counter, SF_UUID_COUNTER_BITS (tests
 *			use fewer; the field in the UUID stays 42 bits).
 * @counter_max:	largest counter value, 2^@counter_bits - 1.
 * @last_ms:		unix_ts_ms of the last reservation.
 * @next:		next counter value in @last_ms; above @counter_max when
 *			that millisecond is used up.
 * @started:		a reservation was made: @last_ms and @next are valid.
 * @issued:		UUIDs delivered to callers.
 * @reads:		reads that delivered at least one UUID.
 */
struct sf_uuid_core {
	u32 counter_bits;
	u64 counter_max;
	u64 last_ms;
	u64 next;
	bool started;
	u64 issued;
	u64 reads;
};

/**
 * struct sf_uuid_block - UUIDs reserved by one sf_uuid_core_reserve()
 * @ms:		their unix_ts_ms.
 * @first:	the first one's counter; the others follow as @first + 1...
 * @count:	how many UUIDs.
 */
struct sf_uuid_block {
	u64 ms;
	u64 first;
	u32 count;
};

/**
 * sf_uuid_hi() - the first 8 bytes of a UUID, as a big-endian number
 * @ms:		unix_ts_ms, at most SF_UUID_MAX_MS.
 * @counter:	the counter, below 2^SF_UUID_COUNTER_BITS.
 *
 * unix_ts_ms, the version (7) and rand_a (the counter's top 12 bits).
 * Stored big-endian (cpu_to_be64()), these are bytes 0..7 of the UUID.
 */
static inline u64 sf_uuid_hi(u64 ms, u64 counter)
{
	return ms << 16 | 0x7000 | ((counter >> 30) & 0x0fff);
}

/**
 * sf_uuid_lo() - the last 8 bytes of a UUID, as a big-endian number
 * @counter:	the counter, below 2^SF_UUID_COUNTER_BITS.
 * @rnd:	32 random bits, the end of rand_b.
 *
 * The variant (0b10), the counter's low 30 bits and @rnd: bytes 8..15.
 */
static inline u64 sf_uuid_lo(u64 counter, u32 rnd)
{
	return (0x80000000ULL | (counter & 0x3fffffff)) << 32 | rnd;
}

void sf_uuid_core_init(struct sf_uuid_core *u, unsigned int counter_bits);
int sf_uuid_core_reserve(struct sf_uuid_core *u, u64 clock_ms, u32 want,
			 u64 seed, struct sf_uuid_block *b);
void sf_uuid_core_undeliver(struct sf_uuid_core *u, u32 count, bool none);
int sf_uuid_core_peek(const struct sf_uuid_core *u, u64 clock_ms);
void sf_uuid_format(u8 *out, u64 ms, u64 counter, u32 rnd);
void sf_uuid_fill(u8 *out, const struct sf_uuid_block *b, u32 start, u32 n,
		  const u32 *rnd);

#endif /* _SNOWFLAKE_UUID_CORE_H */
