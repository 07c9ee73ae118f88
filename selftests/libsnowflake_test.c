// SPDX-License-Identifier: GPL-2.0
/*
 * libsnowflake end to end, against the real module: opening (path,
 * $SNOWFLAKE_DEVICE), next/next_n across short reads, non-blocking next_n on
 * an exhausted tick, decoding a just-issued ID against CLOCK_REALTIME, the
 * configuration, ids, floor and counters against sysfs, and the errors the
 * device gives (ENOTCONN in strict mode, EPERM for an unprivileged user).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#include <snowflake.h>

#define NOBODY		65534
/* How far the ID's time may be off CLOCK_REALTIME beyond one tick, ms. */
#define SLACK_MS	100

FIXTURE(lib) {
	struct snowflake *sf;
};

FIXTURE_SETUP(lib)
{
	self->sf = NULL;
	unsetenv(SNOWFLAKE_PATH_ENV);
	ASSERT_EQ(0, sf_reload_defaults());
	ASSERT_EQ(0, snowflake_open(&self->sf, NULL, 0));
	ASSERT_NE(NULL, self->sf);
}

FIXTURE_TEARDOWN(lib)
{
	snowflake_close(self->sf);
}

/* Reopen the fixture's handle after a reload (the old file pins nothing). */
static void reopen(struct __test_metadata *_metadata, FIXTURE_DATA(lib) *self,
		   const char *params, int flags)
{
	snowflake_close(self->sf);
	self->sf = NULL;
	ASSERT_EQ(0, sf_reload(params)) TH_LOG("reload '%s'", params);
	ASSERT_EQ(0, snowflake_open(&self->sf, SF_DEV, flags));
}

TEST_F(lib, next_and_next_n_across_short_reads)
{
	static uint64_t ids[10000];
	struct snowflake_stats before, after;
	uint64_t one;
	size_t i;

	ASSERT_LE(0, snowflake_fd(self->sf));
	ASSERT_EQ(0, snowflake_next(self->sf, &one));
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &before));
	ASSERT_EQ(10000, snowflake_next_n(self->sf, ids, SF_ARRAY_SIZE(ids)));
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &after));

	EXPECT_LT(one, ids[0]);
	for (i = 1; i < SF_ARRAY_SIZE(ids); i++)
		ASSERT_LT(ids[i - 1], ids[i]) TH_LOG("ids[%zu]", i);
	/* 10000 IDs take at least three reads of at most 4096 IDs each. */
	EXPECT_EQ(10000, after.ids_issued - before.ids_issued);
	EXPECT_LE(3, after.reads - before.reads);
	/* n == 0 asks for nothing and gets nothing. */
	EXPECT_EQ(0, snowflake_next_n(self->sf, ids, 0));
}

TEST_F(lib, open_paths_and_environment)
{
	struct snowflake *sf = NULL;
	uint64_t id;

	/* An explicit path. */
	ASSERT_EQ(0, snowflake_open(&sf, SF_DEV, 0));
	EXPECT_EQ(0, snowflake_next(sf, &id));
	snowflake_close(sf);

	/* NULL: $SNOWFLAKE_DEVICE names it. */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, "/nonexistent/snowflake", 1));
	sf = (struct snowflake *)1;
	EXPECT_EQ(-ENOENT, snowflake_open(&sf, NULL, 0));
	EXPECT_EQ(NULL, sf);
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, SF_DEV, 1));
	ASSERT_EQ(0, snowflake_open(&sf, NULL, 0));
	EXPECT_EQ(0, snowflake_next(sf, &id));
	snowflake_close(sf);
	/* An explicit path wins over the environment. */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, "/nonexistent/snowflake", 1));
	ASSERT_EQ(0, snowflake_open(&sf, SF_DEV, 0));
	snowflake_close(sf);
	/* Empty: the default path. */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, "", 1));
	ASSERT_EQ(0, snowflake_open(&sf, NULL, 0));
	snowflake_close(sf);
	unsetenv(SNOWFLAKE_PATH_ENV);

	/* Unknown flags. */
	EXPECT_EQ(-EINVAL, snowflake_open(&sf, SF_DEV, 0x100));
	/* Not the device (not a misc character device): refused at open. */
	sf = (struct snowflake *)1;
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, "/proc/self/stat", 0));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, "/dev/null", 0));
	/*
	 * Issue 24: each generator is known by its sysfs name: the real
	 * /dev/uuidv7 is not /dev/snowflake and the reverse; each opens as
	 * itself.
	 */
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, "/dev/" SNOWFLAKE_UUID_DEVICE_NAME, 0));
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, SF_DEV, 0));
	ASSERT_EQ(0, snowflake_uuid_open(&sf, "/dev/" SNOWFLAKE_UUID_DEVICE_NAME, 0));
	snowflake_close(sf);
	ASSERT_EQ(0, snowflake_open(&sf, SF_DEV, SNOWFLAKE_NONBLOCK));
	snowflake_close(sf);
	/* The descriptor polls readable while IDs are available. */
	EXPECT_EQ(POLLIN, sf_poll_in(snowflake_fd(self->sf), 1000) & POLLIN);
}

/*
 * sequence_bits=2 time_unit_ms=1000: 4 IDs per second.  A non-blocking
 * next_n() asking for more gets what is left in the tick, then -EAGAIN.
 */
TEST_F(lib, nonblocking_next_n_on_an_exhausted_tick)
{
	struct snowflake_stats before, after;
	struct snowflake_config cfg;
	uint64_t ids[64], id, tick;
	long n = 0, n2 = 0;
	int attempt, r = 0;

	reopen(_metadata, self, "sequence_bits=2 time_unit_ms=1000", SNOWFLAKE_NONBLOCK);
	ASSERT_EQ(0, snowflake_get_config(self->sf, &cfg));
	ASSERT_EQ(2, cfg.sequence_bits);

	/*
	 * All three calls must fall in one tick: retry when a tick boundary
	 * split them.  One read may itself span a boundary (a guest stalled
	 * between two blocks of it: CI saw 8 IDs in one call), so what holds
	 * on every attempt is per tick: at most 4 IDs of each tick.
	 */
	for (attempt = 0; attempt < 5; attempt++) {
		long i, in_tick = 0;

		ASSERT_EQ(0, snowflake_get_stats(self->sf, &before));
		n = snowflake_next_n(self->sf, ids, SF_ARRAY_SIZE(ids));
		ASSERT_LE(1, n) TH_LOG("next_n: %ld (%s)", n, snowflake_strerror((int)n));
		n2 = snowflake_next_n(self->sf, ids + n, SF_ARRAY_SIZE(ids) - (size_t)n);
		r = snowflake_next(self->sf, &id);
		ASSERT_EQ(0, snowflake_get_stats(self->sf, &after));
		tick = sf_decode(&cfg, ids[0]).ts;
		for (i = 0; i < n; i++) {
			if (i && sf_decode(&cfg, ids[i]).ts != sf_decode(&cfg, ids[i - 1]).ts)
				in_tick = 0;
			ASSERT_GE(4, ++in_tick) TH_LOG("ID %ld of %ld: 5th of its tick", i, n);
		}
		if (n2 == -EAGAIN && r == -EAGAIN &&
		    sf_decode(&cfg, ids[n - 1]).ts == tick)
			break;
		TH_LOG("attempt %d: %ld IDs over ticks %llu-%llu, then %ld, %d: again",
		       attempt + 1, n, (unsigned long long)tick,
		       (unsigned long long)sf_decode(&cfg, ids[n - 1]).ts, n2, r);
		sf_sleep_ms(1000);
	}
	ASSERT_GE(4, n);
	EXPECT_EQ(-EAGAIN, n2);
	EXPECT_EQ(-EAGAIN, r);
	EXPECT_LE(2, after.eagain - before.eagain);
	EXPECT_EQ((uint64_t)n, after.ids_issued - before.ids_issued);

	/* A blocking handle waits for the next tick instead. */
	{
		struct snowflake *blk;
		uint64_t next;

		ASSERT_EQ(0, snowflake_open(&blk, SF_DEV, 0));
		ASSERT_EQ(0, snowflake_next(blk, &next));
		EXPECT_LT(ids[n - 1], next);
		snowflake_close(blk);
	}
}

/* The decoded time of a just-issued ID is now, to one tick. */
static void check_decode_now(struct __test_metadata *_metadata, struct snowflake *sf,
			     uint32_t dc, uint32_t worker)
{
	struct snowflake_config cfg;
	struct snowflake_parts p;
	uint64_t t0, t1, id, back;

	ASSERT_EQ(0, snowflake_set_ids(sf, dc, worker));
	ASSERT_EQ(0, snowflake_get_config(sf, &cfg));
	EXPECT_EQ(dc, cfg.datacenter_id);
	EXPECT_EQ(worker, cfg.worker_id);

	t0 = sf_real_ms();
	ASSERT_EQ(0, snowflake_next(sf, &id));
	t1 = sf_real_ms();
	ASSERT_EQ(0, snowflake_decode(&cfg, id, &p));
	EXPECT_EQ(dc, p.datacenter);
	EXPECT_EQ(worker, p.worker);
	EXPECT_EQ(cfg.epoch_ms + p.timestamp * cfg.time_unit_ms, p.unix_ms);
	EXPECT_LE(t0, p.unix_ms + cfg.time_unit_ms + SLACK_MS)
		TH_LOG("ID time %" PRIu64 ", CLOCK_REALTIME %" PRIu64 "..%" PRIu64,
		       p.unix_ms, t0, t1);
	EXPECT_GE(t1 + SLACK_MS, p.unix_ms)
		TH_LOG("ID time %" PRIu64 ", CLOCK_REALTIME %" PRIu64 "..%" PRIu64,
		       p.unix_ms, t0, t1);
	/* The library's decoder agrees with the test's own. */
	EXPECT_EQ(sf_decode(&cfg, id).seq, p.sequence);
	EXPECT_EQ(sf_decode(&cfg, id).ts, p.timestamp);
	/* compose() is decode()'s inverse. */
	ASSERT_EQ(0, snowflake_compose(&cfg, &p, &back));
	EXPECT_EQ(id, back);
}

TEST_F(lib, decode_of_a_just_issued_id_default_layout)
{
	check_decode_now(_metadata, self->sf, 17, 29);
}

TEST_F(lib, decode_of_a_just_issued_id_other_layout)
{
	reopen(_metadata, self,
	       "time_unit_ms=1000 timestamp_bits=40 datacenter_bits=3 worker_bits=4 sequence_bits=8",
	       0);
	check_decode_now(_metadata, self->sf, 6, 11);
}

TEST_F(lib, format_and_parse_round_trip_real_ids)
{
	static const enum snowflake_format fmts[] = {
		SNOWFLAKE_FORMAT_DEC, SNOWFLAKE_FORMAT_HEX, SNOWFLAKE_FORMAT_JSON,
	};
	char buf[SNOWFLAKE_FORMAT_MAX], want[32];
	uint64_t ids[8], back;
	size_t i, f;

	ASSERT_EQ(8, snowflake_next_n(self->sf, ids, 8));
	for (i = 0; i < 8; i++) {
		for (f = 0; f < SF_ARRAY_SIZE(fmts); f++) {
			ASSERT_LT(0, snowflake_format(ids[i], fmts[f], buf, sizeof(buf)));
			ASSERT_EQ(0, snowflake_parse(buf, &back)) TH_LOG("'%s'", buf);
			EXPECT_EQ(ids[i], back);
		}
		snowflake_format(ids[i], SNOWFLAKE_FORMAT_DEC, buf, sizeof(buf));
		snprintf(want, sizeof(want), "%" PRIu64, ids[i]);
		EXPECT_STREQ(want, buf);
		snowflake_format(ids[i], SNOWFLAKE_FORMAT_JSON, buf, sizeof(buf));
		snprintf(want, sizeof(want), "\"%" PRIu64 "\"", ids[i]);
		EXPECT_STREQ(want, buf);
	}
}

/* Every field of GET_CONFIG is the sysfs file of the same name. */
static void expect_config_is_sysfs(struct __test_metadata *_metadata,
				   const struct snowflake_config *c)
{
	EXPECT_EQ(c->epoch_ms, sf_sysfs_u64("epoch_ms"));
	EXPECT_EQ(c->time_unit_ms, sf_sysfs_u64("time_unit_ms"));
	EXPECT_EQ(c->timestamp_bits, sf_sysfs_u64("timestamp_bits"));
	EXPECT_EQ(c->datacenter_bits, sf_sysfs_u64("datacenter_bits"));
	EXPECT_EQ(c->worker_bits, sf_sysfs_u64("worker_bits"));
	EXPECT_EQ(c->sequence_bits, sf_sysfs_u64("sequence_bits"));
	EXPECT_EQ(c->datacenter_id, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(c->worker_id, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(!!(c->flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE),
		  sf_sysfs_u64("random_sequence"));
}

TEST_F(lib, config_ids_and_floor_match_sysfs)
{
	struct snowflake_config c, def;
	uint64_t floor_ms, last, id, now;

	ASSERT_EQ(0, snowflake_get_config(self->sf, &c));
	snowflake_default_layout(&def);
	EXPECT_TRUE(sf_config_eq(&def, &c));
	EXPECT_EQ(0, snowflake_check_layout(&c));
	expect_config_is_sysfs(_metadata, &c);

	/* set_config before the first ID: a new layout and the random flag. */
	c.time_unit_ms = 10;
	c.sequence_bits = 10;
	c.worker_bits = 7;
	c.worker_id = 100;
	c.datacenter_id = 2;
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	ASSERT_EQ(0, snowflake_set_config(self->sf, &c));
	ASSERT_EQ(0, snowflake_get_config(self->sf, &c));
	EXPECT_EQ(10, c.time_unit_ms);
	EXPECT_EQ(100, c.worker_id);
	expect_config_is_sysfs(_metadata, &c);
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));

	/* set_ids. */
	ASSERT_EQ(0, snowflake_set_ids(self->sf, 3, 127));
	EXPECT_EQ(3, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(127, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(-EINVAL, snowflake_set_ids(self->sf, 3, 128));
	EXPECT_EQ(-EINVAL, snowflake_set_ids(self->sf, 32, 1));
	EXPECT_EQ(127, sf_sysfs_u64("worker_id"));

	/* The floor: raise it below the clock, read it back both ways. */
	ASSERT_EQ(0, snowflake_get_floor(self->sf, &floor_ms, &last));
	EXPECT_EQ(sf_sysfs_u64("floor_ms"), floor_ms);
	EXPECT_EQ(0, last);
	now = sf_real_ms();
	ASSERT_EQ(0, snowflake_set_floor(self->sf, now - 5000));
	ASSERT_EQ(0, snowflake_get_floor(self->sf, &floor_ms, &last));
	EXPECT_EQ(now - 5000, floor_ms);
	EXPECT_EQ(now - 5000, sf_sysfs_u64("floor_ms"));
	/* Lower: accepted, changes nothing. */
	EXPECT_EQ(0, snowflake_set_floor(self->sf, 1));
	EXPECT_EQ(now - 5000, sf_sysfs_u64("floor_ms"));

	ASSERT_EQ(0, snowflake_next(self->sf, &id));
	ASSERT_EQ(0, snowflake_get_floor(self->sf, &floor_ms, &last));
	EXPECT_EQ(sf_sysfs_u64("last_timestamp_ms"), last);
	EXPECT_EQ(sf_decode(&c, id).ms, last);

	/* After the first ID the layout is fixed; ids and flags are not. */
	c.sequence_bits = 9;
	EXPECT_EQ(-EBUSY, snowflake_set_config(self->sf, &c));
	c.sequence_bits = 10;
	c.flags = 0;
	c.worker_id = 5;
	EXPECT_EQ(0, snowflake_set_config(self->sf, &c));
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
	EXPECT_EQ(5, sf_sysfs_u64("worker_id"));
	/* Unknown flags. */
	c.flags = 0x80;
	EXPECT_EQ(-EINVAL, snowflake_set_config(self->sf, &c));
}

TEST_F(lib, stats_match_sysfs)
{
	static const char * const counters[] = {
		"ids_issued", "reads", "exhausted_waits", "eagain",
		"clock_catchups", "floor_jumps", "refused_reads",
	};
	struct snowflake_stats st;
	uint64_t ids[100], c0, c1, v[SF_ARRAY_SIZE(counters)];
	char name[64];
	size_t i;

	ASSERT_EQ(100, snowflake_next_n(self->sf, ids, 100));
	c0 = sf_sysfs_u64("clock_ms");
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &st));
	c1 = sf_sysfs_u64("clock_ms");
	/* Nothing reads in between: the counters are the same. */
	for (i = 0; i < SF_ARRAY_SIZE(counters); i++) {
		snprintf(name, sizeof(name), "statistics/%s", counters[i]);
		v[i] = sf_sysfs_u64(name);
	}
	EXPECT_EQ(v[0], st.ids_issued);
	EXPECT_EQ(v[1], st.reads);
	EXPECT_EQ(v[2], st.exhausted_waits);
	EXPECT_EQ(v[3], st.eagain);
	EXPECT_EQ(v[4], st.clock_catchups);
	EXPECT_EQ(v[5], st.floor_jumps);
	EXPECT_EQ(v[6], st.refused_reads);
	EXPECT_LE(100, st.ids_issued);
	EXPECT_LE(c0, st.clock_ms);
	EXPECT_GE(c1, st.clock_ms);
	EXPECT_EQ(sf_sysfs_u64("clock_offset_ms"), st.clock_offset_ms);
	EXPECT_EQ(sf_sysfs_u64("last_timestamp_ms"), st.last_timestamp_ms);
	EXPECT_EQ(sf_sysfs_u64("floor_ms"), st.floor_ms);
	EXPECT_EQ(0, st.state & (SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_REFUSING));
	EXPECT_TRUE(st.state & SNOWFLAKE_STATE_LOCKED);
}

TEST_F(lib, strict_mode_gives_enotconn_until_a_worker_id_is_set)
{
	struct snowflake_stats st;
	uint64_t ids[4];

	reopen(_metadata, self, "strict=1", 0);
	EXPECT_EQ(-ENOTCONN, snowflake_next(self->sf, ids));
	EXPECT_EQ(-ENOTCONN, snowflake_next_n(self->sf, ids, 4));
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &st));
	EXPECT_TRUE(st.state & SNOWFLAKE_STATE_STRICT);
	EXPECT_TRUE(st.state & SNOWFLAKE_STATE_REFUSING);
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	EXPECT_LE(2, st.refused_reads);
	EXPECT_STRNE("unknown error", snowflake_strerror(-ENOTCONN));

	/* Setting the ids does not assign the worker id... */
	ASSERT_EQ(0, snowflake_set_ids(self->sf, 0, 9));
	EXPECT_EQ(-ENOTCONN, snowflake_next_n(self->sf, ids, 4));
	EXPECT_EQ(1, sf_sysfs_u64("refusing"));
	/* ...assigning does. */
	ASSERT_EQ(0, snowflake_assign_ids(self->sf, 0, 9));
	EXPECT_EQ(4, snowflake_next_n(self->sf, ids, 4));
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
}

/* The fence through the library: -ENOTCONN while fenced, a counter. */
TEST_F(lib, fence_refuses_until_lifted)
{
	uint64_t before, after, fences = 99;
	int on = 7;

	ASSERT_EQ(0, snowflake_get_fence(self->sf, &on, &fences));
	EXPECT_EQ(0, on);
	EXPECT_EQ(0, fences);
	EXPECT_EQ(-EINVAL, snowflake_get_fence(self->sf, NULL, &fences));
	ASSERT_EQ(0, snowflake_next(self->sf, &before));
	ASSERT_EQ(0, snowflake_set_fence(self->sf, 1));
	EXPECT_EQ(-ENOTCONN, snowflake_next(self->sf, &after));
	EXPECT_EQ(-ENOTCONN, snowflake_next_n(self->sf, &after, 1));
	ASSERT_EQ(0, snowflake_get_fence(self->sf, &on, NULL));
	EXPECT_EQ(1, on);
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	/* Any nonzero value fences; fencing again is not counted. */
	ASSERT_EQ(0, snowflake_set_fence(self->sf, -5));
	ASSERT_EQ(0, snowflake_get_fence(self->sf, &on, &fences));
	EXPECT_EQ(1, fences);
	ASSERT_EQ(0, snowflake_set_fence(self->sf, 0));
	ASSERT_EQ(0, snowflake_get_fence(self->sf, &on, &fences));
	EXPECT_EQ(0, on);
	EXPECT_EQ(1, fences);
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
	ASSERT_EQ(0, snowflake_next(self->sf, &after));
	EXPECT_GT(after, before);
}

/*
 * snowflake_set_lease_window(): the pair, the deadline and the window in one
 * call.  On a module older than the window (no lease_ceiling_ms file) every
 * call is -EOPNOTSUPP, whichever error the module gave (E2BIG for the
 * fields it does not know, EINVAL for the flag alone), and nothing changes.
 */
TEST_F(lib, lease_window)
{
	uint64_t deadline = sf_clock_ns(CLOCK_BOOTTIME) + 600 * NSEC_PER_SEC;
	struct snowflake_stats st;
	uint64_t id, before, c0;
	uint32_t forks = 0;

	ASSERT_EQ(0, snowflake_get_vm_forks(self->sf, &forks));
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &st));
	c0 = st.clock_ms;
	if (!sf_path_exists(SF_SYSFS "/lease_ceiling_ms")) {
		EXPECT_EQ(-EOPNOTSUPP, snowflake_set_lease_window(self->sf, 1, 7, deadline, forks,
								  c0, c0 + 60000));
		EXPECT_EQ(-EOPNOTSUPP, snowflake_set_lease_window(self->sf, 1, 7, deadline, forks,
								  0, 0));
		EXPECT_EQ(0, sf_sysfs_u64("worker_id"));
		EXPECT_STRNE("unknown error", snowflake_strerror(-EOPNOTSUPP));
		TH_LOG("a module without the window: -EOPNOTSUPP");
		return;
	}
	ASSERT_EQ(0, snowflake_set_lease_window(self->sf, 1, 7, deadline, forks, c0 + 1000,
						 c0 + 60000));
	EXPECT_EQ(7, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(1, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(deadline, sf_sysfs_u64("lease_deadline_ns"));
	EXPECT_EQ(c0 + 1000, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(c0 + 60000, sf_sysfs_u64("lease_ceiling_ms"));
	ASSERT_EQ(0, snowflake_next(self->sf, &before));
	/* The module's own errors come through, and change nothing. */
	EXPECT_EQ(-EINVAL, snowflake_set_lease_window(self->sf, 1, 8, deadline, forks, 0, 0));
	EXPECT_EQ(-EINVAL, snowflake_set_lease_window(self->sf, 1, 8, deadline, forks,
						      c0 + 2, c0 + 1));
	EXPECT_EQ(-EOVERFLOW, snowflake_set_lease_window(self->sf, 1, 8, deadline, forks,
							 ~0ULL >> 1, SNOWFLAKE_NO_CEILING));
	EXPECT_EQ(-ESTALE, snowflake_set_lease_window(self->sf, 1, 8, deadline, forks + 1,
						      0, SNOWFLAKE_NO_CEILING));
	EXPECT_EQ(7, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(c0 + 60000, sf_sysfs_u64("lease_ceiling_ms"));
	/* At the ceiling (a floor past it): -ENOTCONN and the state bit. */
	ASSERT_EQ(0, snowflake_set_floor(self->sf, c0 + 60001));
	EXPECT_EQ(-ENOTCONN, snowflake_next(self->sf, &id));
	ASSERT_EQ(0, snowflake_get_stats(self->sf, &st));
	EXPECT_EQ(SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING,
		  st.state & (SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING));
	/* A renewal with a higher ceiling: larger IDs again. */
	ASSERT_EQ(0, snowflake_set_lease_window(self->sf, 1, 7, deadline, forks, 0,
						 c0 + 120000));
	ASSERT_EQ(0, snowflake_next(self->sf, &id));
	EXPECT_GT(id, before);
}

/* As nobody: reads and the GET ioctls work, the SET ones give -EPERM. */
TEST_F(lib, unprivileged_user_gets_eperm_and_changes_nothing)
{
	struct snowflake_config before, after;
	uint64_t floor_before, last;
	pid_t pid;

	ASSERT_EQ(0, snowflake_get_config(self->sf, &before));
	ASSERT_EQ(0, snowflake_get_floor(self->sf, &floor_before, &last));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct snowflake_config c;
		struct snowflake_stats st;
		struct snowflake *sf;
		uint64_t id, fl, lt;
		int on = 1;

		CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %m");
		CHILD_CHECK(setgid(NOBODY) == 0, "setgid: %m");
		CHILD_CHECK(setuid(NOBODY) == 0, "setuid: %m");
		CHILD_CHECK(snowflake_open(&sf, NULL, 0) == 0, "open as nobody");
		CHILD_CHECK(snowflake_next(sf, &id) == 0, "next as nobody");
		CHILD_CHECK(snowflake_get_config(sf, &c) == 0, "get_config");
		CHILD_CHECK(snowflake_get_stats(sf, &st) == 0, "get_stats");
		CHILD_CHECK(snowflake_get_floor(sf, &fl, &lt) == 0, "get_floor");
		CHILD_CHECK(snowflake_set_ids(sf, 1, 2) == -EPERM, "set_ids");
		c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
		CHILD_CHECK(snowflake_set_config(sf, &c) == -EPERM, "set_config");
		CHILD_CHECK(snowflake_set_floor(sf, sf_real_ms()) == -EPERM, "set_floor");
		CHILD_CHECK(snowflake_set_fence(sf, 1) == -EPERM, "set_fence");
		CHILD_CHECK(snowflake_set_fence(sf, 0) == -EPERM, "set_fence off");
		CHILD_CHECK(snowflake_get_fence(sf, &on, NULL) == 0 && !on, "get_fence");
		CHILD_CHECK(strcmp(snowflake_strerror(-EPERM), "unknown error"), "strerror");
		snowflake_close(sf);
		_exit(0);
	}
	ASSERT_EQ(0, sf_wait_child(pid));

	ASSERT_EQ(0, snowflake_get_config(self->sf, &after));
	EXPECT_TRUE(sf_config_eq(&before, &after));
	EXPECT_EQ(0, snowflake_get_floor(self->sf, &last, &last));
	EXPECT_EQ(floor_before, sf_sysfs_u64("floor_ms"));
}

/* One handle shared by threads: the IDs are unique, each thread's increasing. */
#define NTHREADS	4
#define PER_THREAD	3000

struct thread_arg {
	struct snowflake *sf;
	uint64_t *ids;
	long got;
	bool increasing;
};

static void *reader(void *p)
{
	struct thread_arg *a = p;
	long i;

	a->got = snowflake_next_n(a->sf, a->ids, PER_THREAD);
	a->increasing = true;
	for (i = 1; i < a->got; i++)
		if (a->ids[i - 1] >= a->ids[i])
			a->increasing = false;
	return NULL;
}

TEST_F(lib, one_handle_shared_by_threads)
{
	static uint64_t all[NTHREADS * PER_THREAD];
	struct thread_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	size_t i, dups = 0;

	for (i = 0; i < NTHREADS; i++) {
		args[i] = (struct thread_arg){ .sf = self->sf, .ids = all + i * PER_THREAD };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reader, &args[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(PER_THREAD, args[i].got);
		EXPECT_TRUE(args[i].increasing);
	}
	qsort(all, SF_ARRAY_SIZE(all), sizeof(all[0]), sf_cmp_u64);
	for (i = 1; i < SF_ARRAY_SIZE(all); i++)
		if (all[i - 1] == all[i])
			dups++;
	EXPECT_EQ(0, dups);
}

SF_TEST_MAIN()
