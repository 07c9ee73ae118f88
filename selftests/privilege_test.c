// SPDX-License-Identifier: GPL-2.0
/*
 * Privileges: anyone may open the 0444 node, read IDs and use the GET
 * ioctls; the SET ioctls need CAP_SYS_ADMIN or a descriptor opened for
 * writing (configure_test.c): through a read-only one, EPERM; the writable
 * sysfs files are 0644 root and need CAP_SYS_ADMIN.  Checked as user
 * nobody and as root without CAP_SYS_ADMIN, in forked children; the parent
 * checks nothing changed.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/prctl.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NOBODY	65534

static const char * const rw_files[] = {
	"worker_id", "datacenter_id", "floor_ms", "random_sequence",
};

static const char * const ro_files[] = {
	"epoch_ms", "time_unit_ms", "timestamp_bits", "datacenter_bits",
	"worker_bits", "sequence_bits", "strict", "worker_set", "refusing",
	"last_timestamp_ms", "clock_ms", "clock_offset_ms",
	"statistics/ids_issued", "statistics/reads",
	"statistics/exhausted_waits", "statistics/eagain",
	"statistics/clock_catchups", "statistics/floor_jumps",
	"statistics/refused_reads", "fenced", "statistics/fences",
};

struct snapshot {
	struct snowflake_config cfg;
	struct snowflake_floor floor;
	uint64_t rw[SF_ARRAY_SIZE(rw_files)];
};

FIXTURE(priv) {
	int fd;
	struct snapshot before;
};

static void take_snapshot(struct __test_metadata *_metadata, int fd,
			  struct snapshot *s)
{
	size_t i;

	ASSERT_EQ(0, sf_get_config(fd, &s->cfg));
	ASSERT_EQ(0, sf_get_floor(fd, &s->floor));
	for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++)
		ASSERT_EQ(0, sf_sysfs_read_u64(rw_files[i], &s->rw[i]));
}

FIXTURE_SETUP(priv)
{
	self->fd = -1;
	/* Non-default values, so a write of anything shows. */
	ASSERT_EQ(0, sf_reload("datacenter_id=3 worker_id=4"));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(priv)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void expect_unchanged(struct __test_metadata *_metadata,
			     FIXTURE_DATA(priv) *self)
{
	struct snapshot after;
	size_t i;

	take_snapshot(_metadata, self->fd, &after);
	EXPECT_TRUE(sf_config_eq(&self->before.cfg, &after.cfg));
	EXPECT_EQ(self->before.floor.floor_ms, after.floor.floor_ms);
	for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++)
		EXPECT_EQ(self->before.rw[i], after.rw[i]) TH_LOG("%s", rw_files[i]);
}

/* In the child: reading and the GET ioctls work. */
static void child_can_read(void)
{
	struct snowflake_config c;
	struct snowflake_stats st;
	struct snowflake_floor f;
	uint64_t ids[4], v;
	size_t i;
	int fd;

	fd = sf_open(O_RDONLY);
	CHILD_CHECK(fd >= 0, "open O_RDONLY: %s", strerror(-fd));
	CHILD_CHECK(read(fd, ids, sizeof(ids)) > 0, "read: %s", strerror(errno));
	CHILD_CHECK(sf_get_config(fd, &c) == 0, "GET_CONFIG: %s", strerror(errno));
	CHILD_CHECK(c.worker_id == 4 && c.datacenter_id == 3, "config");
	CHILD_CHECK(sf_get_stats(fd, &st) == 0, "GET_STATS: %s", strerror(errno));
	CHILD_CHECK(st.ids_issued >= 1, "stats");
	CHILD_CHECK(sf_get_floor(fd, &f) == 0, "GET_FLOOR: %s", strerror(errno));
	CHILD_CHECK(f.last_timestamp_ms != 0, "floor");
	close(fd);
	for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++)
		CHILD_CHECK(sf_sysfs_read_u64(rw_files[i], &v) == 0, "%s", rw_files[i]);
	for (i = 0; i < SF_ARRAY_SIZE(ro_files); i++)
		CHILD_CHECK(sf_sysfs_read_u64(ro_files[i], &v) == 0, "%s", ro_files[i]);
}

/* In the child: every SET ioctl fails with EPERM. */
static void child_cannot_set(int fd)
{
	struct snowflake_config c;
	struct snowflake_ids ids = { .datacenter_id = 1, .worker_id = 1 };
	struct snowflake_floor f = { .floor_ms = sf_real_ms() + HOUR_MS };
	struct snowflake_fence fence = { .flags = SNOWFLAKE_FENCE_ON };
	int ret;

	CHILD_CHECK(sf_get_config(fd, &c) == 0, "GET_CONFIG");
	/* the same config: a no-op when allowed */
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_CONFIG, &c);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_CONFIG same: %d %s", ret,
		    strerror(errno));
	c.worker_id = 1;
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_CONFIG, &c);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_CONFIG: %d %s", ret,
		    strerror(errno));
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_IDS: %d %s", ret, strerror(errno));
	ids.datacenter_id = 3;
	ids.worker_id = 4;
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_IDS same: %d %s", ret,
		    strerror(errno));
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FLOOR, &f);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_FLOOR: %d %s", ret,
		    strerror(errno));
	f.floor_ms = 1;
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FLOOR, &f);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_FLOOR low: %d %s", ret,
		    strerror(errno));
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fence);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_FENCE: %d %s", ret,
		    strerror(errno));
	fence.flags = 0;
	errno = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fence);
	CHILD_CHECK(ret == -1 && errno == EPERM, "SET_FENCE off: %d %s", ret,
		    strerror(errno));
	CHILD_CHECK(sf_sysfs_u64("fenced") == 0, "fenced");
}

/* Write to a sysfs file: the errno of open or write, 0 on success. */
static int sysfs_write_errno(const char *name, const char *val)
{
	return -sf_sysfs_write(name, val);
}

TEST_F(priv, nobody)
{
	uint64_t id;
	pid_t pid;

	ASSERT_EQ(0, sf_read1(self->fd, &id));
	take_snapshot(_metadata, self->fd, &self->before);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char path[256];
		size_t i;
		int fd, err;

		CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups");
		CHILD_CHECK(setgid(NOBODY) == 0, "setgid");
		CHILD_CHECK(setuid(NOBODY) == 0, "setuid");
		CHILD_CHECK(getuid() == NOBODY && geteuid() == NOBODY, "uid");
		child_can_read();
		fd = sf_open(O_RDONLY);
		CHILD_CHECK(fd >= 0, "open");
		child_cannot_set(fd);
		close(fd);
		/* 0444: not for writing */
		fd = sf_open(O_RDWR);
		CHILD_CHECK(fd == -EACCES, "open O_RDWR: %d", fd);
		fd = sf_open(O_WRONLY);
		CHILD_CHECK(fd == -EACCES, "open O_WRONLY: %d", fd);
		/* 0644 root: no write permission */
		for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++) {
			snprintf(path, sizeof(path), SF_SYSFS "/%s", rw_files[i]);
			errno = 0;
			fd = open(path, O_WRONLY);
			err = errno;
			CHILD_CHECK(fd == -1 && err == EACCES, "open %s for writing: %s",
				    rw_files[i], strerror(err));
		}
		for (i = 0; i < SF_ARRAY_SIZE(ro_files); i++) {
			err = sysfs_write_errno(ro_files[i], "1");
			CHILD_CHECK(err == EACCES, "%s: %s", ro_files[i], strerror(err));
		}
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid));
	expect_unchanged(_metadata, self);
}

/* Drop CAP_SYS_ADMIN from every set, bounding included; stay uid 0. */
static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct data[2];
	const unsigned int bit = CAP_SYS_ADMIN % 32, word = CAP_SYS_ADMIN / 32;

	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))
		return -errno;
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[word].effective &= ~(1U << bit);
	data[word].permitted &= ~(1U << bit);
	data[word].inheritable &= ~(1U << bit);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	memset(data, 0xff, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (data[word].effective & (1U << bit))
		return -EPROTO;
	return 0;
}

TEST_F(priv, root_without_cap_sys_admin)
{
	uint64_t id;
	pid_t pid;

	ASSERT_EQ(0, sf_read1(self->fd, &id));
	take_snapshot(_metadata, self->fd, &self->before);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint64_t buf[1] = { 0 };
		size_t i;
		int fd, ret, err;

		ret = drop_cap_sys_admin();
		CHILD_CHECK(ret == 0, "dropping CAP_SYS_ADMIN: %s", strerror(-ret));
		CHILD_CHECK(getuid() == 0, "uid");
		child_can_read();
		/* read-only: SETs need the capability */
		fd = sf_open(O_RDONLY);
		CHILD_CHECK(fd >= 0, "open O_RDONLY: %s", strerror(-fd));
		child_cannot_set(fd);
		close(fd);
		/*
		 * root may still open it for writing (which would configure:
		 * configure_test.c); write(2) itself is no interface
		 */
		fd = sf_open(O_RDWR);
		CHILD_CHECK(fd >= 0, "open O_RDWR: %s", strerror(-fd));
		errno = 0;
		ret = write(fd, buf, 8);
		CHILD_CHECK(ret == -1 && errno == EINVAL, "write: %d %s", ret,
			    strerror(errno));
		close(fd);
		/* writable sysfs files: EPERM (from open or write) */
		for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++) {
			err = sysfs_write_errno(rw_files[i], "1\n");
			CHILD_CHECK(err == EPERM, "write 1 to %s: %s", rw_files[i],
				    err ? strerror(err) : "accepted");
		}
		err = sysfs_write_errno("worker_id", "4\n");
		CHILD_CHECK(err == EPERM, "write the same worker id: %s",
			    err ? strerror(err) : "accepted");
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid));
	expect_unchanged(_metadata, self);
}

/* Strict mode: an unprivileged process cannot unblock it. */
TEST(nobody_cannot_end_strict_mode)
{
	uint64_t buf;
	pid_t pid;
	int fd;

	ASSERT_EQ(0, sf_reload("strict=1"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct snowflake_ids ids = { .worker_id = 1 };
		uint64_t id;
		int ret;

		CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 &&
			    setuid(NOBODY) == 0, "setuid");
		fd = sf_open(O_RDONLY);
		CHILD_CHECK(fd >= 0, "open");
		errno = 0;
		ret = read(fd, &id, 8);
		CHILD_CHECK(ret == -1 && errno == ENOTCONN, "read: %d %s", ret,
			    strerror(errno));
		errno = 0;
		ret = ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids);
		CHILD_CHECK(ret == -1 && errno == EPERM, "SET_IDS: %d %s", ret,
			    strerror(errno));
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_ERRNO(ENOTCONN, read(fd, &buf, 8));
	close(fd);
}

SF_TEST_MAIN()
