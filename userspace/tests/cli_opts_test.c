// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the snowflake(1) command-line parsing (cli/opts.c):
 * numbers, formats, layouts, every command's options, usage errors, the
 * device path.  No device needed.  opts.c is compiled in here, so the
 * generic rule for tests/ in userspace/Makefile (linking the library) builds
 * this file as it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../cli/opts.c"


/* Parse a NULL-terminated list; @argv is copied, getopt permutes it. */
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

TEST(parse_uint)
{
	uint64_t v = 7;

	EXPECT_EQ(0, sf_parse_uint("0", 10, &v));
	EXPECT_EQ(0, v);
	EXPECT_EQ(0, sf_parse_uint("18446744073709551615", UINT64_MAX, &v));
	EXPECT_EQ(UINT64_MAX, v);
	EXPECT_EQ(-ERANGE, sf_parse_uint("18446744073709551616", UINT64_MAX, &v));
	EXPECT_EQ(-ERANGE, sf_parse_uint("99999999999999999999999", UINT64_MAX, &v));
	EXPECT_EQ(-ERANGE, sf_parse_uint("11", 10, &v));
	EXPECT_EQ(0, sf_parse_uint("10", 10, &v));
	EXPECT_EQ(0, sf_parse_uint("007", 10, &v));
	EXPECT_EQ(7, v);
	v = 5;
	EXPECT_EQ(-EINVAL, sf_parse_uint("", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint(NULL, 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint("-1", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint("+1", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint(" 1", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint("1 ", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint("0x1", 10, &v));
	EXPECT_EQ(-EINVAL, sf_parse_uint("1e3", 10000, &v));
	/* Syntax wins over range: "99999999999999999999x" is not a number. */
	EXPECT_EQ(-EINVAL, sf_parse_uint("99999999999999999999x", 10, &v));
	EXPECT_EQ(5, v);
}

TEST(parse_format)
{
	enum snowflake_format f = SNOWFLAKE_FORMAT_DEC;

	EXPECT_EQ(0, sf_parse_format("hex", &f));
	EXPECT_EQ(SNOWFLAKE_FORMAT_HEX, f);
	EXPECT_EQ(0, sf_parse_format("json", &f));
	EXPECT_EQ(SNOWFLAKE_FORMAT_JSON, f);
	EXPECT_EQ(0, sf_parse_format("dec", &f));
	EXPECT_EQ(SNOWFLAKE_FORMAT_DEC, f);
	EXPECT_EQ(-EINVAL, sf_parse_format("HEX", &f));
	EXPECT_EQ(-EINVAL, sf_parse_format("", &f));
	EXPECT_EQ(-EINVAL, sf_parse_format("decimal", &f));
}

TEST(parse_bits)
{
	struct snowflake_config c;

	snowflake_default_layout(&c);
	EXPECT_EQ(0, sf_parse_bits("35/4/8/16", &c));
	EXPECT_EQ(35, c.timestamp_bits);
	EXPECT_EQ(4, c.datacenter_bits);
	EXPECT_EQ(8, c.worker_bits);
	EXPECT_EQ(16, c.sequence_bits);
	EXPECT_EQ(0, sf_parse_bits("63/0/0/0", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("64/0/0/0", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41/5/5", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41/5/5/12/1", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41/5//12", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("/41/5/5/12", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41/5/5/12/", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41,5,5,12", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("41/5/5/x", &c));
	EXPECT_EQ(-EINVAL, sf_parse_bits("", &c));
	EXPECT_EQ(-EINVAL,
		  sf_parse_bits("1111111111111111111111111111111111111111111111111111111111111111/1/1/1",
				&c));
	/* A failed parse leaves the layout as it was. */
	EXPECT_EQ(63, c.timestamp_bits);
	EXPECT_EQ(0, c.sequence_bits);
}

TEST(format_time)
{
	char buf[40];

	EXPECT_EQ(24, sf_format_time(0, buf, sizeof(buf)));
	EXPECT_STREQ("1970-01-01T00:00:00.000Z", buf);
	EXPECT_EQ(24, sf_format_time(1288834974657ULL, buf, sizeof(buf)));
	EXPECT_STREQ("2010-11-04T01:42:54.657Z", buf);
	EXPECT_EQ(24, sf_format_time(1795293328476ULL, buf, sizeof(buf)));
	EXPECT_STREQ("2026-11-21T20:35:28.476Z", buf);
	EXPECT_EQ(24, sf_format_time(253402300799999ULL, buf, sizeof(buf)));
	EXPECT_STREQ("9999-12-31T23:59:59.999Z", buf);
	EXPECT_EQ(-EOVERFLOW, sf_format_time(253402300800000ULL, buf, sizeof(buf)));
	EXPECT_EQ(-EOVERFLOW, sf_format_time(UINT64_MAX, buf, sizeof(buf)));
	EXPECT_EQ(-ENOSPC, sf_format_time(0, buf, 24));
}

TEST(global_options_and_commands)
{
	struct sf_cli cli;
	char err[256];

	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "--device"));
	EXPECT_NE(NULL, strstr(err, "--device")) TH_LOG("%s", err);
	EXPECT_EQ(SF_EXIT_USAGE, parse(&cli, (const char *const[]){ "snowflake", NULL },
				       err, sizeof(err)));
	EXPECT_STREQ("no command given", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "frobnicate"));
	EXPECT_STREQ("unknown command 'frobnicate'", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "--bogus", "next"));
	EXPECT_STREQ("unknown option --bogus", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "-x", "next"));
	EXPECT_STREQ("unknown option -x", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "--device=", "next"));

	EXPECT_EQ(0, PARSE(&cli, err, "--help"));
	EXPECT_TRUE(cli.help);
	EXPECT_EQ(SF_CMD_NONE, cli.cmd);
	EXPECT_EQ(0, PARSE(&cli, err, "help", "decode"));
	EXPECT_TRUE(cli.help);
	EXPECT_EQ(SF_CMD_DECODE, cli.cmd);
	EXPECT_EQ(0, PARSE(&cli, err, "help"));
	EXPECT_TRUE(cli.help);
	EXPECT_EQ(SF_CMD_NONE, cli.cmd);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "help", "nope"));
	/* Issue 24: help takes one word; more were ignored (exit 0). */
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "help", "next", "extra"));
	EXPECT_STREQ("help: unexpected argument 'extra'", err);
	EXPECT_FALSE(cli.help);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "help", "decode", "--bogus"));
	EXPECT_STREQ("help: unexpected argument '--bogus'", err);
	EXPECT_EQ(0, PARSE(&cli, err, "stats", "-h"));
	EXPECT_TRUE(cli.help);
	EXPECT_EQ(SF_CMD_STATS, cli.cmd);
	/* --help wins over what follows it. */
	EXPECT_EQ(0, PARSE(&cli, err, "config", "--help", "--worker", "x"));
	EXPECT_TRUE(cli.help);
	EXPECT_STREQ("config", sf_cmd_name(cli.cmd));
}

TEST(version)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(0, PARSE(&cli, err, "--version"));
	EXPECT_TRUE(cli.version);
	ASSERT_EQ(0, PARSE(&cli, err, "--device", "/x", "--version"));
	EXPECT_TRUE(cli.version);
	ASSERT_EQ(0, PARSE(&cli, err, "next"));
	EXPECT_FALSE(cli.version);
	/* A command's option only. */
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--version"));
}

TEST(device_path)
{
	struct sf_cli cli;
	char err[256];

	unsetenv(SNOWFLAKE_PATH_ENV);
	ASSERT_EQ(0, PARSE(&cli, err, "next"));
	EXPECT_STREQ("/dev/snowflake", sf_cli_device(&cli));
	setenv(SNOWFLAKE_PATH_ENV, "", 1);
	EXPECT_STREQ("/dev/snowflake", sf_cli_device(&cli));
	setenv(SNOWFLAKE_PATH_ENV, "/tmp/env", 1);
	EXPECT_STREQ("/tmp/env", sf_cli_device(&cli));
	ASSERT_EQ(0, PARSE(&cli, err, "--device", "/tmp/global", "next"));
	EXPECT_STREQ("/tmp/global", sf_cli_device(&cli));
	ASSERT_EQ(0, PARSE(&cli, err, "next", "--device=/tmp/cmd"));
	EXPECT_STREQ("/tmp/cmd", sf_cli_device(&cli));
	ASSERT_EQ(0, PARSE(&cli, err, "--device", "/tmp/global", "stats", "--device", "/tmp/cmd"));
	EXPECT_STREQ("/tmp/cmd", sf_cli_device(&cli));
	unsetenv(SNOWFLAKE_PATH_ENV);
}

TEST(next_options)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(0, PARSE(&cli, err, "next"));
	EXPECT_EQ(SF_CMD_NEXT, cli.cmd);
	EXPECT_EQ(1, cli.count);
	EXPECT_EQ(SNOWFLAKE_FORMAT_DEC, cli.format);
	EXPECT_FALSE(cli.help);
	ASSERT_EQ(0, PARSE(&cli, err, "next", "-n", "5", "--format", "json"));
	EXPECT_EQ(5, cli.count);
	EXPECT_EQ(SNOWFLAKE_FORMAT_JSON, cli.format);
	ASSERT_EQ(0, PARSE(&cli, err, "next", "-n10", "-fhex"));
	EXPECT_EQ(10, cli.count);
	EXPECT_EQ(SNOWFLAKE_FORMAT_HEX, cli.format);
	ASSERT_EQ(0, PARSE(&cli, err, "next", "--count=4294967295", "--format=dec"));
	EXPECT_EQ(4294967295ULL, cli.count);

	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "-n", "0"));
	EXPECT_STREQ("next: -n: 0 is out of range (1..4294967295)", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "-n", "4294967296"));
	/* Issue 24: the option as it was given, not always -n. */
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--count", "0"));
	EXPECT_STREQ("next: --count: 0 is out of range (1..4294967295)", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--format", "hex", "--count=x"));
	EXPECT_STREQ("next: --count: 'x' is not an unsigned decimal number", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--format", "hex", "-n", "0"));
	EXPECT_STREQ("next: -n: 0 is out of range (1..4294967295)", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "-n", "five"));
	EXPECT_STREQ("next: -n: 'five' is not an unsigned decimal number", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "-n"));
	EXPECT_STREQ("next: option -n needs a value", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--format"));
	EXPECT_STREQ("next: option --format needs a value", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--format", "xml"));
	EXPECT_STREQ("next: --format: 'xml' is not dec, hex or json", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--json"));
	EXPECT_STREQ("next: unknown option --json", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "--frob=1"));
	EXPECT_STREQ("next: unknown option --frob", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "next", "3"));
	EXPECT_STREQ("next: unexpected argument '3'", err);
}

TEST(decode_options)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(0, PARSE(&cli, err, "decode", "1", "0x10", "\"7\""));
	EXPECT_EQ(SF_CMD_DECODE, cli.cmd);
	EXPECT_TRUE(cli.from_device);
	EXPECT_FALSE(cli.json);
	ASSERT_EQ(3, cli.nids);
	EXPECT_EQ(1, cli.ids[0]);
	EXPECT_EQ(16, cli.ids[1]);
	EXPECT_EQ(7, cli.ids[2]);
	sf_cli_free(&cli);
	EXPECT_EQ(NULL, cli.ids);

	/* Options after the IDs too. */
	ASSERT_EQ(0, PARSE(&cli, err, "decode", "5", "--json", "--layout-from-device"));
	EXPECT_TRUE(cli.json);
	EXPECT_TRUE(cli.from_device);
	EXPECT_EQ(1, cli.nids);
	sf_cli_free(&cli);

	/* Offline: the default layout with what is given changed. */
	ASSERT_EQ(0, PARSE(&cli, err, "decode", "--bits", "35/4/8/16", "--unit", "1000",
			   "--epoch", "0", "12345"));
	EXPECT_FALSE(cli.from_device);
	EXPECT_EQ(0, cli.layout.epoch_ms);
	EXPECT_EQ(1000, cli.layout.time_unit_ms);
	EXPECT_EQ(35, cli.layout.timestamp_bits);
	EXPECT_EQ(16, cli.layout.sequence_bits);
	sf_cli_free(&cli);
	ASSERT_EQ(0, PARSE(&cli, err, "decode", "--unit", "10", "1"));
	EXPECT_FALSE(cli.from_device);
	EXPECT_EQ(SNOWFLAKE_TWITTER_EPOCH_MS, cli.layout.epoch_ms);
	EXPECT_EQ(41, cli.layout.timestamp_bits);
	sf_cli_free(&cli);

	/* No ID, or "-" alone: standard input (read by main.c). */
	ASSERT_EQ(0, PARSE(&cli, err, "decode"));
	EXPECT_TRUE(cli.ids_stdin);
	EXPECT_TRUE(cli.ids_stdin_implicit);
	EXPECT_EQ(0, cli.nids);
	sf_cli_free(&cli);
	ASSERT_EQ(0, PARSE(&cli, err, "decode", "--bits", "41/5/5/12", "-"));
	EXPECT_TRUE(cli.ids_stdin);
	EXPECT_FALSE(cli.ids_stdin_implicit);
	/* What main.c does with each word of standard input. */
	EXPECT_EQ(0, sf_cli_add_id(&cli, "\"12\"", "standard input line 1: ", err, sizeof(err)));
	EXPECT_EQ(0, sf_cli_add_id(&cli, "017F22E2-79B0-7CC3-98C4-DC0C0C07398F", "", err,
				   sizeof(err)));
	ASSERT_EQ(2, cli.nids);
	EXPECT_EQ(12, cli.ids[0]);
	EXPECT_TRUE(cli.is_uuid[1]);
	EXPECT_EQ(1, cli.nsnowflakes);
	for (int i = 0; i < 40; i++)	/* past the first allocation */
		ASSERT_EQ(0, sf_cli_add_id(&cli, "7", "", err, sizeof(err)));
	EXPECT_EQ(SF_EXIT_USAGE, sf_cli_add_id(&cli, "x", "standard input line 3: ", err,
					       sizeof(err)));
	EXPECT_STREQ("decode: standard input line 3: 'x' is not an ID (decimal or 0x-hex)", err);
	EXPECT_EQ(42, cli.nids);
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "1", "-"));
	EXPECT_STREQ("decode: '-' (standard input) goes alone, without IDs as arguments", err);
	sf_cli_free(&cli);
	/*
	 * Issue 24: an ID that fits the layout but whose time overflows
	 * 64-bit ms was said to have "bits set above the layout".
	 */
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--bits", "63/0/0/0", "--unit", "2",
				       "0x7fffffffffffffff"));
	EXPECT_EQ(NULL, strstr(err, "bits set above")) TH_LOG("%s", err);
	EXPECT_STREQ("decode: 0x7fffffffffffffff: its time does not fit 64-bit Unix ms: timestamp 9223372036854775807 ticks of 2 ms from epoch_ms 1288834974657 (the 63/0/0/0 layout)",
		     err);
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "1", "x1"));
	EXPECT_STREQ("decode: 'x1' is not an ID (decimal or 0x-hex)", err);
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "18446744073709551616"));
	EXPECT_STREQ("decode: '18446744073709551616' does not fit 64 bits", err);
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--epoch", "1",
				       "--layout-from-device", "1"));
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--unit", "0", "1"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--unit", "3600001", "1"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--bits", "41/5/5/13", "1"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--bits", "0/5/5/12", "1"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--bits", "41/32/0/0", "1"));
	/* Offline, an ID with bits above the layout is refused; bit 63 always. */
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--bits", "10/0/0/0", "1024"));
	sf_cli_free(&cli);
	EXPECT_EQ(0, PARSE(&cli, err, "decode", "--bits", "10/0/0/0", "1023"));
	sf_cli_free(&cli);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "decode", "--unit", "1", "0x8000000000000000"));
	sf_cli_free(&cli);
}

TEST(config_options)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(0, PARSE(&cli, err, "config"));
	EXPECT_EQ(SF_CMD_CONFIG, cli.cmd);
	EXPECT_FALSE(cli.set_worker || cli.set_datacenter || cli.set_random || cli.set_floor);

	ASSERT_EQ(0, PARSE(&cli, err, "config", "--worker", "3", "--datacenter=4",
			   "--random-sequence", "1", "--floor", "1795293328476"));
	EXPECT_TRUE(cli.set_worker && cli.set_datacenter && cli.set_random && cli.set_floor);
	EXPECT_EQ(3, cli.worker);
	EXPECT_EQ(4, cli.datacenter);
	EXPECT_TRUE(cli.random_sequence);
	EXPECT_EQ(1795293328476ULL, cli.floor_ms);
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--fence", "1"));
	EXPECT_TRUE(cli.set_fence && cli.fence);
	EXPECT_FALSE(cli.set_worker || cli.set_random);
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--fence=0"));
	EXPECT_TRUE(cli.set_fence);
	EXPECT_FALSE(cli.fence);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--fence", "2"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--fence", "on"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--fence"));
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--random-sequence=0"));
	EXPECT_TRUE(cli.set_random);
	EXPECT_FALSE(cli.random_sequence);
	EXPECT_FALSE(cli.set_worker);
	/* The widths are the device's: 4294967295 parses, the device checks fit. */
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--worker", "4294967295"));

	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--worker", "4294967296"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--worker", "-1"));
	EXPECT_STREQ("config: --worker: '-1' is not an unsigned decimal number", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--datacenter", ""));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--random-sequence", "2"));
	EXPECT_STREQ("config: --random-sequence: 2 is out of range (0..1)", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--random-sequence", "yes"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--floor", "9223372036854775808"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--worker"));
	EXPECT_STREQ("config: option --worker needs a value", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--prometheus"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "worker", "3"));
}

/* config --json shows; --force goes with a --floor far ahead. */
TEST(config_json_and_force)
{
	const uint64_t day = 24ULL * 3600 * 1000, now = 1795293328476ULL;
	struct sf_cli cli;
	char err[256], far[32], near[32];
	struct timespec ts;
	uint64_t wall;

	ASSERT_EQ(0, PARSE(&cli, err, "config", "--json"));
	EXPECT_TRUE(cli.json);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--json", "--worker", "1"));
	EXPECT_STREQ("config: --json shows the configuration; it takes no change", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--force"));
	EXPECT_STREQ("config: --force goes with --floor", err);

	/* The rule, with a given now. */
	EXPECT_EQ(0, sf_check_floor_ahead(now, now, false, err, sizeof(err)));
	EXPECT_EQ(0, sf_check_floor_ahead(now - day * 365, now, false, err, sizeof(err)));
	EXPECT_EQ(0, sf_check_floor_ahead(now + day, now, false, err, sizeof(err)));
	EXPECT_EQ(SF_EXIT_USAGE, sf_check_floor_ahead(now + day + 1, now, false, err,
						      sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "add --force")) TH_LOG("%s", err);
	EXPECT_EQ(0, sf_check_floor_ahead(now + day + 1, now, true, err, sizeof(err)));
	EXPECT_EQ(0, sf_check_floor_ahead(UINT64_MAX, now, true, err, sizeof(err)));

	/* And through the command line, against the wall clock. */
	clock_gettime(CLOCK_REALTIME, &ts);
	wall = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	snprintf(far, sizeof(far), "%llu", (unsigned long long)(wall + 2 * day));
	snprintf(near, sizeof(near), "%llu", (unsigned long long)(wall + day / 2));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "config", "--floor", far));
	EXPECT_NE(NULL, strstr(err, "days ahead of now")) TH_LOG("%s", err);
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--floor", far, "--force"));
	EXPECT_TRUE(cli.force && cli.set_floor);
	ASSERT_EQ(0, PARSE(&cli, err, "config", "--floor", near));
	EXPECT_FALSE(cli.force);
}

TEST(stats_options)
{
	struct sf_cli cli;
	char err[256];

	ASSERT_EQ(0, PARSE(&cli, err, "stats"));
	EXPECT_EQ(SF_CMD_STATS, cli.cmd);
	EXPECT_FALSE(cli.prometheus);
	ASSERT_EQ(0, PARSE(&cli, err, "stats", "--prometheus"));
	EXPECT_TRUE(cli.prometheus);
	EXPECT_FALSE(cli.json);
	ASSERT_EQ(0, PARSE(&cli, err, "stats", "--json"));
	EXPECT_TRUE(cli.json);
	EXPECT_FALSE(cli.prometheus);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "stats", "--json", "--prometheus"));
	EXPECT_STREQ("stats: --json and --prometheus exclude each other", err);
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "stats", "-n", "1"));
	EXPECT_EQ(SF_EXIT_USAGE, PARSE(&cli, err, "stats", "now"));
}

/* config --save's reading of other modprobe.d files, as kmod reads them. */
static unsigned int find(const char *text, char *found, size_t len)
{
	static const char *const ids[] = { "datacenter_id", "worker_id", NULL };

	found[0] = '\0';
	return sf_modprobe_find(text, strlen(text), ids, found, len);
}

TEST(modprobe_find)
{
	char f[64];

	EXPECT_EQ(0, find("", f, sizeof(f)));
	EXPECT_EQ(0, find("# options snowflake worker_id=5\n", f, sizeof(f)));
	EXPECT_EQ(0, find("   #options snowflake worker_id=5\n", f, sizeof(f)));
	EXPECT_EQ(0, find("options snowflake strict=1\n", f, sizeof(f)));
	EXPECT_EQ(0, find("options snowflakes worker_id=5\n", f, sizeof(f)));
	EXPECT_EQ(0, find("options other worker_id=5\n", f, sizeof(f)));
	EXPECT_EQ(0, find("install snowflake worker_id=5\n", f, sizeof(f)));
	EXPECT_EQ(0, find("options snowflake worker_idx=5 my_worker_id=1\n", f, sizeof(f)));
	EXPECT_EQ(2, find("# the host\noptions snowflake strict=0 worker_id=5\n", f, sizeof(f)));
	EXPECT_STREQ("worker_id=5", f);
	EXPECT_EQ(1, find("\toptions\tsnowflake datacenter_id=3", f, sizeof(f)));
	EXPECT_STREQ("datacenter_id=3", f);
	/* kmod: '-' and '_' are one in a module name; a bare boolean form. */
	EXPECT_EQ(1, find("options snowflake worker_id\n", f, sizeof(f)));
	EXPECT_STREQ("worker_id", f);
	/* A line that goes on on the next: found, at the line it starts on. */
	EXPECT_EQ(3, find("\n\noptions snowflake \\\n  strict=1 \\\n  worker_id=7\nx\n", f,
			  sizeof(f)));
	EXPECT_STREQ("worker_id=7", f);
	EXPECT_EQ(0, find("options snowflake strict=1 \\\n", f, sizeof(f)));
	EXPECT_EQ(0, find("options \\\n# worker_id=1\n", f, sizeof(f)));
}

TEST_HARNESS_MAIN
