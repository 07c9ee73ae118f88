// SPDX-License-Identifier: GPL-2.0
/*
 * The UUIDv7 generator core.  See uuid_core.h: no kernel calls here, the
 * clock and the random numbers come in as arguments and the caller
 * serialises all calls.
 *
 * Order: the millisecond used is max(clock, last millisecond), and within a
 * millisecond each counter value is handed out once, in increasing order.
 * A new millisecond starts its counter anywhere below half the counter's
 * range, so at least 2^41 UUIDs fit in every millisecond: far more than a
 * host can read in one, so no read waits for the next millisecond (and the
 * timestamp never runs ahead of the clock to make room).
 */
#include "uuid_core.h"

/**
 * sf_uuid_core_init() - start a generator
 * @u:			the generator.
 * @counter_bits:	width of the counter, 1..SF_UUID_COUNTER_BITS
 *			(SF_UUID_COUNTER_BITS outside tests); out-of-range
 *			values count as SF_UUID_COUNTER_BITS.
 */
void sf_uuid_core_init(struct sf_uuid_core *u, unsigned int counter_bits)
{
	if (!counter_bits || counter_bits > SF_UUID_COUNTER_BITS)
		counter_bits = SF_UUID_COUNTER_BITS;
	*u = (struct sf_uuid_core) {
		.counter_bits = counter_bits,
		.counter_max = (1ULL << counter_bits) - 1,
	};
}

/**
 * sf_uuid_core_reserve() - reserve a block of UUIDs
 * @u:		the generator.
 * @clock_ms:	the generator's clock (Unix ms, never decreasing in the
 *		kernel; a smaller value than before is treated as the last
 *		millisecond used).
 * @want:	how many UUIDs the caller wants, at least 1; more than
 *		SNOWFLAKE_UUID_MAX_PER_READ counts as that many.
 * @seed:	a random number: the first counter of a new millisecond is
 *		@seed masked to the lower half of the counter's range.
 * @b:		filled with the block.
 *
 * The block holds at most what is left in the current millisecond.
 *
 * Return: the number of UUIDs reserved (1..@want); -EINVAL when @want is 0;
 * -EAGAIN when the current millisecond is used up (the next one starts when
 * @clock_ms passes @u->last_ms); -EOVERFLOW when @clock_ms is above
 * SF_UUID_MAX_MS.
 */
int sf_uuid_core_reserve(struct sf_uuid_core *u, u64 clock_ms, u32 want,
			 u64 seed, struct sf_uuid_block *b)
{
	u64 left;
	u32 n;

	if (!want)
		return -EINVAL;
	/* The count is returned as an int. */
	if (want > SNOWFLAKE_UUID_MAX_PER_READ)
		want = SNOWFLAKE_UUID_MAX_PER_READ;

	if (!u->started || clock_ms > u->last_ms) {
		if (clock_ms > SF_UUID_MAX_MS)
			return -EOVERFLOW;
		u->last_ms = clock_ms;
		u->next = seed & (u->counter_max >> 1);
		u->started = true;
	} else if (u->next > u->counter_max) {
		return -EAGAIN;
	}

	left = u->counter_max - u->next + 1;
	n = want < left ? want : (u32)left;

	b->ms = u->last_ms;
	b->first = u->next;
	b->count = n;
	u->next += n;
	u->issued += n;
	u->reads++;
	return n;
}

/**
 * sf_uuid_core_undeliver() - count UUIDs reserved but never delivered
 * @u:		the generator.
 * @count:	how many UUIDs of the last reservation the caller could not
 *		deliver (a bad user buffer).
 * @none:	the caller delivered none of them.
 *
 * The counter values stay used: they are skipped, never issued again.
 * Only the counters change, so that they count what callers received.
 */
void sf_uuid_core_undeliver(struct sf_uuid_core *u, u32 count, bool none)
{
	u->issued -= count;
	if (none)
		u->reads--;
}

/**
 * sf_uuid_core_peek() - would a reservation succeed now?
 * @u:		the generator.
 * @clock_ms:	the generator's clock.
 *
 * Return: 1 when sf_uuid_core_reserve() would return UUIDs, 0 when the
 * current millisecond is used up, -EOVERFLOW when it would refuse.
 */
int sf_uuid_core_peek(const struct sf_uuid_core *u, u64 clock_ms)
{
	if (!u->started || clock_ms > u->last_ms)
		return clock_ms > SF_UUID_MAX_MS ? -EOVERFLOW : 1;
	return u->next <= u->counter_max;
}

/**
 * sf_uuid_format() - one UUID in RFC 9562 binary form
 * @out:	16 bytes.
 * @ms:		unix_ts_ms, at most SF_UUID_MAX_MS.
 * @counter:	the counter, below 2^SF_UUID_COUNTER_BITS.
 * @rnd:	32 random bits, the end of rand_b.
 */
void sf_uuid_format(u8 *out, u64 ms, u64 counter, u32 rnd)
{
	u64 hi = sf_uuid_hi(ms, counter), lo = sf_uuid_lo(counter, rnd);
	int i;

	for (i = 0; i < 8; i++) {
		out[i] = hi >> (56 - 8 * i);
		out[8 + i] = lo >> (56 - 8 * i);
	}
}

/**
 * sf_uuid_fill() - format part of a block
 * @out:	@n * 16 bytes.
 * @b:		the block.
 * @start:	index in the block of the first UUID to format.
 * @n:		how many; @start + @n <= @b->count.
 * @rnd:	@n random numbers, one per UUID.
 */
void sf_uuid_fill(u8 *out, const struct sf_uuid_block *b, u32 start, u32 n,
		  const u32 *rnd)
{
	u32 i;

	for (i = 0; i < n; i++, out += SF_UUID_BYTES)
		sf_uuid_format(out, b->ms, b->first + start + i, rnd[i]);
}
