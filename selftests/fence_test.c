// SPDX-License-Identifier: GPL-2.0
/*
 * Fencing: SNOWFLAKE_IOC_SET_FENCE makes reads fail with ENOTCONN (blocking,
 * O_NONBLOCK, RWF_NOWAIT alike; poll shows nothing) until the fence is
 * lifted; lifting it wakes pollers and the IDs resume above all earlier
 * ones.  statistics/fences counts unfenced->fenced transitions; the fenced
 * sysfs file, SNOWFLAKE_STATE_FENCED and GET_FENCE show the state.  Only
 * CAP_SYS_ADMIN may fence; bad structures change nothing; strict mode and
 * the fence are independent.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NOBODY	65534

/* The SET_FENCE command for a structure of @size bytes. */
#define SET_FENCE_SIZED(size) \
	_IOC(_IOC_WRITE, SNOWFLAKE_IOC_MAGIC, _IOC_NR(SNOWFLAKE_IOC_SET_FENCE), (size))
#define GET_FENCE_SIZED(size) \
	_IOC(_IOC_READ, SNOWFLAKE_IOC_MAGIC, _IOC_NR(SNOWFLAKE_IOC_GET_FENCE), (size))

static int set_fence(int fd, uint32_t flags)
{
	struct snowflake_fence f = { .flags = flags };

	return ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &f) ? -errno : 0;
}

static int get_fence(int fd, struct snowflake_fence *f)
{
	memset(f, 0xcc, sizeof(*f));
	return ioctl(fd, SNOWFLAKE_IOC_GET_FENCE, f) ? -errno : 0;
}

FIXTURE(fe) {
	int fd;
};

FIXTURE_SETUP(fe)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(fe)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Every way of reading fails with ENOTCONN; nothing is issued. */
static void expect_fenced(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_stats st;
	struct snowflake_fence f;

	ASSERT_EQ(0, get_fence(fd, &f));
	EXPECT_EQ(SNOWFLAKE_FENCE_ON, f.flags);
	EXPECT_EQ(0, f.__reserved);
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_TRUE(st.state & SNOWFLAKE_STATE_FENCED);
	EXPECT_TRUE(st.state & SNOWFLAKE_STATE_REFUSING);
	sf_expect_reads_refused(_metadata, fd);
}

TEST_F(fe, fence_refuses_unfence_resumes_above)
{
	struct snowflake_fence f;
	uint64_t before[16], after[16];
	int i;

	ASSERT_EQ(0, get_fence(self->fd, &f));
	EXPECT_EQ(0, f.flags);
	EXPECT_EQ(0, f.fences);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/fences"));
	ASSERT_EQ(16, sf_read_ids(self->fd, before, 16));

	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
	expect_fenced(_metadata, self->fd);
	/* Fencing again: no change, not counted. */
	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
	expect_fenced(_metadata, self->fd);
	/* Another open file sees the same fence. */
	{
		int fd2 = sf_open(O_RDONLY | O_NONBLOCK);
		uint64_t id;

		ASSERT_LE(0, fd2);
		EXPECT_EQ(-ENOTCONN, sf_read1(fd2, &id));
		close(fd2);
	}

	ASSERT_EQ(0, set_fence(self->fd, 0));
	ASSERT_EQ(0, get_fence(self->fd, &f));
	EXPECT_EQ(0, f.flags);
	EXPECT_EQ(1, f.fences);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	EXPECT_TRUE(sf_poll_in(self->fd, 1000) & POLLIN);
	ASSERT_EQ(16, sf_read_ids(self->fd, after, 16));
	for (i = 0; i < 16; i++)
		EXPECT_GT(after[i], before[15]);
	/* Unfencing again changes nothing. */
	ASSERT_EQ(0, set_fence(self->fd, 0));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));

	/* Each fence counts. */
	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	ASSERT_EQ(0, set_fence(self->fd, 0));
	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	EXPECT_EQ(3, sf_sysfs_u64("statistics/fences"));
	ASSERT_EQ(0, get_fence(self->fd, &f));
	EXPECT_EQ(3, f.fences);
	EXPECT_EQ(SNOWFLAKE_FENCE_ON, f.flags);
	ASSERT_EQ(0, set_fence(self->fd, 0));
	ASSERT_EQ(0, sf_read1(self->fd, &before[0]));
	EXPECT_GT(before[0], after[15]);
}

/* New ids while fenced: still fenced; after the unfence, the new worker. */
TEST_F(fe, ids_change_while_fenced)
{
	struct snowflake_config c;
	uint64_t a, b;

	ASSERT_EQ(0, sf_set_ids(self->fd, 1, 9));
	ASSERT_EQ(0, sf_read1(self->fd, &a));
	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	ASSERT_EQ(0, sf_set_ids(self->fd, 1, 2));
	expect_fenced(_metadata, self->fd);
	ASSERT_EQ(0, set_fence(self->fd, 0));
	ASSERT_EQ(0, sf_read1(self->fd, &b));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_GT(b, a);
	EXPECT_EQ(2, sf_decode(&c, b).worker);
	EXPECT_EQ(9, sf_decode(&c, a).worker);
}

struct poller {
	int fd;
	int revents;
	uint64_t woke_ns;
};

static void *poll_thread(void *arg)
{
	struct poller *p = arg;

	p->revents = sf_poll_in(p->fd, 20000);
	p->woke_ns = sf_mono_ns();
	return NULL;
}

/* A poller waiting on a fenced device wakes when the fence is lifted. */
TEST_F(fe, unfence_wakes_pollers)
{
	struct poller p = { .fd = self->fd };
	uint64_t lifted, id;
	pthread_t th;

	ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
	ASSERT_EQ(0, pthread_create(&th, NULL, poll_thread, &p));
	sf_sleep_ms(300);
	/* Still asleep: the fence is up. */
	EXPECT_EQ(0, p.woke_ns);
	lifted = sf_mono_ns();
	ASSERT_EQ(0, set_fence(self->fd, 0));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_TRUE(p.revents & POLLIN) TH_LOG("revents %#x", p.revents);
	EXPECT_LE(lifted, p.woke_ns);
	EXPECT_EQ(0, sf_read1(self->fd, &id));
}

/* Structures: sizes, flags, reserved and output fields, directions. */
TEST_F(fe, bad_structures_change_nothing)
{
	struct {
		struct snowflake_fence f;
		uint64_t tail;
	} big;
	struct snowflake_fence f;
	uint32_t small[2] = { SNOWFLAKE_FENCE_ON, 0 };

	memset(&f, 0, sizeof(f));
	f.flags = 0x2;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FENCE, &f));
	f.flags = SNOWFLAKE_FENCE_ON | 0x80000000U;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FENCE, &f));
	f.flags = SNOWFLAKE_FENCE_ON;
	f.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FENCE, &f));
	f.__reserved = 0;
	f.fences = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_FENCE, &f));
	/* Smaller than version 0. */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SET_FENCE_SIZED(sizeof(small)), small));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, GET_FENCE_SIZED(8), small));
	/* Larger with a nonzero unknown tail. */
	memset(&big, 0, sizeof(big));
	big.f.flags = SNOWFLAKE_FENCE_ON;
	big.tail = 1;
	EXPECT_ERRNO(E2BIG, ioctl(self->fd, SET_FENCE_SIZED(sizeof(big)), &big));
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, SNOWFLAKE_IOC_SET_FENCE, NULL));
	/* Wrong direction for the number. */
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(_IOC_READ, SNOWFLAKE_IOC_MAGIC,
						   _IOC_NR(SNOWFLAKE_IOC_SET_FENCE),
						   sizeof(f)), &f));
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(_IOC_WRITE, SNOWFLAKE_IOC_MAGIC,
						   _IOC_NR(SNOWFLAKE_IOC_GET_FENCE),
						   sizeof(f)), &f));

	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/fences"));
	EXPECT_EQ(0, sf_read1(self->fd, &big.tail));

	/* Larger with a zero tail: accepted; GET zeroes the tail it does not know. */
	big.tail = 0;
	ASSERT_EQ(0, ioctl(self->fd, SET_FENCE_SIZED(sizeof(big)), &big));
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	memset(&big, 0xcc, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, GET_FENCE_SIZED(sizeof(big)), &big));
	EXPECT_EQ(SNOWFLAKE_FENCE_ON, big.f.flags);
	EXPECT_EQ(0, big.f.__reserved);
	EXPECT_EQ(1, big.f.fences);
	EXPECT_EQ(0, big.tail);
	ASSERT_EQ(0, set_fence(self->fd, 0));
}

/* Not root: EPERM for SET_FENCE, either way; GET_FENCE and sysfs work. */
TEST_F(fe, unprivileged_cannot_fence)
{
	pid_t pid;

	for (int on = 0; on < 2; on++) {
		if (on)
			ASSERT_EQ(0, set_fence(self->fd, SNOWFLAKE_FENCE_ON));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct snowflake_fence f;
			int fd, err;

			CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups");
			CHILD_CHECK(setgid(NOBODY) == 0, "setgid");
			CHILD_CHECK(setuid(NOBODY) == 0, "setuid");
			fd = sf_open(O_RDONLY);
			CHILD_CHECK(fd >= 0, "open");
			err = set_fence(fd, SNOWFLAKE_FENCE_ON);
			CHILD_CHECK(err == -EPERM, "fence: %d", err);
			err = set_fence(fd, 0);
			CHILD_CHECK(err == -EPERM, "unfence: %d", err);
			/* EPERM comes first, even for a bad structure. */
			f = (struct snowflake_fence){ .flags = 0x40 };
			err = ioctl(fd, SNOWFLAKE_IOC_SET_FENCE, &f) ? errno : 0;
			CHILD_CHECK(err == EPERM, "bad flags: %d", err);
			err = get_fence(fd, &f);
			CHILD_CHECK(err == 0, "GET_FENCE: %d", err);
			CHILD_CHECK(f.flags == (on ? SNOWFLAKE_FENCE_ON : 0u),
				    "flags %u", f.flags);
			CHILD_CHECK(sf_sysfs_u64("fenced") == (uint64_t)on, "fenced");
			CHILD_CHECK(sf_sysfs_write("fenced", "0") == -EACCES,
				    "fenced is not writable");
			close(fd);
			_exit(0);
		}
		EXPECT_EQ(0, sf_wait_child(pid));
		EXPECT_EQ((uint64_t)on, sf_sysfs_u64("fenced"));
		EXPECT_EQ((uint64_t)on, sf_sysfs_u64("statistics/fences"));
	}
	ASSERT_EQ(0, set_fence(self->fd, 0));
}

/* strict=1: the fence and the missing worker id each refuse on their own. */
TEST(strict_and_fence_are_independent)
{
	struct snowflake_stats st;
	uint64_t id;
	int fd;

	ASSERT_EQ(0, sf_reload("strict=1"));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_fence(fd, SNOWFLAKE_FENCE_ON));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING | SNOWFLAKE_STATE_FENCED,
		  st.state);
	/* The worker id is assigned: still fenced. */
	ASSERT_EQ(0, sf_assign_ids(fd, 0, 5));
	EXPECT_EQ(-ENOTCONN, sf_read1(fd, &id));
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING | SNOWFLAKE_STATE_FENCED |
		  SNOWFLAKE_STATE_WORKER_SET, st.state);
	ASSERT_EQ(0, set_fence(fd, 0));
	ASSERT_EQ(0, sf_read1(fd, &id));
	close(fd);

	/* Unfenced but no worker id yet: still refusing (strict). */
	ASSERT_EQ(0, sf_reload("strict=1"));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_fence(fd, SNOWFLAKE_FENCE_ON));
	ASSERT_EQ(0, set_fence(fd, 0));
	EXPECT_EQ(-ENOTCONN, sf_read1(fd, &id));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
	ASSERT_EQ(0, sf_assign_ids(fd, 0, 5));
	EXPECT_EQ(0, sf_read1(fd, &id));
	close(fd);
}

/* The fence does not survive a reload: the counter starts over too. */
TEST(reload_forgets_the_fence)
{
	int fd;

	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_fence(fd, SNOWFLAKE_FENCE_ON));
	close(fd);
	ASSERT_EQ(0, sf_reload_defaults());
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/fences"));
}

SF_TEST_MAIN()
