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
/*
 * Since libsnowflake 1.3.0 (older ones: -EINVAL): open to configure.  The
 * kernel lets a descriptor opened for writing change the generator without
 * CAP_SYS_ADMIN (the udev rule gives writing to the group snowflake-admin),
 * so the device is opened O_RDWR; when its mode refuses that (-EACCES),
 * read-only, where CAP_SYS_ADMIN still configures.  Without either, the
 * set functions fail with -EPERM.  See snowflake(4).
 */
#define SNOWFLAKE_CONFIGURE	0x2

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
 * @flags: 0, or SNOWFLAKE_NONBLOCK and SNOWFLAKE_CONFIGURE ORed.  Returns 0
 * and sets *@sf, or -errno.
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

/*
 * The uapi ioctls.  The set functions need CAP_SYS_ADMIN or a handle opened
 * with SNOWFLAKE_CONFIGURE by a member of the device's write group (-EPERM).
 */
int snowflake_get_config(struct snowflake *sf, struct snowflake_config *cfg);
int snowflake_set_config(struct snowflake *sf, const struct snowflake_config *cfg);
int snowflake_set_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id);
int snowflake_get_stats(struct snowflake *sf, struct snowflake_stats *st);
int snowflake_get_floor(struct snowflake *sf, uint64_t *floor_ms, uint64_t *last_timestamp_ms);
int snowflake_set_floor(struct snowflake *sf, uint64_t floor_ms);

/*
 * Since LIBSNOWFLAKE_1.1: the fence (SNOWFLAKE_IOC_SET_FENCE/GET_FENCE).
 * @on nonzero fences the device (reads fail with -ENOTCONN), 0 lifts the
 * fence; needs what the set functions need (-EPERM).  get_fence sets *@on to 0 or 1 and
 * *@fences (when not NULL) to the times the device was fenced since load.
 */
int snowflake_set_fence(struct snowflake *sf, int on);
int snowflake_get_fence(struct snowflake *sf, int *on, uint64_t *fences);

/*
 * Since LIBSNOWFLAKE_1.2: assign the worker id (SNOWFLAKE_IOC_SET_IDS with
 * SNOWFLAKE_IDS_ASSIGN_WORKER): sets both ids and, on a strict device, ends
 * the refusal.  snowflake_set_ids() sets the ids without assigning: on a
 * strict device still waiting for its worker id, reads stay refused.
 */
int snowflake_assign_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id);
/*
 * Since LIBSNOWFLAKE_1.2: assign the ids as snowflake_assign_ids() and set
 * the lease's deadline (SNOWFLAKE_IDS_DEADLINE): from @deadline_ns
 * (CLOCK_BOOTTIME; SNOWFLAKE_NO_DEADLINE: none, 0 is -EINVAL) on, the device
 * refuses reads (-ENOTCONN) until a later call sets a later deadline.
 * @vm_forks: the VM forks (snowflake_get_vm_forks()) the lease was taken
 * under; -ESTALE when the device has seen another number (the VM was
 * cloned or restored since: the lease is the parent's), and nothing changes.
 * A matching call also ends the refusal that follows a VM fork.
 */
int snowflake_set_lease(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id,
			uint64_t deadline_ns, uint32_t vm_forks);
/*
 * Since LIBSNOWFLAKE_1.2: assign the ids for @vm_forks, without a deadline:
 * ends the refusal after a VM fork for static ids (-ESTALE as above).
 */
int snowflake_rearm_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id,
			uint32_t vm_forks);
/*
 * Since LIBSNOWFLAKE_1.2: the VM forks (clones, snapshot restores) the
 * device has seen since it was loaded, from its statistics/vm_forks file.
 */
int snowflake_get_vm_forks(struct snowflake *sf, uint32_t *vm_forks);

/*
 * Since LIBSNOWFLAKE_1.4: snowflake_set_lease() and the lease's window of
 * timestamps (SNOWFLAKE_IDS_WINDOW), set together or not at all: the floor
 * rises to @floor_ms (0: as it is) and no ID is stamped above @ceiling_ms
 * (Unix ms; SNOWFLAKE_NO_CEILING: none): at the ceiling reads fail with
 * -ENOTCONN until a call sets a higher one.  -EINVAL for a window in
 * which no tick starts (a floor above the ceiling, a ceiling below the
 * epoch, or with a time unit above 1 ms a window between two tick starts:
 * snowflake(4), LEASE WINDOW), -EOVERFLOW for a floor that does not fit; -EOPNOTSUPP when the module is too old to know the window (it
 * refused the call and changed nothing).
 */
int snowflake_set_lease_window(struct snowflake *sf, uint32_t datacenter_id,
			       uint32_t worker_id, uint64_t deadline_ns, uint32_t vm_forks,
			       uint64_t floor_ms, uint64_t ceiling_ms);

/*
 * Since LIBSNOWFLAKE_1.2: /dev/uuidv7, RFC 9562 UUIDv7s (16 bytes,
 * big-endian), strictly increasing across the host; see snowflake(4).
 *
 * snowflake_uuid_open() opens @path (NULL: $SNOWFLAKE_UUID_DEVICE, else
 * /dev/uuidv7) like snowflake_open() (SNOWFLAKE_NONBLOCK only: it has
 * nothing to configure); close the handle with
 * snowflake_close().  snowflake_uuid_next_n() reads @n UUIDs with the same
 * rules as snowflake_next_n() (short reads, EINTR, -EAGAIN, -ENODATA).
 */
#define SNOWFLAKE_UUID_DEFAULT_PATH	"/dev/" SNOWFLAKE_UUID_DEVICE_NAME
#define SNOWFLAKE_UUID_PATH_ENV		"SNOWFLAKE_UUID_DEVICE"
/* The canonical text form, 8-4-4-4-12 lowercase hex, with the NUL: 37. */
#define SNOWFLAKE_UUID_STR_MAX		37

int snowflake_uuid_open(struct snowflake **sf, const char *path, int flags);
int snowflake_uuid_next(struct snowflake *sf, uint8_t uuid[SNOWFLAKE_UUID_SIZE]);
long snowflake_uuid_next_n(struct snowflake *sf,
			   uint8_t (*uuids)[SNOWFLAKE_UUID_SIZE], size_t n);
/* Format @uuid into @buf (at least SNOWFLAKE_UUID_STR_MAX bytes): 36, or -ENOSPC / -EINVAL. */
int snowflake_uuid_format(const uint8_t uuid[SNOWFLAKE_UUID_SIZE], char *buf, size_t len);
/* Parse the canonical form (any case, optionally in double quotes): 0 or -EINVAL. */
int snowflake_uuid_parse(const char *s, uint8_t uuid[SNOWFLAKE_UUID_SIZE]);
/* The unix_ts_ms of a UUIDv7: 0, or -EINVAL when not version 7 / RFC variant. */
int snowflake_uuid_time(const uint8_t uuid[SNOWFLAKE_UUID_SIZE], uint64_t *unix_ms);

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
