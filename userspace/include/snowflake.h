/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsnowflake: the userspace side of /dev/snowflake.
 *
 * Errors are negative errno values (-EINVAL, -EAGAIN, ...);
 * snowflake_strerror() names them.  A handle may be shared by threads: it
 * holds only a file descriptor, and the kernel serialises reads.  There is
 * no global state.
 */
#ifndef SNOWFLAKE_H
#define SNOWFLAKE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/snowflake.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device path when neither the caller nor $SNOWFLAKE_DEVICE names one. */
#define SNOWFLAKE_DEFAULT_PATH	"/dev/snowflake"
#define SNOWFLAKE_PATH_ENV	"SNOWFLAKE_DEVICE"

/* snowflake_open() flags */
#define SNOWFLAKE_NONBLOCK	0x1	/* reads fail with -EAGAIN instead of waiting */

struct snowflake;

/* The fields of one ID. */
struct snowflake_parts {
	uint64_t timestamp;	/* ticks since the layout's epoch */
	uint64_t unix_ms;	/* epoch_ms + timestamp * time_unit_ms */
	uint32_t datacenter;
	uint32_t worker;
	uint32_t sequence;
};

enum snowflake_format {
	SNOWFLAKE_FORMAT_DEC,	/* 1795219200000000000 */
	SNOWFLAKE_FORMAT_HEX,	/* 0x18e9e659d5f60000 */
	SNOWFLAKE_FORMAT_JSON,	/* "1795219200000000000": a string, as JS loses precision above 2^53 */
};

/* Longest formatted ID, with the terminating NUL. */
#define SNOWFLAKE_FORMAT_MAX	24

/*
 * Open the generator at @path (NULL: $SNOWFLAKE_DEVICE, else /dev/snowflake).
 * @flags: 0 or SNOWFLAKE_NONBLOCK.  Returns 0 and sets *@sf, or -errno.
 */
int snowflake_open(struct snowflake **sf, const char *path, int flags);
void snowflake_close(struct snowflake *sf);
/* The file descriptor, for poll(2). */
int snowflake_fd(const struct snowflake *sf);

/* One ID.  Returns 0, or -errno (-EAGAIN in non-blocking mode, -ENOTCONN, ...). */
int snowflake_next(struct snowflake *sf, uint64_t *id);
/*
 * @n IDs into @ids, in increasing order: loops over short reads and retries
 * EINTR.  Returns @n; in non-blocking mode, the number got before the first
 * EAGAIN when that is at least one; or -errno when none was got.  (Also the
 * number got when a later read fails or the file ends: a file that is not
 * the device; -ENODATA when it ends before one whole ID.)
 */
long snowflake_next_n(struct snowflake *sf, uint64_t *ids, size_t n);

/* The uapi ioctls. */
int snowflake_get_config(struct snowflake *sf, struct snowflake_config *cfg);
int snowflake_set_config(struct snowflake *sf, const struct snowflake_config *cfg);
int snowflake_set_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id);
int snowflake_get_stats(struct snowflake *sf, struct snowflake_stats *st);
int snowflake_get_floor(struct snowflake *sf, uint64_t *floor_ms, uint64_t *last_timestamp_ms);
int snowflake_set_floor(struct snowflake *sf, uint64_t floor_ms);

/*
 * Since LIBSNOWFLAKE_1.1: the fence (SNOWFLAKE_IOC_SET_FENCE/GET_FENCE).
 * @on nonzero fences the device (reads fail with -ENOTCONN), 0 lifts the
 * fence; needs CAP_SYS_ADMIN (-EPERM).  get_fence sets *@on to 0 or 1 and
 * *@fences (when not NULL) to the times the device was fenced since load.
 */
int snowflake_set_fence(struct snowflake *sf, int on);
int snowflake_get_fence(struct snowflake *sf, int *on, uint64_t *fences);

/*
 * Since LIBSNOWFLAKE_1.2: assign this host's ids (SNOWFLAKE_IOC_SET_IDS with
 * SNOWFLAKE_IDS_ASSIGN_WORKER), the call that ends strict mode's refusal;
 * snowflake_set_ids() only changes the ids.  On a module older than the
 * flag (-EINVAL for it) the call is made again without it, which there
 * means the same.  Needs CAP_SYS_ADMIN (-EPERM); -EINVAL when the ids do
 * not fit the layout.
 */
int snowflake_assign_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id);

/* The default layout: 41/5/5/12, 1 ms, Twitter epoch, ids 0. */
void snowflake_default_layout(struct snowflake_config *layout);
/*
 * Check a layout offline (widths, time unit, ids fit): 0 or -EINVAL.
 * The same rules as the kernel's, without the clock.
 */
int snowflake_check_layout(const struct snowflake_config *layout);

/*
 * Split @id by @layout.  -EINVAL for a bad layout, or an ID with a bit set
 * above the four widths (bit 63 always); -EOVERFLOW when unix_ms would not
 * fit 64 bits (never for an ID the device issued).
 */
int snowflake_decode(const struct snowflake_config *layout, uint64_t id,
		     struct snowflake_parts *parts);
/*
 * Build an ID from parts->timestamp, datacenter, worker and sequence
 * (unix_ms is ignored).  -ERANGE when a field does not fit its width,
 * -EINVAL for a bad layout.
 */
int snowflake_compose(const struct snowflake_config *layout,
		      const struct snowflake_parts *parts, uint64_t *id);

/*
 * Format @id into @buf of @len bytes (SNOWFLAKE_FORMAT_MAX is always enough).
 * Returns the length written without the NUL, or -ENOSPC / -EINVAL.
 */
int snowflake_format(uint64_t id, enum snowflake_format fmt, char *buf, size_t len);
/* Parse a decimal or 0x-hex ID, optionally in double quotes; -EINVAL / -ERANGE. */
int snowflake_parse(const char *s, uint64_t *id);

/* A message for a negative errno from this library (also for ENOTCONN etc.). */
const char *snowflake_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* SNOWFLAKE_H */
