// SPDX-License-Identifier: GPL-2.0
/*
 * ioctls of /dev/snowflake: the GET commands, command and size validation
 * of the extensible structures, SET_CONFIG/SET_IDS validation (all or
 * nothing), what may change before and after the first ID, compat_ioctl.
 *
 * Every test starts from a freshly loaded module with default parameters,
 * so no ID has been issued yet.  After every failed call, GET_CONFIG and
 * GET_FLOOR must show what they showed before.
 */
#define _GNU_SOURCE
#include <termios.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define M	SNOWFLAKE_IOC_MAGIC
#define NEAR_MS	3000
#define FUTURE_TOL_MS	50

FIXTURE(ioc) {
	int fd;
	struct snowflake_config cfg;	/* as loaded */
	struct snowflake_floor floor;	/* as loaded */
	void *page;			/* a PROT_READ page */
	void *hole;			/* an unmapped address */
};

FIXTURE_SETUP(ioc)
{
	long pagesz = sysconf(_SC_PAGESIZE);

	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	ASSERT_EQ(0, sf_get_floor(self->fd, &self->floor));
	self->page = mmap(NULL, pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
	self->hole = mmap(NULL, pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->hole);
	ASSERT_EQ(0, munmap(self->hole, pagesz));
}

FIXTURE_TEARDOWN(ioc)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Re-read the config and floor: they must match the saved ones. */
#define EXPECT_UNCHANGED() do {						\
	struct snowflake_config __c;					\
	struct snowflake_floor __f;					\
									\
	ASSERT_EQ(0, sf_get_config(self->fd, &__c));			\
	EXPECT_TRUE(sf_config_eq(&self->cfg, &__c))			\
		TH_LOG("config changed by a failed call");		\
	ASSERT_EQ(0, sf_get_floor(self->fd, &__f));			\
	EXPECT_EQ(self->floor.floor_ms, __f.floor_ms);			\
	EXPECT_EQ(self->floor.last_timestamp_ms, __f.last_timestamp_ms); \
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));				\
	EXPECT_EQ(0, sf_sysfs_u64("statistics/fences"));		\
} while (0)

/* Save the current config and floor as the reference. */
static void snapshot(struct __test_metadata *_metadata, FIXTURE_DATA(ioc) *self)
{
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	ASSERT_EQ(0, sf_get_floor(self->fd, &self->floor));
}

TEST_F(ioc, get_config_defaults)
{
	struct snowflake_config def;

	sf_default_config(&def);
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS, self->cfg.epoch_ms);
	EXPECT_EQ(1, self->cfg.time_unit_ms);
	EXPECT_EQ(41, self->cfg.timestamp_bits);
	EXPECT_EQ(5, self->cfg.datacenter_bits);
	EXPECT_EQ(5, self->cfg.worker_bits);
	EXPECT_EQ(12, self->cfg.sequence_bits);
	EXPECT_EQ(0, self->cfg.datacenter_id);
	EXPECT_EQ(0, self->cfg.worker_id);
	EXPECT_EQ(0, self->cfg.flags);
	EXPECT_EQ(0, self->cfg.__reserved);
	EXPECT_TRUE(sf_config_eq(&def, &self->cfg));
}

TEST_F(ioc, get_stats_and_floor_fresh)
{
	struct snowflake_stats st;
	uint64_t before, after;

	before = sf_real_ms();
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	after = sf_real_ms();
	EXPECT_EQ(0, st.ids_issued);
	EXPECT_EQ(0, st.reads);
	EXPECT_EQ(0, st.exhausted_waits);
	EXPECT_EQ(0, st.eagain);
	EXPECT_EQ(0, st.clock_catchups);
	EXPECT_EQ(0, st.floor_jumps);
	EXPECT_EQ(0, st.refused_reads);
	EXPECT_EQ(0, st.clock_offset_ms);
	EXPECT_EQ(0, st.last_timestamp_ms);
	EXPECT_EQ(0, st.floor_ms);
	EXPECT_EQ(0, st.state);
	EXPECT_EQ(0, st.__reserved);
	EXPECT_LE(before - NEAR_MS, st.clock_ms);
	EXPECT_GE(after + FUTURE_TOL_MS, st.clock_ms);
	EXPECT_EQ(0, self->floor.floor_ms);
	EXPECT_EQ(0, self->floor.last_timestamp_ms);
}

TEST_F(ioc, stats_after_first_id)
{
	struct snowflake_stats st;
	struct snowflake_floor fl;
	uint64_t id;
	struct sf_id f;

	ASSERT_EQ(0, sf_read1(self->fd, &id));
	f = sf_decode(&self->cfg, id);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(1, st.ids_issued);
	EXPECT_EQ(1, st.reads);
	EXPECT_EQ(f.ms, st.last_timestamp_ms);
	EXPECT_EQ(SNOWFLAKE_STATE_LOCKED, st.state);
	EXPECT_LE(st.last_timestamp_ms, st.clock_ms);
	ASSERT_EQ(0, sf_get_floor(self->fd, &fl));
	EXPECT_EQ(f.ms, fl.last_timestamp_ms);
	EXPECT_EQ(0, fl.floor_ms);
}

/* Unknown commands and known numbers with the wrong direction: ENOTTY. */
TEST_F(ioc, unknown_commands_enotty)
{
	const unsigned long cmds[] = {
		_IO(M, 0x08),
		_IOR(M, 0x08, struct snowflake_config),
		_IOW(M, 0x08, struct snowflake_config),
		_IOWR(M, 0x40, struct snowflake_stats),
		_IOR(M, 0xff, struct snowflake_floor),
		/* other magic numbers, our numbers and sizes */
		_IOR('x', 0x00, struct snowflake_config),
		_IOW(0xB8, 0x01, struct snowflake_config),
		_IOR(0xBA, 0x03, struct snowflake_stats),
		TCGETS,
		FIONREAD,
		/* GET numbers written to, SET numbers read from */
		_IOW(M, 0x00, struct snowflake_config),
		_IOWR(M, 0x00, struct snowflake_config),
		_IO(M, 0x00),
		_IOR(M, 0x01, struct snowflake_config),
		_IOWR(M, 0x01, struct snowflake_config),
		_IO(M, 0x01),
		_IOR(M, 0x02, struct snowflake_ids),
		_IOW(M, 0x03, struct snowflake_stats),
		_IOWR(M, 0x03, struct snowflake_stats),
		_IOW(M, 0x04, struct snowflake_floor),
		_IOR(M, 0x05, struct snowflake_floor),
		_IO(M, 0x05),
		_IOR(M, 0x06, struct snowflake_fence),
		_IOWR(M, 0x06, struct snowflake_fence),
		_IO(M, 0x06),
		_IOW(M, 0x07, struct snowflake_fence),
		_IOWR(M, 0x07, struct snowflake_fence),
		_IO(M, 0x07),
	};
	unsigned char buf[256];
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(cmds); i++) {
		memset(buf, 0xcc, sizeof(buf));
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], buf))
			TH_LOG("cmd %#lx", cmds[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx: %s", cmds[i], strerror(errno));
		EXPECT_TRUE(sf_all_bytes(buf, sizeof(buf), 0xcc))
			TH_LOG("cmd %#lx wrote to its argument", cmds[i]);
	}
	EXPECT_UNCHANGED();
}

struct cmd_desc {
	const char *name;
	unsigned int dir;
	unsigned int nr;
	unsigned int ver0;	/* smallest size accepted */
	unsigned int known;	/* the size this kernel knows: bytes past it are a tail */
};

static const struct cmd_desc all_cmds[] = {
	{ "GET_CONFIG", _IOC_READ, 0x00, SNOWFLAKE_CONFIG_SIZE_VER0, SNOWFLAKE_CONFIG_SIZE_VER0 },
	{ "SET_CONFIG", _IOC_WRITE, 0x01, SNOWFLAKE_CONFIG_SIZE_VER0, SNOWFLAKE_CONFIG_SIZE_VER0 },
	{ "SET_IDS", _IOC_WRITE, 0x02, SNOWFLAKE_IDS_SIZE_VER0, SNOWFLAKE_IDS_SIZE_VER2 },
	{ "GET_STATS", _IOC_READ, 0x03, SNOWFLAKE_STATS_SIZE_VER0, SNOWFLAKE_STATS_SIZE_VER0 },
	{ "GET_FLOOR", _IOC_READ, 0x04, SNOWFLAKE_FLOOR_SIZE_VER0, SNOWFLAKE_FLOOR_SIZE_VER0 },
	{ "SET_FLOOR", _IOC_WRITE, 0x05, SNOWFLAKE_FLOOR_SIZE_VER0, SNOWFLAKE_FLOOR_SIZE_VER0 },
	{ "SET_FENCE", _IOC_WRITE, 0x06, SNOWFLAKE_FENCE_SIZE_VER0, SNOWFLAKE_FENCE_SIZE_VER0 },
	{ "GET_FENCE", _IOC_READ, 0x07, SNOWFLAKE_FENCE_SIZE_VER0, SNOWFLAKE_FENCE_SIZE_VER0 },
};

/*
 * A valid argument for each command (for SETs: one that would change
 * something), so that only the size is wrong.
 */
static void fill_valid(const struct snowflake_config *cfg, unsigned int nr,
		       void *buf)
{
	struct snowflake_config c = *cfg;
	struct snowflake_ids ids = { .datacenter_id = 3, .worker_id = 4 };
	struct snowflake_floor f = { .floor_ms = sf_real_ms() - 1000 };
	struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };

	switch (nr) {
	case 0x01:
		c.worker_id = 7;
		memcpy(buf, &c, sizeof(c));
		break;
	case 0x02:
		memcpy(buf, &ids, sizeof(ids));
		break;
	case 0x05:
		memcpy(buf, &f, sizeof(f));
		break;
	case 0x06:
		memcpy(buf, &fe, sizeof(fe));
		break;
	}
}

TEST_F(ioc, size_below_ver0_einval)
{
	unsigned char buf[256];
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(all_cmds); i++) {
		const struct cmd_desc *d = &all_cmds[i];
		unsigned int sizes[] = { 0, 1, 8, d->ver0 - 8, d->ver0 - 1 };
		size_t s;

		for (s = 0; s < SF_ARRAY_SIZE(sizes); s++) {
			unsigned long cmd = _IOC(d->dir, M, d->nr, sizes[s]);

			memset(buf, 0xcc, sizeof(buf));
			fill_valid(&self->cfg, d->nr, buf);
			errno = 0;
			EXPECT_EQ(-1, ioctl(self->fd, cmd, buf))
				TH_LOG("%s size %u", d->name, sizes[s]);
			EXPECT_EQ(EINVAL, errno)
				TH_LOG("%s size %u: %s", d->name, sizes[s],
				       strerror(errno));
			if (d->dir == _IOC_READ)
				EXPECT_TRUE(sf_all_bytes(buf, sizeof(buf), 0xcc))
					TH_LOG("%s size %u wrote", d->name, sizes[s]);
		}
	}
	EXPECT_UNCHANGED();
}

/* A larger GET structure: the known part as usual, the tail zeroed. */
TEST_F(ioc, get_larger_size_zeroes_tail)
{
	static const unsigned int extra[] = { 8, 64, 4096 - 96 };
	unsigned char *buf = malloc(8192);
	size_t i, e;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < SF_ARRAY_SIZE(all_cmds); i++) {
		const struct cmd_desc *d = &all_cmds[i];

		if (d->dir != _IOC_READ)
			continue;
		for (e = 0; e < SF_ARRAY_SIZE(extra); e++) {
			unsigned int size = d->ver0 + extra[e];
			unsigned long cmd = _IOC(_IOC_READ, M, d->nr, size);

			memset(buf, 0xcc, 8192);
			ASSERT_EQ(0, ioctl(self->fd, cmd, buf))
				TH_LOG("%s size %u: %s", d->name, size, strerror(errno));
			EXPECT_TRUE(sf_all_bytes(buf + d->ver0, extra[e], 0))
				TH_LOG("%s size %u: tail not zeroed", d->name, size);
			EXPECT_TRUE(sf_all_bytes(buf + size, 8192 - size, 0xcc))
				TH_LOG("%s size %u: wrote past the size", d->name, size);
			if (d->nr == 0x00)
				EXPECT_TRUE(sf_config_eq(&self->cfg,
							 (struct snowflake_config *)buf));
			if (d->nr == 0x04)
				EXPECT_EQ(0, memcmp(&self->floor, buf, sizeof(self->floor)));
			if (d->nr == 0x07) {
				struct snowflake_fence *fe = (void *)buf;

				EXPECT_EQ(0, fe->flags);
				EXPECT_EQ(0, fe->__reserved);
				EXPECT_EQ(0, fe->fences);
			}
			if (d->nr == 0x03) {
				struct snowflake_stats *st = (void *)buf;

				EXPECT_EQ(0, st->ids_issued);
				EXPECT_EQ(0, st->__reserved);
				EXPECT_LT(SNOWFLAKE_TWITTER_EPOCH_MS, st->clock_ms);
			}
		}
	}
	free(buf);
}

/* A larger SET structure: accepted with a zero tail, E2BIG otherwise. */
TEST_F(ioc, set_larger_size)
{
	unsigned char buf[4096];
	struct snowflake_config c;
	struct snowflake_floor fl;
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(all_cmds); i++) {
		const struct cmd_desc *d = &all_cmds[i];
		static const unsigned int sizes[] = { 8, 64, 4096 };
		size_t s;

		if (d->dir != _IOC_WRITE)
			continue;
		for (s = 0; s < SF_ARRAY_SIZE(sizes); s++) {
			unsigned int size = sizes[s] == 4096 ? 4096 : d->known + sizes[s];
			unsigned long cmd = _IOC(_IOC_WRITE, M, d->nr, size);
			size_t pos[] = { d->known, size - 1 };
			size_t p;

			for (p = 0; p < SF_ARRAY_SIZE(pos); p++) {
				memset(buf, 0, sizeof(buf));
				fill_valid(&self->cfg, d->nr, buf);
				buf[pos[p]] = 1;
				errno = 0;
				EXPECT_EQ(-1, ioctl(self->fd, cmd, buf))
					TH_LOG("%s size %u byte %zu", d->name, size, pos[p]);
				EXPECT_EQ(E2BIG, errno)
					TH_LOG("%s size %u byte %zu: %s", d->name, size,
					       pos[p], strerror(errno));
				EXPECT_UNCHANGED();
			}
		}
	}

	/* Zero tails: each SET takes effect. */
	memset(buf, 0, sizeof(buf));
	fill_valid(&self->cfg, 0x01, buf);
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x01, 40), buf))
		TH_LOG("SET_CONFIG size 40: %s", strerror(errno));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(7, c.worker_id);

	memset(buf, 0, sizeof(buf));
	fill_valid(&self->cfg, 0x02, buf);
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x02, 4096), buf))
		TH_LOG("SET_IDS size 4096: %s", strerror(errno));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(3, c.datacenter_id);
	EXPECT_EQ(4, c.worker_id);

	memset(buf, 0, sizeof(buf));
	fill_valid(&self->cfg, 0x05, buf);
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x05, 24), buf))
		TH_LOG("SET_FLOOR size 24: %s", strerror(errno));
	ASSERT_EQ(0, sf_get_floor(self->fd, &fl));
	EXPECT_EQ(((struct snowflake_floor *)buf)->floor_ms, fl.floor_ms);

	memset(buf, 0, sizeof(buf));
	fill_valid(&self->cfg, 0x06, buf);
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x06, 64), buf))
		TH_LOG("SET_FENCE size 64: %s", strerror(errno));
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x06, 4096), buf))
		TH_LOG("SET_FENCE off size 4096: %s", strerror(errno));
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
}

TEST_F(ioc, reserved_and_flags_einval)
{
	struct snowflake_config c;
	struct snowflake_ids ids;
	const uint32_t bad_flags[] = { 1U << 1, 1U << 7, 1U << 31, ~0U };
	/* ASSIGN_WORKER (1), DEADLINE (2), VM_FORKS (4) and WINDOW (8) exist. */
	const uint32_t bad_ids_flags[] = { 1U << 4, 1U << 7, 1U << 31, ~0U };
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(bad_flags); i++) {
		c = self->cfg;
		c.worker_id = 9;	/* would change, must not */
		c.flags = bad_flags[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
		EXPECT_UNCHANGED();
	}
	c = self->cfg;
	c.worker_id = 9;
	c.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
	c.__reserved = 0x80000000;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
	EXPECT_UNCHANGED();

	memset(&ids, 0, sizeof(ids));
	ids.worker_id = 9;
	for (i = 0; i < SF_ARRAY_SIZE(bad_ids_flags); i++) {
		ids.flags = bad_ids_flags[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	}
	/* A deadline needs its flag and the flag a deadline. */
	ids.flags = SNOWFLAKE_IDS_DEADLINE;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.flags = 0;
	ids.deadline_ns = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.deadline_ns = 0;
	ids.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.__reserved = 0;
	/* A window needs its flag, the flag 48 bytes and floor <= ceiling. */
	ids.floor_ms = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.floor_ms = 0;
	ids.ceiling_ms = SNOWFLAKE_NO_CEILING;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.flags = SNOWFLAKE_IDS_WINDOW;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, _IOC(_IOC_WRITE, M, 0x02,
						  SNOWFLAKE_IDS_SIZE_VER1), &ids));
	ids.floor_ms = SNOWFLAKE_TWITTER_EPOCH_MS + 2;
	ids.ceiling_ms = SNOWFLAKE_TWITTER_EPOCH_MS + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	ids.floor_ms = 0;
	ids.ceiling_ms = SNOWFLAKE_TWITTER_EPOCH_MS - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
	EXPECT_UNCHANGED();
	{
		char buf[32];

		ASSERT_LT(0, sf_sysfs_read_str("lease_ceiling_ms", buf, sizeof(buf)));
		EXPECT_STREQ("18446744073709551615\n", buf);
	}
}

TEST_F(ioc, bad_pointer_efault)
{
	const unsigned long cmds[] = {
		SNOWFLAKE_IOC_GET_CONFIG, SNOWFLAKE_IOC_SET_CONFIG,
		SNOWFLAKE_IOC_SET_IDS, SNOWFLAKE_IOC_GET_STATS,
		SNOWFLAKE_IOC_GET_FLOOR, SNOWFLAKE_IOC_SET_FLOOR,
	};
	void *bad[] = { NULL, (void *)1, self->hole, (void *)0xffff888000000000UL };
	size_t i, b;

	for (i = 0; i < SF_ARRAY_SIZE(cmds); i++) {
		for (b = 0; b < SF_ARRAY_SIZE(bad); b++) {
			errno = 0;
			EXPECT_EQ(-1, ioctl(self->fd, cmds[i], bad[b]))
				TH_LOG("cmd %#lx arg %p", cmds[i], bad[b]);
			EXPECT_EQ(EFAULT, errno)
				TH_LOG("cmd %#lx arg %p: %s", cmds[i], bad[b],
				       strerror(errno));
		}
		/* A read-only page: GETs cannot write it. */
		if (_IOC_DIR(cmds[i]) == _IOC_READ) {
			EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmds[i], self->page));
			EXPECT_TRUE(sf_all_bytes(self->page, 256, 0));
		}
	}
	EXPECT_UNCHANGED();
}

TEST_F(ioc, set_ids)
{
	struct snowflake_config c;
	uint64_t id, prev = 0;
	struct sf_id f;

	ASSERT_EQ(0, sf_set_ids(self->fd, 31, 31));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(31, c.datacenter_id);
	EXPECT_EQ(31, c.worker_id);
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	f = sf_decode(&c, id);
	EXPECT_EQ(31, f.dc);
	EXPECT_EQ(31, f.worker);
	EXPECT_EQ(31, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(31, sf_sysfs_u64("datacenter_id"));
	prev = id;

	snapshot(_metadata, self);
	{
		const uint32_t bad[][2] = {
			{ 0, 32 }, { 32, 0 }, { 0, ~0U }, { ~0U, 0 },
			{ 1U << 31, 1 }, { 33, 33 },
		};
		size_t i;

		for (i = 0; i < SF_ARRAY_SIZE(bad); i++) {
			struct snowflake_ids ids = {
				.datacenter_id = bad[i][0],
				.worker_id = bad[i][1],
			};

			EXPECT_ERRNO(EINVAL, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids));
			EXPECT_UNCHANGED();
		}
	}
	ASSERT_EQ(0, sf_set_ids(self->fd, 0, 0));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(prev, id);
	f = sf_decode(&c, id);
	EXPECT_EQ(0, f.dc);
	EXPECT_EQ(0, f.worker);
}

struct bad_config {
	const char *what;
	int err;
	void (*mutate)(struct snowflake_config *c, uint64_t clock_ms);
};

#define MUT(name, body)							\
	static void mut_##name(struct snowflake_config *c, uint64_t clock_ms) \
	{								\
		(void)clock_ms;						\
		body;							\
	}

MUT(unit0, c->time_unit_ms = 0)
MUT(unit_big, c->time_unit_ms = SNOWFLAKE_MAX_TIME_UNIT_MS + 1)
MUT(unit_max32, c->time_unit_ms = ~0U)
MUT(ts0, c->timestamp_bits = 0)
MUT(dc32, { c->timestamp_bits = 21; c->datacenter_bits = 32; c->worker_bits = 0;
	    c->sequence_bits = 10; })
MUT(worker32, { c->timestamp_bits = 21; c->datacenter_bits = 0; c->worker_bits = 32;
		c->sequence_bits = 10; })
MUT(seq32, { c->timestamp_bits = 26; c->datacenter_bits = 5; c->worker_bits = 0;
	     c->sequence_bits = 32; })
MUT(dc255, c->datacenter_bits = 255)
MUT(sum64_ts, c->timestamp_bits = 42)
MUT(sum64_seq, c->sequence_bits = 13)
MUT(sum64_ts_only, { c->timestamp_bits = 64; c->datacenter_bits = 0;
		     c->worker_bits = 0; c->sequence_bits = 0; })
MUT(ts255, c->timestamp_bits = 255)
MUT(sum_big, { c->timestamp_bits = 41; c->datacenter_bits = 31;
	       c->worker_bits = 31; c->sequence_bits = 31; })
MUT(worker_id32, c->worker_id = 32)
MUT(dc_id32, c->datacenter_id = 32)
MUT(worker_id_max, c->worker_id = ~0U)
MUT(worker_id_nobits, { c->worker_bits = 0; c->worker_id = 1; })
MUT(dc_id_nobits, { c->datacenter_bits = 0; c->datacenter_id = 1; })
MUT(epoch_future, c->epoch_ms = clock_ms + HOUR_MS)
MUT(epoch_max, c->epoch_ms = ~0ULL)
MUT(flags, c->flags = 1U << 2)
MUT(reserved, c->__reserved = 7)
MUT(ids_and_flags, { c->worker_id = 3; c->flags = 1U << 3; })
MUT(overflow_ts20, c->timestamp_bits = 20)
MUT(overflow_hour_unit, { c->time_unit_ms = SNOWFLAKE_MAX_TIME_UNIT_MS;
			  c->timestamp_bits = 1; })
MUT(overflow_epoch0, { c->epoch_ms = 0; c->timestamp_bits = 40; })

static const struct bad_config bad_configs[] = {
	{ "time_unit_ms 0", EINVAL, mut_unit0 },
	{ "time_unit_ms 3600001", EINVAL, mut_unit_big },
	{ "time_unit_ms 2^32-1", EINVAL, mut_unit_max32 },
	{ "timestamp_bits 0", EINVAL, mut_ts0 },
	{ "datacenter_bits 32 (sum 63)", EINVAL, mut_dc32 },
	{ "worker_bits 32 (sum 63)", EINVAL, mut_worker32 },
	{ "sequence_bits 32 (sum 63)", EINVAL, mut_seq32 },
	{ "datacenter_bits 255", EINVAL, mut_dc255 },
	{ "widths sum 64 (timestamp 42)", EINVAL, mut_sum64_ts },
	{ "widths sum 64 (sequence 13)", EINVAL, mut_sum64_seq },
	{ "timestamp_bits 64 alone", EINVAL, mut_sum64_ts_only },
	{ "timestamp_bits 255", EINVAL, mut_ts255 },
	{ "widths sum 134", EINVAL, mut_sum_big },
	{ "worker_id 32 in 5 bits", EINVAL, mut_worker_id32 },
	{ "datacenter_id 32 in 5 bits", EINVAL, mut_dc_id32 },
	{ "worker_id 2^32-1", EINVAL, mut_worker_id_max },
	{ "worker_id 1 in 0 bits", EINVAL, mut_worker_id_nobits },
	{ "datacenter_id 1 in 0 bits", EINVAL, mut_dc_id_nobits },
	{ "epoch an hour ahead", EINVAL, mut_epoch_future },
	{ "epoch 2^64-1", EINVAL, mut_epoch_max },
	{ "unknown flag", EINVAL, mut_flags },
	{ "__reserved", EINVAL, mut_reserved },
	{ "valid ids, unknown flag", EINVAL, mut_ids_and_flags },
	{ "timestamp_bits 20 from 2010", EOVERFLOW, mut_overflow_ts20 },
	{ "1 bit of hours from 2010", EOVERFLOW, mut_overflow_hour_unit },
	{ "timestamp_bits 40 from 1970", EOVERFLOW, mut_overflow_epoch0 },
};

static bool layout_differs(const struct snowflake_config *a,
			   const struct snowflake_config *b)
{
	return a->epoch_ms != b->epoch_ms || a->time_unit_ms != b->time_unit_ms ||
	       a->timestamp_bits != b->timestamp_bits ||
	       a->datacenter_bits != b->datacenter_bits ||
	       a->worker_bits != b->worker_bits ||
	       a->sequence_bits != b->sequence_bits;
}

/*
 * After the first ID, a bad config that also changes the layout may fail
 * with EBUSY instead: the contract does not order the checks.
 */
static void check_bad_configs(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ioc) *self, bool locked)
{
	struct snowflake_stats st;
	size_t i;

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	for (i = 0; i < SF_ARRAY_SIZE(bad_configs); i++) {
		struct snowflake_config c = self->cfg;
		int err, want;

		bad_configs[i].mutate(&c, st.clock_ms);
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c))
			TH_LOG("%s: accepted", bad_configs[i].what);
		err = errno;
		want = bad_configs[i].err;
		if (locked && err == EBUSY && layout_differs(&c, &self->cfg))
			want = EBUSY;
		EXPECT_EQ(want, err)
			TH_LOG("%s: %s, wanted %s", bad_configs[i].what,
			       strerror(err), strerror(want));
		EXPECT_UNCHANGED();
	}
}

TEST_F(ioc, set_config_invalid_before_first_id)
{
	check_bad_configs(_metadata, self, false);
}

/* The same checks after the first ID (only ids/flags could change then). */
TEST_F(ioc, set_config_invalid_after_first_id)
{
	uint64_t id;

	ASSERT_EQ(0, sf_read1(self->fd, &id));
	snapshot(_metadata, self);
	check_bad_configs(_metadata, self, true);
}

/* Before the first ID, any valid layout is taken, and IDs decode with it. */
TEST_F(ioc, set_config_new_layout_before_first_id)
{
	struct snowflake_config c = {
		.epoch_ms = 1600000000000ULL,
		.time_unit_ms = 2,
		.timestamp_bits = 40,
		.datacenter_bits = 4,
		.worker_bits = 6,
		.sequence_bits = 13,
		.datacenter_id = 9,
		.worker_id = 33,
		.flags = 0,
	};
	struct snowflake_config got;
	uint64_t ids[16], before, after;
	ssize_t n, i;

	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, sf_get_config(self->fd, &got));
	EXPECT_TRUE(sf_config_eq(&c, &got));
	EXPECT_EQ(1600000000000ULL, sf_sysfs_u64("epoch_ms"));
	EXPECT_EQ(2, sf_sysfs_u64("time_unit_ms"));
	EXPECT_EQ(40, sf_sysfs_u64("timestamp_bits"));
	EXPECT_EQ(4, sf_sysfs_u64("datacenter_bits"));
	EXPECT_EQ(6, sf_sysfs_u64("worker_bits"));
	EXPECT_EQ(13, sf_sysfs_u64("sequence_bits"));
	EXPECT_EQ(9, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(33, sf_sysfs_u64("worker_id"));

	before = sf_real_ms();
	n = sf_read_ids(self->fd, ids, 16);
	after = sf_real_ms();
	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		struct sf_id f = sf_decode(&c, ids[i]);

		EXPECT_EQ(0, f.high);
		EXPECT_EQ(9, f.dc);
		EXPECT_EQ(33, f.worker);
		EXPECT_LE(before - NEAR_MS, f.ms);
		EXPECT_GE(after + FUTURE_TOL_MS, f.ms);
		if (i)
			EXPECT_EQ(ids[i - 1] + 1, ids[i]);
	}
	/* Widths summing to exactly 63, epoch 1970: valid too (fresh load). */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	c.epoch_ms = 0;
	c.time_unit_ms = 1;
	c.timestamp_bits = 41;
	c.datacenter_bits = 0;
	c.worker_bits = 0;
	c.sequence_bits = 22;
	c.datacenter_id = 0;
	c.worker_id = 0;
	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	before = sf_real_ms();
	ASSERT_EQ(0, sf_read1(self->fd, &ids[0]));
	after = sf_real_ms();
	EXPECT_LE(before - NEAR_MS, sf_decode(&c, ids[0]).ms);
	EXPECT_GE(after + FUTURE_TOL_MS, sf_decode(&c, ids[0]).ms);
	EXPECT_EQ(0, ids[0] >> 63);
}

MUT(busy_epoch, c->epoch_ms -= 1000)
MUT(busy_unit, c->time_unit_ms = 2)
MUT(busy_ts, c->timestamp_bits = 40)
MUT(busy_dc, { c->datacenter_bits = 6; c->timestamp_bits = 40; })
MUT(busy_worker, c->worker_bits = 4)
MUT(busy_seq, c->sequence_bits = 11)
MUT(busy_ts_shrink_all, { c->timestamp_bits = 42; c->sequence_bits = 11; })

/* After the first ID, the layout is fixed; ids and flags are not. */
TEST_F(ioc, layout_busy_after_first_id)
{
	static const struct bad_config busy[] = {
		{ "epoch_ms", EBUSY, mut_busy_epoch },
		{ "time_unit_ms", EBUSY, mut_busy_unit },
		{ "timestamp_bits", EBUSY, mut_busy_ts },
		{ "datacenter_bits", EBUSY, mut_busy_dc },
		{ "worker_bits", EBUSY, mut_busy_worker },
		{ "sequence_bits", EBUSY, mut_busy_seq },
		{ "timestamp and sequence bits", EBUSY, mut_busy_ts_shrink_all },
	};
	struct snowflake_config c;
	struct snowflake_stats st;
	uint64_t id;
	size_t i;

	/* Each of these is fine before the first ID (tested above). */
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	snapshot(_metadata, self);
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	ASSERT_TRUE(st.state & SNOWFLAKE_STATE_LOCKED);
	for (i = 0; i < SF_ARRAY_SIZE(busy); i++) {
		c = self->cfg;
		busy[i].mutate(&c, st.clock_ms);
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c))
			TH_LOG("%s changed after the first ID", busy[i].what);
		EXPECT_EQ(EBUSY, errno) TH_LOG("%s: %s", busy[i].what, strerror(errno));
		EXPECT_UNCHANGED();
		/* also with a valid ids change riding along */
		c.worker_id = 3;
		EXPECT_ERRNO(EBUSY, ioctl(self->fd, SNOWFLAKE_IOC_SET_CONFIG, &c));
		EXPECT_UNCHANGED();
	}

	/* The same layout again: fine. */
	c = self->cfg;
	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	EXPECT_UNCHANGED();
	/* The same layout with other ids and the random flag: fine. */
	c.datacenter_id = 30;
	c.worker_id = 29;
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	snapshot(_metadata, self);
	EXPECT_TRUE(sf_config_eq(&c, &self->cfg));
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));
	c.flags = 0;
	ASSERT_EQ(0, sf_set_config(self->fd, &c));
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
}

/*
 * Changing ids after the first ID: the next ID comes from a later tick, so
 * IDs keep increasing even when the new worker id is lower.
 */
TEST_F(ioc, ids_change_keeps_order)
{
	static const uint32_t seq_ids[][2] = {
		{ 1, 31 }, { 1, 0 }, { 0, 5 }, { 31, 31 }, { 0, 0 }, { 2, 30 },
		{ 2, 1 }, { 0, 1 }, { 0, 0 },
	};
	uint64_t prev, id;
	size_t i;
	int r;

	ASSERT_EQ(0, sf_read1(self->fd, &prev));
	for (r = 0; r < 3; r++) {
		for (i = 0; i < SF_ARRAY_SIZE(seq_ids); i++) {
			struct snowflake_config c;
			struct sf_id fp, f;
			int ret;

			if ((i + r) % 2) {
				ret = sf_set_ids(self->fd, seq_ids[i][0], seq_ids[i][1]);
			} else {
				ASSERT_EQ(0, sf_get_config(self->fd, &c));
				c.datacenter_id = seq_ids[i][0];
				c.worker_id = seq_ids[i][1];
				ret = sf_set_config(self->fd, &c);
			}
			ASSERT_EQ(0, ret) TH_LOG("%s", strerror(-ret));
			ASSERT_EQ(0, sf_get_config(self->fd, &c));
			ASSERT_EQ(0, sf_read1(self->fd, &id));
			fp = sf_decode(&c, prev);
			f = sf_decode(&c, id);
			EXPECT_LT(prev, id) TH_LOG("ids %u/%u: %#" PRIx64 " after %#" PRIx64,
						   seq_ids[i][0], seq_ids[i][1], id, prev);
			EXPECT_LT(fp.ts, f.ts) TH_LOG("not from a later tick");
			EXPECT_EQ(seq_ids[i][0], f.dc);
			EXPECT_EQ(seq_ids[i][1], f.worker);
			prev = id;
		}
	}
}

/* ------------------------------------------------------------------ */
/* compat_ioctl: 32-bit system calls through int $0x80.                 */
/* ------------------------------------------------------------------ */

#define NR32_READ	3
#define NR32_IOCTL	54

static long int80(long nr, long a, long b, long c)
{
	long ret = nr;

	asm volatile ("int $0x80"
		      : "+a" (ret), "+b" (a), "+c" (b), "+d" (c)
		      :
		      : "memory", "cc", "r8", "r9", "r10", "r11");
	return (int)ret;
}

/* Can this kernel run int $0x80 from a 64-bit process?  In a child. */
static bool int80_works(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* getpid() is 20 on i386 */
		_exit(int80(20, 0, 0, 0) == getpid() ? 0 : 1);
	}
	return pid > 0 && sf_wait_child(pid) == 0;
}

TEST_F(ioc, compat_ioctl)
{
	struct snowflake_config *c32, c;
	struct snowflake_stats *st32;
	struct snowflake_floor *fl32;
	struct snowflake_ids *ids32;
	uint64_t *buf32, prev;
	unsigned char *low;
	long ret;

	if (!int80_works())
		SKIP(return, "no 32-bit system calls (ia32 emulation off)");
	low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	ASSERT_NE(MAP_FAILED, low);
	c32 = (void *)low;
	st32 = (void *)(low + 256);
	fl32 = (void *)(low + 512);
	ids32 = (void *)(low + 768);
	buf32 = (void *)(low + 1024);

	memset(c32, 0xcc, sizeof(*c32));
	ret = int80(NR32_IOCTL, self->fd, SNOWFLAKE_IOC_GET_CONFIG, (long)c32);
	ASSERT_EQ(0, ret) TH_LOG("compat GET_CONFIG: %s", strerror(-ret));
	EXPECT_TRUE(sf_config_eq(&self->cfg, c32));

	ASSERT_EQ(0, sf_read1(self->fd, &prev));
	memset(st32, 0xcc, sizeof(*st32));
	ret = int80(NR32_IOCTL, self->fd, SNOWFLAKE_IOC_GET_STATS, (long)st32);
	ASSERT_EQ(0, ret) TH_LOG("compat GET_STATS: %s", strerror(-ret));
	EXPECT_EQ(1, st32->ids_issued);
	EXPECT_EQ(0, st32->__reserved);

	memset(fl32, 0xcc, sizeof(*fl32));
	ret = int80(NR32_IOCTL, self->fd, SNOWFLAKE_IOC_GET_FLOOR, (long)fl32);
	ASSERT_EQ(0, ret) TH_LOG("compat GET_FLOOR: %s", strerror(-ret));
	EXPECT_EQ(sf_decode(&self->cfg, prev).ms, fl32->last_timestamp_ms);

	memset(ids32, 0, sizeof(*ids32));
	ids32->datacenter_id = 6;
	ids32->worker_id = 7;
	ret = int80(NR32_IOCTL, self->fd, SNOWFLAKE_IOC_SET_IDS, (long)ids32);
	ASSERT_EQ(0, ret) TH_LOG("compat SET_IDS: %s", strerror(-ret));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(6, c.datacenter_id);
	EXPECT_EQ(7, c.worker_id);

	*c32 = c;
	c32->worker_id = 8;
	ret = int80(NR32_IOCTL, self->fd, SNOWFLAKE_IOC_SET_CONFIG, (long)c32);
	ASSERT_EQ(0, ret) TH_LOG("compat SET_CONFIG: %s", strerror(-ret));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(8, c.worker_id);

	ret = int80(NR32_IOCTL, self->fd, _IO(M, 0x33), 0);
	EXPECT_EQ(-ENOTTY, ret);
	ret = int80(NR32_IOCTL, self->fd, _IOC(_IOC_READ, M, 0x00, 8), (long)c32);
	EXPECT_EQ(-EINVAL, ret);

	/* A 32-bit read. */
	ret = int80(NR32_READ, self->fd, (long)buf32, 16);
	ASSERT_LT(0, ret) TH_LOG("compat read: %s", strerror(-ret));
	EXPECT_EQ(0, ret % 8);
	EXPECT_LT(prev, buf32[0]);
	EXPECT_EQ(8, sf_decode(&c, buf32[0]).worker);
	munmap(low, 4096);
}

SF_TEST_MAIN()
