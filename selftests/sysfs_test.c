// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/class/misc/snowflake/: every file, its mode and format, default
 * values, agreement with the ioctls, bad writes changing nothing, good
 * writes taking effect, read-only files, and the counters.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NEAR_MS		3000

struct sysfs_file {
	const char *name;
	mode_t mode;
};

static const struct sysfs_file files[] = {
	{ "worker_id", 0644 },
	{ "datacenter_id", 0644 },
	{ "floor_ms", 0644 },
	{ "random_sequence", 0644 },
	{ "epoch_ms", 0444 },
	{ "time_unit_ms", 0444 },
	{ "timestamp_bits", 0444 },
	{ "datacenter_bits", 0444 },
	{ "worker_bits", 0444 },
	{ "sequence_bits", 0444 },
	{ "strict", 0444 },
	{ "refusing", 0444 },
	{ "fenced", 0444 },
	{ "last_timestamp_ms", 0444 },
	{ "clock_ms", 0444 },
	{ "clock_offset_ms", 0444 },
	{ "statistics/ids_issued", 0444 },
	{ "statistics/reads", 0444 },
	{ "statistics/exhausted_waits", 0444 },
	{ "statistics/eagain", 0444 },
	{ "statistics/clock_catchups", 0444 },
	{ "statistics/floor_jumps", 0444 },
	{ "statistics/refused_reads", 0444 },
	{ "statistics/fences", 0444 },
	{ "lease_ceiling_ms", 0444 },
	{ "lease_ceiling_reached", 0444 },
	{ "statistics/lease_ceiling_hits", 0444 },
};

static const char * const rw_files[] = {
	"worker_id", "datacenter_id", "floor_ms", "random_sequence",
};

FIXTURE(sy) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(sy)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload_defaults());
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

FIXTURE_TEARDOWN(sy)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(sy, files_modes_and_format)
{
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(files); i++) {
		char path[256], buf[128];
		struct stat st;
		uint64_t v;
		int n;

		snprintf(path, sizeof(path), SF_SYSFS "/%s", files[i].name);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_TRUE(S_ISREG(st.st_mode));
		EXPECT_EQ(files[i].mode, st.st_mode & 07777)
			TH_LOG("%s: mode %o", files[i].name, st.st_mode & 07777);
		EXPECT_EQ(0, st.st_uid);
		n = sf_sysfs_read_str(files[i].name, buf, sizeof(buf));
		ASSERT_LT(0, n) TH_LOG("%s: %s", files[i].name, strerror(-n));
		EXPECT_EQ(0, sf_parse_u64_line(buf, &v))
			TH_LOG("%s: not one decimal number and a newline: '%s'",
			       files[i].name, buf);
	}
}

TEST_F(sy, default_values)
{
	uint64_t before = sf_real_ms(), clk, after;

	EXPECT_EQ(0, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(0, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(0, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS, sf_sysfs_u64("epoch_ms"));
	EXPECT_EQ(1, sf_sysfs_u64("time_unit_ms"));
	EXPECT_EQ(41, sf_sysfs_u64("timestamp_bits"));
	EXPECT_EQ(5, sf_sysfs_u64("datacenter_bits"));
	EXPECT_EQ(5, sf_sysfs_u64("worker_bits"));
	EXPECT_EQ(12, sf_sysfs_u64("sequence_bits"));
	EXPECT_EQ(0, sf_sysfs_u64("strict"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	EXPECT_EQ(0, sf_sysfs_u64("last_timestamp_ms"));
	EXPECT_EQ(0, sf_sysfs_u64("clock_offset_ms"));
	clk = sf_sysfs_u64("clock_ms");
	after = sf_real_ms();
	EXPECT_LE(before - NEAR_MS, clk);
	EXPECT_GE(after + 50, clk);
	EXPECT_EQ(0, sf_sysfs_u64("statistics/ids_issued"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/reads"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/exhausted_waits"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/eagain"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/clock_catchups"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/floor_jumps"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/refused_reads"));
	EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(0, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	{
		char buf[32];

		/* SNOWFLAKE_NO_CEILING, as lease_deadline_ns shows none. */
		ASSERT_LT(0, sf_sysfs_read_str("lease_ceiling_ms", buf, sizeof(buf)));
		EXPECT_STREQ("18446744073709551615\n", buf);
	}
}

/*
 * The lease's window: lease_ceiling_ms is the ceiling as set,
 * lease_ceiling_reached the state bit SNOWFLAKE_STATE_CEILING,
 * statistics/lease_ceiling_hits counts the ceilings reached.
 */
TEST_F(sy, ceiling_files_match_ioctl)
{
	struct snowflake_ids ids = {
		.worker_id = 3,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_WINDOW,
	};
	struct snowflake_stats st;
	uint64_t id;

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	ids.ceiling_ms = st.clock_ms + HOUR_MS;
	ASSERT_EQ(0, ioctl(self->fd, SNOWFLAKE_IOC_SET_IDS, &ids)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(ids.ceiling_ms, sf_sysfs_u64("lease_ceiling_ms"));
	EXPECT_EQ(0, sf_sysfs_u64("lease_ceiling_reached"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_set_floor(self->fd, ids.ceiling_ms + 1));
	EXPECT_EQ(-ENOTCONN, sf_read1(self->fd, &id));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(!!(st.state & SNOWFLAKE_STATE_CEILING), sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(1, sf_sysfs_u64("lease_ceiling_reached"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	EXPECT_EQ(st.refused_reads, sf_sysfs_u64("statistics/refused_reads"));
	/* Read-only: root cannot write them either. */
	EXPECT_EQ(-EACCES, sf_sysfs_write("lease_ceiling_ms", "18446744073709551615"));
	EXPECT_EQ(ids.ceiling_ms, sf_sysfs_u64("lease_ceiling_ms"));
}

static void expect_config_matches(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_config c;

	ASSERT_EQ(0, sf_get_config(fd, &c));
	EXPECT_EQ(c.epoch_ms, sf_sysfs_u64("epoch_ms"));
	EXPECT_EQ(c.time_unit_ms, sf_sysfs_u64("time_unit_ms"));
	EXPECT_EQ(c.timestamp_bits, sf_sysfs_u64("timestamp_bits"));
	EXPECT_EQ(c.datacenter_bits, sf_sysfs_u64("datacenter_bits"));
	EXPECT_EQ(c.worker_bits, sf_sysfs_u64("worker_bits"));
	EXPECT_EQ(c.sequence_bits, sf_sysfs_u64("sequence_bits"));
	EXPECT_EQ(c.datacenter_id, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(c.worker_id, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(!!(c.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE),
		  sf_sysfs_u64("random_sequence"));
}

TEST_F(sy, config_matches_ioctl)
{
	struct snowflake_config c = self->cfg;

	expect_config_matches(_metadata, self->fd);
	c.epoch_ms = 1500000000000ULL;
	c.time_unit_ms = 7;
	c.timestamp_bits = 39;
	c.datacenter_bits = 3;
	c.worker_bits = 9;
	c.sequence_bits = 11;
	c.datacenter_id = 6;
	c.worker_id = 300;
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, sf_set_config(self->fd, &c)) TH_LOG("%s", strerror(errno));
	expect_config_matches(_metadata, self->fd);
}

/* The values of all writable files, the config and the floor. */
struct rw_state {
	uint64_t v[SF_ARRAY_SIZE(rw_files)];
	struct snowflake_config cfg;
	struct snowflake_floor floor;
};

static void rw_state(struct __test_metadata *_metadata, int fd, struct rw_state *s)
{
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(rw_files); i++)
		ASSERT_EQ(0, sf_sysfs_read_u64(rw_files[i], &s->v[i]));
	ASSERT_EQ(0, sf_get_config(fd, &s->cfg));
	ASSERT_EQ(0, sf_get_floor(fd, &s->floor));
}

static void check_bad_writes(struct __test_metadata *_metadata, int fd)
{
	static const char * const common[] = {
		"abc", "\n", "-1", "99999999999999999999", "18446744073709551616",
		"1 2", "1abc", " ", "1.5", "0x", "--1", "1\n2",
		"0x1",	/* decimal only */
	};
	struct {
		const char *file;
		const char *value;
	} specific[] = {
		{ "worker_id", "32" },
		{ "worker_id", "4294967296" },
		{ "worker_id", "4294967295" },
		{ "datacenter_id", "32" },
		{ "datacenter_id", "4294967327" },	/* 2^32 + 31 */
		{ "random_sequence", "2" },
		{ "random_sequence", "256" },
	};
	struct rw_state before, after;
	size_t f, i;

	rw_state(_metadata, fd, &before);
	for (f = 0; f < SF_ARRAY_SIZE(rw_files); f++) {
		for (i = 0; i < SF_ARRAY_SIZE(common); i++) {
			int ret = sf_sysfs_write(rw_files[f], common[i]);

			EXPECT_EQ(-EINVAL, ret)
				TH_LOG("write '%s' to %s: %s", common[i], rw_files[f],
				       ret ? strerror(-ret) : "accepted");
		}
	}
	for (i = 0; i < SF_ARRAY_SIZE(specific); i++) {
		int ret = sf_sysfs_write(specific[i].file, specific[i].value);

		EXPECT_EQ(-EINVAL, ret)
			TH_LOG("write '%s' to %s: %s", specific[i].value,
			       specific[i].file, ret ? strerror(-ret) : "accepted");
	}
	rw_state(_metadata, fd, &after);
	EXPECT_EQ(0, memcmp(before.v, after.v, sizeof(before.v)));
	EXPECT_TRUE(sf_config_eq(&before.cfg, &after.cfg));
	EXPECT_EQ(before.floor.floor_ms, after.floor.floor_ms);
}

TEST_F(sy, bad_writes_change_nothing)
{
	check_bad_writes(_metadata, self->fd);
}

/* Same with non-default values in place, after the first ID. */
TEST_F(sy, bad_writes_change_nothing_after_first_id)
{
	uint64_t id;

	ASSERT_EQ(0, sf_sysfs_write("worker_id", "17\n"));
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "9"));
	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "1\n"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	check_bad_writes(_metadata, self->fd);
}

TEST_F(sy, good_writes_take_effect)
{
	struct snowflake_config c;
	uint64_t id, prev;
	struct sf_id f, fp;

	ASSERT_EQ(0, sf_sysfs_write("worker_id", "17\n"));
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "9"));
	EXPECT_EQ(17, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(9, sf_sysfs_u64("datacenter_id"));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(17, c.worker_id);
	EXPECT_EQ(9, c.datacenter_id);
	ASSERT_EQ(0, sf_read1(self->fd, &prev));
	f = sf_decode(&c, prev);
	EXPECT_EQ(17, f.worker);
	EXPECT_EQ(9, f.dc);

	/* The largest values; a lower worker id after the first ID. */
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "31"));
	ASSERT_EQ(0, sf_sysfs_write("datacenter_id", "31\n"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	f = sf_decode(&c, id);
	EXPECT_EQ(31, f.worker);
	EXPECT_EQ(31, f.dc);
	EXPECT_LT(prev, id);
	prev = id;
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "0\n"));
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	f = sf_decode(&c, id);
	fp = sf_decode(&c, prev);
	EXPECT_EQ(0, f.worker);
	EXPECT_LT(prev, id);
	EXPECT_LT(fp.ts, f.ts);

	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "1\n"));
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(SNOWFLAKE_CONFIG_RANDOM_SEQUENCE, c.flags);
	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "0"));
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
	ASSERT_EQ(0, sf_get_config(self->fd, &c));
	EXPECT_EQ(0, c.flags);
}

TEST_F(sy, readonly_files_not_writable)
{
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(files); i++) {
		char path[256];
		int fd;

		if (files[i].mode != 0444)
			continue;
		snprintf(path, sizeof(path), SF_SYSFS "/%s", files[i].name);
		errno = 0;
		fd = open(path, O_WRONLY);
		EXPECT_EQ(-1, fd) TH_LOG("%s opened for writing", files[i].name);
		EXPECT_EQ(EACCES, errno) TH_LOG("%s: %s", files[i].name, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	/* nothing changed */
	EXPECT_EQ(41, sf_sysfs_u64("timestamp_bits"));
}

/* instance_id: 32 lowercase hex digits and a newline; @id gets the digits. */
static bool read_instance_id(char id[33])
{
	char buf[64];
	int n = sf_sysfs_read_str("instance_id", buf, sizeof(buf));

	if (n != 33 || buf[32] != '\n')
		return false;
	for (int i = 0; i < 32; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
			return false;
	memcpy(id, buf, 32);
	id[32] = '\0';
	return true;
}

/*
 * instance_id names the load: read-only, the same through reads, floors,
 * writes and configuration for as long as the module is loaded, and a new
 * one at every load.  snowflake-floord(8) leaves the floor alone when the
 * id it saved is the current one, so an id that survived a reload would
 * let a new generator skip the floor it needs.
 */
TEST_F(sy, instance_id)
{
	char id[33], again[33], seen[4][33];
	uint64_t ids[8];
	struct stat st;
	int fd;

	ASSERT_EQ(0, stat(SF_SYSFS "/instance_id", &st)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0444, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	ASSERT_TRUE(read_instance_id(id));
	EXPECT_NE(0, strcmp(id, "00000000000000000000000000000000"));
	errno = 0;
	fd = open(SF_SYSFS "/instance_id", O_WRONLY);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EACCES, errno);
	if (fd >= 0)
		close(fd);

	/* Stable within the load, whatever happens to the generator. */
	ASSERT_LT(0, sf_read_ids(self->fd, ids, 8));
	ASSERT_EQ(0, sf_set_floor(self->fd, sf_real_ms() + 2000));
	ASSERT_EQ(0, sf_sysfs_write("worker_id", "3"));
	ASSERT_EQ(0, sf_sysfs_write("random_sequence", "1"));
	ASSERT_TRUE(read_instance_id(again));
	EXPECT_STREQ(id, again);

	/* A new one at every load: three reloads, four distinct ids. */
	close(self->fd);
	self->fd = -1;
	memcpy(seen[0], id, sizeof(id));
	for (int i = 1; i < 4; i++) {
		ASSERT_EQ(0, sf_reload_defaults());
		ASSERT_TRUE(read_instance_id(seen[i]));
		for (int j = 0; j < i; j++) {
			EXPECT_STRNE(seen[j], seen[i])
				TH_LOG("loads %d and %d share %s", j, i, seen[i]);
		}
	}
}

/* Counters count exactly what this, the only reader, did. */
TEST_F(sy, counters)
{
	struct snowflake_stats st;
	uint64_t ids[16], total = 0, reads = 0, before, after, clk;
	int i;

	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, sf_read1(self->fd, ids));
		total++;
		reads++;
	}
	for (i = 0; i < 6; i++) {
		ssize_t n = sf_read_ids(self->fd, ids, 7 + i);

		ASSERT_LT(0, n);
		total += n;
		reads++;
	}
	/* failures count nothing */
	EXPECT_ERRNO(EINVAL, read(self->fd, ids, 4));
	EXPECT_ERRNO(ESPIPE, pread(self->fd, ids, 8, 0));

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(total, st.ids_issued);
	EXPECT_EQ(reads, st.reads);
	EXPECT_EQ(0, st.exhausted_waits);
	EXPECT_EQ(0, st.eagain);
	EXPECT_EQ(0, st.clock_catchups);
	EXPECT_EQ(0, st.floor_jumps);
	EXPECT_EQ(0, st.refused_reads);
	EXPECT_EQ(st.ids_issued, sf_sysfs_u64("statistics/ids_issued"));
	EXPECT_EQ(st.reads, sf_sysfs_u64("statistics/reads"));
	EXPECT_EQ(st.exhausted_waits, sf_sysfs_u64("statistics/exhausted_waits"));
	EXPECT_EQ(st.eagain, sf_sysfs_u64("statistics/eagain"));
	EXPECT_EQ(st.clock_catchups, sf_sysfs_u64("statistics/clock_catchups"));
	EXPECT_EQ(st.floor_jumps, sf_sysfs_u64("statistics/floor_jumps"));
	EXPECT_EQ(st.refused_reads, sf_sysfs_u64("statistics/refused_reads"));
	EXPECT_EQ(st.last_timestamp_ms, sf_sysfs_u64("last_timestamp_ms"));
	EXPECT_EQ(st.clock_offset_ms, sf_sysfs_u64("clock_offset_ms"));
	EXPECT_EQ(st.floor_ms, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(sf_decode(&self->cfg, ids[0]).ms <= st.last_timestamp_ms, 1);

	/* clock_ms lies between two GET_STATS readings of the clock. */
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	before = st.clock_ms;
	clk = sf_sysfs_u64("clock_ms");
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	after = st.clock_ms;
	EXPECT_LE(before, clk);
	EXPECT_GE(after, clk);
}

SF_TEST_MAIN()
