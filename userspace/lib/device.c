// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsnowflake: opening the device, reading IDs, the ioctls.
 *
 * A handle holds only its file descriptor; nothing here keeps state between
 * calls, so one handle may be used by several threads at once (the kernel
 * serialises the reads themselves).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

SF_EXPORT int snowflake_open(struct snowflake **sf, const char *path, int flags)
{
	struct snowflake *h;
	int oflags = O_RDONLY | O_CLOEXEC;
	int fd, err;

	if (!sf)
		return -EINVAL;
	*sf = NULL;
	if (flags & ~SNOWFLAKE_NONBLOCK)
		return -EINVAL;
	if (flags & SNOWFLAKE_NONBLOCK)
		oflags |= O_NONBLOCK;
	if (!path) {
		path = getenv(SNOWFLAKE_PATH_ENV);
		if (!path || !*path)
			path = SNOWFLAKE_DEFAULT_PATH;
	}
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	do {
		fd = open(path, oflags);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		err = -errno;
		free(h);
		return err;
	}
	h->fd = fd;
	*sf = h;
	return 0;
}

SF_EXPORT void snowflake_close(struct snowflake *sf)
{
	if (!sf)
		return;
	close(sf->fd);
	free(sf);
}

SF_EXPORT int snowflake_fd(const struct snowflake *sf)
{
	return sf ? sf->fd : -EBADF;
}

/*
 * Wait until @fd is readable: used only when a non-blocking read stopped in
 * the middle of an ID, which the device never does (it returns whole IDs),
 * but a pipe or a socket standing in for it may.
 */
static int wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int r = poll(&p, 1, -1);

		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

SF_EXPORT long snowflake_next_n(struct snowflake *sf, uint64_t *ids, size_t n)
{
	const size_t want = n * sizeof(*ids);
	char *buf = (char *)ids;
	size_t got = 0;

	if (!sf || (!ids && n))
		return -EINVAL;
	if (n > LONG_MAX / sizeof(*ids))
		return -EINVAL;
	while (got < want) {
		/* One read returns at most 4096 IDs: never ask for more. */
		size_t ask = want - got;
		ssize_t r;

		if (ask > SNOWFLAKE_MAX_IDS_PER_READ * sizeof(*ids))
			ask = SNOWFLAKE_MAX_IDS_PER_READ * sizeof(*ids);
		r = read(sf->fd, buf + got, ask);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0)	/* end of file: a regular file, not the device */
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int err;

			if (got % sizeof(*ids) == 0) {
				if (got)
					break;
				return -EAGAIN;
			}
			/* Never return a torn ID: wait for its other bytes. */
			err = wait_readable(sf->fd);
			if (err)
				return err;
			continue;
		}
		if (got >= sizeof(*ids))
			break;
		return -errno;
	}
	if (got < sizeof(*ids) && n)
		return -ENODATA;
	return (long)(got / sizeof(*ids));
}

SF_EXPORT int snowflake_next(struct snowflake *sf, uint64_t *id)
{
	long r = snowflake_next_n(sf, id, 1);

	return r < 0 ? (int)r : 0;
}

static int sf_ioctl(struct snowflake *sf, unsigned long cmd, void *arg)
{
	int r;

	if (!sf || !arg)
		return -EINVAL;
	do {
		r = ioctl(sf->fd, cmd, arg);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

SF_EXPORT int snowflake_get_config(struct snowflake *sf, struct snowflake_config *cfg)
{
	return sf_ioctl(sf, SNOWFLAKE_IOC_GET_CONFIG, cfg);
}

SF_EXPORT int snowflake_set_config(struct snowflake *sf, const struct snowflake_config *cfg)
{
	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_CONFIG, (void *)cfg);
}

SF_EXPORT int snowflake_set_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
	};

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);
}

SF_EXPORT int snowflake_assign_ids(struct snowflake *sf, uint32_t datacenter_id, uint32_t worker_id)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER,
	};
	int err = sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);

	/*
	 * A module older than the flag refuses it with -EINVAL; there every
	 * SET_IDS assigns the worker id, so the same call without it means
	 * the same.  (Ids that do not fit are -EINVAL both times.)
	 */
	if (err == -EINVAL) {
		ids.flags = 0;
		err = sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);
	}
	return err;
}

SF_EXPORT int snowflake_get_stats(struct snowflake *sf, struct snowflake_stats *st)
{
	return sf_ioctl(sf, SNOWFLAKE_IOC_GET_STATS, st);
}

SF_EXPORT int snowflake_get_floor(struct snowflake *sf, uint64_t *floor_ms,
				  uint64_t *last_timestamp_ms)
{
	struct snowflake_floor f;
	int err;

	memset(&f, 0, sizeof(f));
	err = sf_ioctl(sf, SNOWFLAKE_IOC_GET_FLOOR, &f);
	if (err)
		return err;
	if (floor_ms)
		*floor_ms = f.floor_ms;
	if (last_timestamp_ms)
		*last_timestamp_ms = f.last_timestamp_ms;
	return 0;
}

SF_EXPORT int snowflake_set_floor(struct snowflake *sf, uint64_t floor_ms)
{
	struct snowflake_floor f = { .floor_ms = floor_ms };

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_FLOOR, &f);
}

SF_EXPORT int snowflake_set_fence(struct snowflake *sf, int on)
{
	struct snowflake_fence f = { .flags = on ? SNOWFLAKE_FENCE_ON : 0 };

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_FENCE, &f);
}

SF_EXPORT int snowflake_get_fence(struct snowflake *sf, int *on, uint64_t *fences)
{
	struct snowflake_fence f;
	int err;

	if (!on)
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	err = sf_ioctl(sf, SNOWFLAKE_IOC_GET_FENCE, &f);
	if (err)
		return err;
	*on = !!(f.flags & SNOWFLAKE_FENCE_ON);
	if (fences)
		*fences = f.fences;
	return 0;
}
