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
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;
#define U64_MAX (~0ULL)
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
#define SF_REFUSE_VM_FORK	0x4U	/* the VM was cloned or restored */

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
 * @raw_seen_ms:	the latest raw time a reservation or a floor was
 *			given (see sf_raise_floor()); never decreases.
 * @last_tick:		tick of the last reservation.
 * @next_seq:		next free sequence number in @last_tick;
 *			above @seq_max when that tick is used up.
 * @issued:		an ID has been issued: the layout is fixed.
 * @strict:		refuse reads until the worker id is set.
 * @worker_set:		the worker id was set explicitly.
 * @fenced:		fenced by SNOWFLAKE_IOC_SET_FENCE: refuse reads.
 * @fences:		times @fenced went from false to true.
 * @clock_checks:	times sf_core_catch_up() compared the wall clock.
 * @deadline_ms:	raw time from which reads are refused (the lease's
 *			deadline, rounded down to ms); U64_MAX: none.
 * @deadline_ns:	the deadline as set (CLOCK_BOOTTIME ns), for sysfs.
 * @expired:		a read found the deadline passed (and it was not
 *			moved since).
 * @lease_expiries:	times @expired went from false to true.
 * @ceiling_ms:		the lease's ceiling as set (Unix ms; see
 *			sf_core_set_window()); SNOWFLAKE_NO_CEILING: none.
 * @ceiling_end:	the first tick whose start is above @ceiling_ms: no
 *			reservation uses a tick at or past it; U64_MAX: none.
 * @ceiling_reached:	a read was refused at the ceiling (and the ceiling
 *			was not moved since).
 * @ceiling_hits:	times @ceiling_reached went from false to true.
 * @vm_forks:		VM forks seen (see sf_core_vm_fork()).
 * @vm_forked:		a VM fork refuses reads until a re-arm.
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
	u64 raw_seen_ms;
	u64 last_tick;
	u64 next_seq;
	bool issued;
	bool strict;
	bool worker_set;
	bool fenced;
	u64 fences;
	u64 clock_checks;
	u64 deadline_ms;
	u64 deadline_ns;
	bool expired;
	u64 lease_expiries;
	u64 ceiling_ms;
	u64 ceiling_end;
	bool ceiling_reached;
	u64 ceiling_hits;
	u32 vm_forks;
	bool vm_forked;
	u32 refusing;
	struct snowflake_stats stats;
};

/**
 * struct sf_block - IDs reserved by one call of sf_core_reserve()
 * @first:	the first ID; the others follow as @first + 1, @first + 2...
 * @count:	how many IDs.
 * @rnd_used:	the random number passed in was used (a new tick started
 *		in random-sequence mode): the caller draws a fresh one.
 * @retry_ms:	when the reservation failed with -EAGAIN: the raw time at
 *		which the next tick starts.
 */
struct sf_block {
	u64 first;
	u32 count;
	bool rnd_used;
	u64 retry_ms;
};

int sf_core_check_config(const struct snowflake_config *cfg, const char **why);
int sf_core_check_ids(const struct snowflake_ids *ids, size_t size);
int sf_core_check_floor(const struct snowflake_floor *fl);
int sf_core_check_fence(const struct snowflake_fence *fe);
int sf_core_init(struct sf_core *c, const struct snowflake_config *cfg,
		 u64 now_ms, const char **why);
int sf_core_set_config(struct sf_core *c, const struct snowflake_config *cfg,
		       u64 now_ms, const char **why);
int sf_core_set_ids(struct sf_core *c, u32 datacenter_id, u32 worker_id,
		    bool assign);
void sf_core_set_strict(struct sf_core *c, bool strict, bool worker_set);
bool sf_core_set_fence(struct sf_core *c, bool on);
int sf_core_set_floor(struct sf_core *c, u64 floor_ms, u64 now_ms);
bool sf_core_catch_up(struct sf_core *c, u64 ahead_ms, u64 threshold_ms);
void sf_core_set_deadline(struct sf_core *c, u64 deadline_ns, u64 deadline_ms);
void sf_core_vm_fork(struct sf_core *c, u32 vm_forks);
int sf_core_check_vm_forks(const struct sf_core *c,
			   const struct snowflake_ids *ids);
void sf_core_rearm(struct sf_core *c, const struct snowflake_ids *ids);
int sf_core_check_window(const struct sf_core *c, u64 floor_ms, u64 ceiling_ms);
void sf_core_set_window(struct sf_core *c, u64 floor_ms, u64 ceiling_ms,
			u64 now_ms);
int sf_core_set_ids_arg(struct sf_core *c, const struct snowflake_ids *ids,
			u64 deadline_ms, u64 now_ms);
void sf_core_undeliver(struct sf_core *c, u32 count, bool none);
void sf_core_stats(const struct sf_core *c, u64 now_ms,
		   struct snowflake_stats *s);
u64 sf_core_last_timestamp(const struct sf_core *c);

/*
 * The read path: sf_core_reserve() and sf_core_peek() with their helpers are
 * static inline so that they compile into the driver's read and poll
 * functions (no out-of-line call while the spinlock is held) and, the same
 * code, into the native unit tests, fuzzers and benchmarks.
 */

static inline u64 sf_mask(unsigned int bits)
{
	return bits ? ~0ULL >> (64 - bits) : 0;
}

/* The generator's clock: raw time plus the forward moves. */
static inline u64 sf_clock(const struct sf_core *c, u64 now_ms)
{
	return now_ms + c->offset_ms;
}

/* @v, with its value hidden from the optimizer (see sf_tick()). */
static inline u32 sf_opaque_u32(u32 v)
{
	__asm__ ("" : "+r" (v));
	return v;
}

/*
 * Ticks since the epoch at @ms, rounded down; 0 before the epoch.  With
 * 1 ms ticks (most layouts) there is no division: the compiler would fold
 * "unit == 1 ? x : x / unit" into a division on every read, a slow
 * instruction; hiding the unit from it keeps the branch.
 */
static inline u64 sf_tick(const struct snowflake_config *cfg, u64 ms)
{
	u32 unit = cfg->time_unit_ms;

	if (ms <= cfg->epoch_ms)
		return 0;
	if (unit == 1)
		return ms - cfg->epoch_ms;
	return div_u64(ms - cfg->epoch_ms, sf_opaque_u32(unit));
}

/* The tick a reservation at raw time @now_ms uses: never below the floor. */
static inline u64 sf_core_tick(const struct sf_core *c, u64 now_ms)
{
	u64 tick = sf_tick(&c->cfg, sf_clock(c, now_ms));

	return tick < c->floor_tick ? c->floor_tick : tick;
}

/*
 * The tick the next reservation would stamp, @tick being sf_core_tick(): a
 * tick after the last one; else the last one while it has sequence numbers
 * left; else the one after it, which a blocking reader would wait for.
 * That is max(clock tick, floor tick, last tick), the tick actually used.
 */
static inline u64 sf_core_next_tick(const struct sf_core *c, u64 tick)
{
	if (tick > c->last_tick)
		return tick;
	return c->next_seq <= c->seq_max ? c->last_tick : c->last_tick + 1;
}

/*
 * Would the lease's ceiling refuse the next reservation at clock tick
 * @tick?  Compared with the tick it would actually stamp, so neither a
 * stale clock reading (which only makes the tick older) nor a floor or a
 * catch-up (which only make it newer, and are then compared too) can let
 * an ID past the ceiling; see sf_core_set_window().  A used-up last tick
 * whose successor is past the ceiling refuses at once: a blocking reader
 * must not sleep into a refusal.
 */
static inline bool sf_core_past_ceiling(const struct sf_core *c, u64 tick)
{
	return sf_core_next_tick(c, tick) >= c->ceiling_end;
}

/* Raw time at which the tick after @c->last_tick starts. */
static inline u64 sf_next_tick_raw(const struct sf_core *c)
{
	u64 start = c->cfg.epoch_ms + (c->last_tick + 1) * c->cfg.time_unit_ms;

	return start > c->offset_ms ? start - c->offset_ms : 0;
}

/**
 * sf_core_reserve() - reserve a block of IDs
 * @c:		the generator.
 * @now_ms:	raw time now.  It may be a little stale (read before the
 *		caller's lock): the tick used is max(clock tick, floor tick,
 *		last tick), so a stale time can only make the IDs older, never
 *		equal to or below earlier ones, and never later than real time.
 * @want:	how many IDs the caller wants, at least 1; more than
 *		SNOWFLAKE_MAX_IDS_PER_READ counts as that many.
 * @rnd:	a random number, used as the first sequence number of a new
 *		tick (masked to its lower half) in random-sequence mode;
 *		@b->rnd_used says when it was.
 * @b:		filled with the block, or with @b->retry_ms on -EAGAIN.
 *
 * The block holds at most what is left in the current tick.
 *
 * Return: the number of IDs reserved (1..@want); -EINVAL when @want is 0;
 * -EAGAIN when the current tick is used up; -ENOTCONN when reads are
 * refused (strict mode, the fence, a VM fork, the lease's deadline or its
 * ceiling); -EOVERFLOW when the timestamp no longer fits its width.
 */
static inline int sf_core_reserve(struct sf_core *c, u64 now_ms, u32 want,
				  u32 rnd, struct sf_block *b)
{
	u64 tick, left;
	u32 n;

	if (!want)
		return -EINVAL;
	/* The count is returned as an int. */
	if (want > SNOWFLAKE_MAX_IDS_PER_READ)
		want = SNOWFLAKE_MAX_IDS_PER_READ;
	/* For a floor raised later: see sf_raise_floor(). */
	if (now_ms > c->raw_seen_ms)
		c->raw_seen_ms = now_ms;
	if (c->refusing) {
		c->stats.refused_reads++;
		return -ENOTCONN;
	}
	/* The lease's deadline: see sf_core_set_deadline(). */
	if (now_ms >= c->deadline_ms) {
		if (!c->expired) {
			c->expired = true;
			c->lease_expiries++;
		}
		c->stats.refused_reads++;
		return -ENOTCONN;
	}

	tick = sf_core_tick(c, now_ms);
	/* The lease's ceiling: see sf_core_set_window(). */
	if (sf_core_past_ceiling(c, tick)) {
		if (!c->ceiling_reached) {
			c->ceiling_reached = true;
			c->ceiling_hits++;
		}
		c->stats.refused_reads++;
		return -ENOTCONN;
	}

	b->rnd_used = false;
	if (tick > c->last_tick) {
		if (tick > c->ts_max) {
			c->stats.refused_reads++;
			return -EOVERFLOW;
		}
		c->last_tick = tick;
		c->next_seq = 0;
		if (c->cfg.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE) {
			c->next_seq = rnd & (c->seq_max >> 1);
			b->rnd_used = true;
		}
	} else if (c->next_seq > c->seq_max) {
		b->retry_ms = sf_next_tick_raw(c);
		return -EAGAIN;
	}

	left = c->seq_max - c->next_seq + 1;
	n = want < left ? want : (u32)left;

	b->first = (c->last_tick << c->ts_shift) | c->node | c->next_seq;
	b->count = n;
	c->next_seq += n;
	c->issued = true;
	c->stats.ids_issued += n;
	c->stats.reads++;
	return n;
}

/**
 * sf_core_peek() - would a reservation succeed now?
 * @c:		the generator.
 * @now_ms:	raw time now (may be stale, as for sf_core_reserve()).
 * @retry_ms:	set to the raw time of the next tick when the answer is 0.
 *
 * Return: 1 when sf_core_reserve() would return IDs, 0 when the current tick
 * is used up, -ENOTCONN or -EOVERFLOW when it would refuse.
 */
static inline int sf_core_peek(const struct sf_core *c, u64 now_ms,
			       u64 *retry_ms)
{
	u64 tick;

	if (c->refusing || now_ms >= c->deadline_ms)
		return -ENOTCONN;

	tick = sf_core_tick(c, now_ms);
	if (sf_core_past_ceiling(c, tick))
		return -ENOTCONN;
	if (tick > c->last_tick)
		return tick > c->ts_max ? -EOVERFLOW : 1;
	if (c->next_seq <= c->seq_max)
		return 1;
	*retry_ms = sf_next_tick_raw(c);
	return 0;
}

#endif /* _SNOWFLAKE_CORE_H */
