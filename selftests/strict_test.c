// SPDX-License-Identifier: GPL-2.0
/*
 * Strict mode: with strict=1, reads fail with ENOTCONN until the worker id
 * is assigned (worker_id parameter, SET_IDS with SNOWFLAKE_IDS_ASSIGN_WORKER,
 * a write of the worker_id sysfs file); poll shows nothing meanwhile and
 * pollers wake when the configuration changes.  Rewriting the ids with the
 * values just read never ends the refusal: not SET_IDS without the flag,
 * not SET_CONFIG, not the other sysfs files (every path the CLI takes is in
 * cli_test.c).
 */
#define _GNU_SOURCE
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

FIXTURE(st) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_VARIANT(st) {
	const char *params;
};

FIXTURE_VARIANT_ADD(st, strict) {
	.params = "strict=1",
};

FIXTURE_SETUP(st)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(variant->params));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(st)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Reads are refused; the counters say so; nothing is issued. */
static void expect_refusing(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_stats st;

	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING |
			      SNOWFLAKE_STATE_WORKER_SET));
	EXPECT_EQ(1, sf_sysfs_u64("strict"));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	sf_expect_reads_refused(_metadata, fd);
}

/* Reads work and the IDs carry @worker. */
static void expect_serving(struct __test_metadata *_metadata, int fd,
			   uint32_t worker)
{
	struct snowflake_config c;
	struct snowflake_stats st;
	uint64_t id;
	int r;

	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_WORKER_SET,
		  st.state & (SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING |
			      SNOWFLAKE_STATE_WORKER_SET));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	EXPECT_EQ(1, sf_sysfs_u64("strict"));
	r = sf_poll_in(fd, 1000);
	EXPECT_TRUE(r & POLLIN) TH_LOG("poll: %#x", r);
	ASSERT_EQ(0, sf_read1(fd, &id)) TH_LOG("read: %s", strerror(errno));
	ASSERT_EQ(0, sf_get_config(fd, &c));
	EXPECT_EQ(worker, sf_decode(&c, id).worker);
}

TEST_F(st, refuses_until_sysfs_worker_id)
{
	expect_refusing(_metadata, self->fd);
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "3\n"));
	expect_serving(_metadata, self->fd, 3);
}

/* Writing the value the worker id already has (0) still counts. */
TEST_F(st, sysfs_worker_id_zero_counts)
{
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "0"));
	expect_serving(_metadata, self->fd, 0);
}

TEST_F(st, set_ids_assign_unblocks)
{
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_assign_ids(self->fd, 2, 0));
	expect_serving(_metadata, self->fd, 0);
}

/*
 * SET_IDS without SNOWFLAKE_IDS_ASSIGN_WORKER sets the ids but does not end
 * the refusal: with the values just read (what `snowflake config
 * --datacenter` sent before 1.2), and with a new worker id too.
 */
TEST_F(st, set_ids_without_assign_does_not_unblock)
{
	struct snowflake_config c;

	ASSERT_EQ(0, sf_set_ids(self->fd, self->cfg.datacenter_id, self->cfg.worker_id));
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_set_ids(self->fd, 3, self->cfg.worker_id));
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_set_ids(self->fd, 3, 6));
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(3, c.datacenter_id);
	EXPECT_EQ(6, c.worker_id);
	ASSERT_EQ(0, sf_assign_ids(self->fd, 3, 6));
	expect_serving(_metadata, self->fd, 6);
}

/*
 * SET_CONFIG never ends the refusal: the GET/SET round trip of `snowflake
 * config --random-sequence` carries the ids it read, and not even a new
 * worker id in it counts.
 */
TEST_F(st, set_config_does_not_unblock)
{
	struct snowflake_config c = self->cfg;

	ASSERT_EQ(0, sf_set_config(self->fd, &c));
	expect_refusing(_metadata, self->fd);
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_set_config(self->fd, &c));
	expect_refusing(_metadata, self->fd);
	c.worker_id = 5;
	ASSERT_EQ(0, sf_set_config(self->fd, &c));
	expect_refusing(_metadata, self->fd);
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "5"));
	expect_serving(_metadata, self->fd, 5);
}

/* Only the worker id counts: not the datacenter id... */
TEST_F(st, datacenter_id_does_not_unblock)
{
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "4\n"));
	expect_refusing(_metadata, self->fd);
}

/* ...nor other settings, nor failed attempts to set the worker id. */
TEST_F(st, other_changes_do_not_unblock)
{
	struct snowflake_ids bad = { .worker_id = 32 };
	struct snowflake_config c = self->cfg;

	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "1\n"));
	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "0\n"));
	ASSERT_EQ(0, sf_set_floor(self->fd, sf_real_ms() - 1000));
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", sf_real_ms() - 500));
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "0"));
	expect_refusing(_metadata, self->fd);
	EXPECT_EQ(-EINVAL, sf_sysfs_write("worker_id", "32"));
	EXPECT_EQ(-EINVAL, sf_sysfs_write("worker_id", "abc"));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &bad));
	bad.flags = SNOWFLAKE_IDS_ASSIGN_WORKER;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &bad));
	bad.worker_id = 1;
	bad.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | 0x2;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &bad));
	c.worker_id = 6;
	c.flags = 1U << 5;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
	expect_refusing(_metadata, self->fd);
}

/* A poller sleeping while reads are refused wakes when the worker id is set. */
TEST_F(st, poller_woken_by_worker_id)
{
	int pipefd[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
		int r;

		close(pipefd[0]);
		CHILD_CHECK(write(pipefd[1], "r", 1) == 1, "pipe");
		r = poll(&pfd, 1, 20000);
		CHILD_CHECK(r == 1, "poll returned %d (%s)", r, strerror(errno));
		CHILD_CHECK(pfd.revents & POLLIN, "revents %#x", pfd.revents);
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	/* Give the child time to go to sleep in poll (not required). */
	sf_sleep_ms(300);
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "7"));
	status = sf_wait_child(pid);
	EXPECT_EQ(0, status) TH_LOG("the poller was not woken");
	expect_serving(_metadata, self->fd, 7);
}

/* strict=1 with worker_id given at load: serving at once. */
TEST(strict_with_worker_id_parameter)
{
	struct snowflake_stats st;
	struct snowflake_config c;
	uint64_t id;
	int fd;

	ASSERT_EQ(0, sf_reload("strict=1 worker_id=3"));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, sf_sysfs_u64("strict"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_WORKER_SET, st.state);
	ASSERT_EQ(0, sf_read1(fd, &id));
	ASSERT_EQ(0, sf_get_config(fd, &c));
	EXPECT_EQ(3, sf_decode(&c, id).worker);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(0, st.refused_reads);
	close(fd);
}

/* Without strict: never refusing. */
TEST(not_strict_by_default)
{
	struct snowflake_stats st;
	uint64_t id;
	int fd;

	ASSERT_EQ(0, sf_reload_defaults());
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, sf_sysfs_u64("strict"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	ASSERT_EQ(0, sf_read1(fd, &id));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(0, st.state & (SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING));
	close(fd);
}

SF_TEST_MAIN()
