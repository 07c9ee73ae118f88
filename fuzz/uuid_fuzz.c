// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the UUIDv7 core (driver/uuid_core.c) driven by a
 * sequence of operations decoded from the input, the way snowflake_uuid.c
 * calls it: init with any counter width, reserve with any clock (forward,
 * back, past 2^48 ms), any want and any seed, undeliver, peek.  After every
 * step:
 *
 * - every UUID of a block, formatted, is version 7 with the RFC variant and
 *   memcmp-greater than every UUID reserved before (so never a duplicate);
 * - its unix_ts_ms is the clock passed, or the last one when the clock is
 *   behind: never later than the largest clock passed so far;
 * - a block holds 1..want (capped) UUIDs of consecutive counter values;
 * - -EAGAIN only when the millisecond is used up (peek says 0), and a later
 *   clock always serves; -EOVERFLOW only for a clock past 2^48 - 1 that is
 *   ahead of the last millisecond; failed calls change nothing;
 * - the counters count what was delivered.
 */
#include "fuzz_input.h"
#include "uuid_core.h"

struct run {
	struct fin in;
	struct sf_uuid_core u;
	bool have_last;
	u8 last[SF_UUID_BYTES];	/* the highest UUID formatted so far */
	u64 max_clock;
	u64 issued, reads;	/* what the counters should say */
	u32 last_count;
};

static void check_uuid(struct run *r, const u8 *p, u64 ms)
{
	u64 got = 0;
	int i;

	for (i = 0; i < 6; i++)
		got = got << 8 | p[i];
	CHECK(got == ms, "unix_ts_ms %llu, block says %llu",
	      (unsigned long long)got, (unsigned long long)ms);
	CHECK((p[6] >> 4) == 7, "version %u", p[6] >> 4);
	CHECK((p[8] >> 6) == 2, "variant %u", p[8] >> 6);
	if (r->have_last)
		CHECK(memcmp(r->last, p, SF_UUID_BYTES) < 0, "UUID not above the last one");
	memcpy(r->last, p, SF_UUID_BYTES);
	r->have_last = true;
}

static void op_reserve(struct run *r, u64 clock, u32 want, u64 seed)
{
	struct sf_uuid_core before = r->u;
	struct sf_uuid_block b;
	u8 out[SF_UUID_BYTES];
	u32 cap = want > SNOWFLAKE_UUID_MAX_PER_READ ? SNOWFLAKE_UUID_MAX_PER_READ : want;
	int peek = sf_uuid_core_peek(&r->u, clock);
	int ret;

	ret = sf_uuid_core_reserve(&r->u, clock, want, seed, &b);
	if (ret <= 0) {
		CHECK(!memcmp(&before, &r->u, sizeof(before)), "failed reserve changed the state");
		if (!want) {
			CHECK(ret == -EINVAL, "want 0: %d", ret);
		} else if (ret == -EOVERFLOW) {
			CHECK(clock > SF_UUID_MAX_MS && (!before.started || clock > before.last_ms),
			      "EOVERFLOW at clock %llu", (unsigned long long)clock);
			CHECK(peek == -EOVERFLOW, "peek %d, reserve EOVERFLOW", peek);
		} else {
			CHECK(ret == -EAGAIN, "reserve returned %d", ret);
			CHECK(before.started && clock <= before.last_ms &&
			      before.next > before.counter_max, "EAGAIN with values left");
			CHECK(peek == 0, "peek %d, reserve EAGAIN", peek);
			/* The next millisecond serves, unless it is past 2^48. */
			if (before.last_ms < SF_UUID_MAX_MS) {
				struct sf_uuid_core probe = r->u;

				CHECK(sf_uuid_core_reserve(&probe, before.last_ms + 1, 1, seed, &b) == 1,
				      "the next millisecond does not serve");
			}
		}
		r->last_count = 0;
		return;
	}
	CHECK(peek == 1, "peek %d, reserve %d", peek, ret);
	CHECK((u32)ret <= cap && (u32)ret == b.count, "count %d for want %u", ret, want);
	if (clock > r->max_clock)
		r->max_clock = clock;
	CHECK(b.ms <= r->max_clock, "ms %llu after every clock passed",
	      (unsigned long long)b.ms);
	CHECK(b.ms == (before.started && clock < before.last_ms ? before.last_ms : clock),
	      "ms %llu for clock %llu", (unsigned long long)b.ms, (unsigned long long)clock);
	CHECK(b.first + b.count - 1 <= r->u.counter_max, "counter past its width");
	/* The first and the last of the block (the ones between are consecutive). */
	sf_uuid_format(out, b.ms, b.first, fin_u32(&r->in));
	check_uuid(r, out, b.ms);
	if (b.count > 1) {
		u32 rnd = fin_u32(&r->in);

		sf_uuid_fill(out, &b, b.count - 1, 1, &rnd);
		check_uuid(r, out, b.ms);
	}
	r->issued += b.count;
	r->reads++;
	r->last_count = b.count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r = { .in = { data, size } };
	u64 clock;

	sf_uuid_core_init(&r.u, fin_u8(&r.in) % (SF_UUID_COUNTER_BITS + 2));
	CHECK(r.u.counter_bits >= 1 && r.u.counter_bits <= SF_UUID_COUNTER_BITS,
	      "counter_bits %u", r.u.counter_bits);
	clock = fin_u64(&r.in) % (SF_UUID_MAX_MS + 2);

	while (r.in.left) {
		switch (fin_u8(&r.in) % 8) {
		case 0:		/* the clock moves forward */
			clock += fin_range(&r.in, 1000);
			break;
		case 1:		/* or back (a caller must never, we cope) */
			clock -= fin_range(&r.in, clock < 5000 ? clock : 5000);
			break;
		case 2:		/* or anywhere, past 2^48 too */
			clock = fin_u64(&r.in);
			break;
		case 3: {	/* a burst that uses up the millisecond */
			int i;

			for (i = 0; i < 64; i++)
				op_reserve(&r, clock, SNOWFLAKE_UUID_MAX_PER_READ, fin_u64(&r.in));
			break;
		}
		case 4:
			if (r.last_count) {
				u32 n = (u32)fin_range(&r.in, r.last_count);
				bool none = n == r.last_count;

				sf_uuid_core_undeliver(&r.u, n, none);
				r.issued -= n;
				if (none)
					r.reads--;
				r.last_count = 0;
			}
			break;
		default:
			op_reserve(&r, clock, fin_u32(&r.in), fin_u64(&r.in));
			break;
		}
		CHECK(r.u.issued == r.issued && r.u.reads == r.reads, "counters %llu/%llu",
		      (unsigned long long)r.u.issued, (unsigned long long)r.u.reads);
		CHECK(!r.u.started || r.u.next <= r.u.counter_max + 1, "next past the counter");
	}
	return 0;
}
