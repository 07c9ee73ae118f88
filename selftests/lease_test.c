// SPDX-License-Identifier: GPL-2.0
/*
 * The lease's deadline (SNOWFLAKE_IDS_DEADLINE): the device issues IDs only
 * until a CLOCK_BOOTTIME deadline set with the ids; from then on reads fail
 * with ENOTCONN with nothing done by userspace, the lease_expired and
 * statistics/lease_expiries files say why, poll shows nothing; a later
 * deadline (a renewal) serves again, with larger IDs.  Without the flag the
 * deadline stays; the structure's rules are checked (EINVAL, nothing
 * changes).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NO_DEADLINE	"18446744073709551615"

/* struct snowflake_ids as it was before SNOWFLAKE_IDS_SIZE_VER1. */
struct ids_ver0 {
	__u32 datacenter_id;
	__u32 worker_id;
	__u32 flags;
	__u32 __reserved;
};

static uint64_t boot_ns(void)
{
	return sf_clock_ns(CLOCK_BOOTTIME);
}

static int set_lease(int fd, uint32_t dc, uint32_t worker, uint32_t flags,
		     uint64_t deadline_ns)
{
	struct snowflake_ids ids = {
		.datacenter_id = dc,
		.worker_id = worker,
		.flags = flags,
		.deadline_ns = deadline_ns,
	};

	return ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids) ? -errno : 0;
}

FIXTURE(ls) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_VARIANT(ls) {
	const char *params;
};

FIXTURE_VARIANT_ADD(ls, plain) {
	.params = "",
};

FIXTURE_VARIANT_ADD(ls, strict) {
	.params = "strict=1",
};

FIXTURE_SETUP(ls)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload(variant->params));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(ls)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* No deadline at load: the files say so. */
TEST_F(ls, none_at_load)
{
	char buf[64];

	ASSERT_LT(0, sf_sysfs_read_str("lease_deadline_ns", buf, sizeof(buf)));
	EXPECT_STREQ(NO_DEADLINE "\n", buf);
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/lease_expiries"));
}

/*
 * The deadline passes with nothing done: reads refused (blocking or not),
 * poll empty, the files and the state say why; a renewal serves again.
 */
TEST_F(ls, expires_by_itself_and_renews)
{
	struct snowflake_stats st;
	uint64_t before, after, deadline, t0;
	struct pollfd pfd;

	deadline = boot_ns() + 1500 * NSEC_PER_MSEC;
	ASSERT_EQ(0, set_lease(self->fd, 1, 7, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, deadline));
	ASSERT_EQ(0, sf_read1(self->fd, &before)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(7, sf_decode(&self->cfg, before).worker);
	EXPECT_EQ(deadline, sf_sysfs_u64("lease_deadline_ns"));
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));

	/* Read until refused: it must not happen before the deadline. */
	t0 = sf_mono_ns();
	while (sf_read1(self->fd, &after) == 0) {
		ASSERT_LT(sf_mono_ns() - t0, 20 * NSEC_PER_SEC) TH_LOG("never expired");
		before = after;
	}
	EXPECT_EQ(ENOTCONN, errno);
	EXPECT_LE(deadline - NSEC_PER_MSEC, boot_ns()) TH_LOG("refused before the deadline");
	EXPECT_EQ(1, sf_sysfs_u64("lease_expired"));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_expiries"));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_EXPIRED | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_EXPIRED | SNOWFLAKE_STATE_REFUSING));
	sf_expect_reads_refused(_metadata, self->fd);
	/* Still one expiry, however many refused reads. */
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_expiries"));

	/* The renewal: a later deadline, the same ids. */
	deadline = boot_ns() + 60 * NSEC_PER_SEC;
	ASSERT_EQ(0, set_lease(self->fd, 1, 7, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, deadline));
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	ASSERT_EQ(0, sf_read1(self->fd, &after));
	EXPECT_LT(before, after);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_expiries"));
}

/* A deadline already past: refused at once. */
TEST_F(ls, deadline_in_the_past)
{
	uint64_t id;

	ASSERT_EQ(0, set_lease(self->fd, 0, 3, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, 1));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	EXPECT_EQ(1, sf_sysfs_u64("lease_expired"));
}

/*
 * Without SNOWFLAKE_IDS_DEADLINE the deadline stays: an administrator's
 * `snowflake config --datacenter` cannot lift a lease's end.
 * SNOWFLAKE_NO_DEADLINE removes it.
 */
TEST_F(ls, kept_without_the_flag_removed_by_none)
{
	uint64_t id;

	ASSERT_EQ(0, set_lease(self->fd, 0, 3, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, 1));
	ASSERT_EQ(0, set_lease(self->fd, 2, 3, SNOWFLAKE_IDS_ASSIGN_WORKER, 0));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "4"));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	ASSERT_EQ(0, set_lease(self->fd, 2, 3, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, SNOWFLAKE_NO_DEADLINE));
	EXPECT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));
}

/* Bad structures: EINVAL and nothing changes. */
TEST_F(ls, bad_structures_change_nothing)
{
	struct snowflake_ids ids = {
		.worker_id = 5,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_DEADLINE,
		.deadline_ns = 1,
	};
	char buf[64];

	/* A VER0 structure has no deadline: the flag alone is EINVAL. */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, _IOW(SNOWFLAKE_IOC_MAGIC, 0x02,
						  struct ids_ver0), &ids));
	EXPECT_EQ(-EINVAL, set_lease(self->fd, 0, 5, SNOWFLAKE_IDS_DEADLINE, 0));
	EXPECT_EQ(-EINVAL, set_lease(self->fd, 0, 5, SNOWFLAKE_IDS_ASSIGN_WORKER, 1));
	EXPECT_EQ(-EINVAL, set_lease(self->fd, 0, 32, SNOWFLAKE_IDS_ASSIGN_WORKER |
				     SNOWFLAKE_IDS_DEADLINE, 1));
	ASSERT_LT(0, sf_sysfs_read_str("lease_deadline_ns", buf, sizeof(buf)));
	EXPECT_STREQ(NO_DEADLINE "\n", buf);
	EXPECT_EQ(0, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(0, sf_sysfs_u64("lease_expired"));
}

/*
 * A blocked reader (tick used up) when the deadline passes: it wakes at the
 * next tick and fails with ENOTCONN; it does not get IDs.
 */
TEST(blocked_reader_refused_after_deadline)
{
	uint64_t id, deadline;
	int fd;

	struct snowflake_stats st;

	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=5000"));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	/* A fresh tick of 5 s (the floor moves the clock to its start). */
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	ASSERT_EQ(0, sf_set_floor(fd, st.clock_ms + 5000));
	ASSERT_EQ(0, sf_read1(fd, &id));
	deadline = boot_ns() + 200 * NSEC_PER_MSEC;
	ASSERT_EQ(0, set_lease(fd, 0, 1, SNOWFLAKE_IDS_ASSIGN_WORKER |
			       SNOWFLAKE_IDS_DEADLINE, deadline));
	/* The tick is used up: the read blocks past the deadline. */
	EXPECT_EQ(-ENOTCONN, sf_read1(fd, &id));
	EXPECT_LE(deadline, boot_ns());
	close(fd);
}

SF_TEST_MAIN()
