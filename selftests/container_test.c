// SPDX-License-Identifier: GPL-2.0
/*
 * A container's view of /dev/snowflake, with the kernel's own namespaces
 * (what podman, containerd and Kubernetes build a container from; no
 * container runtime runs in the busybox guest): root in a new user
 * namespace, with new mount, PID, UTS, IPC and network namespaces and
 * /dev/snowflake bind-mounted into a private /dev, as `--device
 * /dev/snowflake` does.
 *
 * It reads IDs (the host's generator: unique with the host's readers,
 * carrying the host's ids) and the configuration and counters, but changes
 * nothing: a configuration ioctl needs CAP_SYS_ADMIN in the initial user
 * namespace or a descriptor opened for writing by an opener of the initial
 * user namespace, and a sysfs write CAP_SYS_ADMIN, none of which root in a
 * user namespace has (EPERM or EACCES), even when its uid 0 is the host's
 * and it may open the node for writing; the generator is unchanged
 * afterwards.  A descriptor opened for writing on the host and handed into
 * the namespace is the host's grant, and configures there.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mount.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NS_FLAGS	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | \
			 CLONE_NEWNET)

struct result {
	uint64_t ids[64];	/* read inside, in order */
	int n;
	int set_ids, set_floor, set_config, set_fence;	/* -errno */
	int sysfs_worker;	/* -errno of the write */
	uid_t uid;		/* getuid() inside */
};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

/* Root in a new user namespace: uid and gid 0 inside are ours outside. */
static void become_container_root(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	CHILD_CHECK(unshare(NS_FLAGS) == 0, "unshare: %m");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)uid);
	CHILD_CHECK(write_file("/proc/self/uid_map", map) == 0, "uid_map: %m");
	CHILD_CHECK(write_file("/proc/self/setgroups", "deny") == 0, "setgroups: %m");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)gid);
	CHILD_CHECK(write_file("/proc/self/gid_map", map) == 0, "gid_map: %m");
}

/* A private /dev holding only the device, as `--device /dev/snowflake`. */
static void private_dev(void)
{
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "private: %m");
	CHILD_CHECK(mkdir("/tmp/cdev", 0755) == 0 || errno == EEXIST, "mkdir: %m");
	CHILD_CHECK(mount("tmpfs", "/tmp/cdev", "tmpfs", 0, "mode=0755") == 0, "tmpfs: %m");
	CHILD_CHECK(close(open("/tmp/cdev/snowflake", O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) == 0,
		    "node: %m");
	CHILD_CHECK(mount(SF_DEV, "/tmp/cdev/snowflake", NULL, MS_BIND, NULL) == 0,
		    "bind: %m");
}

static void container(struct result *res)
{
	struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };
	struct snowflake_config c;
	int fd, i;

	become_container_root();
	private_dev();
	res->uid = getuid();

	fd = open("/tmp/cdev/snowflake", O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0, "open: %m");
	for (i = 0; i < (int)SF_ARRAY_SIZE(res->ids); i++)
		CHILD_CHECK(sf_read1(fd, &res->ids[i]) == 0, "read: %m");
	res->n = i;
	CHILD_CHECK(sf_get_config(fd, &c) == 0, "get_config: %m");

	res->set_ids = sf_set_ids(fd, 3, 7);
	res->set_floor = sf_set_floor(fd, sf_real_ms() + 3600 * 1000);
	c.flags ^= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	res->set_config = sf_set_config(fd, &c);
	res->set_fence = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fe) ? -errno : 0;
	res->sysfs_worker = write_file(SF_SYSFS "/worker_id", "9");
	close(fd);
	_exit(0);
}

/*
 * Does this kernel have the namespaces a container uses?  The debug kernel
 * (a tinyconfig) has none: unshare() fails with EINVAL there.  Any other
 * outcome is left to the test itself.
 */
static bool namespaces_missing(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(NS_FLAGS) && errno == EINVAL ? 3 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 3;
}

FIXTURE(ctr) {
	int unused;
};

FIXTURE_SETUP(ctr)
{
	ASSERT_EQ(0, sf_reload("datacenter_id=1 worker_id=2"));
}

FIXTURE_TEARDOWN(ctr)
{
}

TEST_F(ctr, root_in_a_user_namespace_reads_but_cannot_configure)
{
	struct snowflake_config before, after;
	struct result *res = sf_shared_alloc(sizeof(*res));
	uint64_t floor0, host_id, fences0;
	struct sf_id f;
	int fd, rc, i;
	pid_t pid;

	ASSERT_NE(NULL, res);
	if (namespaces_missing())
		SKIP(return, "this kernel has no user, mount, UTS, IPC or network namespaces (unshare: EINVAL)");
	ASSERT_EQ(0, sf_get_config_dev(&before));
	floor0 = sf_sysfs_u64("floor_ms");
	fences0 = sf_sysfs_u64("statistics/fences");
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &host_id));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		container(res);
	rc = sf_wait_child(pid);
	ASSERT_EQ(0, rc) TH_LOG("the container child failed (see its message above)");

	/* Root inside... */
	EXPECT_EQ(0, res->uid);
	/* ...reads the host's IDs: after the host's, increasing, its ids. */
	ASSERT_EQ((int)SF_ARRAY_SIZE(res->ids), res->n);
	for (i = 0; i < res->n; i++) {
		EXPECT_LT(i ? res->ids[i - 1] : host_id, res->ids[i]);
		f = sf_decode(&before, res->ids[i]);
		EXPECT_EQ(1, f.dc);
		EXPECT_EQ(2, f.worker);
	}
	/* ...and the host reads on after them. */
	ASSERT_EQ(0, sf_read1(fd, &host_id));
	EXPECT_LT(res->ids[res->n - 1], host_id);
	close(fd);

	/* It may change nothing. */
	EXPECT_EQ(-EPERM, res->set_ids);
	EXPECT_EQ(-EPERM, res->set_floor);
	EXPECT_EQ(-EPERM, res->set_config);
	EXPECT_EQ(-EPERM, res->set_fence);
	EXPECT_TRUE(res->sysfs_worker == -EPERM || res->sysfs_worker == -EACCES)
		TH_LOG("sysfs write: %d", res->sysfs_worker);
	ASSERT_EQ(0, sf_get_config_dev(&after));
	EXPECT_TRUE(sf_config_eq(&before, &after));
	EXPECT_EQ(floor0, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(fences0, sf_sysfs_u64("statistics/fences"));
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
}

/* What the second test's child saw: -errno of each call. */
struct wresult {
	int open_rw, read, set_ids, set_floor, set_config, set_fence;
	int handed_set_ids;	/* through the host's O_RDWR descriptor */
};

/*
 * Root in a user namespace with uid and gid 0 mapped to the host's root,
 * and the node in the host's /dev: the inode's owner is mapped, so its
 * capabilities in the namespace let it open the node for writing; but the
 * opener is not of the initial user namespace, so the configuration ioctls
 * fail (EPERM) and only reads work.  The host's own O_RDWR descriptor,
 * inherited across unshare(), still configures: the right is the opener's.
 */
TEST_F(ctr, root_in_a_user_namespace_opens_for_writing_but_cannot_configure)
{
	struct wresult *res = sf_shared_alloc(sizeof(*res));
	struct snowflake_config before, after;
	uint64_t floor0, fences0;
	int host_rw, rc;
	pid_t pid;

	ASSERT_NE(NULL, res);
	if (namespaces_missing())
		SKIP(return, "this kernel has no user, mount, UTS, IPC or network namespaces (unshare: EINVAL)");
	ASSERT_EQ(0, sf_get_config_dev(&before));
	floor0 = sf_sysfs_u64("floor_ms");
	fences0 = sf_sysfs_u64("statistics/fences");
	host_rw = sf_open(O_RDWR);
	ASSERT_LE(0, host_rw);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };
		struct snowflake_config c;
		uint64_t id;
		int fd;

		become_container_root();
		CHILD_CHECK(getuid() == 0, "uid %d inside", (int)getuid());
		fd = sf_open(O_RDWR);
		res->open_rw = fd < 0 ? fd : 0;
		CHILD_CHECK(fd >= 0, "open O_RDWR inside: %s", strerror(-fd));
		res->read = sf_read1(fd, &id);
		CHILD_CHECK(sf_get_config(fd, &c) == 0, "get_config: %m");
		res->set_ids = sf_set_ids(fd, 3, 7);
		res->set_floor = sf_set_floor(fd, sf_real_ms() + 3600 * 1000);
		c.flags ^= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
		res->set_config = sf_set_config(fd, &c);
		res->set_fence = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &fe) ? -errno : 0;
		close(fd);
		res->handed_set_ids = sf_set_ids(host_rw, 4, 8);
		_exit(0);
	}
	rc = sf_wait_child(pid);
	close(host_rw);
	ASSERT_EQ(0, rc) TH_LOG("the container child failed (see its message above)");

	EXPECT_EQ(0, res->open_rw);
	EXPECT_EQ(0, res->read);
	EXPECT_EQ(-EPERM, res->set_ids);
	EXPECT_EQ(-EPERM, res->set_floor);
	EXPECT_EQ(-EPERM, res->set_config);
	EXPECT_EQ(-EPERM, res->set_fence);
	EXPECT_EQ(0, res->handed_set_ids);
	ASSERT_EQ(0, sf_get_config_dev(&after));
	/* Only the host's descriptor changed something: the ids, to 4/8. */
	EXPECT_EQ(4, after.datacenter_id);
	EXPECT_EQ(8, after.worker_id);
	after.datacenter_id = before.datacenter_id;
	after.worker_id = before.worker_id;
	EXPECT_TRUE(sf_config_eq(&before, &after));
	EXPECT_EQ(floor0, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(fences0, sf_sysfs_u64("statistics/fences"));
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
}

SF_TEST_MAIN()
