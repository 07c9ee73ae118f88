// SPDX-License-Identifier: GPL-2.0
/*
 * The snowflake(1) CLI end to end: the static binary (installed in the guest
 * as /usr/bin/snowflake by tests/vmtest/run.sh; $SNOWFLAKE_CLI overrides) is
 * run with fork+exec, its stdout, stderr and exit code checked against the
 * module's sysfs files: next in every format, decode of a just-issued ID,
 * config shown and set (as root, and refused as nobody), usage errors that
 * change nothing, stats in plain and Prometheus text format.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <grp.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define CLI_DEFAULT	"/usr/bin/snowflake"
#define NOBODY		65534
#define SLACK_MS	100

/* Exit codes of the CLI. */
#define EXIT_OK		0
#define EXIT_RUNTIME	1
#define EXIT_USAGE	2

static const char *cli_path(void)
{
	const char *p = getenv("SNOWFLAKE_CLI");

	return p && *p ? p : CLI_DEFAULT;
}

struct run {
	int rc;		/* exit code, 128 + signal, -1 when it did not run */
	char *out;	/* stdout, NUL-terminated */
	char *err;	/* stderr */
};

/* How the child runs: as whom, and with which $SNOWFLAKE_DEVICE. */
struct how {
	bool nobody;
	gid_t group;	/* with nobody: its one supplementary group (0: none) */
	const char *env_device;	/* NULL: unset */
};

static char *slurp(int fd)
{
	struct stat st;
	char *buf;
	ssize_t n;

	if (fstat(fd, &st))
		return strdup("");
	buf = calloc(1, (size_t)st.st_size + 1);
	if (!buf)
		return NULL;
	n = pread(fd, buf, (size_t)st.st_size, 0);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Run the CLI with @argv (NULL-terminated, without argv[0]). */
static void run_how(struct run *r, const struct how *how, const char *const *argv)
{
	const char *args[64];
	int out, err;
	size_t i;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->rc = -1;
	args[0] = "snowflake";
	for (i = 0; argv[i] && i < SF_ARRAY_SIZE(args) - 2; i++)
		args[i + 1] = argv[i];
	args[i + 1] = NULL;

	out = memfd_create("stdout", MFD_CLOEXEC);
	err = memfd_create("stderr", MFD_CLOEXEC);
	if (out < 0 || err < 0)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		if (how && how->nobody) {
			if (setgroups(how->group ? 1 : 0, &how->group) || setgid(NOBODY) ||
			    setuid(NOBODY))
				_exit(126);
		}
		if (how && how->env_device)
			setenv("SNOWFLAKE_DEVICE", how->env_device, 1);
		else
			unsetenv("SNOWFLAKE_DEVICE");
		execv(cli_path(), (char *const *)args);
		_exit(127);
	}
	if (pid > 0)
		r->rc = sf_wait_child(pid);
	r->out = slurp(out);
	r->err = slurp(err);
	close(out);
	close(err);
}

#define RUN(r, ...) run_how((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define RUN_HOW(r, how, ...) run_how((r), (how), (const char *const[]){ __VA_ARGS__, NULL })

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* Split @s into lines in place: the number of lines (a last empty one dropped). */
static size_t split_lines(char *s, char **lines, size_t max)
{
	size_t n = 0;
	char *p = s;

	while (*p && n < max) {
		char *nl = strchr(p, '\n');

		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static uint64_t u64_of(const char *s, int base)
{
	return strtoull(s, NULL, base);
}

/* The rw sysfs files and ids_issued: a usage error must change none of them. */
static const char * const watched[] = {
	"worker_id", "datacenter_id", "floor_ms", "random_sequence",
	"statistics/ids_issued",
};

struct snap {
	uint64_t v[SF_ARRAY_SIZE(watched)];
};

static void take(struct snap *s)
{
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(watched); i++)
		s->v[i] = sf_sysfs_u64(watched[i]);
}

/*
 * Every test here runs the CLI, a new process each time (up to 35 in one
 * test).  Under the debug kernel (KASAN, lockdep, kmemleak) on TCG beside
 * other guests one run took over a second: the harness' default of 30 s per
 * test ended cli.usage_errors_exit_2_and_change_nothing in CI's run of
 * 109e975.  Nothing here is timed; the limit only ends a hung test.
 */
#define CLI_TEST_TIMEOUT 300

FIXTURE(cli) {
	int unused;
};

FIXTURE_SETUP(cli)
{
	ASSERT_TRUE(sf_path_exists(cli_path()))
		TH_LOG("the CLI %s is missing from the guest (tests/vmtest/run.sh installs it)",
		       cli_path());
	ASSERT_EQ(0, sf_reload("datacenter_id=1 worker_id=2"));
}

FIXTURE_TEARDOWN(cli)
{
}

/* @n decimal lines, strictly increasing, and nothing on stderr. */
static void expect_ids(struct __test_metadata *_metadata, struct run *r, size_t n,
		       int base, uint64_t *ids)
{
	char *lines[16];
	size_t i, got;

	ASSERT_EQ(EXIT_OK, r->rc) TH_LOG("stderr: %s", r->err);
	EXPECT_STREQ("", r->err);
	got = split_lines(r->out, lines, SF_ARRAY_SIZE(lines));
	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++) {
		const char *digits = lines[i];

		if (base == 16) {
			ASSERT_EQ(0, strncmp(digits, "0x", 2)) TH_LOG("'%s'", lines[i]);
			digits += 2;
			ASSERT_TRUE(strspn(digits, "0123456789abcdef") == strlen(digits) &&
				    *digits) TH_LOG("'%s'", lines[i]);
		} else {
			ASSERT_TRUE(all_digits(digits)) TH_LOG("'%s'", lines[i]);
		}
		ids[i] = u64_of(digits, base);
		if (i)
			EXPECT_LT(ids[i - 1], ids[i]);
	}
}

TEST_F_TIMEOUT(cli, next_prints_increasing_decimal_ids, CLI_TEST_TIMEOUT)
{
	uint64_t ids[5], before, after;
	struct snowflake_config c;
	struct run r;

	before = sf_sysfs_u64("statistics/ids_issued");
	RUN(&r, "next", "-n", "5");
	after = sf_sysfs_u64("statistics/ids_issued");
	expect_ids(_metadata, &r, 5, 10, ids);
	EXPECT_EQ(5, after - before);
	ASSERT_EQ(0, sf_get_config_dev(&c));
	EXPECT_EQ(1, sf_decode(&c, ids[0]).dc);
	EXPECT_EQ(2, sf_decode(&c, ids[0]).worker);
	run_free(&r);

	/* The default is one ID, and later than the earlier ones. */
	RUN(&r, "next");
	expect_ids(_metadata, &r, 1, 10, ids);
	run_free(&r);
	RUN(&r, "--device", SF_DEV, "next", "--count=3", "--format", "dec");
	expect_ids(_metadata, &r, 3, 10, ids);
	run_free(&r);
}

TEST_F_TIMEOUT(cli, next_hex, CLI_TEST_TIMEOUT)
{
	uint64_t ids[4];
	struct run r;

	RUN(&r, "next", "--format", "hex", "-n", "4");
	expect_ids(_metadata, &r, 4, 16, ids);
	run_free(&r);
	RUN(&r, "next", "-f", "hex");
	expect_ids(_metadata, &r, 1, 16, ids);
	run_free(&r);
}

TEST_F_TIMEOUT(cli, next_json_is_an_array_of_strings, CLI_TEST_TIMEOUT)
{
	uint64_t ids[8];
	struct run r;
	size_t n = 0;
	char *p;

	RUN(&r, "next", "--format=json", "-n", "3");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	/* [ "d" (, "d")* ] with any whitespace between tokens. */
	p = r.out;
	p += strspn(p, " \t\n");
	ASSERT_EQ('[', *p);
	p++;
	for (;;) {
		char *end;

		p += strspn(p, " \t\n");
		ASSERT_EQ('"', *p) TH_LOG("at '%s'", p);
		p++;
		end = strchr(p, '"');
		ASSERT_NE(NULL, end);
		*end = '\0';
		ASSERT_TRUE(all_digits(p)) TH_LOG("'%s'", p);
		ASSERT_GT(SF_ARRAY_SIZE(ids), n);
		ids[n] = u64_of(p, 10);
		if (n)
			EXPECT_LT(ids[n - 1], ids[n]);
		n++;
		p = end + 1;
		p += strspn(p, " \t\n");
		if (*p == ',') {
			p++;
			continue;
		}
		ASSERT_EQ(']', *p) TH_LOG("at '%s'", p);
		p++;
		break;
	}
	p += strspn(p, " \t\n");
	EXPECT_EQ('\0', *p);
	EXPECT_EQ(3, n);
	run_free(&r);
}

TEST_F_TIMEOUT(cli, next_many_ids_across_short_reads, CLI_TEST_TIMEOUT)
{
	uint64_t before, after, prev = 0;
	size_t n = 0;
	struct run r;
	char *line, *save = NULL;

	before = sf_sysfs_u64("statistics/reads");
	RUN(&r, "next", "-n", "10000");
	after = sf_sysfs_u64("statistics/reads");
	ASSERT_EQ(EXIT_OK, r.rc);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t v = u64_of(line, 10);

		ASSERT_LT(prev, v);
		prev = v;
		n++;
	}
	EXPECT_EQ(10000, n);
	EXPECT_LE(3, after - before);
	run_free(&r);
}

/* "time=..." (or "\"time\":\"...\"") of the decode output. */
static bool field(const char *out, const char *key, char *val, size_t len)
{
	const char *p = strstr(out, key);
	size_t n;

	if (!p)
		return false;
	p += strlen(key);
	n = strcspn(p, " \"\n,}");
	if (n >= len)
		return false;
	memcpy(val, p, n);
	val[n] = '\0';
	return true;
}

static void iso_ms(uint64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03uZ", (unsigned int)(ms % 1000));
}

TEST_F_TIMEOUT(cli, decode_shows_the_ids_and_the_current_utc_time, CLI_TEST_TIMEOUT)
{
	char when[64], want[64], t0s[64], t1s[64], idbuf[32];
	struct snowflake_config c;
	uint64_t ids[1], t0, t1;
	struct sf_id f;
	struct run r;

	/* Set the ids with the CLI, check sysfs. */
	RUN(&r, "config", "--worker", "21", "--datacenter", "7");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	ASSERT_EQ(21, sf_sysfs_u64("worker_id"));
	ASSERT_EQ(7, sf_sysfs_u64("datacenter_id"));

	t0 = sf_real_ms();
	RUN(&r, "next");
	t1 = sf_real_ms();
	expect_ids(_metadata, &r, 1, 10, ids);
	run_free(&r);
	snprintf(idbuf, sizeof(idbuf), "%" PRIu64, ids[0]);

	RUN(&r, "decode", idbuf);
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.out, "datacenter=7 ")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "worker=21 ")) TH_LOG("%s", r.out);
	ASSERT_TRUE(field(r.out, "time=", when, sizeof(when))) TH_LOG("%s", r.out);
	/* To the millisecond: what the layout says. */
	ASSERT_EQ(0, sf_get_config_dev(&c));
	f = sf_decode(&c, ids[0]);
	iso_ms(f.ms, want, sizeof(want));
	EXPECT_STREQ(want, when);
	/* To the second: the wall clock when it was issued. */
	iso_ms(t0 - SLACK_MS, t0s, sizeof(t0s));
	iso_ms(t1 + SLACK_MS, t1s, sizeof(t1s));
	EXPECT_TRUE(strncmp(when, t0s, 19) == 0 || strncmp(when, t1s, 19) == 0)
		TH_LOG("ID time %s, CLOCK_REALTIME %s..%s", when, t0s, t1s);
	EXPECT_LE(t0, f.ms + c.time_unit_ms + SLACK_MS);
	EXPECT_GE(t1 + SLACK_MS, f.ms);
	EXPECT_EQ(0, strncmp(r.out, "id=", 3));
	run_free(&r);

	/* JSON: one object, the ID as a string. */
	RUN(&r, "decode", "--json", idbuf);
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	snprintf(want, sizeof(want), "\"id\":\"%s\"", idbuf);
	EXPECT_NE(NULL, strstr(r.out, want)) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"datacenter\":7")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"worker\":21")) TH_LOG("%s", r.out);
	ASSERT_TRUE(field(r.out, "\"time\":\"", when, sizeof(when))) TH_LOG("%s", r.out);
	iso_ms(f.ms, want, sizeof(want));
	EXPECT_STREQ(want, when);
	EXPECT_EQ('{', r.out[0]);
	run_free(&r);
}

TEST_F_TIMEOUT(cli, decode_offline_and_without_a_device, CLI_TEST_TIMEOUT)
{
	struct snowflake_config c;
	char idbuf[32], want[64], when[64];
	uint64_t id;
	struct run r;
	struct how nodev = { .env_device = "/nonexistent/snowflake" };

	/* A layout given on the command line: the device is not opened. */
	sf_default_config(&c);
	c.epoch_ms = 0;
	c.time_unit_ms = 1000;
	c.timestamp_bits = 35;
	c.datacenter_bits = 4;
	c.worker_bits = 8;
	c.sequence_bits = 16;
	id = sf_encode(&c, 1795219200ULL, 9, 200, 65535);
	snprintf(idbuf, sizeof(idbuf), "%" PRIu64, id);
	RUN_HOW(&r, &nodev, "decode", "--epoch", "0", "--unit", "1000", "--bits", "35/4/8/16",
		idbuf);
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	iso_ms(1795219200000ULL, want, sizeof(want));
	ASSERT_TRUE(field(r.out, "time=", when, sizeof(when))) TH_LOG("%s", r.out);
	EXPECT_STREQ(want, when);
	EXPECT_NE(NULL, strstr(r.out, "datacenter=9 worker=200 sequence=65535"))
		TH_LOG("%s", r.out);
	run_free(&r);

	/* No device: the default layout, with a note on stderr naming it. */
	RUN_HOW(&r, &nodev, "decode", "0x400000");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.out, "id=4194304 ")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, " timestamp=1 datacenter=0 worker=0 sequence=0"))
		TH_LOG("%s", r.out);
	EXPECT_EQ(r.err, strstr(r.err, "snowflake: note: no device /nonexistent/snowflake"))
		TH_LOG("%s", r.err);
	EXPECT_NE(NULL, strstr(r.err, "default layout 41/5/5/12")) TH_LOG("%s", r.err);
	run_free(&r);
	/* --layout-from-device: the device is required. */
	RUN_HOW(&r, &nodev, "decode", "--layout-from-device", "1");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_NE(NULL, strstr(r.err, "/nonexistent/snowflake")) TH_LOG("%s", r.err);
	EXPECT_STREQ("", r.out);
	run_free(&r);

	/* --device wins over $SNOWFLAKE_DEVICE. */
	RUN_HOW(&r, &nodev, "decode", "--device", SF_DEV, "--layout-from-device", "0x400000");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.out, "id=4194304 ")) TH_LOG("%s", r.out);
	run_free(&r);
	RUN_HOW(&r, &nodev, "--device", SF_DEV, "next");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	RUN_HOW(&r, &nodev, "next");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_EQ(0, strncmp(r.err, "snowflake: ", 11)) TH_LOG("%s", r.err);
	run_free(&r);
	nodev.env_device = SF_DEV;
	RUN_HOW(&r, &nodev, "next");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
}

/* `config`: one "name value" per line, each the sysfs file of that name. */
TEST_F_TIMEOUT(cli, config_shows_the_sysfs_values, CLI_TEST_TIMEOUT)
{
	static const char * const names[] = {
		"epoch_ms", "time_unit_ms", "timestamp_bits", "datacenter_bits",
		"worker_bits", "sequence_bits", "datacenter_id", "worker_id",
		"random_sequence", "strict", "worker_set", "refusing", "fenced", "floor_ms",
		"last_timestamp_ms",
	};
	char *lines[64];
	size_t n, i, j;
	struct run r;

	RUN(&r, "config");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	n = split_lines(r.out, lines, SF_ARRAY_SIZE(lines));
	EXPECT_EQ(SF_ARRAY_SIZE(names), n);
	for (i = 0; i < n; i++) {
		char *sp = strchr(lines[i], ' ');

		ASSERT_NE(NULL, sp) TH_LOG("'%s'", lines[i]);
		*sp = '\0';
		ASSERT_TRUE(all_digits(sp + 1)) TH_LOG("'%s'", sp + 1);
		for (j = 0; j < SF_ARRAY_SIZE(names); j++)
			if (!strcmp(names[j], lines[i]))
				break;
		EXPECT_GT(SF_ARRAY_SIZE(names), j) TH_LOG("unknown name '%s'", lines[i]);
		EXPECT_EQ(sf_sysfs_u64(lines[i]), u64_of(sp + 1, 10)) TH_LOG("%s", lines[i]);
	}
	run_free(&r);
}

TEST_F_TIMEOUT(cli, config_sets_ids_random_sequence_and_floor_as_root, CLI_TEST_TIMEOUT)
{
	uint64_t floor_ms = sf_real_ms() - 10000;
	char fbuf[32];
	struct run r;

	RUN(&r, "config", "--worker", "9");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	run_free(&r);
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(1, sf_sysfs_u64("datacenter_id"));	/* kept */

	RUN(&r, "config", "--datacenter", "31");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(31, sf_sysfs_u64("datacenter_id"));

	snprintf(fbuf, sizeof(fbuf), "%" PRIu64, floor_ms);
	RUN(&r, "config", "--random-sequence", "1", "--floor", fbuf);
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(1, sf_sysfs_u64("random_sequence"));
	EXPECT_EQ(floor_ms, sf_sysfs_u64("floor_ms"));
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));

	RUN(&r, "config", "--random-sequence", "0");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("random_sequence"));
}

/* config --fence 1|0: reads fail (exit 1, a hint) until the fence is lifted. */
TEST_F_TIMEOUT(cli, config_fence_and_unfence, CLI_TEST_TIMEOUT)
{
	uint64_t before, after;
	struct run r;

	RUN(&r, "next");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	before = u64_of(r.out, 10);
	run_free(&r);

	RUN(&r, "config", "--fence", "1");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	run_free(&r);
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
	RUN(&r, "next");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_NE(NULL, strstr(r.err, "fenced")) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	RUN(&r, "config");
	EXPECT_NE(NULL, strstr(r.out, "fenced 1\n")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "refusing 1\n")) TH_LOG("%s", r.out);
	run_free(&r);
	RUN(&r, "stats", "--prometheus");
	EXPECT_NE(NULL, strstr(r.out, "\nsnowflake_fenced 1\n")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\nsnowflake_fences_total 1\n")) TH_LOG("%s", r.out);
	run_free(&r);

	/* New ids and the fence lifted in one call: the fence goes last. */
	RUN(&r, "config", "--fence", "0", "--worker", "7");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(7, sf_sysfs_u64("worker_id"));
	RUN(&r, "next");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	after = u64_of(r.out, 10);
	run_free(&r);
	EXPECT_GT(after, before);

	/* A bad value: usage error, nothing changes. */
	RUN(&r, "config", "--fence", "yes");
	EXPECT_EQ(EXIT_USAGE, r.rc);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	EXPECT_EQ(1, sf_sysfs_u64("statistics/fences"));
}

TEST_F_TIMEOUT(cli, config_as_nobody_fails_with_eperm_and_changes_nothing, CLI_TEST_TIMEOUT)
{
	const struct how nobody = { .nobody = true };
	struct snap before, after;
	uint64_t ids[1];
	struct run r;
	size_t i;
	char *lower;

	take(&before);
	RUN_HOW(&r, &nobody, "config", "--worker", "5", "--datacenter", "6");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_STREQ("", r.out);
	lower = strdup(r.err);
	for (i = 0; lower[i]; i++)
		lower[i] = (char)tolower((unsigned char)lower[i]);
	EXPECT_NE(NULL, strstr(lower, "not permitted")) TH_LOG("stderr: %s", r.err);
	EXPECT_EQ(0, strncmp(r.err, "snowflake: config: ", 19)) TH_LOG("stderr: %s", r.err);
	free(lower);
	run_free(&r);
	RUN_HOW(&r, &nobody, "config", "--floor", "1", "--random-sequence", "1");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	run_free(&r);
	RUN_HOW(&r, &nobody, "config", "--fence", "1");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	take(&after);
	for (i = 0; i < SF_ARRAY_SIZE(watched); i++)
		EXPECT_EQ(before.v[i], after.v[i]) TH_LOG("%s", watched[i]);

	/* Reading is for everyone. */
	RUN_HOW(&r, &nobody, "next");
	expect_ids(_metadata, &r, 1, 10, ids);
	run_free(&r);
	RUN_HOW(&r, &nobody, "config");
	EXPECT_EQ(EXIT_OK, r.rc);
	run_free(&r);
	RUN_HOW(&r, &nobody, "stats");
	EXPECT_EQ(EXIT_OK, r.rc);
	run_free(&r);
}

/*
 * The node as the udev rule leaves it (0460 group snowflake-admin, an ACL
 * entry giving snowflake read): a member of snowflake-admin, with no capability,
 * configures (the CLI opens the device for writing); a reader gets EPERM,
 * told that it needs CAP_SYS_ADMIN or snowflake-admin, and changes nothing.
 */
TEST_F_TIMEOUT(cli, config_as_a_member_of_the_write_group, CLI_TEST_TIMEOUT)
{
	const struct how reader = { .nobody = true, .group = 4242 };
	const struct how admin = { .nobody = true, .group = 4243 };
	struct snap before, after;
	uint64_t ids[1];
	struct run r;
	size_t i;
	int ret;

	ret = sf_node_set_udev_acl(4242, 4243);
	if (ret == -EOPNOTSUPP) {
		sf_node_reset();
		SKIP(return, "no POSIX ACLs on /dev here (devtmpfs without CONFIG_TMPFS_POSIX_ACL)");
	}
	ASSERT_EQ(0, ret);
	take(&before);
	RUN_HOW(&r, &reader, "config", "--worker", "5", "--datacenter", "6");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_NE(NULL, strstr(r.err, "CAP_SYS_ADMIN or membership in snowflake-admin"))
		TH_LOG("stderr: %s", r.err);
	run_free(&r);
	RUN_HOW(&r, &reader, "config", "--fence", "1");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	run_free(&r);
	take(&after);
	for (i = 0; i < SF_ARRAY_SIZE(watched); i++)
		EXPECT_EQ(before.v[i], after.v[i]) TH_LOG("%s", watched[i]);
	RUN_HOW(&r, &reader, "next");
	expect_ids(_metadata, &r, 1, 10, ids);
	run_free(&r);

	RUN_HOW(&r, &admin, "config", "--worker", "5", "--datacenter", "6");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(5, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(6, sf_sysfs_u64("datacenter_id"));
	RUN_HOW(&r, &admin, "config", "--fence", "1");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(1, sf_sysfs_u64("fenced"));
	RUN_HOW(&r, &admin, "config", "--fence", "0");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("fenced"));
	sf_node_reset();
}

TEST_F_TIMEOUT(cli, usage_errors_exit_2_and_change_nothing, CLI_TEST_TIMEOUT)
{
	char far_floor[32];	/* two days ahead: needs --force */
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(far_floor, sizeof(far_floor), "%llu",
		 (unsigned long long)now.tv_sec * 1000 + 2ULL * 86400 * 1000);
	const char * const bad[][8] = {
		{ "bogus" },
		{ "--bogus", "next" },
		{ "next", "--bogus" },
		{ "next", "-n", "0" },
		{ "next", "-n", "-1" },
		{ "next", "-n", "12x" },
		{ "next", "-n", "99999999999999999999" },
		{ "next", "-n" },
		{ "next", "--format", "xml" },
		{ "next", "extra" },
		{ "decode" },
		{ "decode", "abc" },
		{ "decode", "--bits", "41/5/5", "1" },
		{ "decode", "--bits", "41/5/5/13", "1" },
		{ "decode", "--unit", "0", "1" },
		{ "decode", "--epoch", "1", "--layout-from-device", "1" },
		{ "decode", "--bits", "10/0/0/0", "4096" },
		{ "decode", "0x8000000000000000" },
		{ "config", "--worker", "32" },
		{ "config", "--worker", "abc" },
		{ "config", "--worker", "1", "--datacenter", "32" },
		{ "config", "--worker", "-1" },
		{ "config", "--random-sequence", "2" },
		{ "config", "--floor", "soon" },
		{ "config", "--floor", "9223372036854775807" },
		{ "config", "--worker=3", "--bogus" },
		{ "config", "--json", "--worker", "1" },
		{ "config", "--force" },
		{ "config", "--floor", far_floor },
		{ "stats", "--bogus" },
		{ "stats", "extra" },
		{ "stats", "--json", "--prometheus" },
		{ "next", "--version" },
		{ "help", "bogus" },
		{ NULL },
	};
	struct snap before, after;
	struct run r;
	size_t i, j;

	take(&before);
	for (i = 0; bad[i][0] || i == SF_ARRAY_SIZE(bad) - 1; i++) {
		const char *argv[10];

		if (!bad[i][0]) {
			/* No command at all. */
			argv[0] = NULL;
		} else {
			for (j = 0; j < 8 && bad[i][j]; j++)
				argv[j] = bad[i][j];
			argv[j] = NULL;
		}
		run_how(&r, NULL, argv);
		EXPECT_EQ(EXIT_USAGE, r.rc)
			TH_LOG("%s %s %s: exit %d, stderr %s", bad[i][0], bad[i][1] ?: "",
			       bad[i][2] ?: "", r.rc, r.err);
		EXPECT_EQ(0, strncmp(r.err, "snowflake: ", 11)) TH_LOG("stderr: %s", r.err);
		EXPECT_STREQ("", r.out);
		run_free(&r);
		if (!bad[i][0])
			break;
	}
	take(&after);
	for (i = 0; i < SF_ARRAY_SIZE(watched); i++)
		EXPECT_EQ(before.v[i], after.v[i]) TH_LOG("%s", watched[i]);
}

TEST_F_TIMEOUT(cli, help_of_every_command, CLI_TEST_TIMEOUT)
{
	static const char * const cmds[] = { "next", "decode", "config", "stats" };
	char want[64];
	struct run r;
	size_t i;

	RUN(&r, "--help");
	EXPECT_EQ(EXIT_OK, r.rc);
	EXPECT_EQ(0, strncmp(r.out, "Usage: snowflake ", 17)) TH_LOG("%s", r.out);
	EXPECT_STREQ("", r.err);
	run_free(&r);
	for (i = 0; i < SF_ARRAY_SIZE(cmds); i++) {
		snprintf(want, sizeof(want), "Usage: snowflake %s", cmds[i]);
		RUN(&r, cmds[i], "--help");
		EXPECT_EQ(EXIT_OK, r.rc);
		EXPECT_EQ(0, strncmp(r.out, want, strlen(want))) TH_LOG("%s", r.out);
		run_free(&r);
		RUN(&r, "help", cmds[i]);
		EXPECT_EQ(EXIT_OK, r.rc);
		EXPECT_EQ(0, strncmp(r.out, want, strlen(want))) TH_LOG("%s", r.out);
		run_free(&r);
	}
}

TEST_F_TIMEOUT(cli, strict_mode_next_fails_until_config_sets_a_worker, CLI_TEST_TIMEOUT)
{
	struct run r;

	ASSERT_EQ(0, sf_reload("strict=1"));
	RUN(&r, "next");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_NE(NULL, strstr(r.err, "snowflake: next: ")) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.err, "strict")) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	RUN(&r, "config");
	EXPECT_NE(NULL, strstr(r.out, "refusing 1\n")) TH_LOG("%s", r.out);
	run_free(&r);
	RUN(&r, "config", "--worker", "3");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	RUN(&r, "next");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
}

/*
 * Every `snowflake config` path that changes something else on a strict
 * device leaves it refusing: --datacenter (SET_IDS with the worker id it
 * read), --random-sequence (a GET_CONFIG/SET_CONFIG round trip), --fence on
 * and off, --floor.  Only --worker assigns.  Before SNOWFLAKE_IDS_ASSIGN_WORKER
 * the first two ended the refusal and the host issued IDs as worker 0.
 */
TEST_F_TIMEOUT(cli, strict_mode_only_config_worker_ends_refusal, CLI_TEST_TIMEOUT)
{
	static const char *const paths[][3] = {
		{ "--datacenter", "3" }, { "--random-sequence", "1" },
		{ "--random-sequence", "0" }, { "--fence", "1" }, { "--fence", "0" },
		{ "--floor", "1600000000000" },
	};
	struct run r;
	size_t i;

	ASSERT_EQ(0, sf_reload("strict=1"));
	for (i = 0; i < SF_ARRAY_SIZE(paths); i++) {
		RUN(&r, "config", paths[i][0], paths[i][1]);
		EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("config %s %s: %s", paths[i][0], paths[i][1], r.err);
		run_free(&r);
		EXPECT_EQ(1, sf_sysfs_u64("refusing")) TH_LOG("after config %s %s", paths[i][0], paths[i][1]);
		RUN(&r, "next");
		EXPECT_EQ(EXIT_RUNTIME, r.rc) TH_LOG("next served after config %s %s: %s",
						    paths[i][0], paths[i][1], r.out);
		EXPECT_STREQ("", r.out);
		run_free(&r);
	}
	EXPECT_EQ(3, sf_sysfs_u64("datacenter_id"));
	RUN(&r, "config", "--worker", "0");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("refusing"));
	RUN(&r, "next");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
}

static const char * const stat_names[] = {
	"ids_issued", "reads", "exhausted_waits", "eagain", "clock_catchups",
	"floor_jumps", "refused_reads", "clock_ms", "clock_offset_ms",
	"last_timestamp_ms", "floor_ms", "strict", "refusing", "datacenter_id",
	"worker_id", "fenced", "fences", "worker_set",
};

TEST_F_TIMEOUT(cli, stats_plain, CLI_TEST_TIMEOUT)
{
	char *lines[64], path[128];
	uint64_t c0, c1, v;
	size_t n, i;
	struct run r;

	ASSERT_EQ(0, sf_sysfs_write_u64("worker_id", 4));
	c0 = sf_sysfs_u64("clock_ms");
	RUN(&r, "stats");
	c1 = sf_sysfs_u64("clock_ms");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	n = split_lines(r.out, lines, SF_ARRAY_SIZE(lines));
	ASSERT_EQ(SF_ARRAY_SIZE(stat_names), n);
	for (i = 0; i < n; i++) {
		char *sp = strchr(lines[i], ' ');

		ASSERT_NE(NULL, sp) TH_LOG("'%s'", lines[i]);
		*sp = '\0';
		EXPECT_STREQ(stat_names[i], lines[i]);
		ASSERT_TRUE(all_digits(sp + 1)) TH_LOG("'%s'", sp + 1);
		v = u64_of(sp + 1, 10);
		if (i < 7 || !strcmp(lines[i], "fences"))
			snprintf(path, sizeof(path), "statistics/%s", lines[i]);
		else
			snprintf(path, sizeof(path), "%s", lines[i]);
		if (!strcmp(lines[i], "clock_ms")) {
			EXPECT_LE(c0, v);
			EXPECT_GE(c1, v);
		} else {
			EXPECT_EQ(sf_sysfs_u64(path), v) TH_LOG("%s", lines[i]);
		}
	}
	run_free(&r);
}

/*
 * A one-line JSON object of "name":number members into @names/@vals (in
 * place); the number of members, or -1 when it is not one.
 */
static int json_members(char *s, char **names, uint64_t *vals, int max)
{
	size_t len = strlen(s);
	char *p, *save = NULL;
	int n = 0;

	if (len < 3 || s[0] != '{' || strcmp(s + len - 2, "}\n"))
		return -1;
	s[len - 2] = '\0';
	for (p = strtok_r(s + 1, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(p, ':');

		if (n == max || p[0] != '"' || !colon || colon[-1] != '"' || !all_digits(colon + 1))
			return -1;
		colon[-1] = '\0';
		names[n] = p + 1;
		vals[n++] = u64_of(colon + 1, 10);
	}
	return n;
}

/* stats --json: the names and values of the plain output, one object. */
TEST_F_TIMEOUT(cli, stats_json, CLI_TEST_TIMEOUT)
{
	char *names[64];
	uint64_t vals[64];
	struct run r;
	int n, i;

	ASSERT_EQ(0, sf_sysfs_write_u64("worker_id", 5));
	RUN(&r, "stats", "--json");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	n = json_members(r.out, names, vals, 64);
	ASSERT_EQ((int)SF_ARRAY_SIZE(stat_names), n) TH_LOG("%s", r.out);
	for (i = 0; i < n; i++) {
		EXPECT_STREQ(stat_names[i], names[i]);
		if (!strcmp(names[i], "worker_id"))
			EXPECT_EQ(5, vals[i]);
		if (!strcmp(names[i], "datacenter_id"))
			EXPECT_EQ(1, vals[i]);
	}
	run_free(&r);
}

/* config --json: the names and values of the plain output, one object. */
TEST_F_TIMEOUT(cli, config_json, CLI_TEST_TIMEOUT)
{
	char *plain[32], *names[32];
	uint64_t vals[32];
	struct run r, p;
	int n, i;

	RUN(&p, "config");
	ASSERT_EQ(EXIT_OK, p.rc) TH_LOG("stderr: %s", p.err);
	RUN(&r, "config", "--json");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	n = json_members(r.out, names, vals, 32);
	ASSERT_EQ((int)split_lines(p.out, plain, 32), n) TH_LOG("%s", r.out);
	for (i = 0; i < n; i++) {
		char want[128];

		snprintf(want, sizeof(want), "%s %llu", names[i], (unsigned long long)vals[i]);
		/* last_timestamp_ms does not move: nothing reads IDs meanwhile. */
		EXPECT_STREQ(plain[i], want);
	}
	run_free(&r);
	run_free(&p);
}

/*
 * Issue 44, item 2: a host never given a worker id says so (config's note,
 * worker_set 0); config --save gives it one at once and records it for the
 * next load, in $SNOWFLAKE_MODPROBE_CONF here.
 */
TEST_F_TIMEOUT(cli, save_gives_the_identity_at_once_and_records_it, CLI_TEST_TIMEOUT)
{
	static const char conf[] = "/tmp/cli_test-modprobe.d/snowflake.identity.conf";
	char buf[1024];
	struct run r;

	mkdir("/tmp/cli_test-modprobe.d", 0755);

	ASSERT_EQ(0, sf_reload(""));
	RUN(&r, "config");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.out, "worker_set 0\n")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.err, "no worker id was given to this host")) TH_LOG("%s", r.err);
	run_free(&r);
	EXPECT_EQ(0, sf_sysfs_u64("worker_set"));

	unlink(conf);
	setenv("SNOWFLAKE_MODPROBE_CONF", conf, 1);
	RUN(&r, "config", "--datacenter", "3", "--worker", "9", "--save");
	unsetenv("SNOWFLAKE_MODPROBE_CONF");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	run_free(&r);
	EXPECT_EQ(3, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(1, sf_sysfs_u64("worker_set"));
	ASSERT_LT(0, sf_read_path(conf, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "\noptions snowflake datacenter_id=3 worker_id=9\n")) TH_LOG("%s", buf);
	RUN(&r, "config");
	EXPECT_STREQ("", r.err);
	run_free(&r);
	unlink(conf);
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		close(fd);
	}
}

/*
 * config --save refuses, changing nothing, where another modprobe.d file
 * gives the ids at every load: with --strict any (a worker id at load ends
 * strict mode's refusal: the host would serve it beside the agent's
 * leases), else one applied after its own file.  A file applied before it,
 * or one that only names strict, is no conflict.
 */
TEST_F_TIMEOUT(cli, save_refuses_ids_given_by_another_modprobe_file, CLI_TEST_TIMEOUT)
{
	static const char dir[] = "/tmp/cli_test-other.d";
	static const char conf[] = "/tmp/cli_test-other.d/snowflake.identity.conf";
	static const char early[] = "/tmp/cli_test-other.d/snowflake.conf";
	static const char late[] = "/tmp/cli_test-other.d/zz-local.conf";
	char buf[1024];
	struct run r;

	ASSERT_EQ(0, sf_reload(""));
	mkdir(dir, 0755);
	unlink(conf);
	put_file(early, "# the package's file, edited by hand\noptions snowflake \\\n  worker_id=5\n");
	setenv("SNOWFLAKE_MODPROBE_CONF", conf, 1);
	RUN(&r, "config", "--strict", "--save");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_NE(NULL, strstr(r.err, "snowflake.conf line 2 gives snowflake worker_id=5"))
		TH_LOG("%s", r.err);
	EXPECT_NE(NULL, strstr(r.err, "nothing changed")) TH_LOG("%s", r.err);
	run_free(&r);
	EXPECT_GT(0, sf_read_path(conf, buf, sizeof(buf)));

	/* Without --strict, the earlier file loses to the saved one: saved. */
	RUN(&r, "config", "--datacenter", "3", "--worker", "9", "--save");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));

	/* A later one wins over it: refused, the device unchanged. */
	put_file(late, "options snowflake strict=0 datacenter_id=1\n");
	RUN(&r, "config", "--datacenter", "4", "--worker", "11", "--save");
	EXPECT_EQ(EXIT_RUNTIME, r.rc);
	EXPECT_NE(NULL, strstr(r.err, "zz-local.conf line 1 gives snowflake datacenter_id=1"))
		TH_LOG("%s", r.err);
	run_free(&r);
	EXPECT_EQ(3, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(9, sf_sysfs_u64("worker_id"));

	/* Files that name only strict are no conflict for --strict. */
	put_file(early, "options snowflake strict=1\n");
	put_file(late, "# options snowflake worker_id=2\n");
	RUN(&r, "config", "--strict", "--save");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	unsetenv("SNOWFLAKE_MODPROBE_CONF");
	ASSERT_LT(0, sf_read_path(conf, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "\noptions snowflake strict=1\n")) TH_LOG("%s", buf);
	unlink(conf);
	unlink(early);
	unlink(late);
	rmdir(dir);
	ASSERT_EQ(0, sf_reload(""));
}

/* --version: the version of the VERSION file, as the module's. */
TEST_F_TIMEOUT(cli, version, CLI_TEST_TIMEOUT)
{
	char modver[64], want[96];
	struct run r;

	ASSERT_LT(0, sf_read_path("/sys/module/snowflake/version", modver, sizeof(modver)));
	modver[strcspn(modver, "\n")] = '\0';
	snprintf(want, sizeof(want), "snowflake %s\n", modver);
	RUN(&r, "--version");
	EXPECT_EQ(EXIT_OK, r.rc);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	run_free(&r);
}

/*
 * next stops at the first write error: into /dev/full, a million IDs are
 * not all taken from the device, at most the chunk being written.
 */
TEST_F_TIMEOUT(cli, next_stops_at_the_first_write_error, CLI_TEST_TIMEOUT)
{
	uint64_t before, after;
	int full, err, status;
	char *msg;
	pid_t pid;

	full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, full);
	err = memfd_create("stderr", MFD_CLOEXEC);
	ASSERT_LE(0, err);
	before = sf_sysfs_u64("statistics/ids_issued");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		dup2(full, 1);
		dup2(err, 2);
		execl(cli_path(), "snowflake", "next", "-n", "1000000", (char *)NULL);
		_exit(127);
	}
	status = sf_wait_child(pid);
	after = sf_sysfs_u64("statistics/ids_issued");
	msg = slurp(err);
	EXPECT_EQ(EXIT_RUNTIME, status) TH_LOG("stderr: %s", msg);
	EXPECT_NE(NULL, strstr(msg, "No space left on device")) TH_LOG("stderr: %s", msg);
	EXPECT_LT(0, after - before);
	EXPECT_GE(SNOWFLAKE_MAX_IDS_PER_READ, after - before)
		TH_LOG("%llu IDs taken for a failed output", (unsigned long long)(after - before));
	free(msg);
	close(err);
	close(full);
}

/* config --floor far ahead needs --force (without it: usage_errors_...). */
TEST_F_TIMEOUT(cli, config_floor_far_ahead_with_force, CLI_TEST_TIMEOUT)
{
	char far_floor[32];
	struct timespec now;
	uint64_t want;
	struct run r;

	clock_gettime(CLOCK_REALTIME, &now);
	want = (uint64_t)now.tv_sec * 1000 + 3ULL * 86400 * 1000;
	snprintf(far_floor, sizeof(far_floor), "%llu", (unsigned long long)want);
	RUN(&r, "config", "--floor", far_floor, "--force");
	EXPECT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	run_free(&r);
	EXPECT_LE(want, sf_sysfs_u64("floor_ms"));
}

/* ^[a-zA-Z_:][a-zA-Z0-9_:]*$ */
static bool metric_name_ok(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
		return false;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == ':'))
			return false;
	return true;
}

struct metric {
	char name[128];
	char type[128];
	bool help, sample;
	double value;
};

TEST_F_TIMEOUT(cli, stats_prometheus_text_format, CLI_TEST_TIMEOUT)
{
	static const char * const required[] = {
		"snowflake_ids_issued_total", "snowflake_clock_seconds",
		"snowflake_last_timestamp_seconds", "snowflake_refusing", "snowflake_info",
	};
	struct metric m[64];
	size_t nm = 0, i, k;
	uint64_t before, after, c0, c1, id;
	char *line, *save = NULL, labels[128] = "", want[128];
	int fd;
	struct run r;

	/* Some IDs, so the counter is not 0. */
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &id));
	close(fd);

	before = sf_sysfs_u64("statistics/ids_issued");
	c0 = sf_sysfs_u64("clock_ms");
	RUN(&r, "stats", "--prometheus");
	c1 = sf_sysfs_u64("clock_ms");
	after = sf_sysfs_u64("statistics/ids_issued");
	ASSERT_EQ(EXIT_OK, r.rc) TH_LOG("stderr: %s", r.err);
	EXPECT_STREQ("", r.err);
	ASSERT_TRUE(r.out[0] && r.out[strlen(r.out) - 1] == '\n');

	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], word[128], extra[8];
		struct metric *cur = NULL;
		bool help = false, type = false;

		if (!strncmp(line, "# HELP ", 7)) {
			ASSERT_EQ(2, sscanf(line + 7, "%127s %127s", name, word)) TH_LOG("'%s'", line);
			help = true;
		} else if (!strncmp(line, "# TYPE ", 7)) {
			ASSERT_EQ(2, sscanf(line + 7, "%127s %127s %7s", name, word, extra))
				TH_LOG("'%s'", line);
			ASSERT_TRUE(!strcmp(word, "counter") || !strcmp(word, "gauge"))
				TH_LOG("'%s'", line);
			type = true;
		} else {
			char *brace;

			ASSERT_NE('#', line[0]) TH_LOG("'%s'", line);
			/* "name value" or "name{labels} value": no timestamp. */
			ASSERT_EQ(2, sscanf(line, "%127s %127s %7s", name, word, extra))
				TH_LOG("'%s'", line);
			brace = strchr(name, '{');
			if (brace) {
				/* Only snowflake_info has labels. */
				snprintf(labels, sizeof(labels), "%s", brace);
				*brace = '\0';
			}
		}
		ASSERT_TRUE(metric_name_ok(name)) TH_LOG("'%s'", name);
		for (k = 0; k < nm; k++)
			if (!strcmp(m[k].name, name))
				cur = &m[k];
		if (!cur) {
			ASSERT_GT(SF_ARRAY_SIZE(m), nm);
			cur = &m[nm++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->name, sizeof(cur->name), "%s", name);
		}
		if (help) {
			EXPECT_FALSE(cur->help || cur->sample) TH_LOG("%s: HELP again or late", name);
			cur->help = true;
		} else if (type) {
			EXPECT_FALSE(cur->type[0] || cur->sample) TH_LOG("%s: TYPE again or late", name);
			snprintf(cur->type, sizeof(cur->type), "%s", word);
		} else {
			char *end;

			EXPECT_FALSE(cur->sample) TH_LOG("%s: two samples", name);
			cur->sample = true;
			cur->value = strtod(word, &end);
			EXPECT_EQ('\0', *end) TH_LOG("%s: value '%s'", name, word);
		}
	}

	for (i = 0; i < nm; i++) {
		EXPECT_TRUE(m[i].help) TH_LOG("%s has no # HELP", m[i].name);
		EXPECT_TRUE(m[i].type[0]) TH_LOG("%s has no # TYPE", m[i].name);
		EXPECT_TRUE(m[i].sample) TH_LOG("%s has no sample", m[i].name);
		if (!strcmp(m[i].type, "counter")) {
			size_t l = strlen(m[i].name);

			EXPECT_TRUE(l > 6 && !strcmp(m[i].name + l - 6, "_total"))
				TH_LOG("counter %s", m[i].name);
		}
		EXPECT_EQ(0, strncmp(m[i].name, "snowflake_", 10)) TH_LOG("%s", m[i].name);
	}
	for (k = 0; k < SF_ARRAY_SIZE(required); k++) {
		for (i = 0; i < nm; i++)
			if (!strcmp(m[i].name, required[k]))
				break;
		ASSERT_GT(nm, i) TH_LOG("%s missing", required[k]);
		if (!strcmp(required[k], "snowflake_ids_issued_total")) {
			EXPECT_STREQ("counter", m[i].type);
			EXPECT_LE((double)before, m[i].value);
			EXPECT_GE((double)after, m[i].value);
			EXPECT_LE(1, m[i].value);
		} else if (!strcmp(required[k], "snowflake_clock_seconds")) {
			/* Base units: seconds, with the milliseconds as decimals. */
			EXPECT_STREQ("gauge", m[i].type);
			EXPECT_LE((double)c0 / 1000 - 0.0005, m[i].value);
			EXPECT_GE((double)c1 / 1000 + 0.0005, m[i].value);
		} else if (!strcmp(required[k], "snowflake_refusing")) {
			EXPECT_EQ(0, m[i].value);
		} else if (!strcmp(required[k], "snowflake_info")) {
			/* The ids as labels, value 1. */
			EXPECT_EQ(1, m[i].value);
			snprintf(want, sizeof(want), "{datacenter_id=\"%llu\",worker_id=\"%llu\"}",
				 (unsigned long long)sf_sysfs_u64("datacenter_id"),
				 (unsigned long long)sf_sysfs_u64("worker_id"));
			EXPECT_STREQ(want, labels);
		} else {
			double last = (double)sf_sysfs_u64("last_timestamp_ms") / 1000;

			EXPECT_LE(last - 0.0005, m[i].value);
			EXPECT_GE(last + 0.0005, m[i].value);
		}
	}
	EXPECT_LE(10, nm);
	run_free(&r);
}

SF_TEST_MAIN()
