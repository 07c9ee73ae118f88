// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Native unit tests of libsnowflake: no device needed.  Regular files,
 * FIFOs and pipes stand in for /dev/snowflake, since the library only reads
 * 8-byte values from a file descriptor.  Built under ASan + UBSan; output is
 * kselftest TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "snowflake.h"
#include "internal.h"

/*
 * Regular files, FIFOs and /dev/null stand in for the device: the library
 * built for the tests (SF_TESTING) accepts them while this is set.
 * open_refuses_non_device clears it to test what users get.
 */
__attribute__((constructor)) static void accept_stand_ins(void)
{
	sf_testing_any_file = true;
}

/* How many file descriptors this process has open. */
static int count_fds(void)
{
	int n = 0;
	char path[64];

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* The layouts the round-trip tests cover. */
struct layout {
	unsigned int ts, dc, wk, seq, unit;
};

static const struct layout layouts[] = {
	{ 41, 5, 5, 12, 1 },	/* the default */
	{ 32, 0, 31, 0, 1000 },
	{ 63, 0, 0, 0, 1 },
	{ 41, 0, 0, 22, 1 },
	{ 1, 31, 31, 0, 3600000 },
	{ 1, 0, 0, 0, 1 },
	{ 20, 10, 2, 31, 60000 },
};

static void make_layout(struct snowflake_config *c, const struct layout *l)
{
	snowflake_default_layout(c);
	c->timestamp_bits = l->ts;
	c->datacenter_bits = l->dc;
	c->worker_bits = l->wk;
	c->sequence_bits = l->seq;
	c->time_unit_ms = l->unit;
}

static uint64_t mask(unsigned int bits)
{
	return bits ? ~0ULL >> (64 - bits) : 0;
}

/* A fresh temporary directory per test; removed by the test. */
static char *tmpdir(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(buf, len, "%s/libsnowflake-test.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(buf);
}

static void write_ids_file(const char *path, uint64_t first, size_t n)
{
	FILE *f = fopen(path, "wb");

	for (size_t i = 0; i < n; i++) {
		uint64_t v = first + i;

		fwrite(&v, sizeof(v), 1, f);
	}
	fclose(f);
}

TEST(default_layout)
{
	struct snowflake_config c;

	memset(&c, 0xff, sizeof(c));
	snowflake_default_layout(&c);
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS, c.epoch_ms);
	EXPECT_EQ(1U, c.time_unit_ms);
	EXPECT_EQ(41, c.timestamp_bits);
	EXPECT_EQ(5, c.datacenter_bits);
	EXPECT_EQ(5, c.worker_bits);
	EXPECT_EQ(12, c.sequence_bits);
	EXPECT_EQ(0U, c.datacenter_id);
	EXPECT_EQ(0U, c.worker_id);
	EXPECT_EQ(0U, c.flags);
	EXPECT_EQ(0U, c.__reserved);
	EXPECT_EQ(0, snowflake_check_layout(&c));
	c.flags = SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	c.datacenter_id = 31;
	c.worker_id = 31;
	EXPECT_EQ(0, snowflake_check_layout(&c));
}

/* The README's example: the layout of an ID, bit by bit. */
TEST(decode_default_known)
{
	struct snowflake_config c;
	struct snowflake_parts p;
	uint64_t id = (1000ULL << 22) | (3ULL << 17) | (7ULL << 12) | 42;

	snowflake_default_layout(&c);
	ASSERT_EQ(0, snowflake_decode(&c, id, &p));
	EXPECT_EQ(1000U, p.timestamp);
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS + 1000, p.unix_ms);
	EXPECT_EQ(3U, p.datacenter);
	EXPECT_EQ(7U, p.worker);
	EXPECT_EQ(42U, p.sequence);
	EXPECT_EQ(0, snowflake_decode(&c, 0, &p));
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS, p.unix_ms);
}

/* Every field alone at its maximum, all at once, and a few mixes. */
TEST(roundtrip_every_layout_at_max)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		struct snowflake_config c;
		struct snowflake_parts cases[6], out;

		make_layout(&c, l);
		ASSERT_EQ(0, snowflake_check_layout(&c)) TH_LOG("layout %zu", i);
		memset(cases, 0, sizeof(cases));
		cases[0].timestamp = mask(l->ts);
		cases[1].datacenter = (uint32_t)mask(l->dc);
		cases[2].worker = (uint32_t)mask(l->wk);
		cases[3].sequence = (uint32_t)mask(l->seq);
		cases[4].timestamp = mask(l->ts);
		cases[4].datacenter = (uint32_t)mask(l->dc);
		cases[4].worker = (uint32_t)mask(l->wk);
		cases[4].sequence = (uint32_t)mask(l->seq);
		cases[5].timestamp = mask(l->ts) >> 1;
		cases[5].datacenter = (uint32_t)(mask(l->dc) >> 1);
		cases[5].sequence = (uint32_t)(mask(l->seq) & 0x5555);
		for (size_t k = 0; k < 6; k++) {
			uint64_t id = ~0ULL;
			unsigned int sum = l->ts + l->dc + l->wk + l->seq;

			ASSERT_EQ(0, snowflake_compose(&c, &cases[k], &id))
				TH_LOG("layout %zu case %zu", i, k);
			EXPECT_EQ(0ULL, id >> 63);
			EXPECT_EQ(0ULL, id & ~mask(sum));
			ASSERT_EQ(0, snowflake_decode(&c, id, &out));
			EXPECT_EQ(cases[k].timestamp, out.timestamp);
			EXPECT_EQ(cases[k].datacenter, out.datacenter);
			EXPECT_EQ(cases[k].worker, out.worker);
			EXPECT_EQ(cases[k].sequence, out.sequence);
			EXPECT_EQ(c.epoch_ms + cases[k].timestamp * l->unit, out.unix_ms);
		}
		/* All fields at max is the largest ID of the layout. */
		{
			uint64_t id;

			ASSERT_EQ(0, snowflake_compose(&c, &cases[4], &id));
			EXPECT_EQ(mask(l->ts + l->dc + l->wk + l->seq), id);
		}
	}
}

/* decode(compose(x)) == x and compose(decode(id)) == id over many IDs. */
TEST(roundtrip_pseudorandom)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct snowflake_config c;
		unsigned int sum;

		make_layout(&c, &layouts[i]);
		sum = layouts[i].ts + layouts[i].dc + layouts[i].wk + layouts[i].seq;
		for (int k = 0; k < 10000; k++) {
			struct snowflake_parts p;
			uint64_t id, back;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			id = x & mask(sum);
			ASSERT_EQ(0, snowflake_decode(&c, id, &p));
			ASSERT_EQ(0, snowflake_compose(&c, &p, &back));
			ASSERT_EQ(id, back);
		}
	}
}

TEST(bad_layouts_rejected)
{
	struct snowflake_config good, c;
	struct snowflake_parts p;
	uint64_t id;

	snowflake_default_layout(&good);
	memset(&p, 0, sizeof(p));
#define BAD(stmt) do { \
		c = good; \
		stmt; \
		EXPECT_EQ(-EINVAL, snowflake_check_layout(&c)) TH_LOG("%s", #stmt); \
		EXPECT_EQ(-EINVAL, snowflake_decode(&c, 0, &p)) TH_LOG("%s", #stmt); \
		EXPECT_EQ(-EINVAL, snowflake_compose(&c, &p, &id)) TH_LOG("%s", #stmt); \
	} while (0)
	BAD(c.time_unit_ms = 0);
	BAD(c.time_unit_ms = SNOWFLAKE_MAX_TIME_UNIT_MS + 1);
	BAD(c.time_unit_ms = UINT32_MAX);
	BAD(c.timestamp_bits = 0);
	BAD(c.datacenter_bits = 32);
	BAD(c.worker_bits = 32);
	BAD(c.sequence_bits = 32);
	BAD(c.timestamp_bits = 42);		/* sum 64 */
	BAD(c.timestamp_bits = 255);
	BAD(c.datacenter_id = 32);
	BAD(c.worker_id = 32);
	BAD((c.datacenter_bits = 0, c.datacenter_id = 1));
	BAD((c.worker_bits = 0, c.worker_id = 1));
	BAD(c.flags = 0x2);
	BAD(c.__reserved = 1);
#undef BAD
	/* The limits themselves are fine. */
	c = good;
	c.time_unit_ms = SNOWFLAKE_MAX_TIME_UNIT_MS;
	EXPECT_EQ(0, snowflake_check_layout(&c));
	c = good;
	c.timestamp_bits = 1;
	c.datacenter_bits = 31;
	c.worker_bits = 31;
	c.sequence_bits = 0;
	c.datacenter_id = INT32_MAX;
	c.worker_id = INT32_MAX;
	EXPECT_EQ(0, snowflake_check_layout(&c));
	c.worker_bits = 30;
	c.sequence_bits = 1;
	EXPECT_EQ(-EINVAL, snowflake_check_layout(&c));	/* worker_id too big */
	/* NULL pointers. */
	EXPECT_EQ(-EINVAL, snowflake_check_layout(NULL));
	EXPECT_EQ(-EINVAL, snowflake_decode(NULL, 0, &p));
	EXPECT_EQ(-EINVAL, snowflake_decode(&good, 0, NULL));
	EXPECT_EQ(-EINVAL, snowflake_compose(NULL, &p, &id));
	EXPECT_EQ(-EINVAL, snowflake_compose(&good, NULL, &id));
	EXPECT_EQ(-EINVAL, snowflake_compose(&good, &p, NULL));
}

TEST(compose_erange_per_field)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		struct snowflake_config c;
		struct snowflake_parts p;
		uint64_t id = 12345;

		make_layout(&c, l);
		memset(&p, 0, sizeof(p));
		p.timestamp = mask(l->ts) + 1;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id)) TH_LOG("layout %zu ts", i);
		p.timestamp = UINT64_MAX;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id));
		memset(&p, 0, sizeof(p));
		p.datacenter = (uint32_t)mask(l->dc) + 1;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id)) TH_LOG("layout %zu dc", i);
		memset(&p, 0, sizeof(p));
		p.worker = (uint32_t)mask(l->wk) + 1;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id)) TH_LOG("layout %zu worker", i);
		memset(&p, 0, sizeof(p));
		p.sequence = (uint32_t)mask(l->seq) + 1;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id)) TH_LOG("layout %zu seq", i);
		memset(&p, 0, sizeof(p));
		p.sequence = UINT32_MAX;
		EXPECT_EQ(-ERANGE, snowflake_compose(&c, &p, &id));
		EXPECT_EQ(12345ULL, id);	/* untouched on error */
		/* unix_ms is ignored. */
		memset(&p, 0, sizeof(p));
		p.unix_ms = UINT64_MAX;
		EXPECT_EQ(0, snowflake_compose(&c, &p, &id));
		EXPECT_EQ(0ULL, id);
	}
}

TEST(decode_rejects_bits_above_widths)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		unsigned int sum = l->ts + l->dc + l->wk + l->seq;
		struct snowflake_config c;
		struct snowflake_parts p;

		make_layout(&c, l);
		EXPECT_EQ(-EINVAL, snowflake_decode(&c, 1ULL << 63, &p));
		EXPECT_EQ(-EINVAL, snowflake_decode(&c, UINT64_MAX, &p));
		for (unsigned int b = sum; b < 64; b++) {
			EXPECT_EQ(-EINVAL, snowflake_decode(&c, 1ULL << b, &p))
				TH_LOG("layout %zu bit %u", i, b);
		}
		EXPECT_EQ(0, snowflake_decode(&c, mask(sum), &p));
	}
}

/* unix_ms = epoch_ms + timestamp * time_unit_ms must fit 64 bits. */
TEST(decode_unix_ms_overflow)
{
	struct snowflake_config c;
	struct snowflake_parts p;

	snowflake_default_layout(&c);
	c.timestamp_bits = 63;
	c.datacenter_bits = c.worker_bits = c.sequence_bits = 0;
	c.time_unit_ms = 1;
	EXPECT_EQ(0, snowflake_decode(&c, INT64_MAX, &p));
	EXPECT_EQ((uint64_t)INT64_MAX + SNOWFLAKE_TWITTER_EPOCH_MS, p.unix_ms);
	c.time_unit_ms = 3;
	EXPECT_EQ(-EOVERFLOW, snowflake_decode(&c, INT64_MAX, &p));
	c.time_unit_ms = SNOWFLAKE_MAX_TIME_UNIT_MS;
	EXPECT_EQ(-EOVERFLOW, snowflake_decode(&c, 1ULL << 50, &p));
	EXPECT_EQ(0, snowflake_decode(&c, 1ULL << 40, &p));
}

TEST(format_known)
{
	static const struct {
		uint64_t id;
		const char *dec, *hex;
	} t[] = {
		{ 0, "0", "0x0" },
		{ 1, "1", "0x1" },
		{ 10, "10", "0xa" },
		{ 255, "255", "0xff" },
		{ 1795219200000000000ULL, "1795219200000000000", "0x18e9e659d5f60000" },
		{ INT64_MAX, "9223372036854775807", "0x7fffffffffffffff" },
		{ UINT64_MAX, "18446744073709551615", "0xffffffffffffffff" },
	};
	char buf[SNOWFLAKE_FORMAT_MAX], want[SNOWFLAKE_FORMAT_MAX + 2];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		EXPECT_EQ((int)strlen(t[i].dec),
			  snowflake_format(t[i].id, SNOWFLAKE_FORMAT_DEC, buf, sizeof(buf)));
		EXPECT_STREQ(t[i].dec, buf);
		EXPECT_EQ((int)strlen(t[i].hex),
			  snowflake_format(t[i].id, SNOWFLAKE_FORMAT_HEX, buf, sizeof(buf)));
		EXPECT_STREQ(t[i].hex, buf);
		snprintf(want, sizeof(want), "\"%s\"", t[i].dec);
		EXPECT_EQ((int)strlen(want),
			  snowflake_format(t[i].id, SNOWFLAKE_FORMAT_JSON, buf, sizeof(buf)));
		EXPECT_STREQ(want, buf);
	}
	/* The longest output fits SNOWFLAKE_FORMAT_MAX. */
	EXPECT_GT(SNOWFLAKE_FORMAT_MAX,
		  snowflake_format(UINT64_MAX, SNOWFLAKE_FORMAT_JSON, buf, sizeof(buf)));
}

TEST(format_parse_roundtrip)
{
	static const enum snowflake_format fmts[] = {
		SNOWFLAKE_FORMAT_DEC, SNOWFLAKE_FORMAT_HEX, SNOWFLAKE_FORMAT_JSON,
	};
	uint64_t x = 88172645463325252ULL;

	for (int k = 0; k < 20000; k++) {
		uint64_t id, back;
		char buf[SNOWFLAKE_FORMAT_MAX];

		if (k < 64)
			id = 1ULL << k;
		else if (k < 128)
			id = (1ULL << (k - 64)) - 1;
		else if (k == 128)
			id = UINT64_MAX;
		else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			id = x >> (k % 64);
		}
		for (size_t f = 0; f < 3; f++) {
			int n = snowflake_format(id, fmts[f], buf, sizeof(buf));

			ASSERT_GT(n, 0);
			ASSERT_EQ((size_t)n, strlen(buf));
			back = ~id;
			ASSERT_EQ(0, snowflake_parse(buf, &back)) TH_LOG("%s", buf);
			ASSERT_EQ(id, back) TH_LOG("%s", buf);
		}
	}
}

TEST(format_buffer_too_small)
{
	char buf[SNOWFLAKE_FORMAT_MAX];

	/* Exactly the length without room for the NUL: -ENOSPC, buf untouched. */
	memset(buf, 'X', sizeof(buf));
	EXPECT_EQ(-ENOSPC, snowflake_format(12345, SNOWFLAKE_FORMAT_DEC, buf, 5));
	EXPECT_EQ('X', buf[0]);
	EXPECT_EQ(5, snowflake_format(12345, SNOWFLAKE_FORMAT_DEC, buf, 6));
	EXPECT_STREQ("12345", buf);
	EXPECT_EQ(-ENOSPC, snowflake_format(0, SNOWFLAKE_FORMAT_DEC, buf, 0));
	EXPECT_EQ(-ENOSPC, snowflake_format(0, SNOWFLAKE_FORMAT_DEC, buf, 1));
	EXPECT_EQ(-ENOSPC, snowflake_format(0, SNOWFLAKE_FORMAT_HEX, buf, 3));
	EXPECT_EQ(3, snowflake_format(0, SNOWFLAKE_FORMAT_HEX, buf, 4));
	EXPECT_EQ(-ENOSPC, snowflake_format(7, SNOWFLAKE_FORMAT_JSON, buf, 3));
	EXPECT_EQ(3, snowflake_format(7, SNOWFLAKE_FORMAT_JSON, buf, 4));
	EXPECT_EQ(-ENOSPC, snowflake_format(UINT64_MAX, SNOWFLAKE_FORMAT_JSON, buf, 22));
	EXPECT_EQ(22, snowflake_format(UINT64_MAX, SNOWFLAKE_FORMAT_JSON, buf, 23));
	/* Bad arguments. */
	EXPECT_EQ(-EINVAL, snowflake_format(1, (enum snowflake_format)3, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, snowflake_format(1, (enum snowflake_format)-1, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, snowflake_format(1, SNOWFLAKE_FORMAT_DEC, NULL, 10));
}

TEST(parse_accepts)
{
	static const struct {
		const char *s;
		uint64_t id;
	} t[] = {
		{ "0", 0 }, { "00", 0 }, { "0x0", 0 }, { "\"0\"", 0 },
		{ "007", 7 }, { "0X1F", 31 }, { "0xAbCdEf", 0xabcdef },
		{ "\"0x1f\"", 31 }, { "\"123\"", 123 }, { "0x000000000000000000001", 1 },
		{ "18446744073709551615", UINT64_MAX },
		{ "0xffffffffffffffff", UINT64_MAX },
		{ "\"18446744073709551615\"", UINT64_MAX },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t id = 0xdead;

		EXPECT_EQ(0, snowflake_parse(t[i].s, &id)) TH_LOG("%s", t[i].s);
		EXPECT_EQ(t[i].id, id) TH_LOG("%s", t[i].s);
	}
}

TEST(parse_rejects)
{
	static const char *const inval[] = {
		"", "\"\"", "\"", "\"\"\"", "0x", "\"0x\"", "-1", "+1", "-0", " 1", "1 ",
		"1\n", "12a", "a", "0x1g", "0x-1", "0x 1", "\"1", "1\"", "'1'", "0b1",
		"1e3", "1.0", "0xx1", "1,000", "\"\"1\"\"", "0o17",
	};
	static const char *const range[] = {
		"18446744073709551616", "99999999999999999999", "0x10000000000000000",
		"\"18446744073709551616\"", "100000000000000000000000000000",
	};
	uint64_t id;

	for (size_t i = 0; i < sizeof(inval) / sizeof(inval[0]); i++) {
		id = 77;
		EXPECT_EQ(-EINVAL, snowflake_parse(inval[i], &id)) TH_LOG("\"%s\"", inval[i]);
		EXPECT_EQ(77ULL, id);
	}
	for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++) {
		id = 77;
		EXPECT_EQ(-ERANGE, snowflake_parse(range[i], &id)) TH_LOG("%s", range[i]);
		EXPECT_EQ(77ULL, id);
	}
	EXPECT_EQ(-EINVAL, snowflake_parse(NULL, &id));
	EXPECT_EQ(-EINVAL, snowflake_parse("1", NULL));
}

TEST(strerror_coverage)
{
	static const int errs[] = {
		EINVAL, EAGAIN, ENOTCONN, EOVERFLOW, EBUSY, EPERM, ENOTTY, ENOENT,
		EACCES, E2BIG, EFAULT, ERANGE, ENOSPC, EINTR, ENODATA, ENOMEM, EBADF,
		ESPIPE, EIO, ENODEV, ENXIO, EISDIR, EMFILE, ENFILE, ENOTDIR, ELOOP,
		ENAMETOOLONG, EROFS, EOPNOTSUPP, ESTALE, EPROTO, EPIPE,
	};

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *m = snowflake_strerror(-errs[i]);

		ASSERT_NE(NULL, m);
		EXPECT_NE(0, strncmp("unknown error", m, 13)) TH_LOG("errno %d", errs[i]);
		EXPECT_NE(0U, strlen(m));
		/* The sign does not matter; the strings are static. */
		EXPECT_EQ(m, snowflake_strerror(errs[i]));
		for (size_t j = 0; j < i; j++) {
			EXPECT_STRNE(snowflake_strerror(-errs[j]), m)
				TH_LOG("errno %d and %d", errs[j], errs[i]);
		}
	}
	EXPECT_STREQ("reads refused: strict mode without a worker id, fenced, or past the lease's deadline or ceiling",
		     snowflake_strerror(-ENOTCONN));
	EXPECT_STREQ("not a snowflake device", snowflake_strerror(-ENOTTY));
	/* An unknown value: a generic message with the number as given. */
	EXPECT_STREQ("unknown error -4095", snowflake_strerror(-4095));
	EXPECT_STREQ("unknown error 123456", snowflake_strerror(123456));
	EXPECT_STREQ("unknown error 2147483647", snowflake_strerror(INT_MAX));
	EXPECT_STREQ("success", snowflake_strerror(0));
	/* INT_MIN has no opposite: it was "success". */
	EXPECT_STREQ("unknown error -2147483648", snowflake_strerror(INT_MIN));
	EXPECT_STREQ("unknown error -2147483647", snowflake_strerror(INT_MIN + 1));
	/* config --rearm on a VM-fork race. */
	EXPECT_EQ(0, strncmp("the VM was cloned", snowflake_strerror(-ESTALE), 17));
}

/*
 * Every errno libsnowflake(3) names (ESTALE was documented and had no
 * message) has one of its own.
 */
TEST(strerror_every_documented_errno)
{
	FILE *f = fopen("man/libsnowflake.3", "r");
	char *page = NULL;
	size_t len = 0;
	int named = 0;

	ASSERT_NE(NULL, f) TH_LOG("man/libsnowflake.3 (run from userspace/): %m");
	ASSERT_LT(0, (long)getdelim(&page, &len, '\0', f));
	fclose(f);
	for (int e = 1; e < 134; e++) {
		const char *name = strerrorname_np(e);
		const char *p;
		size_t n;

		if (!name)
			continue;
		n = strlen(name);
		for (p = strstr(page, name); p; p = strstr(p + 1, name)) {
			/* A whole word: not EPERM inside EPERMS. */
			if ((p > page && (p[-1] >= 'A' && p[-1] <= 'Z')) ||
			    (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9'))
				continue;
			named++;
			EXPECT_NE(0, strncmp("unknown error", snowflake_strerror(-e), 13))
				TH_LOG("%s is in libsnowflake(3) without a message", name);
			break;
		}
	}
	EXPECT_LT(15, named);
	free(page);
}

/*
 * A misc device of the host that is not ours and whose open has no side
 * effect (never a watchdog): its "MAJ:MIN" into @dev.  0, or -1 when none.
 */
static int foreign_misc(char *dev, size_t len)
{
	static const char * const names[] = { "fuse", "loop-control", "hw_random" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[128];
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "/sys/class/misc/%s/dev", names[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		ok = fgets(dev, (int)len, f) != NULL;
		fclose(f);
		if (ok) {
			dev[strcspn(dev, "\n")] = '\0';
			return 0;
		}
	}
	return -1;
}

/* A fake sysfs in @root whose dev/char/@dev links to @target (NULL: none). */
static void fake_sysfs(const char *root, const char *dev, const char *target)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/dev", root);
	mkdir(root, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/dev/char", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/dev/char/%s", root, dev);
	unlink(path);
	if (target)
		symlink(target, path);
}

/*
 * Issue 24: any misc character device opened as the generator
 * (`snowflake --device /dev/hwrng next` printed random numbers).  The
 * device is known by its sysfs name (/sys/dev/char/MAJ:MIN -> .../misc/
 * snowflake or uuidv7), each open refusing the other's; without sysfs,
 * /dev/snowflake by its GET_CONFIG ioctl, /dev/uuidv7 not at all.  A node
 * made with mknod for a foreign misc device (fuse) stands in, its
 * identity given by the real sysfs or by a fake one.
 */
TEST(open_identifies_the_device)
{
	char dir[PATH_MAX], node[PATH_MAX + 8], sys[PATH_MAX + 8], nosys[PATH_MAX + 8];
	char dev[32], path[PATH_MAX + 64];
	struct snowflake *sf = (struct snowflake *)&sf;
	unsigned int maj, min;
	int fds;

	if (foreign_misc(dev, sizeof(dev)) || sscanf(dev, "%u:%u", &maj, &min) != 2)
		SKIP(return, "no fuse, loop-control or hw_random misc device on this host");
	ASSERT_EQ(10U, maj);
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(node, sizeof(node), "%s/node", dir);
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(nosys, sizeof(nosys), "%s/nosys", dir);
	if (mknod(node, S_IFCHR | 0600, makedev(maj, min))) {
		rmdir(dir);
		SKIP(return, "mknod: %m (needs CAP_MKNOD)");
	}
	sf_testing_any_file = false;
	fds = count_fds();

	/* The real sysfs: fuse is not ours, through every way in. */
	sf_testing_sysfs = "/sys";
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, SNOWFLAKE_NONBLOCK | SNOWFLAKE_CONFIGURE));
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, node, 0));
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, node, 1));
	ASSERT_EQ(0, setenv(SNOWFLAKE_UUID_PATH_ENV, node, 1));
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, NULL, 0));
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, NULL, 0));
	unsetenv(SNOWFLAKE_PATH_ENV);
	unsetenv(SNOWFLAKE_UUID_PATH_ENV);

	/* A sysfs that names it snowflake: snowflake_open only. */
	sf_testing_sysfs = sys;
	fake_sysfs(sys, dev, "../../devices/virtual/misc/snowflake");
	ASSERT_EQ(0, snowflake_open(&sf, node, 0));
	snowflake_close(sf);
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, node, 0));
	/* uuidv7: snowflake_uuid_open only. */
	fake_sysfs(sys, dev, "../../devices/virtual/misc/uuidv7");
	ASSERT_EQ(0, snowflake_uuid_open(&sf, node, 0));
	snowflake_close(sf);
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	/* The name must be the misc device's, whole. */
	fake_sysfs(sys, dev, "../../devices/virtual/misc/xsnowflake");
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	fake_sysfs(sys, dev, "../../devices/virtual/tty/snowflake");
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	fake_sysfs(sys, dev, "../../devices/virtual/misc/fuse");
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	/* A sysfs without this device number: not ours. */
	fake_sysfs(sys, dev, NULL);
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, node, 0));

	/*
	 * No sysfs at all: GET_CONFIG, which fuse refuses (its ENOTTY, or
	 * whatever a foreign driver says, is "not ours"); uuidv7 cannot be
	 * known and is refused.
	 */
	sf_testing_sysfs = nosys;
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, node, 0));
	EXPECT_EQ(-ENOTTY, snowflake_uuid_open(&sf, node, 0));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(fds, count_fds());

	sf_testing_sysfs = "/sys";
	sf_testing_any_file = true;
	snprintf(path, sizeof(path), "%s/dev/char/%s", sys, dev);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dev/char", sys);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/dev", sys);
	rmdir(path);
	rmdir(sys);
	unlink(node);
	rmdir(dir);
}

TEST(open_nonexistent)
{
	struct snowflake *sf = (struct snowflake *)&sf;

	EXPECT_EQ(-ENOENT, snowflake_open(&sf, "/nonexistent/snowflake", 0));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(-ENOENT, snowflake_open(&sf, "", 0));
	EXPECT_EQ(-ENOTDIR, snowflake_open(&sf, "/dev/null/x", 0));
	EXPECT_EQ(-EINVAL, snowflake_open(&sf, "/dev/null", 0x4));
	/* /dev/uuidv7 has nothing to configure. */
	EXPECT_EQ(-EINVAL, snowflake_uuid_open(&sf, "/dev/null", SNOWFLAKE_CONFIGURE));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(-EINVAL, snowflake_open(NULL, "/dev/null", 0));
	/* A NULL path falls back to $SNOWFLAKE_DEVICE. */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, "/nonexistent/env-device", 1));
	EXPECT_EQ(-ENOENT, snowflake_open(&sf, NULL, 0));
	snowflake_close(NULL);
	EXPECT_EQ(-EBADF, snowflake_fd(NULL));
}

/*
 * What users get: anything but a misc character device is refused with
 * -ENOTTY, also through $SNOWFLAKE_DEVICE (a regular file would hand every
 * opener the same "IDs"), a FIFO without a writer at once (no hang), and
 * no descriptor is left open.
 */
TEST(open_refuses_non_device)
{
	char dir[PATH_MAX], file[PATH_MAX + 8], fifo[PATH_MAX + 8];
	struct snowflake *sf = (struct snowflake *)&sf;
	int fds;

	sf_testing_any_file = false;
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(file, sizeof(file), "%s/ids", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	write_ids_file(file, 1000, 4);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	fds = count_fds();

	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, file, 0));
	EXPECT_EQ(NULL, sf);
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, file, SNOWFLAKE_NONBLOCK));
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, fifo, 0));
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, dir, 0));
	/* A character device, but not a misc one (major 1). */
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, "/dev/null", 0));
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, file, 1));
	EXPECT_EQ(-ENOTTY, snowflake_open(&sf, NULL, 0));
	unsetenv(SNOWFLAKE_PATH_ENV);
	EXPECT_STREQ("not a snowflake device", snowflake_strerror(-ENOTTY));
	EXPECT_EQ(fds, count_fds());

	unlink(fifo);
	unlink(file);
	rmdir(dir);
}

TEST(open_flags_and_env)
{
	char dir[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8];
	struct snowflake *sf;
	uint64_t id;
	int fl;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	write_ids_file(a, 1000, 4);
	write_ids_file(b, 2000, 4);

	/* $SNOWFLAKE_DEVICE when the path is NULL... */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, a, 1));
	ASSERT_EQ(0, snowflake_open(&sf, NULL, 0));
	ASSERT_EQ(0, snowflake_next(sf, &id));
	EXPECT_EQ(1000ULL, id);
	fl = fcntl(snowflake_fd(sf), F_GETFD);
	EXPECT_TRUE(fl & FD_CLOEXEC);
	fl = fcntl(snowflake_fd(sf), F_GETFL);
	EXPECT_EQ(O_RDONLY, fl & O_ACCMODE);
	EXPECT_FALSE(fl & O_NONBLOCK);
	snowflake_close(sf);

	/* ...but an explicit path wins. */
	ASSERT_EQ(0, snowflake_open(&sf, b, SNOWFLAKE_NONBLOCK));
	ASSERT_EQ(0, snowflake_next(sf, &id));
	EXPECT_EQ(2000ULL, id);
	fl = fcntl(snowflake_fd(sf), F_GETFL);
	EXPECT_TRUE(fl & O_NONBLOCK);
	EXPECT_TRUE(fcntl(snowflake_fd(sf), F_GETFD) & FD_CLOEXEC);
	snowflake_close(sf);

	/* SNOWFLAKE_CONFIGURE: for writing (the kernel's right to configure). */
	ASSERT_EQ(0, snowflake_open(&sf, b, SNOWFLAKE_CONFIGURE));
	fl = fcntl(snowflake_fd(sf), F_GETFL);
	EXPECT_EQ(O_RDWR, fl & O_ACCMODE);
	EXPECT_FALSE(fl & O_NONBLOCK);
	snowflake_close(sf);
	/* ...and read-only where the mode refuses writing (not as root). */
	if (geteuid() != 0) {
		ASSERT_EQ(0, chmod(b, 0400));
		ASSERT_EQ(0, snowflake_open(&sf, b, SNOWFLAKE_CONFIGURE | SNOWFLAKE_NONBLOCK));
		fl = fcntl(snowflake_fd(sf), F_GETFL);
		EXPECT_EQ(O_RDONLY, fl & O_ACCMODE);
		EXPECT_TRUE(fl & O_NONBLOCK);
		snowflake_close(sf);
	}

	/* An empty variable means the default path. */
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, "", 1));
	if (access(SNOWFLAKE_DEFAULT_PATH, F_OK) != 0)
		EXPECT_EQ(-ENOENT, snowflake_open(&sf, NULL, 0));
	unsetenv(SNOWFLAKE_PATH_ENV);
	if (access(SNOWFLAKE_DEFAULT_PATH, F_OK) != 0)
		EXPECT_EQ(-ENOENT, snowflake_open(&sf, NULL, 0));

	unlink(a);
	unlink(b);
	rmdir(dir);
}

/* A recorded ID stream in a regular file reads back as it was written. */
TEST(next_from_regular_file)
{
	enum { N = 10000 };	/* more than one read's 4096 */
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct snowflake *sf;
	uint64_t *ids = calloc(N + 1, sizeof(*ids));
	uint64_t id;

	ASSERT_NE(NULL, ids);
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/ids", dir);
	write_ids_file(path, 1ULL << 40, N + 3);
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, path, 1));
	ASSERT_EQ(0, snowflake_open(&sf, NULL, 0));

	ASSERT_EQ(0, snowflake_next(sf, &id));
	EXPECT_EQ(1ULL << 40, id);
	EXPECT_EQ(0, snowflake_next_n(sf, ids, 0));
	EXPECT_EQ(-EINVAL, snowflake_next_n(sf, NULL, 1));
	EXPECT_EQ(-EINVAL, snowflake_next(NULL, &id));
	EXPECT_EQ(-EINVAL, snowflake_next_n(sf, ids, (size_t)LONG_MAX + 1));
	ids[N] = 0xabcd;
	ASSERT_EQ(N, snowflake_next_n(sf, ids, N));
	for (size_t i = 0; i < N; i++) {
		ASSERT_EQ((1ULL << 40) + 1 + i, ids[i]) TH_LOG("index %zu", i);
	}
	EXPECT_EQ(0xabcdULL, ids[N]);	/* nothing written past n */
	/* Two left: a count of 5 gets the 2 (end of file), then nothing. */
	EXPECT_EQ(2, snowflake_next_n(sf, ids, 5));
	EXPECT_EQ((1ULL << 40) + N + 1, ids[0]);
	EXPECT_EQ((1ULL << 40) + N + 2, ids[1]);
	EXPECT_EQ(-ENODATA, snowflake_next(sf, &id));
	EXPECT_EQ(-ENODATA, snowflake_next_n(sf, ids, 3));
	snowflake_close(sf);
	free(ids);
	unlink(path);
	rmdir(dir);
}

TEST(ioctl_on_non_device)
{
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct snowflake_config cfg;
	struct snowflake_stats st;
	struct snowflake *sf;
	uint64_t f = 1, l = 2;
	int on = 5;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/file", dir);
	write_ids_file(path, 1, 1);
	ASSERT_EQ(0, snowflake_open(&sf, path, 0));
	snowflake_default_layout(&cfg);
	EXPECT_EQ(-ENOTTY, snowflake_get_config(sf, &cfg));
	EXPECT_EQ(-ENOTTY, snowflake_set_config(sf, &cfg));
	EXPECT_EQ(-ENOTTY, snowflake_set_ids(sf, 1, 2));
	EXPECT_EQ(-ENOTTY, snowflake_assign_ids(sf, 1, 2));
	EXPECT_EQ(-EINVAL, snowflake_assign_ids(NULL, 1, 2));
	/* Not the device: its own error, not "module too old". */
	EXPECT_EQ(-ENOTTY, snowflake_set_lease_window(sf, 1, 2, 1, 0, 0, SNOWFLAKE_NO_CEILING));
	EXPECT_EQ(-EINVAL, snowflake_set_lease_window(NULL, 1, 2, 1, 0, 0, 0));
	EXPECT_EQ(-ENOTTY, snowflake_get_stats(sf, &st));
	EXPECT_EQ(-ENOTTY, snowflake_get_floor(sf, &f, &l));
	EXPECT_EQ(1ULL, f);	/* untouched on error */
	EXPECT_EQ(2ULL, l);
	EXPECT_EQ(-ENOTTY, snowflake_get_floor(sf, NULL, NULL));
	EXPECT_EQ(-ENOTTY, snowflake_set_floor(sf, 12345));
	EXPECT_EQ(-ENOTTY, snowflake_set_fence(sf, 1));
	EXPECT_EQ(-ENOTTY, snowflake_get_fence(sf, &on, &l));
	EXPECT_EQ(5, on);	/* untouched on error */
	EXPECT_EQ(-EINVAL, snowflake_get_fence(sf, NULL, NULL));
	EXPECT_EQ(-EINVAL, snowflake_set_fence(NULL, 0));
	EXPECT_EQ(-EINVAL, snowflake_get_config(sf, NULL));
	EXPECT_EQ(-EINVAL, snowflake_get_stats(NULL, &st));
	snowflake_close(sf);
	/* /dev/null is a character device, but not ours. */
	ASSERT_EQ(0, snowflake_open(&sf, "/dev/null", 0));
	EXPECT_EQ(-ENOTTY, snowflake_get_config(sf, &cfg));
	EXPECT_EQ(-ENOTTY, snowflake_set_lease_window(sf, 1, 2, 1, 0, 0, 0));
	EXPECT_EQ(-ENODATA, snowflake_next(sf, &l));
	snowflake_close(sf);
	unlink(path);
	rmdir(dir);
}

/*
 * A FIFO written in small, odd-sized chunks: every read is short, most end
 * in the middle of an ID.  Signals without SA_RESTART interrupt the blocked
 * reads (EINTR), which the library retries.
 */
struct writer {
	const char *path;
	int fd;			/* or -1: open path */
	uint64_t first;
	size_t n;
	size_t chunk;		/* 0: vary 1..13 */
	useconds_t pause_us;
	useconds_t delay_us;	/* before the first write */
	volatile int done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	size_t total = w->n * 8, off = 0, k = 0;
	unsigned char *buf = malloc(total ? total : 1);
	int fd = w->fd;

	for (size_t i = 0; i < w->n; i++) {
		uint64_t v = w->first + i;

		memcpy(buf + 8 * i, &v, 8);
	}
	if (fd < 0)
		fd = open(w->path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (w->delay_us)
			usleep(w->delay_us);
		while (off < total) {
			size_t c = w->chunk ? w->chunk : 1 + (k++ * 7) % 13;
			ssize_t r;

			if (c > total - off)
				c = total - off;
			r = write(fd, buf + off, c);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				break;
			off += (size_t)r;
			if (w->pause_us)
				usleep(w->pause_us);
		}
		if (w->fd < 0)
			close(fd);
	}
	free(buf);
	w->done = 1;
	return NULL;
}

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

TEST(next_n_short_reads_from_fifo)
{
	enum { N = 3000 };
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct writer w = { .fd = -1, .first = 500, .n = N, .pause_us = 20 };
	struct snowflake *sf;
	uint64_t *ids = calloc(N, sizeof(*ids));
	pthread_t t;

	ASSERT_NE(NULL, ids);
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ASSERT_EQ(0, mkfifo(path, 0600));
	w.path = path;
	ASSERT_EQ(0, pthread_create(&t, NULL, writer_main, &w));
	ASSERT_EQ(0, setenv(SNOWFLAKE_PATH_ENV, path, 1));
	ASSERT_EQ(0, snowflake_open(&sf, NULL, 0));
	ASSERT_EQ(N, snowflake_next_n(sf, ids, N));
	for (size_t i = 0; i < N; i++) {
		ASSERT_EQ(500 + i, ids[i]) TH_LOG("index %zu", i);
	}
	pthread_join(t, NULL);
	EXPECT_EQ(-ENODATA, snowflake_next_n(sf, ids, 1));	/* writer gone */
	snowflake_close(sf);
	free(ids);
	unlink(path);
	rmdir(dir);
}

struct signaller {
	pthread_t target;
	volatile int stop;
};

static void *signaller_main(void *arg)
{
	struct signaller *s = arg;

	while (!s->stop) {
		pthread_kill(s->target, SIGUSR1);
		usleep(2000);
	}
	return NULL;
}

TEST(next_n_retries_eintr)
{
	enum { N = 400 };
	struct writer w = { .first = 7, .n = N, .pause_us = 200, .delay_us = 100000 };
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	struct signaller sig = { .target = pthread_self() };
	struct snowflake *sf;
	uint64_t ids[N];
	pthread_t wt, st;
	char path[64];
	long n;
	int p[2];

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pipe(p));
	/* The pipe's read end, reopened by path like the device. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	ASSERT_EQ(0, snowflake_open(&sf, path, 0));
	close(p[0]);
	w.fd = p[1];
	/* This thread reads; one thread writes slowly, one signals it. */
	signals_seen = 0;
	ASSERT_EQ(0, pthread_create(&wt, NULL, writer_main, &w));
	ASSERT_EQ(0, pthread_create(&st, NULL, signaller_main, &sig));
	n = snowflake_next_n(sf, ids, N);
	sig.stop = 1;
	pthread_join(st, NULL);
	pthread_join(wt, NULL);
	ASSERT_EQ(N, n);
	for (size_t i = 0; i < N; i++) {
		ASSERT_EQ(7 + i, ids[i]) TH_LOG("index %zu", i);
	}
	EXPECT_GT(signals_seen, 10);
	close(p[1]);
	snowflake_close(sf);
}

/* Write @len bytes of @buf to @fd after @delay_us. */
struct late {
	int fd;
	unsigned char buf[16];
	size_t len;
	useconds_t delay_us;
};

static void *late_write(void *arg)
{
	struct late *l = arg;

	usleep(l->delay_us);
	if (write(l->fd, l->buf, l->len) != (ssize_t)l->len)
		abort();
	return NULL;
}

TEST(nonblocking_partial_count)
{
	struct writer w = { .fd = -1, .first = 100, .n = 5, .chunk = 40 };
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct snowflake *sf;
	struct late lw = { .delay_us = 50000 };
	unsigned char half[12];
	uint64_t ids[10], id;
	pthread_t t;
	int wfd;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ASSERT_EQ(0, mkfifo(path, 0600));
	ASSERT_EQ(0, snowflake_open(&sf, path, SNOWFLAKE_NONBLOCK));
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd);
	/* Nothing there yet: -EAGAIN. */
	EXPECT_EQ(-EAGAIN, snowflake_next(sf, &id));
	EXPECT_EQ(-EAGAIN, snowflake_next_n(sf, ids, 10));
	/* 5 of 10: the partial count at the first EAGAIN. */
	w.fd = wfd;
	writer_main(&w);
	EXPECT_EQ(5, snowflake_next_n(sf, ids, 10));
	for (size_t i = 0; i < 5; i++)
		EXPECT_EQ(100 + i, ids[i]);
	EXPECT_EQ(-EAGAIN, snowflake_next_n(sf, ids, 10));
	/* 1.5 IDs now, the other half later: never a torn ID. */
	id = 200;
	memcpy(half, &id, 8);
	id = 201;
	memcpy(half + 8, &id, 4);
	ASSERT_EQ(12, write(wfd, half, 12));
	lw.fd = wfd;
	memcpy(lw.buf, (unsigned char *)&id + 4, 4);
	lw.len = 4;
	ASSERT_EQ(0, pthread_create(&t, NULL, late_write, &lw));
	EXPECT_EQ(2, snowflake_next_n(sf, ids, 10));
	EXPECT_EQ(200ULL, ids[0]);
	EXPECT_EQ(201ULL, ids[1]);
	pthread_join(t, NULL);
	close(wfd);
	snowflake_close(sf);
	unlink(path);
	rmdir(dir);
}

TEST(nonblocking_torn_id_waits)
{
	struct writer w = { .fd = -1, .first = 0x1122334455667788ULL, .n = 3, .chunk = 3,
			    .pause_us = 30000 };
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct snowflake *sf;
	uint64_t ids[3];
	pthread_t t;
	long n, got = 0;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ASSERT_EQ(0, mkfifo(path, 0600));
	ASSERT_EQ(0, snowflake_open(&sf, path, SNOWFLAKE_NONBLOCK));
	/* Opened here, so that the reader never sees end of file. */
	w.fd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, writer_main, &w));
	/* Whole IDs only, in order, however the bytes trickle in. */
	while (got < 3) {
		n = snowflake_next_n(sf, ids + got, (size_t)(3 - got));
		if (n == -EAGAIN) {
			usleep(1000);
			continue;
		}
		ASSERT_LT(0, n);
		got += n;
	}
	pthread_join(t, NULL);
	for (size_t i = 0; i < 3; i++)
		EXPECT_EQ(0x1122334455667788ULL + i, ids[i]);
	close(w.fd);
	snowflake_close(sf);
	unlink(path);
	rmdir(dir);
}

/*
 * Every function of libsnowflake(3) with bad input: the errno it returns
 * and its message, one "# bad-input: FUNCTION | INPUT | RESULT | MESSAGE"
 * line each (tests/userspace/run.sh checks that every function of
 * snowflake.h has one).  The handle is a regular file standing in for the
 * device (its ioctls fail with ENOTTY as a foreign device's would).
 */
#define BAD(fn, input, want, expr) do {						\
	long got_ = (long)(expr);						\
	EXPECT_EQ((long)(want), got_) TH_LOG("%s(%s)", fn, input);		\
	printf("# bad-input: %s | %s | %s%ld | %s\n", fn, input,		\
	       got_ < 0 ? "-" : "", got_ < 0 ? -got_ : got_,			\
	       got_ < 0 ? snowflake_strerror((int)got_) : "");			\
} while (0)

TEST(bad_input_every_function)
{
	char dir[PATH_MAX], path[PATH_MAX + 8], buf[SNOWFLAKE_FORMAT_MAX];
	uint8_t u[SNOWFLAKE_UUID_SIZE], uu[2][SNOWFLAKE_UUID_SIZE];
	struct snowflake_config cfg, bad;
	struct snowflake_parts parts;
	struct snowflake_stats st;
	struct snowflake *sf, *nsf;
	uint64_t id, ids[2];
	uint32_t forks;
	int on;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/file", dir);
	write_ids_file(path, 1, 1);
	ASSERT_EQ(0, snowflake_open(&sf, path, 0));
	snowflake_default_layout(&cfg);
	bad = cfg;
	bad.timestamp_bits = 60;	/* 60+5+5+12 > 63 */
	memset(&parts, 0, sizeof(parts));

	BAD("snowflake_open", "flags 0x4", -EINVAL, snowflake_open(&nsf, path, 0x4));
	BAD("snowflake_open", "sf NULL", -EINVAL, snowflake_open(NULL, path, 0));
	BAD("snowflake_open", "missing path", -ENOENT, snowflake_open(&nsf, "/nonexistent/x", 0));
	sf_testing_any_file = false;
	BAD("snowflake_open", "/dev/null (major 1)", -ENOTTY, snowflake_open(&nsf, "/dev/null", 0));
	BAD("snowflake_open", "a regular file", -ENOTTY, snowflake_open(&nsf, path, 0));
	BAD("snowflake_uuid_open", "a regular file", -ENOTTY, snowflake_uuid_open(&nsf, path, 0));
	sf_testing_any_file = true;
	BAD("snowflake_uuid_open", "SNOWFLAKE_CONFIGURE", -EINVAL,
	    snowflake_uuid_open(&nsf, path, SNOWFLAKE_CONFIGURE));
	snowflake_close(NULL);
	printf("# bad-input: snowflake_close | NULL | (void) | does nothing\n");
	BAD("snowflake_fd", "NULL", -EBADF, snowflake_fd(NULL));
	BAD("snowflake_next", "sf NULL", -EINVAL, snowflake_next(NULL, &id));
	BAD("snowflake_next", "id NULL", -EINVAL, snowflake_next(sf, NULL));
	BAD("snowflake_next_n", "ids NULL, n 1", -EINVAL, snowflake_next_n(sf, NULL, 1));
	BAD("snowflake_next_n", "n LONG_MAX", -EINVAL, snowflake_next_n(sf, ids, (size_t)LONG_MAX));
	BAD("snowflake_get_config", "cfg NULL", -EINVAL, snowflake_get_config(sf, NULL));
	BAD("snowflake_get_config", "not the device", -ENOTTY, snowflake_get_config(sf, &cfg));
	BAD("snowflake_set_config", "cfg NULL", -EINVAL, snowflake_set_config(sf, NULL));
	BAD("snowflake_set_config", "not the device", -ENOTTY, snowflake_set_config(sf, &cfg));
	BAD("snowflake_set_ids", "sf NULL", -EINVAL, snowflake_set_ids(NULL, 1, 2));
	BAD("snowflake_set_ids", "not the device", -ENOTTY, snowflake_set_ids(sf, 1, 2));
	BAD("snowflake_assign_ids", "sf NULL", -EINVAL, snowflake_assign_ids(NULL, 1, 2));
	BAD("snowflake_set_lease", "sf NULL", -EINVAL, snowflake_set_lease(NULL, 1, 2, 1, 0));
	BAD("snowflake_set_lease", "not the device", -ENOTTY, snowflake_set_lease(sf, 1, 2, 1, 0));
	BAD("snowflake_rearm_ids", "sf NULL", -EINVAL, snowflake_rearm_ids(NULL, 1, 2, 0));
	BAD("snowflake_rearm_ids", "not the device", -ENOTTY, snowflake_rearm_ids(sf, 1, 2, 0));
	BAD("snowflake_get_vm_forks", "vm_forks NULL", -EINVAL, snowflake_get_vm_forks(sf, NULL));
	BAD("snowflake_get_vm_forks", "not a char device", -ENOTTY,
	    snowflake_get_vm_forks(sf, &forks));
	BAD("snowflake_set_lease_window", "sf NULL", -EINVAL,
	    snowflake_set_lease_window(NULL, 1, 2, 1, 0, 0, 0));
	BAD("snowflake_set_lease_window", "not the device", -ENOTTY,
	    snowflake_set_lease_window(sf, 1, 2, 1, 0, 0, SNOWFLAKE_NO_CEILING));
	BAD("snowflake_get_stats", "st NULL", -EINVAL, snowflake_get_stats(sf, NULL));
	BAD("snowflake_get_stats", "not the device", -ENOTTY, snowflake_get_stats(sf, &st));
	BAD("snowflake_get_floor", "sf NULL", -EINVAL, snowflake_get_floor(NULL, &id, NULL));
	BAD("snowflake_set_floor", "sf NULL", -EINVAL, snowflake_set_floor(NULL, 1));
	BAD("snowflake_set_floor", "not the device", -ENOTTY, snowflake_set_floor(sf, 1));
	BAD("snowflake_set_fence", "sf NULL", -EINVAL, snowflake_set_fence(NULL, 1));
	BAD("snowflake_get_fence", "on NULL", -EINVAL, snowflake_get_fence(sf, NULL, NULL));
	BAD("snowflake_get_fence", "not the device", -ENOTTY, snowflake_get_fence(sf, &on, NULL));
	BAD("snowflake_uuid_next", "sf NULL", -EINVAL, snowflake_uuid_next(NULL, u));
	BAD("snowflake_uuid_next_n", "uuids NULL, n 1", -EINVAL, snowflake_uuid_next_n(sf, NULL, 1));
	BAD("snowflake_uuid_next_n", "n LONG_MAX", -EINVAL,
	    snowflake_uuid_next_n(sf, uu, (size_t)LONG_MAX));
	BAD("snowflake_uuid_format", "len 36", -ENOSPC, snowflake_uuid_format(u, buf, 36));
	BAD("snowflake_uuid_format", "uuid NULL", -EINVAL, snowflake_uuid_format(NULL, buf, 37));
	BAD("snowflake_uuid_parse", "\"017f22e2-79b0-7cc3-98c4-dc0c0c07398\" (35 digits)", -EINVAL,
	    snowflake_uuid_parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398", u));
	BAD("snowflake_uuid_parse", "\"017f22e2_79b0-7cc3-98c4-dc0c0c07398f\"", -EINVAL,
	    snowflake_uuid_parse("017f22e2_79b0-7cc3-98c4-dc0c0c07398f", u));
	ASSERT_EQ(0, snowflake_uuid_parse("017f22e2-79b0-4cc3-98c4-dc0c0c07398f", u));
	BAD("snowflake_uuid_time", "a UUIDv4", -EINVAL, snowflake_uuid_time(u, &id));
	snowflake_default_layout(NULL);
	printf("# bad-input: snowflake_default_layout | NULL | (void) | does nothing\n");
	BAD("snowflake_check_layout", "NULL", -EINVAL, snowflake_check_layout(NULL));
	BAD("snowflake_check_layout", "60/5/5/12", -EINVAL, snowflake_check_layout(&bad));
	BAD("snowflake_decode", "bit 63", -EINVAL, snowflake_decode(&cfg, 1ULL << 63, &parts));
	BAD("snowflake_decode", "layout 60/5/5/12", -EINVAL, snowflake_decode(&bad, 1, &parts));
	BAD("snowflake_decode", "parts NULL", -EINVAL, snowflake_decode(&cfg, 1, NULL));
	bad = cfg;
	bad.timestamp_bits = 63;
	bad.datacenter_bits = bad.worker_bits = bad.sequence_bits = 0;
	bad.time_unit_ms = 2;
	BAD("snowflake_decode", "0x7fffffffffffffff, 63/0/0/0 unit 2", -EOVERFLOW,
	    snowflake_decode(&bad, INT64_MAX, &parts));
	parts.sequence = 4096;
	BAD("snowflake_compose", "sequence 4096 of 12 bits", -ERANGE,
	    snowflake_compose(&cfg, &parts, &id));
	BAD("snowflake_compose", "parts NULL", -EINVAL, snowflake_compose(&cfg, NULL, &id));
	BAD("snowflake_format", "len 2", -ENOSPC, snowflake_format(123, SNOWFLAKE_FORMAT_DEC, buf, 2));
	BAD("snowflake_format", "format 7", -EINVAL,
	    snowflake_format(1, (enum snowflake_format)7, buf, sizeof(buf)));
	BAD("snowflake_parse", "\"12x\"", -EINVAL, snowflake_parse("12x", &id));
	BAD("snowflake_parse", "\"18446744073709551616\"", -ERANGE,
	    snowflake_parse("18446744073709551616", &id));
	BAD("snowflake_parse", "NULL", -EINVAL, snowflake_parse(NULL, &id));
	EXPECT_STREQ("unknown error -2147483648", snowflake_strerror(INT_MIN));
	printf("# bad-input: snowflake_strerror | INT_MIN | \"%s\" |\n", snowflake_strerror(INT_MIN));

	snowflake_close(sf);
	unlink(path);
	rmdir(dir);
}

TEST_HARNESS_MAIN
