// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters: invalid values make the load fail (EINVAL or
 * EOVERFLOW) with a "snowflake: ..." line in the kernel log and leave no
 * device behind; valid values show up in sysfs and in the IDs; layouts at
 * the width limits.
 */
#define _GNU_SOURCE
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define NEAR_MS		3000
#define FUTURE_TOL_MS	50

/* ------------------------------------------------------------------ */
/* Invalid parameters                                                   */
/* ------------------------------------------------------------------ */

FIXTURE(bad) {
	int kmsg;
};

FIXTURE_VARIANT(bad) {
	const char *params;	/* "%" PRIu64 is replaced by the value below */
	int value;		/* 0: none, 1: an hour ahead, 2: past 41 bits */
	int err;
	int alt_err;		/* also acceptable, or 0 */
	const char *param;	/* to find in the log line, or NULL */
};

FIXTURE_VARIANT_ADD(bad, worker_id_32) {
	.params = "worker_id=32", .err = EINVAL, .param = "worker_id",
};
FIXTURE_VARIANT_ADD(bad, datacenter_id_32) {
	.params = "datacenter_id=32", .err = EINVAL, .param = "datacenter_id",
};
FIXTURE_VARIANT_ADD(bad, worker_id_no_bits) {
	.params = "worker_bits=0 worker_id=1", .err = EINVAL,
};
FIXTURE_VARIANT_ADD(bad, sequence_bits_32) {
	.params = "sequence_bits=32", .err = EINVAL, .param = "sequence_bits",
};
FIXTURE_VARIANT_ADD(bad, worker_bits_32) {
	.params = "worker_bits=32 timestamp_bits=14", .err = EINVAL,
	.param = "worker_bits",
};
FIXTURE_VARIANT_ADD(bad, datacenter_bits_32) {
	.params = "datacenter_bits=32 timestamp_bits=14", .err = EINVAL,
	.param = "datacenter_bits",
};
FIXTURE_VARIANT_ADD(bad, timestamp_bits_0) {
	.params = "timestamp_bits=0", .err = EINVAL, .param = "timestamp_bits",
};
FIXTURE_VARIANT_ADD(bad, widths_sum_64) {
	.params = "timestamp_bits=42", .err = EINVAL,
};
FIXTURE_VARIANT_ADD(bad, widths_sum_64_sequence) {
	.params = "sequence_bits=13", .err = EINVAL,
};
FIXTURE_VARIANT_ADD(bad, time_unit_0) {
	.params = "time_unit_ms=0", .err = EINVAL, .param = "time_unit_ms",
};
FIXTURE_VARIANT_ADD(bad, time_unit_above_hour) {
	.params = "time_unit_ms=3600001", .err = EINVAL, .param = "time_unit_ms",
};
FIXTURE_VARIANT_ADD(bad, epoch_in_future) {
	.params = "epoch_ms=%" PRIu64, .value = 1, .err = EINVAL,
	.param = "epoch_ms",
};
FIXTURE_VARIANT_ADD(bad, timestamp_overflow) {
	.params = "timestamp_bits=20", .err = EOVERFLOW,
};
FIXTURE_VARIANT_ADD(bad, floor_overflow) {
	.params = "floor_ms=%" PRIu64, .value = 2, .err = EOVERFLOW,
	.alt_err = EINVAL, .param = "floor_ms",
};
FIXTURE_VARIANT_ADD(bad, worker_id_not_a_number) {
	.params = "worker_id=abc", .err = EINVAL, .param = "worker_id",
};
FIXTURE_VARIANT_ADD(bad, sequence_bits_negative) {
	.params = "sequence_bits=-1", .err = EINVAL, .param = "sequence_bits",
};

FIXTURE_SETUP(bad)
{
	int ret = sf_unload();

	ASSERT_TRUE(ret == 0 || ret == -ENOENT) TH_LOG("unload: %s", strerror(-ret));
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (self->kmsg >= 0)
		lseek(self->kmsg, 0, SEEK_END);
}

FIXTURE_TEARDOWN(bad)
{
	if (self->kmsg >= 0)
		close(self->kmsg);
}

/* Find a kernel log record with "snowflake" (and @param) since setup. */
static bool log_has(int kmsg, const char *param, char *line, size_t len)
{
	char rec[1024];
	bool found = false;

	for (;;) {
		ssize_t n = read(kmsg, rec, sizeof(rec) - 1);
		char *msg;

		if (n < 0) {
			if (errno == EPIPE)
				continue;	/* overwritten records */
			break;
		}
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		if (strstr(msg, "snowflake") && (!param || strstr(msg, param))) {
			size_t l = strlen(msg);

			if (l >= len)
				l = len - 1;
			memcpy(line, msg, l);
			line[l] = '\0';
			found = true;
		}
	}
	return found;
}

TEST_F(bad, load_fails)
{
	char params[256], line[512] = "";
	uint64_t value = 0;
	int ret;

	if (variant->value == 1)
		value = sf_real_ms() + HOUR_MS;
	else if (variant->value == 2)
		value = SNOWFLAKE_TWITTER_EPOCH_MS + (1ULL << 41);
	snprintf(params, sizeof(params), variant->params, value);

	ret = sf_load(params);
	ASSERT_NE(0, ret) TH_LOG("'%s' loaded", params);
	if (variant->alt_err && ret == -variant->alt_err)
		ret = -variant->err;
	EXPECT_EQ(-variant->err, ret)
		TH_LOG("'%s': %s, wanted %s", params, strerror(-ret),
		       strerror(variant->err));
	EXPECT_FALSE(sf_path_exists(SF_DEV));
	EXPECT_FALSE(sf_path_exists(SF_SYSFS));
	EXPECT_FALSE(sf_path_exists(SF_MODSYSFS));

	if (self->kmsg < 0)
		SKIP(return, "no /dev/kmsg: %s", strerror(errno));
	EXPECT_TRUE(log_has(self->kmsg, variant->param, line, sizeof(line)))
		TH_LOG("no 'snowflake: ...%s...' line in the kernel log for '%s'",
		       variant->param ? variant->param : "", params);
	if (line[0])
		TH_LOG("log: %s", strtok(line, "\n"));
}

/* ------------------------------------------------------------------ */
/* Valid parameters                                                     */
/* ------------------------------------------------------------------ */

FIXTURE(good) {
	int fd;
	struct snowflake_config cfg;
};

FIXTURE_SETUP(good)
{
	self->fd = -1;
}

FIXTURE_TEARDOWN(good)
{
	if (self->fd >= 0)
		close(self->fd);
}

static void load(struct __test_metadata *_metadata, FIXTURE_DATA(good) *self,
		 const char *params)
{
	int ret;

	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
	ret = sf_reload(params);
	ASSERT_EQ(0, ret) TH_LOG("load '%s': %s", params, strerror(-ret));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
}

static uint64_t param_u64(const char *name)
{
	char path[256], buf[64];
	uint64_t v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SF_MODSYSFS "/parameters/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return UINT64_MAX;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	if (sf_parse_u64_line(buf, &v))
		return UINT64_MAX;
	return v;
}

TEST_F(good, all_parameters)
{
	struct snowflake_stats st;
	uint64_t ids[8], before, after, floor;
	char params[512];
	ssize_t n, i;

	floor = sf_real_ms() - HOUR_MS;
	snprintf(params, sizeof(params),
		 "epoch_ms=1500000000000 time_unit_ms=4 timestamp_bits=40 "
		 "datacenter_bits=7 worker_bits=8 sequence_bits=8 "
		 "datacenter_id=100 worker_id=200 floor_ms=%" PRIu64 " "
		 "random_sequence=1 catchup_threshold_ms=5000", floor);
	load(_metadata, self, params);

	EXPECT_EQ(1500000000000ULL, self->cfg.epoch_ms);
	EXPECT_EQ(4, self->cfg.time_unit_ms);
	EXPECT_EQ(40, self->cfg.timestamp_bits);
	EXPECT_EQ(7, self->cfg.datacenter_bits);
	EXPECT_EQ(8, self->cfg.worker_bits);
	EXPECT_EQ(8, self->cfg.sequence_bits);
	EXPECT_EQ(100, self->cfg.datacenter_id);
	EXPECT_EQ(200, self->cfg.worker_id);
	EXPECT_EQ(SNOWFLAKE_CONFIG_RANDOM_SEQUENCE, self->cfg.flags);

	EXPECT_EQ(1500000000000ULL, sf_sysfs_u64("epoch_ms"));
	EXPECT_EQ(4, sf_sysfs_u64("time_unit_ms"));
	EXPECT_EQ(40, sf_sysfs_u64("timestamp_bits"));
	EXPECT_EQ(7, sf_sysfs_u64("datacenter_bits"));
	EXPECT_EQ(8, sf_sysfs_u64("worker_bits"));
	EXPECT_EQ(8, sf_sysfs_u64("sequence_bits"));
	EXPECT_EQ(100, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(200, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(floor, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));
	EXPECT_EQ(0, sf_sysfs_u64("strict"));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));

	/* What was given, in /sys/module/snowflake/parameters/. */
	EXPECT_EQ(200, param_u64("worker_id"));
	EXPECT_EQ(1500000000000ULL, param_u64("epoch_ms"));
	EXPECT_EQ(4, param_u64("time_unit_ms"));
	EXPECT_EQ(5000, param_u64("catchup_threshold_ms"));

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_WORKER_SET, st.state);
	EXPECT_EQ(floor, st.floor_ms);

	before = sf_real_ms();
	n = sf_read_ids(self->fd, ids, 8);
	after = sf_real_ms();
	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		struct sf_id f = sf_decode(&self->cfg, ids[i]);

		EXPECT_EQ(100, f.dc);
		EXPECT_EQ(200, f.worker);
		EXPECT_EQ(0, f.high);
		EXPECT_LE(before - NEAR_MS, f.ms);
		EXPECT_GE(after + FUTURE_TOL_MS, f.ms);
		/* random start: below half of the 8-bit sequence space */
		if (!i)
			EXPECT_GT(128, f.seq);
	}
}

TEST_F(good, defaults_state)
{
	struct snowflake_stats st;

	load(_metadata, self, "");
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	/* worker_id not given: not set explicitly */
	EXPECT_EQ(0, st.state);
	EXPECT_EQ(0, self->cfg.worker_id);
	load(_metadata, self, "worker_id=0");
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_WORKER_SET, st.state);
	EXPECT_EQ(0, self->cfg.worker_id);
}

/* Read one ID and check it decodes to @dc/@worker and the current time. */
static uint64_t check_read(struct __test_metadata *_metadata,
			   FIXTURE_DATA(good) *self, uint64_t dc, uint64_t worker)
{
	uint64_t id, before, after;
	struct sf_id f;

	before = sf_real_ms();
	EXPECT_EQ(0, sf_read1(self->fd, &id));
	after = sf_real_ms();
	f = sf_decode(&self->cfg, id);
	EXPECT_EQ(0, id >> 63);
	EXPECT_EQ(0, f.high);
	EXPECT_EQ(dc, f.dc);
	EXPECT_EQ(worker, f.worker);
	EXPECT_LE(before - self->cfg.time_unit_ms - NEAR_MS, f.ms);
	EXPECT_GE(after + FUTURE_TOL_MS, f.ms);
	EXPECT_EQ(sf_encode(&self->cfg, f.ts, dc, worker, f.seq), id);
	return id;
}

/* 32 + 31 bits: a worker id of 2^31-1 and second ticks. */
TEST_F_TIMEOUT(good, widths_max_worker, 60)
{
	uint64_t a, b;

	load(_metadata, self, "timestamp_bits=32 time_unit_ms=1000 worker_bits=31 "
	     "datacenter_bits=0 sequence_bits=0 worker_id=2147483647");
	EXPECT_EQ(2147483647, self->cfg.worker_id);
	a = check_read(_metadata, self, 0, 2147483647);
	EXPECT_EQ(0, sf_decode(&self->cfg, a).seq);
	/* one ID per second: the next read waits for the next tick */
	b = check_read(_metadata, self, 0, 2147483647);
	EXPECT_LT(a, b);
	EXPECT_LT(sf_decode(&self->cfg, a).ts, sf_decode(&self->cfg, b).ts);
}

TEST_F(good, widths_max_datacenter_and_worker)
{
	load(_metadata, self, "timestamp_bits=31 time_unit_ms=1000 datacenter_bits=16 "
	     "worker_bits=16 sequence_bits=0 datacenter_id=65535 worker_id=65535");
	check_read(_metadata, self, 65535, 65535);
}

/*
 * 41 + 22 bits: 4 M IDs a tick; a read asking for more than 4096 gets
 * exactly 4096 (SNOWFLAKE_MAX_IDS_PER_READ), the rest of the buffer stays.
 */
TEST_F(good, widths_max_sequence_22)
{
	const size_t room = SNOWFLAKE_MAX_IDS_PER_READ + 100;
	uint64_t *ids = calloc(room, sizeof(*ids));
	ssize_t n, i;

	ASSERT_NE(NULL, ids);
	load(_metadata, self, "timestamp_bits=41 sequence_bits=22 datacenter_bits=0 "
	     "worker_bits=0");
	memset(ids, 0xcc, room * sizeof(*ids));
	n = read(self->fd, ids, room * sizeof(*ids));
	ASSERT_EQ(SNOWFLAKE_MAX_IDS_PER_READ * 8, n);
	n /= 8;
	EXPECT_TRUE(sf_all_bytes(ids + n, (room - n) * sizeof(*ids), 0xcc));
	for (i = 1; i < n; i++)
		ASSERT_EQ(ids[i - 1] + 1, ids[i]);
	EXPECT_EQ(0, sf_decode(&self->cfg, ids[0]).seq);
	EXPECT_EQ(n - 1, (ssize_t)sf_decode(&self->cfg, ids[n - 1]).seq);
	check_read(_metadata, self, 0, 0);
	free(ids);
}

TEST_F(good, widths_max_sequence_31)
{
	uint64_t *ids = calloc(SNOWFLAKE_MAX_IDS_PER_READ, sizeof(*ids));
	ssize_t n, i;

	ASSERT_NE(NULL, ids);
	load(_metadata, self, "timestamp_bits=32 time_unit_ms=1000 sequence_bits=31 "
	     "datacenter_bits=0 worker_bits=0");
	n = sf_read_ids(self->fd, ids, SNOWFLAKE_MAX_IDS_PER_READ);
	ASSERT_EQ(SNOWFLAKE_MAX_IDS_PER_READ, n);
	for (i = 1; i < n; i++)
		ASSERT_EQ(ids[i - 1] + 1, ids[i]);
	check_read(_metadata, self, 0, 0);
	free(ids);
}

/* Hour-long ticks and a minimal 1 ms tick with 0-bit fields. */
TEST_F(good, unit_hour)
{
	load(_metadata, self, "time_unit_ms=3600000 timestamp_bits=20");
	check_read(_metadata, self, 0, 0);
}

TEST_F(good, epoch_now_ish)
{
	char params[128];

	/* An epoch a minute ago: timestamp_bits=17 holds 131 s. */
	snprintf(params, sizeof(params), "epoch_ms=%" PRIu64 " timestamp_bits=17",
		 sf_real_ms() - 60000);
	load(_metadata, self, params);
	check_read(_metadata, self, 0, 0);
}

/* The node: a misc character device, mode 0444. */
TEST_F(good, device_node)
{
	char buf[64];
	struct stat st;
	unsigned int maj, min;

	load(_metadata, self, "");
	ASSERT_EQ(0, stat(SF_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0444, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(10, major(st.st_rdev));	/* MISC_MAJOR */
	ASSERT_LT(0, sf_sysfs_read_str("dev", buf, sizeof(buf)));
	ASSERT_EQ(2, sscanf(buf, "%u:%u", &maj, &min));
	EXPECT_EQ(major(st.st_rdev), maj);
	EXPECT_EQ(minor(st.st_rdev), min);
}

SF_TEST_MAIN()
