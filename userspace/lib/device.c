// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsnowflake: opening the device, reading IDs, the ioctls.
 *
 * A handle holds only its file descriptor; nothing here keeps state between
 * calls, so one handle may be used by several threads at once (the kernel
 * serialises the reads themselves).
 */
#define _GNU_SOURCE	/* secure_getenv */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

/* /dev/snowflake is a misc device: MISC_MAJOR of <linux/major.h>. */
#define SF_MISC_MAJOR	10

#ifdef SF_TESTING
/* The native unit tests let FIFOs and files stand in for the device. */
bool sf_testing_any_file;
#define SF_ANY_FILE	sf_testing_any_file
/* ... and point the identity check at a fake sysfs tree. */
const char *sf_testing_sysfs = "/sys";
#define SF_SYSFS	sf_testing_sysfs

/*
 * The CLI linked with this test build (san/snowflake, for
 * tests/userspace/run.sh) takes the two from the environment.  Never in the
 * installed library: SF_TESTING only.
 */
__attribute__((constructor)) static void sf_testing_env(void)
{
	const char *v = getenv("SF_TESTING_SYSFS");

	if (getenv("SF_TESTING_ANY_FILE"))
		sf_testing_any_file = true;
	if (v && *v)
		sf_testing_sysfs = v;
}
#else
#define SF_ANY_FILE	false
#define SF_SYSFS	"/sys"
#endif

/*
 * No sysfs to ask (/sys/dev/char missing: a chroot or a container without
 * /sys): /dev/snowflake is still known by SNOWFLAKE_IOC_GET_CONFIG, a
 * read-only ioctl of our own magic (0xB9) that copies a layout out and
 * changes nothing; any error of a foreign driver (ENOTTY, EINVAL, EFAULT,
 * ...) or a layout that is not valid means "not ours".  /dev/uuidv7 has no
 * ioctl: without sysfs it cannot be told from another device, so it is
 * refused (fail closed; mount sysfs, read-only is enough).
 */
static int identify_by_ioctl(int fd, const char *name)
{
	struct snowflake_config c;
	int r;

	if (strcmp(name, SNOWFLAKE_DEVICE_NAME) != 0)
		return -ENOTTY;
	memset(&c, 0, sizeof(c));
	do {
		r = ioctl(fd, SNOWFLAKE_IOC_GET_CONFIG, &c);
	} while (r < 0 && errno == EINTR);
	return r == 0 && snowflake_check_layout(&c) == 0 ? 0 : -ENOTTY;
}

/*
 * Is the misc device @st the one called @name ("snowflake" or "uuidv7")?
 * Its sysfs entry /sys/dev/char/MAJ:MIN, made by the kernel for the
 * device numbers themselves (whatever the node's path or name), links to
 * .../misc/NAME, the name the module registered: the only identity no
 * other driver can claim, read without touching the device.  0, or
 * -ENOTTY ("not a snowflake device") for any other device, an unknown
 * number, or a sysfs that cannot be read.
 */
static int identify(int fd, const struct stat *st, const char *name)
{
	char path[PATH_MAX], link[PATH_MAX], want[64];
	size_t nl, nw;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/dev/char/%u:%u", SF_SYSFS,
		 major(st->st_rdev), minor(st->st_rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(path, sizeof(path), "%s/dev/char", SF_SYSFS);
		if (errno == ENOENT && access(path, F_OK) && errno == ENOENT)
			return identify_by_ioctl(fd, name);
		return -ENOTTY;
	}
	link[n] = '\0';
	snprintf(want, sizeof(want), "/misc/%s", name);
	nl = (size_t)n;
	nw = strlen(want);
	return nl > nw && !strcmp(link + nl - nw, want) ? 0 : -ENOTTY;
}

/*
 * Anything but the misc character device called @name is refused with
 * -ENOTTY ("not a snowflake device"): a regular file would hand every
 * opener the same numbers, another misc device (/dev/hwrng, /dev/fuse)
 * random bytes or its own errors.  The open is non-blocking, so that a FIFO
 * is refused instead of waiting for a writer; the caller's blocking mode is
 * set afterwards.
 * @access: O_RDONLY or O_RDWR.
 */
static int open_mode(const char *path, int flags, int access, const char *name)
{
	int oflags = access | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	int fd, err;

	if (SF_ANY_FILE) {
		if (flags & SNOWFLAKE_NONBLOCK)
			oflags |= O_NONBLOCK;
		do {
			fd = open(path, oflags);
		} while (fd < 0 && errno == EINTR);
		return fd < 0 ? -errno : fd;
	}
	fd = open(path, oflags | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto err_close;
	}
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != SF_MISC_MAJOR) {
		err = -ENOTTY;
		goto err_close;
	}
	err = identify(fd, &st, name);
	if (err)
		goto err_close;
	if (!(flags & SNOWFLAKE_NONBLOCK) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		err = -errno;
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return err;
}

/*
 * SNOWFLAKE_CONFIGURE opens for writing, which the kernel takes as the right
 * to configure; when the mode (or a device cgroup) refuses it, read-only:
 * CAP_SYS_ADMIN then still configures, and without it the set ioctls say
 * -EPERM.
 */
static int open_device(const char *path, int flags, const char *name)
{
	int fd;

	if (flags & SNOWFLAKE_CONFIGURE) {
		fd = open_mode(path, flags, O_RDWR, name);
		if (fd != -EACCES && fd != -EPERM && fd != -EROFS)
			return fd;
	}
	return open_mode(path, flags, O_RDONLY, name);
}

/*
 * snowflake_open() and snowflake_uuid_open(): @path, else $@env, else
 * @def, which must be the misc device called @name.
 */
int sf_open(struct snowflake **sf, const char *path, int flags, const char *env,
	    const char *def, const char *name)
{
	struct snowflake *h;
	int fd;

	if (!sf)
		return -EINVAL;
	*sf = NULL;
	if (flags & ~(SNOWFLAKE_NONBLOCK | SNOWFLAKE_CONFIGURE))
		return -EINVAL;
	if (!path) {
		/* Not from the environment of a set-user-ID program's caller. */
		path = secure_getenv(env);
		if (!path || !*path)
			path = def;
	}
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	fd = open_device(path, flags, name);
	if (fd < 0) {
		free(h);
		return fd;
	}
	h->fd = fd;
	*sf = h;
	return 0;
}

SF_EXPORT int snowflake_open(struct snowflake **sf, const char *path, int flags)
{
	return sf_open(sf, path, flags, SNOWFLAKE_PATH_ENV, SNOWFLAKE_DEFAULT_PATH,
		       SNOWFLAKE_DEVICE_NAME);
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

/*
 * @n records of @size bytes into @buf: one read(2) asks for at most @max
 * records (what the device returns in one call); loops over short reads,
 * retries EINTR, never returns a torn record.  The rules of
 * snowflake_next_n() and snowflake_uuid_next_n().
 */
long sf_read_records(struct snowflake *sf, void *buf, size_t n, size_t size, size_t max)
{
	char *p = buf;
	size_t got = 0, want;

	if (!sf || (!buf && n))
		return -EINVAL;
	if (n > LONG_MAX / size)
		return -EINVAL;
	want = n * size;
	while (got < want) {
		size_t ask = want - got;
		ssize_t r;

		if (ask > max * size)
			ask = max * size;
		r = read(sf->fd, p + got, ask);
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

			if (got % size == 0) {
				if (got)
					break;
				return -EAGAIN;
			}
			/* Never return a torn record: wait for its other bytes. */
			err = wait_readable(sf->fd);
			if (err)
				return err;
			continue;
		}
		if (got >= size)
			break;
		return -errno;
	}
	if (got < size && n)
		return -ENODATA;
	return (long)(got / size);
}

SF_EXPORT long snowflake_next_n(struct snowflake *sf, uint64_t *ids, size_t n)
{
	return sf_read_records(sf, ids, n, sizeof(*ids), SNOWFLAKE_MAX_IDS_PER_READ);
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

SF_EXPORT int snowflake_assign_ids(struct snowflake *sf, uint32_t datacenter_id,
				   uint32_t worker_id)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER,
	};

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);
}

SF_EXPORT int snowflake_set_lease(struct snowflake *sf, uint32_t datacenter_id,
				  uint32_t worker_id, uint64_t deadline_ns,
				  uint32_t vm_forks)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_DEADLINE |
			 SNOWFLAKE_IDS_VM_FORKS,
		.deadline_ns = deadline_ns,
		.vm_forks = vm_forks,
	};

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);
}

SF_EXPORT int snowflake_rearm_ids(struct snowflake *sf, uint32_t datacenter_id,
				  uint32_t worker_id, uint32_t vm_forks)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_VM_FORKS,
		.vm_forks = vm_forks,
	};

	return sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);
}

/*
 * Does the module behind @sf know the lease's window?  Its sysfs directory
 * (/sys/dev/char/MAJOR:MINOR, the node's own numbers) has lease_ceiling_ms
 * since then.  Anything else than a missing file counts as yes: the caller
 * then reports the kernel's own error.
 */
static bool sf_knows_window(struct snowflake *sf)
{
	char path[64];
	struct stat st;

	if (!sf || fstat(sf->fd, &st) || !S_ISCHR(st.st_mode))
		return true;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/lease_ceiling_ms",
		 major(st.st_rdev), minor(st.st_rdev));
	return access(path, F_OK) == 0 || errno != ENOENT;
}

SF_EXPORT int snowflake_set_lease_window(struct snowflake *sf, uint32_t datacenter_id,
					 uint32_t worker_id, uint64_t deadline_ns,
					 uint32_t vm_forks, uint64_t floor_ms,
					 uint64_t ceiling_ms)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_DEADLINE |
			 SNOWFLAKE_IDS_VM_FORKS | SNOWFLAKE_IDS_WINDOW,
		.deadline_ns = deadline_ns,
		.vm_forks = vm_forks,
		.floor_ms = floor_ms,
		.ceiling_ms = ceiling_ms,
	};
	int err = sf_ioctl(sf, SNOWFLAKE_IOC_SET_IDS, &ids);

	/*
	 * A module from before the window: E2BIG for the fields it does not
	 * know (nonzero), EINVAL for the flag (when they are zero).
	 */
	if (err == -E2BIG || (err == -EINVAL && !sf_knows_window(sf)))
		return -EOPNOTSUPP;
	return err;
}

/*
 * The device's statistics/vm_forks, found through the node's own numbers
 * (/sys/dev/char/MAJOR:MINOR), so that it is the file of the device that
 * @sf has open, whatever its path.
 */
SF_EXPORT int snowflake_get_vm_forks(struct snowflake *sf, uint32_t *vm_forks)
{
	char path[64], buf[32], *end;
	unsigned long long v;
	struct stat st;
	ssize_t n;
	int fd, err;

	if (!sf || !vm_forks)
		return -EINVAL;
	if (fstat(sf->fd, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENOTTY;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/statistics/vm_forks",
		 major(st.st_rdev), minor(st.st_rdev));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n > 0 ? n : 0] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end != '\n' || v > UINT32_MAX)
		return -EPROTO;
	*vm_forks = (uint32_t)v;
	return 0;
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
