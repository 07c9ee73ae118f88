/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the agent's reply-parser targets share: a failed check prints what
 * was wrong and abort()s (libFuzzer keeps the input as a crash).
 */
#ifndef AGENT_FUZZ_H
#define AGENT_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACHECK(cond)								\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "check '%s' failed at %s:%d\n", #cond,	\
				__FILE__, __LINE__);				\
			abort();						\
		}								\
	} while (0)

/* The layout bounds a target tries: 41 bits from 2010, 2^64 - 2, 1 ms. */
static inline uint64_t pick_max_ms(uint8_t b)
{
	static const uint64_t m[] = { 1288834974657ULL + (1ULL << 41) - 1, UINT64_MAX - 1, 1,
				      99999999999999999ULL };

	return m[b % 4];
}

/* @s (@len bytes) is exactly the decimal of @v, in @width digits (0: no padding). */
static inline int is_decimal_of(const char *s, size_t len, uint64_t v, int width)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%0*llu", width, (unsigned long long)v);

	return n > 0 && (size_t)n == len && !memcmp(buf, s, len);
}

#endif /* AGENT_FUZZ_H */
