/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bench/snowflake_bench.c and bench/peers/peers_bench.c share: the
 * clock, percentiles, P6's read rate, and the textbook in-process Snowflake generator they
 * both measure against (P4, and the "textbook" peer).
 */
#ifndef SNOWFLAKE_BENCH_UTIL_H
#define SNOWFLAKE_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* qsort() order of uint64_t. */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static inline uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

/* qsort() order of double. */
static inline int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * P6: bytes per second of back-to-back reads of @size bytes of @fd for
 * @slice_s seconds; *@shorts counts the reads that returned less.  A
 * negative value when a read failed (errno says why).
 */
static inline double read_rate(int fd, void *buf, size_t size, double slice_s,
			       uint64_t *shorts)
{
	uint64_t t0 = now_ns(), t, bytes = 0, end = t0 + (uint64_t)(slice_s * 1e9);

	do {
		ssize_t r = read(fd, buf, size);

		if (r <= 0)
			return -1.0;
		if ((size_t)r != size)
			(*shorts)++;
		bytes += (uint64_t)r;
		t = now_ns();
	} while (t < end);
	return (double)bytes * 1e9 / (double)(t - t0);
}

/* The textbook generator: Twitter's epoch, 41/10/12, CLOCK_REALTIME. */
#define TW_EPOCH 1288834974657ULL

static inline uint64_t tw_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The next ID of a generator whose state is *@last_ms and *@seq, with the
 * node bits @node (already shifted): spins into the next millisecond when
 * 4,096 were issued in this one.  The caller serializes.
 */
static inline uint64_t tw_step(uint64_t *last_ms, uint64_t *seq, uint64_t node)
{
	uint64_t ms = tw_ms();

	if (ms == *last_ms) {
		*seq = (*seq + 1) & 4095;
		if (*seq == 0)
			while ((ms = tw_ms()) <= *last_ms)
				;
	} else {
		*seq = 0;
	}
	*last_ms = ms;
	return ((ms - TW_EPOCH) << 22) | node | *seq;
}

#endif /* SNOWFLAKE_BENCH_UTIL_H */
