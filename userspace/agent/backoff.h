/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pool-full backoff of snowflake-agent: how long an agent that found
 * no free pair (or none with a valid mark) waits before it walks the pool
 * again.  Pure (the random draw comes in as an argument), so the native
 * unit tests check its range exactly.
 *
 * The liveness bound it serves (snowflake-agent(8), "Liveness"): a pair
 * that becomes free while the store answers is tried by every waiting
 * agent within max(ttl, 1 s) plus one walk of the pool, so it is claimed
 * within that and served settle-ms later: within ttl + settle-ms + 1 s.
 * That holds only if no wait is longer than max(ttl, 1 s): the jitter
 * spreads the agents' walks downwards, never past that cap.
 */
#ifndef SNOWFLAKE_AGENT_BACKOFF_H
#define SNOWFLAKE_AGENT_BACKOFF_H

#include <stdint.h>

/*
 * The next wait, in ns.  *@state_ns is the agent's current backoff (0 after
 * a lease was taken): it starts at min(@renew_ms, 1 s), doubles each call,
 * and stops at max(@ttl_ms, 1 s).  The wait returned is within
 * [*@state_ns / 2, *@state_ns] (50 % .. 100 %, from @rnd, any 64-bit
 * random draw), so never above max(@ttl_ms, 1 s).
 */
int64_t ag_full_backoff(int64_t *state_ns, uint32_t ttl_ms, uint32_t renew_ms, uint64_t rnd);

/*
 * The wait after a claim step failed (the store did not answer, or said
 * an error of its own), in ns: min(@renew_ms, 1 s), jittered down to half
 * (from @rnd), never up.  A fixed wait brought every agent that one store
 * failure had stopped back at the same instant, a herd that failed again
 * together (1,024 agents against one ZooKeeper, BENCHMARKS.md, P10).
 */
int64_t ag_retry_wait(uint32_t renew_ms, uint64_t rnd);

#endif /* SNOWFLAKE_AGENT_BACKOFF_H */
