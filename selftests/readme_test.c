// SPDX-License-Identifier: GPL-2.0
/*
 * The README's shell examples, as written there, in the guest: the README is
 * copied into the initramfs by tests/vmtest/run.sh ($SNOWFLAKE_README
 * overrides the path); the first ```sh block of "## Reading IDs", of
 * "## Reading UUIDv7s" and of "## The command line" are run line by line with sh -c
 * (busybox) against the real device, and their output checked.
 *
 * (The Python, PHP and C examples cannot run in the busybox guest:
 * tests/docs/readme-examples.sh runs them on the host.)
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

#define README_DEFAULT	"/usr/share/doc/snowflake/README.md"
#define SLACK_MS	100
#define MAX_LINES	32

static const char *readme_path(void)
{
	const char *p = getenv("SNOWFLAKE_README");

	return p && *p ? p : README_DEFAULT;
}

/*
 * The command lines (not blank, not only a comment) of the first ```sh block
 * after the line starting with @heading, before the next "## " heading.
 * Returns how many, or -errno.
 */
static int sh_block(const char *heading, char lines[][512], int max)
{
	FILE *f = fopen(readme_path(), "re");
	bool in_section = false, in_block = false;
	char buf[512];
	int n = 0;

	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (!in_section) {
			in_section = !strncmp(buf, heading, strlen(heading));
			continue;
		}
		if (!in_block) {
			if (!strncmp(buf, "## ", 3))
				break;
			in_block = !strcmp(buf, "```sh");
			continue;
		}
		if (!strcmp(buf, "```"))
			break;
		if (!buf[strspn(buf, " \t")] || buf[strspn(buf, " \t")] == '#')
			continue;
		if (n == max)
			break;
		snprintf(lines[n++], 512, "%s", buf);
	}
	fclose(f);
	return n;
}

/* sh -c @cmd: its exit status (-1 if it did not exit), stdout in @out. */
static int run_sh(const char *cmd, char *out, size_t len)
{
	char scratch[4096];
	FILE *p;
	size_t n = 0, r;
	int status;

	fflush(NULL);
	p = popen(cmd, "re");
	if (!p)
		return -1;
	while (n + 1 < len && (r = fread(out + n, 1, len - 1 - n, p)) > 0)
		n += r;
	out[n] = '\0';
	/* Drain what did not fit, so the command does not block. */
	while (fread(scratch, 1, sizeof(scratch), p) > 0)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

FIXTURE(readme) {
	int unused;
};

FIXTURE_SETUP(readme)
{
	ASSERT_TRUE(sf_path_exists(readme_path()))
		TH_LOG("%s is missing (tests/vmtest/run.sh copies the README into the guest)",
		       readme_path());
	ASSERT_EQ(0, sf_reload("datacenter_id=2 worker_id=5"));
}

FIXTURE_TEARDOWN(readme)
{
}

TEST_F(readme, reading_ids_shell_example)
{
	char lines[MAX_LINES][512], out[256], *p, *end;
	struct snowflake_config c;
	uint64_t t0, t1, id;
	struct sf_id f;
	int n;

	n = sh_block("## Reading IDs", lines, MAX_LINES);
	ASSERT_EQ(1, n) TH_LOG("want one command in the ```sh block of ## Reading IDs");
	ASSERT_NE(NULL, strstr(lines[0], "/dev/snowflake")) TH_LOG("'%s'", lines[0]);
	TH_LOG("running: %s", lines[0]);

	t0 = sf_real_ms();
	ASSERT_EQ(0, run_sh(lines[0], out, sizeof(out))) TH_LOG("'%s'", lines[0]);
	t1 = sf_real_ms();
	/* One unsigned decimal, with od's spacing around it. */
	p = out + strspn(out, " \t");
	id = strtoull(p, &end, 10);
	ASSERT_NE(p, end) TH_LOG("output '%s'", out);
	EXPECT_EQ('\n', *end) TH_LOG("output '%s'", out);
	EXPECT_EQ('\0', end[strspn(end, " \t\n")]) TH_LOG("output '%s'", out);

	ASSERT_EQ(0, sf_get_config_dev(&c));
	f = sf_decode(&c, id);
	EXPECT_EQ(2, f.dc);
	EXPECT_EQ(5, f.worker);
	EXPECT_EQ(0, f.high);
	EXPECT_LE(t0, f.ms + c.time_unit_ms + SLACK_MS);
	EXPECT_GE(t1 + SLACK_MS, f.ms);
	EXPECT_EQ(sf_sysfs_u64("last_timestamp_ms"), f.ms);
	/* od -N 8 reads exactly 8 bytes: the example uses up one ID, no more. */
	EXPECT_EQ(1, sf_sysfs_u64("statistics/ids_issued"));
}

TEST_F(readme, cli_example_block)
{
	char lines[MAX_LINES][512];
	static char out[65536];
	bool saw_decode = false, saw_config = false;
	int n, i, rc;

	ASSERT_TRUE(sf_path_exists("/usr/bin/snowflake"));
	n = sh_block("## The command line", lines, MAX_LINES);
	ASSERT_LE(3, n) TH_LOG("no ```sh block of CLI examples in ## The command line");
	for (i = 0; i < n; i++) {
		TH_LOG("running: %s", lines[i]);
		ASSERT_EQ(0, strncmp(lines[i], "snowflake ", 10)) TH_LOG("'%s'", lines[i]);
		rc = run_sh(lines[i], out, sizeof(out));
		EXPECT_EQ(0, rc) TH_LOG("'%s': exit %d, output '%s'", lines[i], rc, out);
		if (strstr(lines[i], "config --worker")) {
			saw_config = true;
			EXPECT_STREQ("", out);
			continue;
		}
		EXPECT_NE('\0', out[0]) TH_LOG("'%s' printed nothing", lines[i]);
		if (strstr(lines[i], "--format json"))
			EXPECT_EQ('[', out[0]) TH_LOG("%s", out);
		if (strstr(lines[i], "decode \"$(snowflake next)\"")) {
			saw_decode = true;
			/* Before the config line: the ids the module was loaded with. */
			EXPECT_NE(NULL, strstr(out, " datacenter=2 worker=5 ")) TH_LOG("%s", out);
		}
	}
	EXPECT_TRUE(saw_decode);
	EXPECT_TRUE(saw_config);
	/* The README's config line gives worker 3 in datacenter 1. */
	EXPECT_EQ(3, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(1, sf_sysfs_u64("datacenter_id"));
}

/* The bytes of a UUID from hex digits in @s, skipping '-' and blanks. */
static int hex_uuid(const char *s, uint8_t *u)
{
	int n = 0, hi = -1;

	for (; *s && n < 16; s++) {
		int v;

		if (*s == '-' || *s == ' ' || *s == '\t' || *s == '\n')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else
			return -1;
		if (hi < 0) {
			hi = v;
		} else {
			u[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return n;
}

/*
 * "## Reading UUIDv7s": the CLI line prints one canonical UUIDv7, the od
 * line 16 bytes of one; both are version 7 with the RFC variant, from now,
 * the second above the first; two UUIDs were issued in all.
 */
TEST_F(readme, reading_uuids_shell_example)
{
	char lines[MAX_LINES][512], out[256];
	uint8_t u[2][16];
	uint64_t t0, t1, ms;
	int n, i, j;

	n = sh_block("## Reading UUIDv7s", lines, MAX_LINES);
	ASSERT_EQ(2, n) TH_LOG("want two commands in the ```sh block of ## Reading UUIDv7s");
	ASSERT_STREQ("snowflake uuid", lines[0]);
	ASSERT_NE(NULL, strstr(lines[1], "/dev/uuidv7")) TH_LOG("'%s'", lines[1]);
	for (i = 0; i < 2; i++) {
		TH_LOG("running: %s", lines[i]);
		t0 = sf_real_ms();
		ASSERT_EQ(0, run_sh(lines[i], out, sizeof(out))) TH_LOG("'%s'", lines[i]);
		t1 = sf_real_ms();
		ASSERT_EQ(16, hex_uuid(out, u[i])) TH_LOG("output '%s'", out);
		if (i == 0)
			EXPECT_EQ(37, strlen(out)) TH_LOG("output '%s'", out);
		EXPECT_EQ(7, u[i][6] >> 4) TH_LOG("output '%s'", out);
		EXPECT_EQ(2, u[i][8] >> 6) TH_LOG("output '%s'", out);
		for (ms = 0, j = 0; j < 6; j++)
			ms = ms << 8 | u[i][j];
		EXPECT_LE(t0, ms + SLACK_MS);
		EXPECT_GE(t1, ms);
	}
	EXPECT_GT(0, memcmp(u[0], u[1], 16));
	ASSERT_EQ(0, sf_read_path("/sys/class/misc/uuidv7/statistics/issued", out, sizeof(out)) < 0);
	EXPECT_STREQ("2\n", out);
}

SF_TEST_MAIN()
