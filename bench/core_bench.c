// SPDX-License-Identifier: GPL-2.0
/*
 * core_bench: the native half of `make bench`.  Calls the pure generator
 * core's sf_core_reserve() in a loop, with a fake clock, so that
 * `valgrind --tool=callgrind --toggle-collect=bench_reserve` counts the
 * instructions of the core alone (scripts/bench.sh divides them by the IDs).
 * sf_core_reserve() is static inline (the driver inlines it into its read
 * path): bench_reserve() is its one out-of-line copy here, so that callgrind
 * has a function to count.
 *
 *   core_bench batch CALLS    CALLS reservations of 4096 IDs (one tick each)
 *   core_bench single CALLS   CALLS reservations of 1 ID
 *
 * Prints "CORE mode=... calls=... ids=..." on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snowflake_core.h"

__attribute__((noinline)) int bench_reserve(struct sf_core *c, u64 now,
					    u32 want, struct sf_block *b);
__attribute__((noinline)) int bench_reserve(struct sf_core *c, u64 now,
					    u32 want, struct sf_block *b)
{
	return sf_core_reserve(c, now, want, 0, b);
}

int main(int argc, char **argv)
{
	struct snowflake_config cfg = {
		.epoch_ms = 1288834974657ULL,
		.time_unit_ms = SNOWFLAKE_DEFAULT_TIME_UNIT_MS,
		.timestamp_bits = SNOWFLAKE_DEFAULT_TIMESTAMP_BITS,
		.datacenter_bits = SNOWFLAKE_DEFAULT_DATACENTER_BITS,
		.worker_bits = SNOWFLAKE_DEFAULT_WORKER_BITS,
		.sequence_bits = SNOWFLAKE_DEFAULT_SEQUENCE_BITS,
		.datacenter_id = 1,
		.worker_id = 3,
	};
	u64 now = 1700000000000ULL, ids = 0, last = 0;
	const char *why = "";
	struct sf_core c;
	struct sf_block b;
	long calls, i;
	u32 want;
	int ret;

	if (argc != 3 || (strcmp(argv[1], "batch") != 0 && strcmp(argv[1], "single") != 0)) {
		fprintf(stderr, "usage: %s batch|single CALLS\n", argv[0]);
		return 2;
	}
	want = strcmp(argv[1], "batch") ? 1 : 4096;
	calls = atol(argv[2]);
	if (sf_core_init(&c, &cfg, now, &why)) {
		fprintf(stderr, "core_bench: sf_core_init: %s\n", why);
		return 1;
	}
	for (i = 0; i < calls; i++) {
		ret = bench_reserve(&c, now, want, &b);
		if (ret == -EAGAIN) {
			/* The tick is used up: the clock moves on, as it would. */
			now++;
			ret = bench_reserve(&c, now, want, &b);
		}
		if (ret <= 0 || b.first <= last) {
			fprintf(stderr, "core_bench: reserve returned %d\n", ret);
			return 1;
		}
		last = b.first + (u64)ret - 1;
		ids += (u64)ret;
		if (want > 1)
			now++;
	}
	printf("CORE mode=%s calls=%ld ids=%llu\n", argv[1], calls,
	       (unsigned long long)ids);
	return 0;
}
