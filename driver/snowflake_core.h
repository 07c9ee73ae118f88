/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Snowflake generator core: pure arithmetic on a state structure.
 *
 * No locking, no clock, no allocation, no kernel calls: the caller passes the
 * time in and serialises calls.  The same file builds in the kernel and in
 * userspace (unit tests, sanitizers, fuzzing, callgrind).
 *
 * Times are Unix milliseconds.  "raw" time is what the caller's clock says;
 * the generator's clock is raw time plus @offset_ms, which only grows (a
 * catch-up to the wall clock or a jump to a floor).
 */
#ifndef _SNOWFLAKE_CORE_H
#define _SNOWFLAKE_CORE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/math64.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>
typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;
static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}
#endif

#include <linux/snowflake.h>

/*
 * The highest floor, Unix ms (2^63 - 1, some 292 million years): below it,
 * no sum of a time, an offset and a tick length can wrap around.
 */
#define SF_MAX_FLOOR_MS		((1ULL << 63) - 1)

/* Why reads are refused (struct sf_core.refusing). */
#define SF_REFUSE_NO_WORKER	0x1U	/* strict mode, no worker id set */
#define SF_REFUSE_FENCED	0x2U	/* fenced: SNOWFLAKE_IOC_SET_FENCE */

/**
 * struct sf_core - state of one generator
 * @cfg:		current configuration.
 * @seq_max:		largest sequence number, 2^sequence_bits - 1.
 * @ts_max:		largest timestamp, 2^timestamp_bits - 1.
 * @ts_shift:		position of the timestamp field.
 * @node:		datacenter and worker fields, in place.
 * @floor_ms:		no timestamp below this (Unix ms).
 * @floor_tick:		@floor_ms in ticks since the epoch, rounded up.
 * @offset_ms:		forward moves of the clock; never decreases.
 * @last_tick:		tick of the last reservation.
 * @next_seq:		next free sequence number in @last_tick;
 *			above @seq_max when that tick is used up.
 * @issued:		an ID has been issued: the layout is fixed.
 * @strict:		refuse reads until the worker id is set.
 * @worker_set:		the worker id was set explicitly.
 * @fenced:		fenced by SNOWFLAKE_IOC_SET_FENCE: refuse reads.
 * @fences:		times @fenced went from false to true.
 * @refusing:		SF_REFUSE_* bits; reads fail with -ENOTCONN if any.
 * @stats:		counters; only the counter fields are kept here.
 */
struct sf_core {
	struct snowflake_config cfg;
	u64 seq_max;
	u64 ts_max;
	u32 ts_shift;
	u64 node;
	u64 floor_ms;
	u64 floor_tick;
	u64 offset_ms;
	u64 last_tick;
	u64 next_seq;
	bool issued;
	bool strict;
	bool worker_set;
	bool fenced;
	u64 fences;
	u32 refusing;
	struct snowflake_stats stats;
};

/**
 * struct sf_block - IDs reserved by one call of sf_core_reserve()
 * @first:	the first ID; the others follow as @first + 1, @first + 2...
 * @count:	how many IDs.
 * @retry_ms:	when the reservation failed with -EAGAIN: the raw time at
 *		which the next tick starts.
 */
struct sf_block {
	u64 first;
	u32 count;
	u64 retry_ms;
};

int sf_core_check_config(const struct snowflake_config *cfg, const char **why);
int sf_core_check_ids(const struct snowflake_ids *ids);
int sf_core_check_floor(const struct snowflake_floor *fl);
int sf_core_check_fence(const struct snowflake_fence *fe);
int sf_core_init(struct sf_core *c, const struct snowflake_config *cfg,
		 u64 now_ms, const char **why);
int sf_core_set_config(struct sf_core *c, const struct snowflake_config *cfg,
		       u64 now_ms, const char **why);
int sf_core_set_ids(struct sf_core *c, u32 datacenter_id, u32 worker_id,
		    bool worker_explicit);
void sf_core_set_strict(struct sf_core *c, bool strict, bool worker_set);
bool sf_core_set_fence(struct sf_core *c, bool on);
int sf_core_set_floor(struct sf_core *c, u64 floor_ms, u64 now_ms);
bool sf_core_catch_up(struct sf_core *c, u64 now_ms, u64 wall_ms,
		      u64 threshold_ms);
int sf_core_reserve(struct sf_core *c, u64 now_ms, u32 want, u32 rnd,
		    struct sf_block *b);
void sf_core_undeliver(struct sf_core *c, u32 count, bool none);
int sf_core_peek(const struct sf_core *c, u64 now_ms, u64 *retry_ms);
void sf_core_stats(const struct sf_core *c, u64 now_ms,
		   struct snowflake_stats *s);
u64 sf_core_last_timestamp(const struct sf_core *c);

#endif /* _SNOWFLAKE_CORE_H */
