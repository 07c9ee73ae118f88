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
 *   core_bench read READS     READS reads of 4096 IDs: the reservation and
 *                             the stores of sf_put_ids() (bench_read(),
 *                             for --toggle-collect=bench_read)
 *   core_bench time ROUNDS S  ns per ID natively (issue 34): per round, S
 *                             seconds of single-ID reservations, then S
 *                             seconds of bench_read()
 *
 * Prints "CORE mode=... calls=... ids=..." on stdout; time prints
 * "CORE round=N single_ns_per_id=... read4096_ns_per_id=..." per round.
 *
 * What a read of the device does besides (the system call, the clock, the
 * lock, user_access_begin() and iov_iter_advance()) is per read, kernel
 * code, and not here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snowflake_core.h"

__attribute__((noinline)) int bench_reserve(struct sf_core *c, u64 now,
					    u32 want, struct sf_block *b);
__attribute__((noinline)) int bench_reserve(struct sf_core *c, u64 now,
					    u32 want, struct sf_block *b)
{
	return sf_core_reserve(c, now, want, 0, b);
}

/*
 * One 8-byte store, as unsafe_put_user() is in the driver: an asm store, so
 * that gcc neither vectorises nor merges the stores of the loop below.
 */
#define BENCH_PUT(v, p) __asm__ volatile("movq %1, %0" : "=m"(*(p)) : "r"((u64)(v)))

/* sf_put_ids() of driver/snowflake_main.c: eight IDs a turn, then the rest. */
__attribute__((noinline)) static size_t bench_put_ids(u64 *p, u64 first, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		BENCH_PUT(first + i, p + i);
		BENCH_PUT(first + i + 1, p + i + 1);
		BENCH_PUT(first + i + 2, p + i + 2);
		BENCH_PUT(first + i + 3, p + i + 3);
		BENCH_PUT(first + i + 4, p + i + 4);
		BENCH_PUT(first + i + 5, p + i + 5);
		BENCH_PUT(first + i + 6, p + i + 6);
		BENCH_PUT(first + i + 7, p + i + 7);
	}
	for (; i < n; i++)
		BENCH_PUT(first + i, p + i);
	return n;
}

/* A read of @want IDs into @buf: the reservation, then the stores. */
__attribute__((noinline)) int bench_read(struct sf_core *c, u64 now, u32 want,
					 u64 *buf);
__attribute__((noinline)) int bench_read(struct sf_core *c, u64 now, u32 want,
					 u64 *buf)
{
	struct sf_block b;
	int ret = bench_reserve(c, now, want, &b);

	if (ret <= 0)
		return ret;
	return (int)bench_put_ids(buf, b.first, b.count);
}

static u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

/*
 * ns per ID of @want-ID reads (bench_read(), or bench_reserve() alone for
 * one ID) for about @secs seconds, the fake clock moved on whenever a tick
 * is used up.
 */
static double bench_time(struct sf_core *c, u64 *now, u32 want, u64 *buf,
			 double secs)
{
	u64 t0 = bench_now_ns(), t, ids = 0, end = t0 + (u64)(secs * 1e9);
	struct sf_block b;
	int i, ret;

	do {
		for (i = 0; i < 1024; i++) {
			if (want == 1)
				ret = bench_reserve(c, *now, 1, &b);
			else
				ret = bench_read(c, *now, want, buf);
			if (ret == -EAGAIN) {
				(*now)++;
				continue;
			}
			if (ret <= 0)
				return -1.0;
			ids += (u64)ret;
			if (want > 1)
				(*now)++;
		}
		t = bench_now_ns();
	} while (t < end);
	return (double)(t - t0) / (double)ids;
}

static int bench_time_rounds(struct sf_core *c, u64 now, int rounds, double secs)
{
	static u64 buf[4096];
	double single, batch;
	int r;

	for (r = 1; r <= rounds; r++) {
		single = bench_time(c, &now, 1, buf, secs);
		batch = bench_time(c, &now, 4096, buf, secs);
		if (single < 0 || batch < 0) {
			fprintf(stderr, "core_bench: a reservation failed\n");
			return 1;
		}
		printf("CORE round=%d single_ns_per_id=%.2f read4096_ns_per_id=%.4f\n",
		       r, single, batch);
	}
	return 0;
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
	static u64 buf[4096];
	u64 now = 1700000000000ULL, ids = 0, last = 0;
	const char *why = "";
	struct sf_core c;
	struct sf_block b;
	long calls, i;
	u32 want;
	int ret;

	bool rd;

	if (argc == 4 && !strcmp(argv[1], "time")) {
		if (sf_core_init(&c, &cfg, now, &why)) {
			fprintf(stderr, "core_bench: sf_core_init: %s\n", why);
			return 1;
		}
		return bench_time_rounds(&c, now, atoi(argv[2]), atof(argv[3]));
	}
	if (argc != 3 || (strcmp(argv[1], "batch") != 0 && strcmp(argv[1], "single") != 0 &&
			  strcmp(argv[1], "read") != 0)) {
		fprintf(stderr, "usage: %s batch|single|read CALLS, or %s time ROUNDS SECONDS\n",
			argv[0], argv[0]);
		return 2;
	}
	rd = !strcmp(argv[1], "read");
	want = strcmp(argv[1], "single") ? 4096 : 1;
	calls = atol(argv[2]);
	if (sf_core_init(&c, &cfg, now, &why)) {
		fprintf(stderr, "core_bench: sf_core_init: %s\n", why);
		return 1;
	}
	for (i = 0; i < calls; i++) {
		ret = rd ? bench_read(&c, now, want, buf) : bench_reserve(&c, now, want, &b);
		if (ret == -EAGAIN) {
			/* The tick is used up: the clock moves on, as it would. */
			now++;
			ret = rd ? bench_read(&c, now, want, buf) : bench_reserve(&c, now, want, &b);
		}
		if (rd && ret > 0) {
			b.first = buf[0];
			if (buf[ret - 1] != b.first + (u64)ret - 1) {
				fprintf(stderr, "core_bench: the stores are wrong\n");
				return 1;
			}
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
