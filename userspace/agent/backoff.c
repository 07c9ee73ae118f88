// SPDX-License-Identifier: GPL-2.0
/*
 * The pool-full backoff and the retry wait of snowflake-agent (backoff.h
 * says what each must guarantee and why).
 */
#include "backoff.h"

#define AG_BACKOFF_NS_PER_MS	1000000LL

/* min(@renew_ms, 1 s), in ns: where both waits start. */
static int64_t min_renew_1s(uint32_t renew_ms)
{
	return (int64_t)(renew_ms < 1000 ? renew_ms : 1000) * AG_BACKOFF_NS_PER_MS;
}

/* 50 % .. 100 % of @b: jittered down only, so @b is the longest wait. */
static int64_t jitter_down(int64_t b, uint64_t rnd)
{
	return b / 2 + (int64_t)(rnd % (uint64_t)(b / 2 + 1));
}

int64_t ag_full_backoff(int64_t *state_ns, uint32_t ttl_ms, uint32_t renew_ms, uint64_t rnd)
{
	int64_t cap = (int64_t)(ttl_ms > 1000 ? ttl_ms : 1000) * AG_BACKOFF_NS_PER_MS;
	int64_t b = *state_ns;

	b = b > 0 ? b * 2 : min_renew_1s(renew_ms);
	if (b > cap || b <= 0)
		b = cap;
	*state_ns = b;
	return jitter_down(b, rnd);	/* the cap is the longest wait */
}

int64_t ag_retry_wait(uint32_t renew_ms, uint64_t rnd)
{
	return jitter_down(min_renew_1s(renew_ms), rnd);
}
