// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Native unit tests of libsnowflake's /dev/uuidv7 functions: the canonical
 * text form, parsing, the time of a UUIDv7, and reading from a regular
 * file and a pipe standing in for the device.  Built under ASan + UBSan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "snowflake.h"
#include "internal.h"

/*
 * Regular files and pipes stand in for /dev/uuidv7: the library built for
 * the tests (SF_TESTING) accepts them while this is set.
 */
__attribute__((constructor)) static void accept_stand_ins(void)
{
	sf_testing_any_file = true;
}

/* RFC 9562 appendix A.6: the UUIDv7 example, 2022-02-22 19:22:22 UTC. */
static const uint8_t rfc_uuid[16] = {
	0x01, 0x7f, 0x22, 0xe2, 0x79, 0xb0, 0x7c, 0xc3,
	0x98, 0xc4, 0xdc, 0x0c, 0x0c, 0x07, 0x39, 0x8f,
};
static const char rfc_text[] = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
#define RFC_MS	0x017f22e279b0ULL	/* 1645557742000 */

TEST(format_rfc_example)
{
	char buf[SNOWFLAKE_UUID_STR_MAX];

	memset(buf, 'x', sizeof(buf));
	EXPECT_EQ(36, snowflake_uuid_format(rfc_uuid, buf, sizeof(buf)));
	EXPECT_STREQ(rfc_text, buf);
	EXPECT_EQ(-ENOSPC, snowflake_uuid_format(rfc_uuid, buf, 36));
	EXPECT_EQ(-EINVAL, snowflake_uuid_format(NULL, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, snowflake_uuid_format(rfc_uuid, NULL, 37));
}

TEST(parse_and_time)
{
	uint8_t u[16];
	uint64_t ms;

	ASSERT_EQ(0, snowflake_uuid_parse(rfc_text, u));
	EXPECT_EQ(0, memcmp(rfc_uuid, u, 16));
	ASSERT_EQ(0, snowflake_uuid_parse("\"017F22E2-79B0-7CC3-98C4-DC0C0C07398F\"", u));
	EXPECT_EQ(0, memcmp(rfc_uuid, u, 16));
	ASSERT_EQ(0, snowflake_uuid_time(u, &ms));
	EXPECT_EQ(RFC_MS, ms);
	EXPECT_EQ(1645557742000ULL, ms);
}

TEST(parse_rejects)
{
	static const char *const bad[] = {
		"", "017f22e2-79b0-7cc3-98c4-dc0c0c07398", "017f22e279b07cc398c4dc0c0c07398f",
		"017f22e2-79b0-7cc3-98c4-dc0c0c07398f0", "017f22e2+79b0-7cc3-98c4-dc0c0c07398f",
		"017f22e2-79b0-7cc3-98c4-dc0c0c07398g", "\"017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
		" 017f22e2-79b0-7cc3-98c4-dc0c0c07398", "1795219200000",
	};
	uint8_t u[16];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(u, 0xcc, sizeof(u));
		EXPECT_EQ(-EINVAL, snowflake_uuid_parse(bad[i], u)) TH_LOG("'%s'", bad[i]);
		for (int j = 0; j < 16; j++)
			EXPECT_EQ(0xcc, u[j]);
	}
	EXPECT_EQ(-EINVAL, snowflake_uuid_parse(NULL, u));
}

/* Not a UUIDv7: version 4, or another variant. */
TEST(time_rejects_other_versions)
{
	uint8_t u[16];
	uint64_t ms = 7;

	memcpy(u, rfc_uuid, 16);
	u[6] = (u[6] & 0x0f) | 0x40;
	EXPECT_EQ(-EINVAL, snowflake_uuid_time(u, &ms));
	memcpy(u, rfc_uuid, 16);
	u[8] = (u[8] & 0x3f) | 0xc0;
	EXPECT_EQ(-EINVAL, snowflake_uuid_time(u, &ms));
	EXPECT_EQ(7, ms);
	EXPECT_EQ(-EINVAL, snowflake_uuid_time(rfc_uuid, NULL));
}

/* Every byte value round-trips through the text form. */
TEST(format_parse_roundtrip)
{
	char buf[SNOWFLAKE_UUID_STR_MAX];
	uint8_t u[16], v[16];

	for (int k = 0; k < 256; k++) {
		for (int i = 0; i < 16; i++)
			u[i] = (uint8_t)(k * 7 + i * 31);
		ASSERT_EQ(36, snowflake_uuid_format(u, buf, sizeof(buf)));
		ASSERT_EQ(0, snowflake_uuid_parse(buf, v));
		ASSERT_EQ(0, memcmp(u, v, 16));
	}
}

/*
 * A file standing in for the device ($SNOWFLAKE_UUID_DEVICE): more than one
 * read's worth, then the end: the count got, then -ENODATA.
 */
TEST(next_n_from_regular_file)
{
	enum { N = 5000 };
	char path[] = "/tmp/uuid-lib-test.XXXXXX";
	uint8_t (*u)[16] = calloc(N + 1, 16);
	struct snowflake *sf;
	uint8_t one[16];
	int fd;

	ASSERT_NE(NULL, u);
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	for (uint32_t i = 0; i < N + 3; i++) {
		uint8_t rec[16] = { 0 };

		memcpy(rec + 12, &i, 4);
		ASSERT_EQ(16, write(fd, rec, 16));
	}
	close(fd);
	ASSERT_EQ(0, setenv(SNOWFLAKE_UUID_PATH_ENV, path, 1));
	ASSERT_EQ(0, snowflake_uuid_open(&sf, NULL, 0));
	unsetenv(SNOWFLAKE_UUID_PATH_ENV);

	ASSERT_EQ(0, snowflake_uuid_next(sf, one));
	EXPECT_EQ(-EINVAL, snowflake_uuid_next_n(sf, NULL, 1));
	EXPECT_EQ(0, snowflake_uuid_next_n(sf, u, 0));
	EXPECT_EQ(-EINVAL, snowflake_uuid_next_n(sf, u, (size_t)LONG_MAX));
	u[N][0] = 0xab;
	ASSERT_EQ(N, snowflake_uuid_next_n(sf, u, N));
	for (uint32_t i = 0; i < N; i++) {
		uint32_t v;

		memcpy(&v, u[i] + 12, 4);
		ASSERT_EQ(i + 1, v);
	}
	EXPECT_EQ(0xab, u[N][0]);
	EXPECT_EQ(2, snowflake_uuid_next_n(sf, u, 5));
	EXPECT_EQ(-ENODATA, snowflake_uuid_next(sf, one));
	snowflake_close(sf);
	unlink(path);
	free(u);
}

/* A pipe delivering a UUID in two halves: no torn UUID is returned. */
TEST(next_n_joins_short_reads)
{
	char path[64];
	struct snowflake *sf;
	uint8_t u[2][16];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	ASSERT_EQ(0, snowflake_uuid_open(&sf, path, 0));
	ASSERT_EQ(7, write(p[1], rfc_uuid, 7));
	ASSERT_EQ(25, write(p[1], rfc_uuid + 7, 9) + write(p[1], rfc_uuid, 16));
	ASSERT_EQ(2, snowflake_uuid_next_n(sf, u, 2));
	EXPECT_EQ(0, memcmp(rfc_uuid, u[0], 16));
	EXPECT_EQ(0, memcmp(rfc_uuid, u[1], 16));
	close(p[1]);
	EXPECT_EQ(-ENODATA, snowflake_uuid_next(sf, u[0]));
	snowflake_close(sf);
	close(p[0]);
}

TEST_HARNESS_MAIN
