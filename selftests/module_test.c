// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifetime: an open file keeps the module loaded (delete_module()
 * with O_NONBLOCK fails with EWOULDBLOCK, the kernel's answer for a module
 * in use), also while a reader sleeps for the next tick; once the files
 * are closed it unloads and leaves no device behind; reloads start fresh.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

/* The state letter of /proc/<pid>/stat, or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

FIXTURE(mod) {
	int unused;
};

FIXTURE_SETUP(mod)
{
}

FIXTURE_TEARDOWN(mod)
{
}

static void expect_gone(struct __test_metadata *_metadata)
{
	EXPECT_FALSE(sf_path_exists(SF_DEV));
	EXPECT_FALSE(sf_path_exists(SF_SYSFS));
	EXPECT_FALSE(sf_path_exists(SF_MODSYSFS));
}

TEST_F(mod, unload_refused_while_open)
{
	uint64_t a, b;
	int fd, ret;

	ASSERT_EQ(0, sf_reload_defaults());
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &a));

	ret = sf_try_unload();
	EXPECT_EQ(-EWOULDBLOCK, ret) TH_LOG("delete_module: %s", strerror(-ret));
	/* still there and working */
	EXPECT_TRUE(sf_path_exists(SF_DEV));
	EXPECT_TRUE(sf_path_exists(SF_SYSFS));
	ASSERT_EQ(0, sf_read1(fd, &b));
	EXPECT_LT(a, b);
	EXPECT_EQ(2, sf_sysfs_u64("statistics/ids_issued"));
	close(fd);

	ASSERT_EQ(0, sf_try_unload()) TH_LOG("%s", strerror(errno));
	expect_gone(_metadata);
	EXPECT_EQ(-ENOENT, sf_try_unload());
	ASSERT_EQ(0, sf_load(""));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &a));
	close(fd);
}

/* A file passed to another process keeps the module too. */
TEST_F(mod, unload_refused_while_child_holds_file)
{
	int pipefd[2], fd;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload_defaults());
	ASSERT_EQ(0, pipe(pipefd));
	fd = open(SF_DEV, O_RDONLY);	/* inherited: no O_CLOEXEC needed */
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(pipefd[1]);
		/* hold the file until the parent closes the pipe */
		while (read(pipefd[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(pipefd[0]);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	close(pipefd[1]);
	EXPECT_EQ(0, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/*
 * A reader sleeping for the next tick (one ID a minute) keeps the module
 * loaded; meanwhile the rest of the device works (the sleeper holds no
 * lock); after SIGKILL the module unloads.
 */
TEST_F_TIMEOUT(mod, unload_refused_while_reader_sleeps, 60)
{
	struct snowflake_stats st;
	uint64_t id, buf[2];
	int pipefd[2], fd, i;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=60000"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = sf_open(O_RDONLY);

		close(pipefd[0]);
		CHILD_CHECK(cfd >= 0, "open");
		CHILD_CHECK(read(cfd, &id, 8) == 8, "first read");
		CHILD_CHECK(write(pipefd[1], "r", 1) == 1, "pipe");
		for (;;)	/* sleeps until the next minute, again and again */
			CHILD_CHECK(read(cfd, &id, 8) == 8, "read: %s", strerror(errno));
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	/* wait until the child sleeps */
	for (i = 0; i < 500 && proc_state(pid) != 'S'; i++)
		usleep(10000);
	EXPECT_EQ('S', proc_state(pid));

	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	EXPECT_TRUE(sf_path_exists(SF_DEV));

	/* The device keeps working around the sleeper. */
	fd = sf_open(O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_LE(1, st.ids_issued);
	EXPECT_NE(UINT64_MAX, sf_sysfs_u64("clock_ms"));
	errno = 0;
	if (read(fd, buf, 8) == -1)
		EXPECT_EQ(EAGAIN, errno);	/* else a new minute began */
	ASSERT_EQ(0, sf_set_ids(fd, 1, 1));
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());

	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/* A poller sleeping on an empty tick keeps it too. */
TEST_F_TIMEOUT(mod, unload_refused_while_poller_sleeps, 60)
{
	int pipefd[2], i;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=60000"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = sf_open(O_RDONLY | O_NONBLOCK);
		struct pollfd pfd = { .fd = cfd, .events = POLLIN };
		uint64_t id;

		close(pipefd[0]);
		CHILD_CHECK(cfd >= 0, "open");
		CHILD_CHECK(read(cfd, &id, 8) == 8, "first read");
		CHILD_CHECK(write(pipefd[1], "r", 1) == 1, "pipe");
		for (;;) {
			poll(&pfd, 1, -1);
			while (read(cfd, &id, 8) == 8)
				;
		}
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	for (i = 0; i < 500 && proc_state(pid) != 'S'; i++)
		usleep(10000);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/* Load/unload cycles: each load starts from scratch. */
TEST_F(mod, reload_cycles)
{
	int i;

	for (i = 0; i < 10; i++) {
		struct snowflake_stats st;
		uint64_t id;
		int fd;

		ASSERT_EQ(0, sf_reload(i % 2 ? "worker_id=9" : ""));
		fd = sf_open(O_RDONLY);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, sf_get_stats(fd, &st));
		EXPECT_EQ(0, st.ids_issued);
		EXPECT_EQ(0, st.last_timestamp_ms);
		EXPECT_EQ((uint64_t)(i % 2 ? 9 : 0), sf_sysfs_u64("worker_id"));
		ASSERT_EQ(0, sf_read1(fd, &id));
		close(fd);
	}
	ASSERT_EQ(0, sf_unload());
	expect_gone(_metadata);
	EXPECT_EQ(-ENOENT, sf_unload());
	ASSERT_EQ(0, sf_load(""));
	/* loading twice: EEXIST */
	EXPECT_EQ(-EEXIST, sf_load(""));
}

SF_TEST_MAIN()
