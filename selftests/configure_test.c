// SPDX-License-Identifier: GPL-2.0
/*
 * Who may configure /dev/snowflake (the SET ioctls): a caller with
 * CAP_SYS_ADMIN in the initial user namespace, through any descriptor, or
 * anyone through a descriptor opened for writing by an opener of the
 * initial user namespace (the node's mode and ACL decide who may open it
 * so: the group snowflake-admin, see packaging/udev/60-snowflake.rules).
 * A read-only descriptor never configures without the capability.
 *
 * Both meanings of "opened for writing" are tested with a uid that has no
 * capability at all: a descriptor opened by root and kept across setresuid
 * (a deliberate grant, as systemd or a supervisor hands one down), and the
 * uid's own open as a member of the node's group (0460 snowflake-admin, the
 * readers in an ACL entry, as the udev rule leaves it).  Root in a user
 * namespace is container_test.c's.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define USER_UID	1000
#define READERS_GID	4242	/* stands for the group snowflake */
#define ADMINS_GID	4243	/* stands for the group snowflake-admin */

/* What the children change, to be seen by the parent. */
struct state {
	uint32_t dc, worker, flags;
	uint64_t floor_ms, fences;
	uint64_t fenced;
};

static void get_state(struct __test_metadata *_metadata, struct state *s)
{
	struct snowflake_config c;
	struct snowflake_floor f;
	int fd = sf_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_config(fd, &c));
	ASSERT_EQ(0, sf_get_floor(fd, &f));
	close(fd);
	s->dc = c.datacenter_id;
	s->worker = c.worker_id;
	s->flags = c.flags;
	s->floor_ms = f.floor_ms;
	s->fences = sf_sysfs_u64("statistics/fences");
	s->fenced = sf_sysfs_u64("fenced");
}

static void expect_same(struct __test_metadata *_metadata, const struct state *a,
			const struct state *b)
{
	EXPECT_EQ(a->dc, b->dc);
	EXPECT_EQ(a->worker, b->worker);
	EXPECT_EQ(a->flags, b->flags);
	EXPECT_EQ(a->floor_ms, b->floor_ms);
	EXPECT_EQ(a->fences, b->fences);
	EXPECT_EQ(a->fenced, b->fenced);
}

/* In a child: become USER_UID with only @gid (0: none), no capability. */
static void become_user(gid_t gid)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	CHILD_CHECK(setgroups(gid ? 1 : 0, &gid) == 0, "setgroups: %m");
	CHILD_CHECK(setresgid(USER_UID, USER_UID, USER_UID) == 0, "setresgid: %m");
	CHILD_CHECK(setresuid(USER_UID, USER_UID, USER_UID) == 0, "setresuid: %m");
	CHILD_CHECK(syscall(SYS_capget, &hdr, data) == 0, "capget: %m");
	CHILD_CHECK(!data[0].effective && !data[1].effective && !data[0].permitted &&
		    !data[1].permitted, "capabilities left: %x %x", data[0].effective,
		    data[1].effective);
}

/* In a child: every SET ioctl on @fd fails with EPERM; reads work. */
static void child_cannot_configure(int fd)
{
	struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };
	struct snowflake_config c;
	uint64_t id;
	int ret;

	CHILD_CHECK(sf_read1(fd, &id) == 0, "read: %m");
	CHILD_CHECK(sf_get_config(fd, &c) == 0, "GET_CONFIG: %m");
	ret = sf_set_config(fd, &c);
	CHILD_CHECK(ret == -EPERM, "SET_CONFIG same: %d", ret);
	c.flags ^= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ret = sf_set_config(fd, &c);
	CHILD_CHECK(ret == -EPERM, "SET_CONFIG: %d", ret);
	ret = sf_set_ids(fd, 9, 9);
	CHILD_CHECK(ret == -EPERM, "SET_IDS: %d", ret);
	ret = sf_set_floor(fd, sf_real_ms() + 60 * MSEC_PER_SEC);
	CHILD_CHECK(ret == -EPERM, "SET_FLOOR: %d", ret);
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fe) ? -errno : 0;
	CHILD_CHECK(ret == -EPERM, "SET_FENCE: %d", ret);
}

/*
 * In a child: every SET ioctl on @fd works: ids 5/6, random sequence on, the
 * floor to @floor_ms, a fence put on and lifted.
 */
static void child_configures(int fd, uint64_t floor_ms)
{
	struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };
	struct snowflake_config c;
	uint64_t id;
	int ret;

	ret = sf_set_ids(fd, 5, 6);
	CHILD_CHECK(ret == 0, "SET_IDS: %s", strerror(-ret));
	CHILD_CHECK(sf_get_config(fd, &c) == 0, "GET_CONFIG: %m");
	c.flags |= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ret = sf_set_config(fd, &c);
	CHILD_CHECK(ret == 0, "SET_CONFIG: %s", strerror(-ret));
	ret = sf_set_floor(fd, floor_ms);
	CHILD_CHECK(ret == 0, "SET_FLOOR: %s", strerror(-ret));
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fe) ? -errno : 0;
	CHILD_CHECK(ret == 0, "SET_FENCE on: %s", strerror(-ret));
	CHILD_CHECK(sf_read1(fd, &id) == -ENOTCONN, "a fenced read");
	fe.flags = 0;
	ret = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fe) ? -errno : 0;
	CHILD_CHECK(ret == 0, "SET_FENCE off: %s", strerror(-ret));
	CHILD_CHECK(sf_read1(fd, &id) == 0, "read: %m");
}

static void expect_configured(struct __test_metadata *_metadata, const struct state *before,
			      uint64_t floor_ms)
{
	struct state after;

	get_state(_metadata, &after);
	EXPECT_EQ(5, after.dc);
	EXPECT_EQ(6, after.worker);
	EXPECT_TRUE(after.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE);
	EXPECT_EQ(floor_ms, after.floor_ms);
	EXPECT_EQ(before->fences + 1, after.fences);
	EXPECT_EQ(0, after.fenced);
}

FIXTURE(cfg) {
	struct state before;
};

FIXTURE_SETUP(cfg)
{
	ASSERT_EQ(0, sf_reload("datacenter_id=3 worker_id=4"));
	get_state(_metadata, &self->before);
	ASSERT_EQ(3, self->before.dc);
}

FIXTURE_TEARDOWN(cfg)
{
}

/*
 * Root opens the device read-only and for writing, then becomes a user with
 * no capability: the read-only descriptor configures nothing, the one
 * opened for writing configures everything (the right was root's at open).
 */
TEST_F(cfg, descriptor_opened_for_writing_by_root_configures_after_setresuid)
{
	uint64_t floor_ms = sf_real_ms() + 60 * MSEC_PER_SEC;
	struct state mid;
	int ro, rw;
	pid_t pid;

	ro = sf_open(O_RDONLY);
	ASSERT_LE(0, ro);
	rw = sf_open(O_RDWR);
	ASSERT_LE(0, rw);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		become_user(0);
		child_cannot_configure(ro);
		/* ...and a uid without the mode's permission cannot open it so */
		CHILD_CHECK(sf_open(O_RDWR) == -EACCES, "open O_RDWR as uid %d", USER_UID);
		_exit(0);
	}
	ASSERT_EQ(0, sf_wait_child(pid));
	get_state(_metadata, &mid);
	expect_same(_metadata, &self->before, &mid);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		become_user(0);
		child_configures(rw, floor_ms);
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid)) TH_LOG("the O_RDWR descriptor did not configure");
	expect_configured(_metadata, &self->before, floor_ms);
	close(ro);
	close(rw);
}

/*
 * The node as packaging/udev/60-snowflake.rules leaves it (0460, group
 * snowflake-admin, an ACL entry giving snowflake read): a reader may
 * not open it for writing and configures nothing through its read-only
 * descriptor; a member of snowflake-admin opens it for writing and
 * configures, with no capability.
 */
TEST_F(cfg, member_of_the_write_group_opens_for_writing_and_configures)
{
	uint64_t floor_ms = sf_real_ms() + 60 * MSEC_PER_SEC;
	struct state mid;
	pid_t pid;
	int ret;

	ret = sf_node_set_udev_acl(READERS_GID, ADMINS_GID);
	if (ret == -EOPNOTSUPP) {
		sf_node_reset();
		SKIP(return, "no POSIX ACLs on /dev here (devtmpfs without CONFIG_TMPFS_POSIX_ACL)");
	}
	ASSERT_EQ(0, ret);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		become_user(READERS_GID);
		fd = sf_open(O_RDWR);
		CHILD_CHECK(fd == -EACCES, "a reader opened it for writing: %d", fd);
		fd = sf_open(O_RDONLY);
		CHILD_CHECK(fd >= 0, "a reader cannot open it: %s", strerror(-fd));
		child_cannot_configure(fd);
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid));
	get_state(_metadata, &mid);
	expect_same(_metadata, &self->before, &mid);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		become_user(ADMINS_GID);
		fd = sf_open(O_RDWR);
		CHILD_CHECK(fd >= 0, "open O_RDWR in the write group: %s", strerror(-fd));
		child_configures(fd, floor_ms);
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid)) TH_LOG("the write group could not configure");
	sf_node_reset();
	expect_configured(_metadata, &self->before, floor_ms);
}

/* Compatibility: CAP_SYS_ADMIN configures through a read-only descriptor. */
TEST_F(cfg, cap_sys_admin_configures_through_a_read_only_descriptor)
{
	uint64_t floor_ms = sf_real_ms() + 60 * MSEC_PER_SEC;
	int fd = sf_open(O_RDONLY);
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		child_configures(fd, floor_ms);
		_exit(0);
	}
	EXPECT_EQ(0, sf_wait_child(pid));
	expect_configured(_metadata, &self->before, floor_ms);
	close(fd);
}

SF_TEST_MAIN()
