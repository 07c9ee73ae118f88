// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsnowflake: the ID layout, offline.  The checks are the kernel's
 * (sf_core_check_config() in driver/snowflake_core.c) minus the ones that
 * need the generator's clock (epoch in the future, timestamp overflow).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

static uint64_t mask(unsigned int bits)
{
	return bits ? ~0ULL >> (64 - bits) : 0;
}

SF_EXPORT void snowflake_default_layout(struct snowflake_config *layout)
{
	if (!layout)
		return;
	memset(layout, 0, sizeof(*layout));
	layout->epoch_ms = SNOWFLAKE_TWITTER_EPOCH_MS;
	layout->time_unit_ms = SNOWFLAKE_DEFAULT_TIME_UNIT_MS;
	layout->timestamp_bits = SNOWFLAKE_DEFAULT_TIMESTAMP_BITS;
	layout->datacenter_bits = SNOWFLAKE_DEFAULT_DATACENTER_BITS;
	layout->worker_bits = SNOWFLAKE_DEFAULT_WORKER_BITS;
	layout->sequence_bits = SNOWFLAKE_DEFAULT_SEQUENCE_BITS;
}

SF_EXPORT int snowflake_check_layout(const struct snowflake_config *l)
{
	unsigned int sum;

	if (!l)
		return -EINVAL;
	if (l->__reserved || (l->flags & ~SNOWFLAKE_CONFIG_FLAGS_ALL))
		return -EINVAL;
	if (l->time_unit_ms < 1 || l->time_unit_ms > SNOWFLAKE_MAX_TIME_UNIT_MS)
		return -EINVAL;
	if (l->timestamp_bits < 1)
		return -EINVAL;
	if (l->datacenter_bits > SNOWFLAKE_MAX_NODE_BITS ||
	    l->worker_bits > SNOWFLAKE_MAX_NODE_BITS ||
	    l->sequence_bits > SNOWFLAKE_MAX_SEQUENCE_BITS)
		return -EINVAL;
	sum = (unsigned int)l->timestamp_bits + l->datacenter_bits +
	      l->worker_bits + l->sequence_bits;
	if (sum > SNOWFLAKE_ID_BITS)
		return -EINVAL;
	if (l->datacenter_id > mask(l->datacenter_bits) ||
	    l->worker_id > mask(l->worker_bits))
		return -EINVAL;
	return 0;
}

SF_EXPORT int snowflake_decode(const struct snowflake_config *l, uint64_t id,
			       struct snowflake_parts *parts)
{
	unsigned int wshift, dshift, tshift, total;
	uint64_t ts, unit_ms;

	if (!parts || snowflake_check_layout(l))
		return -EINVAL;
	wshift = l->sequence_bits;
	dshift = wshift + l->worker_bits;
	tshift = dshift + l->datacenter_bits;
	total = tshift + l->timestamp_bits;
	if (id & ~mask(total))
		return -EINVAL;
	ts = (id >> tshift) & mask(l->timestamp_bits);
	/* epoch_ms + ts * time_unit_ms must fit 64 bits. */
	unit_ms = l->time_unit_ms;
	if (ts > (UINT64_MAX - l->epoch_ms) / unit_ms)
		return -EOVERFLOW;
	memset(parts, 0, sizeof(*parts));
	parts->timestamp = ts;
	parts->unix_ms = l->epoch_ms + ts * unit_ms;
	parts->datacenter = (uint32_t)((id >> dshift) & mask(l->datacenter_bits));
	parts->worker = (uint32_t)((id >> wshift) & mask(l->worker_bits));
	parts->sequence = (uint32_t)(id & mask(l->sequence_bits));
	return 0;
}

SF_EXPORT int snowflake_compose(const struct snowflake_config *l,
				const struct snowflake_parts *p, uint64_t *id)
{
	unsigned int wshift, dshift, tshift;

	if (!p || !id || snowflake_check_layout(l))
		return -EINVAL;
	if (p->timestamp > mask(l->timestamp_bits) ||
	    p->datacenter > mask(l->datacenter_bits) ||
	    p->worker > mask(l->worker_bits) ||
	    p->sequence > mask(l->sequence_bits))
		return -ERANGE;
	wshift = l->sequence_bits;
	dshift = wshift + l->worker_bits;
	tshift = dshift + l->datacenter_bits;
	*id = (p->timestamp << tshift) | ((uint64_t)p->datacenter << dshift) |
	      ((uint64_t)p->worker << wshift) | p->sequence;
	return 0;
}
