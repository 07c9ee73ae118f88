/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoding a libFuzzer input into values, and the checks every target
 * shares.  A failed check prints what was wrong and abort()s: libFuzzer
 * saves the input as a crash.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snowflake_core.h"

struct fin {
	const uint8_t *p;
	size_t left;
};

/* The next @n bytes, little-endian; zeros once the input is used up. */
static inline u64 fin_bytes(struct fin *in, unsigned int n)
{
	u64 v = 0;
	unsigned int i;

	for (i = 0; i < n && in->left; i++, in->p++, in->left--)
		v |= (u64)*in->p << (8 * i);
	return v;
}

static inline u8 fin_u8(struct fin *in)
{
	return (u8)fin_bytes(in, 1);
}

static inline u32 fin_u32(struct fin *in)
{
	return (u32)fin_bytes(in, 4);
}

static inline u64 fin_u64(struct fin *in)
{
	return fin_bytes(in, 8);
}

static inline bool fin_bool(struct fin *in)
{
	return fin_u8(in) & 1;
}

/* A value in 0..@max. */
static inline u64 fin_range(struct fin *in, u64 max)
{
	u64 v = fin_u64(in);

	return max == UINT64_MAX ? v : v % (max + 1);
}

#define CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check '%s' failed: " fmt "\n",	\
			__FILE__, __LINE__, #cond, ##__VA_ARGS__);	\
		abort();						\
	}								\
} while (0)

static inline u64 fz_mask(unsigned int bits)
{
	return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

/*
 * The documented rules of struct snowflake_config (uapi/linux/snowflake.h),
 * written again independently of sf_core_check_config(): 0 or -EINVAL.
 */
static inline int fz_config_valid(const struct snowflake_config *cfg)
{
	unsigned int sum = (unsigned int)cfg->timestamp_bits + cfg->datacenter_bits +
			   cfg->worker_bits + cfg->sequence_bits;

	if (cfg->__reserved || (cfg->flags & ~SNOWFLAKE_CONFIG_RANDOM_SEQUENCE))
		return -EINVAL;
	if (cfg->time_unit_ms < 1 || cfg->time_unit_ms > 3600000)
		return -EINVAL;
	if (cfg->timestamp_bits < 1 || cfg->datacenter_bits > 31 ||
	    cfg->worker_bits > 31 || cfg->sequence_bits > 31 || sum > 63)
		return -EINVAL;
	if (cfg->datacenter_id > fz_mask(cfg->datacenter_bits) ||
	    cfg->worker_id > fz_mask(cfg->worker_bits))
		return -EINVAL;
	return 0;
}

/* Every field of the two states is equal (padding is not compared). */
static inline bool fz_core_eq(const struct sf_core *a, const struct sf_core *b)
{
	return !memcmp(&a->cfg, &b->cfg, sizeof(a->cfg)) &&
	       a->seq_max == b->seq_max && a->ts_max == b->ts_max &&
	       a->ts_shift == b->ts_shift && a->node == b->node &&
	       a->floor_ms == b->floor_ms && a->floor_tick == b->floor_tick &&
	       a->offset_ms == b->offset_ms && a->last_tick == b->last_tick &&
	       a->next_seq == b->next_seq && a->issued == b->issued &&
	       a->strict == b->strict && a->worker_set == b->worker_set &&
	       a->fenced == b->fenced && a->fences == b->fences &&
	       a->deadline_ms == b->deadline_ms &&
	       a->deadline_ns == b->deadline_ns && a->expired == b->expired &&
	       a->lease_expiries == b->lease_expiries &&
	       a->ceiling_ms == b->ceiling_ms &&
	       a->ceiling_end == b->ceiling_end &&
	       a->ceiling_reached == b->ceiling_reached &&
	       a->ceiling_hits == b->ceiling_hits &&
	       a->vm_forks == b->vm_forks && a->vm_forked == b->vm_forked &&
	       a->refusing == b->refusing &&
	       !memcmp(&a->stats, &b->stats, sizeof(a->stats));
}

/*
 * The lease's ceiling, written again from uapi/linux/snowflake.h: is a
 * timestamp (a tick's start) at @tick above @ceiling_ms?
 */
static inline bool fz_above_ceiling(const struct snowflake_config *cfg,
				    u64 tick, u64 ceiling_ms)
{
	if (ceiling_ms == SNOWFLAKE_NO_CEILING)
		return false;
	return (unsigned __int128)cfg->epoch_ms +
	       (unsigned __int128)tick * cfg->time_unit_ms > ceiling_ms;
}

/*
 * The lease's window, written again from uapi/linux/snowflake.h: does a
 * tick start, epoch_ms + k * time_unit_ms, lie within [@floor_ms,
 * @ceiling_ms]?  A window without one is refused (it could never serve).
 */
static inline bool fz_window_has_tick(const struct snowflake_config *cfg,
				      u64 floor_ms, u64 ceiling_ms)
{
	unsigned __int128 unit = cfg->time_unit_ms, start = cfg->epoch_ms;

	if (floor_ms > cfg->epoch_ms)
		start += (floor_ms - cfg->epoch_ms + unit - 1) / unit * unit;
	return start <= ceiling_ms;
}

/* Every field of @cfg from the input, in order; @__reserved only if @reserved. */
static inline void fz_raw_config(struct fin *in, struct snowflake_config *cfg,
				 bool reserved)
{
	cfg->epoch_ms = fin_u64(in);
	cfg->time_unit_ms = fin_u32(in);
	cfg->timestamp_bits = fin_u8(in);
	cfg->datacenter_bits = fin_u8(in);
	cfg->worker_bits = fin_u8(in);
	cfg->sequence_bits = fin_u8(in);
	cfg->datacenter_id = fin_u32(in);
	cfg->worker_id = fin_u32(in);
	cfg->flags = fin_u32(in);
	cfg->__reserved = reserved ? fin_u32(in) : 0;
}

/*
 * A configuration from the input: most of the time a valid one (widths
 * that sum to 63 or less, ids that fit), sometimes raw bytes.
 */
static inline void fz_config(struct fin *in, struct snowflake_config *cfg,
			     u64 now_ms)
{
	u8 mode = fin_u8(in);
	unsigned int left;

	memset(cfg, 0, sizeof(*cfg));
	if ((mode & 7) == 0) {
		fz_raw_config(in, cfg, mode & 8);
		return;
	}
	switch ((mode >> 3) & 3) {
	case 0:
		cfg->epoch_ms = SNOWFLAKE_TWITTER_EPOCH_MS;
		break;
	case 1:
		cfg->epoch_ms = now_ms - fin_range(in, now_ms);
		break;
	case 2:
		cfg->epoch_ms = now_ms + fin_range(in, 1000) - 500;
		break;
	default:
		cfg->epoch_ms = fin_u64(in);
		break;
	}
	cfg->time_unit_ms = (mode & 0x20) ? 1 + fin_range(in, 3599999) :
			    1 + fin_range(in, 9);
	cfg->timestamp_bits = 1 + fin_range(in, 62);
	left = 63 - cfg->timestamp_bits;
	cfg->sequence_bits = fin_range(in, left < 31 ? left : 31);
	left -= cfg->sequence_bits;
	cfg->worker_bits = fin_range(in, left < 31 ? left : 31);
	left -= cfg->worker_bits;
	cfg->datacenter_bits = fin_range(in, left < 31 ? left : 31);
	cfg->datacenter_id = fin_range(in, fz_mask(cfg->datacenter_bits));
	cfg->worker_id = fin_range(in, fz_mask(cfg->worker_bits));
	cfg->flags = (mode & 0x40) ? SNOWFLAKE_CONFIG_RANDOM_SEQUENCE : 0;
	if (mode & 0x80) {
		/* One field off by a little: the edges of the rules. */
		switch (fin_u8(in) % 6) {
		case 0: cfg->timestamp_bits += 1 + fin_range(in, 3); break;
		case 1: cfg->sequence_bits += 1 + fin_range(in, 3); break;
		case 2: cfg->datacenter_id += 1; break;
		case 3: cfg->worker_id += 1; break;
		case 4: cfg->flags |= 1U << fin_range(in, 31); break;
		default: cfg->time_unit_ms = fin_bool(in) ? 0 : 3600001; break;
		}
	}
}

#endif /* FUZZ_INPUT_H */
