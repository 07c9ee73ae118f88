// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the command-line parsing (cli/opts.c) of
 * `snowflake uuid` and of UUIDv7s given to `snowflake decode`.  opts.c is
 * compiled in, as in cli_opts_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../cli/opts.c"

static int parse(struct sf_cli *cli, const char *const *argv, char *err, size_t len)
{
	char *copy[32];
	int argc = 0;

	while (argv[argc] && argc < 31) {
		copy[argc] = (char *)argv[argc];
		argc++;
	}
	copy[argc] = NULL;
	return sf_cli_parse(cli, argc, copy, err, len);
}

#define PARSE(cli, err, ...) \
	parse((cli), (const char *const[]){ "snowflake", __VA_ARGS__, NULL }, (err), sizeof(err))

#define RFC_UUID	"017f22e2-79b0-7cc3-98c4-dc0c0c07398f"

TEST(uuid_count_and_device)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "uuid"));
	EXPECT_EQ(SF_CMD_UUID, cli.cmd);
	EXPECT_EQ(1, cli.count);
	EXPECT_EQ(NULL, cli.device);
	sf_cli_free(&cli);

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "uuid", "-n", "5000", "--device", "/tmp/u"));
	EXPECT_EQ(5000, cli.count);
	EXPECT_STREQ("/tmp/u", cli.device);
	sf_cli_free(&cli);

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "--device", "/tmp/v", "uuid", "--count=4294967295"));
	EXPECT_EQ(4294967295ULL, cli.count);
	EXPECT_STREQ("/tmp/v", cli.device);
	sf_cli_free(&cli);

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "uuid", "--help"));
	EXPECT_TRUE(cli.help);
	sf_cli_free(&cli);
	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "help", "uuid"));
	EXPECT_TRUE(cli.help);
	EXPECT_EQ(SF_CMD_UUID, cli.cmd);
	sf_cli_free(&cli);
}

TEST(uuid_usage_errors)
{
	static const char *const bad[][4] = {
		{ "uuid", "-n", "0", NULL },
		{ "uuid", "-n", "4294967296", NULL },
		{ "uuid", "-n", "x", NULL },
		{ "uuid", "-n", NULL },
		{ "uuid", "--format", "hex", NULL },
		{ "uuid", "extra", NULL },
		{ "uuid", "--device=", NULL },
	};
	struct sf_cli cli;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[6] = { "snowflake" };
		int j;

		for (j = 0; bad[i][j]; j++)
			argv[j + 1] = bad[i][j];
		EXPECT_EQ(SF_EXIT_USAGE, parse(&cli, argv, err, sizeof(err)))
			TH_LOG("case %zu", i);
		EXPECT_NE('\0', err[0]) TH_LOG("case %zu: no message", i);
		sf_cli_free(&cli);
	}
	ASSERT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "uuid", "-n", "0"));
	EXPECT_STREQ("uuid: -n: 0 is out of range (1..4294967295)", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "uuid", "--count", "0"));
	EXPECT_STREQ("uuid: --count: 0 is out of range (1..4294967295)", err);
	sf_cli_free(&cli);
}

/* decode: UUIDv7s among IDs; only the IDs need a layout (or the device). */
TEST(decode_uuids)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "decode", RFC_UUID));
	EXPECT_EQ(1, cli.nids);
	EXPECT_EQ(0, cli.nsnowflakes);
	EXPECT_TRUE(cli.is_uuid[0]);
	EXPECT_EQ(0x01, cli.uuids[0][0]);
	EXPECT_EQ(0x8f, cli.uuids[0][15]);
	sf_cli_free(&cli);

	ASSERT_EQ(SF_EXIT_OK, PARSE(&cli, err, "decode", "--bits", "41/5/5/12",
				    "\"" RFC_UUID "\"", "12345", "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"));
	EXPECT_EQ(3, cli.nids);
	EXPECT_EQ(1, cli.nsnowflakes);
	EXPECT_TRUE(cli.is_uuid[0]);
	EXPECT_FALSE(cli.is_uuid[1]);
	EXPECT_EQ(12345, cli.ids[1]);
	EXPECT_TRUE(cli.is_uuid[2]);
	EXPECT_EQ(0, memcmp(cli.uuids[0], cli.uuids[2], 16));
	sf_cli_free(&cli);
}

TEST(decode_rejects_other_uuids)
{
	struct sf_cli cli;
	char err[256];

	/* Version 4, and version 7 with the Microsoft variant. */
	ASSERT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "017f22e2-79b0-4cc3-98c4-dc0c0c07398f"));
	EXPECT_NE(NULL, strstr(err, "is not a UUIDv7")) TH_LOG("%s", err);
	sf_cli_free(&cli);
	ASSERT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "017f22e2-79b0-7cc3-d8c4-dc0c0c07398f"));
	EXPECT_NE(NULL, strstr(err, "is not a UUIDv7")) TH_LOG("%s", err);
	sf_cli_free(&cli);
	/* Not a UUID's shape: an ID error. */
	ASSERT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "017f22e2-79b0-7cc3-98c4"));
	EXPECT_NE(NULL, strstr(err, "is not an ID")) TH_LOG("%s", err);
	sf_cli_free(&cli);
}

TEST_HARNESS_MAIN
