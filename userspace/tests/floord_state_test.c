// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of snowflake-floord's saved state (floord/state.c): the
 * file format and its checks, the crash-safe write and its errors on a real
 * file system, the durations and the save policy.  No device needed; built
 * under ASan + UBSan; kselftest TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <grp.h>
#include <unistd.h>

#include "kselftest_harness.h"

/* The fault point of a save (state.c), between its write and its rename. */
static void (*save_hook)(void);
#define SF_STATE_SAVE_HOOK()	do { if (save_hook) save_hook(); } while (0)
#include "../floord/state.c"

#define ID_A	"0f3c9a5e7d1b24c68e0a9b3f5c7d1e2a"
#define ID_B	"9a00b1c2d3e4f5061728394a5b6c7d8e"

/* Version 2: with the module's instance. */
static const struct sf_state sample = {
	.floor_ms = 1763769600123ULL,
	.high_ms = 1763769590123ULL,
	.margin_ms = 10000,
	.saved_unix_ms = 1763769590125ULL,
	.instance_id = ID_A,
};

/* Version 1: a module without instance_id. */
static const struct sf_state sample_v1 = {
	.floor_ms = 1763769600123ULL,
	.high_ms = 1763769590123ULL,
	.margin_ms = 10000,
	.saved_unix_ms = 1763769590125ULL,
};

static const struct sf_state *const samples[] = { &sample, &sample_v1 };

static char *tmpdir(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(buf, len, "%s/floord-test.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(buf);
}

static void rmtree(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", dir);
}

static void put_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
}

static size_t get_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return (size_t)-1;
	n = read(fd, buf, len);
	close(fd);
	return n < 0 ? (size_t)-1 : (size_t)n;
}

/* The temporary files in @dir ("floor.tmp" and "floor.tmp.*"), or -1. */
static int tmp_files(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, "floor.tmp", 9) == 0;
	closedir(d);
	return n;
}

/* A file with its checksum fixed up, so that only the content is wrong. */
static int with_crc(const char *body, char *buf, size_t len)
{
	return snprintf(buf, len, "%scrc32 %08x\n", body, sf_crc32(0, body, strlen(body)));
}

TEST(crc32_known_value)
{
	/* The check value of CRC-32/ISO-HDLC (zlib's crc32). */
	ASSERT_EQ(0xcbf43926U, sf_crc32(0, "123456789", 9));
	ASSERT_EQ(0U, sf_crc32(0, "", 0));
	/* Incremental equals whole. */
	ASSERT_EQ(sf_crc32(0, "123456789", 9), sf_crc32(sf_crc32(0, "1234", 4), "56789", 5));
}

TEST(format_parse_roundtrip)
{
	char buf[SF_STATE_MAX], err[256] = "";
	struct sf_state st = { 0 }, bad = sample;
	int n = sf_state_format(&sample, buf, sizeof(buf));

	ASSERT_GT(n, 0);
	ASSERT_EQ(0, strncmp(buf, "snowflake-floor 2\nfloor_ms 1763769600123\n", 41));
	ASSERT_NE(NULL, strstr(buf, "\ninstance_id " ID_A "\ncrc32 ")) TH_LOG("%s", buf);
	ASSERT_EQ('\n', buf[n - 1]);
	ASSERT_EQ(0, sf_state_parse(buf, (size_t)n, &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(sample.floor_ms, st.floor_ms);
	ASSERT_EQ(sample.high_ms, st.high_ms);
	ASSERT_EQ(sample.margin_ms, st.margin_ms);
	ASSERT_EQ(sample.saved_unix_ms, st.saved_unix_ms);
	ASSERT_STREQ(ID_A, st.instance_id);
	/* A buffer one byte short is refused, never cut. */
	ASSERT_EQ(-ENOSPC, sf_state_format(&sample, buf, (size_t)n));
	/* An instance id that is not one is never written. */
	memcpy(bad.instance_id, "0F3C9A5E7D1B24C68E0A9B3F5C7D1E2A", 33);
	ASSERT_EQ(-EINVAL, sf_state_format(&bad, buf, sizeof(buf)));
	memcpy(bad.instance_id, "0f3c9a5e", 9);
	ASSERT_EQ(-EINVAL, sf_state_format(&bad, buf, sizeof(buf)));
	memset(bad.instance_id, 'a', sizeof(bad.instance_id));	/* no NUL */
	ASSERT_EQ(-EINVAL, sf_state_format(&bad, buf, sizeof(buf)));
}

/* Without an instance the file is version 1, byte for byte what floord wrote before. */
TEST(version1_without_instance)
{
	static const char old[] = "snowflake-floor 1\nfloor_ms 1763769600123\nhigh_ms 1763769590123\n"
				  "margin_ms 10000\nsaved_unix_ms 1763769590125\n";
	char buf[SF_STATE_MAX], want[SF_STATE_MAX], err[256] = "";
	struct sf_state st;
	int n = sf_state_format(&sample_v1, buf, sizeof(buf));
	int m = with_crc(old, want, sizeof(want));

	ASSERT_EQ(m, n);
	ASSERT_EQ(0, memcmp(want, buf, (size_t)n));
	/* An old file parses, with no instance: a restore raises as it always did. */
	memset(&st, 0x5a, sizeof(st));
	ASSERT_EQ(0, sf_state_parse(want, (size_t)m, &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(sample_v1.floor_ms, st.floor_ms);
	ASSERT_EQ(sample_v1.high_ms, st.high_ms);
	ASSERT_STREQ("", st.instance_id);
	ASSERT_EQ(SF_RESTORE_FILE_NO_INSTANCE, sf_restore_decide(&st, ID_A, UINT64_MAX));
	/* Version 1 still needs floor_ms only. */
	m = with_crc("snowflake-floor 1\nfloor_ms 5\n", want, sizeof(want));
	ASSERT_EQ(0, sf_state_parse(want, (size_t)m, &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(5, st.floor_ms);
	ASSERT_EQ(0, st.high_ms);
	ASSERT_STREQ("", st.instance_id);
}

/* A write torn anywhere (every strict prefix of the file) is detected. */
TEST(every_truncation_is_corrupt)
{
	char buf[SF_STATE_MAX], err[256];
	struct sf_state st;

	for (size_t f = 0; f < sizeof(samples) / sizeof(samples[0]); f++) {
		int n = sf_state_format(samples[f], buf, sizeof(buf));

		ASSERT_GT(n, 0);
		for (int len = 0; len < n; len++) {
			memset(&st, 0x5a, sizeof(st));
			ASSERT_EQ(-EBADMSG, sf_state_parse(buf, (size_t)len, &st, err, sizeof(err)))
				TH_LOG("version %d: prefix of %d bytes accepted", f ? 1 : 2, len);
			ASSERT_NE('\0', err[0]);
			/* Nothing is written on failure. */
			ASSERT_EQ(0x5a5a5a5a5a5a5a5aULL, st.floor_ms);
		}
	}
}

/* Every single flipped bit anywhere in the file is detected. */
TEST(every_bit_flip_is_corrupt)
{
	char buf[SF_STATE_MAX], err[256];
	struct sf_state st;

	for (size_t f = 0; f < sizeof(samples) / sizeof(samples[0]); f++) {
		int n = sf_state_format(samples[f], buf, sizeof(buf));

		ASSERT_GT(n, 0);
		for (int i = 0; i < n; i++) {
			for (int b = 0; b < 8; b++) {
				int r;

				buf[i] ^= (char)(1 << b);
				r = sf_state_parse(buf, (size_t)n, &st, err, sizeof(err));
				buf[i] ^= (char)(1 << b);
				ASSERT_NE(0, r) TH_LOG("version %d: flip of bit %d of byte %d accepted",
						       f ? 1 : 2, b, i);
			}
		}
	}
}

TEST(bad_contents)
{
	static const struct {
		const char *body;	/* the checksum is appended */
		const char *why;
		int err;
	} cases[] = {
		{ "snowflake-floor 3\nfloor_ms 5\n", "format version 3", -EPROTONOSUPPORT },
		/* A later version's keys are its own: unknown, not corrupt. */
		{ "snowflake-floor 3\nfloor_ms 5\ncolor blue\n", "format version 3", -EPROTONOSUPPORT },
		{ "snowflake-floor 0\nfloor_ms 5\n", "format version 0", -EPROTONOSUPPORT },
		/* Version 1 has no instance_id; version 2 needs every key. */
		{ "snowflake-floor 1\nfloor_ms 5\ninstance_id " ID_A "\n", "unknown key \"instance_id\"", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\n", "no instance_id", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "no high_ms", -EBADMSG },
		{ "snowflake-floor 2\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "no floor_ms", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\ninstance_id " ID_B "\n", "instance_id given twice", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id 0F3C9A5E7D1B24C68E0A9B3F5C7D1E2A\n", "instance_id is not 32 lowercase hex digits", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id 0f3c9a5e7d1b24c68e0a9b3f5c7d1e2\n", "instance_id is not", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id 0f3c9a5e7d1b24c68e0a9b3f5c7d1e2a0\n", "instance_id is not", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id 0f3c9a5e7d1b24c68e0a9b3f5c7d1e2g\n", "instance_id is not", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id \n", "instance_id is not", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 0\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "floor_ms is 0", -EBADMSG },
		{ "snowflake-flour 1\nfloor_ms 5\n", "not a snowflake-floord state file", -EBADMSG },
		{ "snowflake-floor 1\n", "no floor_ms", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 0\n", "floor_ms is 0", -EBADMSG },
		/* Right checksums over values no save writes (issue 24): never restored. */
		{ "snowflake-floor 1\nfloor_ms 18446744073709551615\n", "floor_ms 18446744073709551615 is past year 9999", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 253402300800000\n", "is past year 9999 (at most 253402300799999)", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 18446744073709551615\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "past year 9999", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 6\nmargin_ms 1\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "high_ms 6 is above floor_ms 5", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 5\nhigh_ms 18446744073709551615\n", "high_ms 18446744073709551615 is above floor_ms 5", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 86400001\nsaved_unix_ms 4\ninstance_id " ID_A "\n", "margin_ms 86400001 is more than a day", -EBADMSG },
		{ "snowflake-floor 2\nfloor_ms 5\nhigh_ms 4\nmargin_ms 1\nsaved_unix_ms 253402300800000\ninstance_id " ID_A "\n", "saved_unix_ms 253402300800000 is past year 9999", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 05\n", "not a decimal number", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms -5\n", "not a decimal number", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 5 \n", "not a decimal number", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 18446744073709551616\n", "not a decimal number", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 5\nfloor_ms 6\n", "given twice", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 5\ncolor blue\n", "unknown key \"color\"", -EBADMSG },
		{ "snowflake-floor 1\nfloor_ms 5\n\n", "not \"key value\"", -EBADMSG },
		{ "snowflake-floor one\nfloor_ms 5\n", "bad format version", -EBADMSG },
	};
	char buf[SF_STATE_MAX], err[256];
	struct sf_state st;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = with_crc(cases[i].body, buf, sizeof(buf));

		err[0] = '\0';
		ASSERT_EQ(cases[i].err, sf_state_parse(buf, (size_t)n, &st, err, sizeof(err)))
			TH_LOG("case %zu", i);
		ASSERT_NE(NULL, strstr(err, cases[i].why)) TH_LOG("case %zu: \"%s\"", i, err);
	}
	/* The largest valid values are accepted. */
	ASSERT_EQ(0, sf_state_parse(buf, (size_t)with_crc("snowflake-floor 1\nfloor_ms 253402300799999\n",
							 buf, sizeof(buf)), &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(SF_STATE_MAX_MS, st.floor_ms);
	ASSERT_EQ(0, sf_state_parse(buf, (size_t)with_crc("snowflake-floor 2\nfloor_ms 253402300799999\n"
							 "high_ms 253402300799999\nmargin_ms 86400000\n"
							 "saved_unix_ms 253402300799999\ninstance_id " ID_A "\n",
							 buf, sizeof(buf)), &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(SF_STATE_MAX_MS, st.high_ms);
}

/* What the parser refuses is never written: the format refuses it too. */
TEST(format_refuses_what_parse_refuses)
{
	static const struct sf_state bad[] = {
		{ .floor_ms = 0 },
		{ .floor_ms = SF_STATE_MAX_MS + 1 },
		{ .floor_ms = UINT64_MAX, .high_ms = 1 },
		{ .floor_ms = 5, .high_ms = 6 },
		{ .floor_ms = 5, .margin_ms = SF_MAX_DURATION_MS + 1 },
		{ .floor_ms = 5, .saved_unix_ms = SF_STATE_MAX_MS + 1, .instance_id = ID_A },
	};
	char buf[SF_STATE_MAX], dir[PATH_MAX], err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(-ERANGE, sf_state_format(&bad[i], buf, sizeof(buf))) TH_LOG("case %zu", i);
	}
	/* And a save of it changes nothing on disk. */
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	ASSERT_EQ(-ERANGE, sf_state_save(dir, &bad[2], err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "formatting the state")) TH_LOG("%s", err);
	ASSERT_EQ(0, tmp_files(dir));
	rmtree(dir);
}

/* The last ms a layout stamps: what SET_FLOOR takes (sf_check_floor() in the module). */
TEST(layout_last_ms)
{
	/* The default layout, 41 bits of 1 ms from the Twitter epoch: 2079-09-06. */
	ASSERT_EQ(1288834974657ULL + (1ULL << 41) - 1, sf_layout_last_ms(1288834974657ULL, 1, 41));
	ASSERT_EQ(1000ULL + 10 * 255, sf_layout_last_ms(1000, 10, 8));
	ASSERT_EQ(7ULL, sf_layout_last_ms(7, 1, 0));
	/* Past 64 bits: saturated, never wrapped to a small number. */
	ASSERT_EQ(UINT64_MAX, sf_layout_last_ms(1, 2, 63));
	ASSERT_EQ(UINT64_MAX, sf_layout_last_ms(UINT64_MAX, 1, 1));
	ASSERT_EQ((1ULL << 63) - 1, sf_layout_last_ms(0, 1, 63));
}

TEST(bad_framing)
{
	char buf[2 * SF_STATE_MAX], err[256];
	struct sf_state st;
	int n = sf_state_format(&sample, buf, sizeof(buf));

	/* Data after the checksum line. */
	memcpy(buf + n, "x 1\n", 5);
	ASSERT_EQ(-EBADMSG, sf_state_parse(buf, (size_t)n + 4, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "after the crc32 line"));
	/* Uppercase hex in the checksum. */
	n = sf_state_format(&sample, buf, sizeof(buf));
	for (int i = n - 9; i < n - 1; i++)
		if (buf[i] >= 'a' && buf[i] <= 'f')
			buf[i] = (char)(buf[i] - 'a' + 'A');
	if (strpbrk(buf + n - 9, "ABCDEF")) {
		ASSERT_EQ(-EBADMSG, sf_state_parse(buf, (size_t)n, &st, err, sizeof(err)));
	}
	/* A NUL byte, an oversized file, an empty one. */
	n = sf_state_format(&sample, buf, sizeof(buf));
	buf[3] = '\0';
	ASSERT_EQ(-EBADMSG, sf_state_parse(buf, (size_t)n, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "NUL"));
	memset(buf, '\n', sizeof(buf));
	ASSERT_EQ(-EBADMSG, sf_state_parse(buf, SF_STATE_MAX + 1, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "larger than"));
	ASSERT_EQ(-EBADMSG, sf_state_parse(buf, 0, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "empty"));
}

TEST(save_then_load)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[512], want[SF_STATE_MAX], have[SF_STATE_MAX];
	struct sf_state st = { 0 }, next = sample;
	struct stat sb;
	int n;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	ASSERT_EQ(-ENOENT, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_EQ(0, sf_state_save(dir, &sample, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, sf_state_load(dir, &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(sample.floor_ms, st.floor_ms);
	/* Byte for byte the format, mode 0644, no temporary file left. */
	snprintf(path, sizeof(path), "%s/floor", dir);
	n = sf_state_format(&sample, want, sizeof(want));
	ASSERT_EQ((size_t)n, get_file(path, have, sizeof(have)));
	ASSERT_EQ(0, memcmp(want, have, (size_t)n));
	ASSERT_EQ(0, stat(path, &sb));
	ASSERT_EQ(0644, sb.st_mode & 07777);
	ASSERT_EQ(0, tmp_files(dir));
	/* A second save replaces the first. */
	next.floor_ms += 5000;
	ASSERT_EQ(0, sf_state_save(dir, &next, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_EQ(next.floor_ms, st.floor_ms);
	rmtree(dir);
}

/* What a crash in the middle of a save leaves: a floor.tmp, old or torn. */
TEST(leftover_tmp_file)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[512];
	struct sf_state st;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/floor.tmp", dir);
	put_file(path, "snowflake-floor 1\nfloor_", 24);
	/* Never read: with no floor, it is a first start. */
	ASSERT_EQ(-ENOENT, sf_state_load(dir, &st, err, sizeof(err)));
	/* The next save works beside it (a new name), ... */
	ASSERT_EQ(0, sf_state_save(dir, &sample, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_EQ(sample.floor_ms, st.floor_ms);
	/* ... and the lock holder's clean removes it. */
	ASSERT_EQ(1, sf_state_clean(dir, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_NE(0, access(path, F_OK));
	ASSERT_EQ(0, tmp_files(dir));
	ASSERT_EQ(0, sf_state_clean(dir, err, sizeof(err)));
	rmtree(dir);
}

/*
 * Issue 24: a save by hand as root, interrupted between its create and its
 * rename, left a root-owned 0644 floor.tmp, and every later save as the
 * daemon's user failed (-EACCES: "creating .../floor.tmp: Permission
 * denied"), so the file on disk never moved forward again.  Now a save
 * creates a new name (O_EXCL), and the clean removes the stale file (the
 * directory is the daemon's), but never what a link in it points to.
 */
TEST(stale_root_tmp_does_not_stop_saves)
{
	char dir[PATH_MAX], other[PATH_MAX], path[PATH_MAX + 32], target[PATH_MAX + 16];
	char err[512], buf[64];
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root: a root-owned floor.tmp, then uid 65534");
	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	ASSERT_NE(NULL, tmpdir(other, sizeof(other)));
	ASSERT_EQ(0, chown(dir, 65534, 65534));
	ASSERT_EQ(0, chmod(dir, 0755));
	ASSERT_EQ(0, chmod(other, 0755));
	/* root's leftover, 0644, and a link to a file of root's elsewhere. */
	snprintf(path, sizeof(path), "%s/floor.tmp", dir);
	put_file(path, "snowflake-floor 2\nfloor_", 24);
	snprintf(target, sizeof(target), "%s/precious", other);
	put_file(target, "keep", 4);
	snprintf(path, sizeof(path), "%s/floor.tmp.link", dir);
	ASSERT_EQ(0, symlink(target, path));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sf_state st;
		int r;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		r = sf_state_save(dir, &sample, err, sizeof(err));
		if (r) {
			fprintf(stderr, "# as uid 65534: save returned %d: %s\n", r, err);
			_exit(r < 0 && -r < 100 ? -r : 101);
		}
		if (sf_state_load(dir, &st, err, sizeof(err)) || st.floor_ms != sample.floor_ms)
			_exit(102);
		r = sf_state_clean(dir, err, sizeof(err));
		if (r != 2) {
			fprintf(stderr, "# as uid 65534: clean returned %d: %s\n", r, err);
			_exit(103);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("the child exited %d (13: the save got -EACCES)",
						  WEXITSTATUS(status));
	ASSERT_EQ(0, tmp_files(dir));
	ASSERT_EQ(4U, get_file(target, buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, "keep", 4));
	rmtree(dir);
	rmtree(other);
}

static void interrupt_self(void)
{
	kill(getpid(), SIGINT);
}

/*
 * Ctrl-C during a save by hand (--save, --restore): issue 24 saw it leave
 * floor.tmp.  The signal now waits for the rename: the process dies of it
 * with the new file in place and no temporary file.
 */
TEST(interrupted_save_leaves_nothing)
{
	char dir[PATH_MAX], err[512];
	struct sf_state st;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	ASSERT_EQ(0, sf_state_save(dir, &sample_v1, err, sizeof(err))) TH_LOG("%s", err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sf_state next = sample;

		signal(SIGINT, SIG_DFL);
		next.floor_ms += 1000;
		save_hook = interrupt_self;
		sf_state_save(dir, &next, err, sizeof(err));
		_exit(0);	/* SIGINT never came */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(SIGINT, WTERMSIG(status));
	ASSERT_EQ(0, tmp_files(dir)) TH_LOG("the interrupted save left a temporary file");
	ASSERT_EQ(0, sf_state_load(dir, &st, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(sample.floor_ms + 1000, st.floor_ms);
	/* The caller's mask is as it was: what it blocks stays blocked, nothing more. */
	{
		sigset_t usr1, now;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		ASSERT_EQ(0, sf_state_save(dir, &sample, err, sizeof(err))) TH_LOG("%s", err);
		sigprocmask(SIG_BLOCK, NULL, &now);
		sigprocmask(SIG_UNBLOCK, &usr1, NULL);
		ASSERT_TRUE(sigismember(&now, SIGUSR1));
		ASSERT_FALSE(sigismember(&now, SIGINT));
		ASSERT_FALSE(sigismember(&now, SIGTERM));
	}
	rmtree(dir);
}

/* Only our names go: "floor.tmp" and "floor.tmp.*", never a directory. */
TEST(clean_removes_only_temporaries)
{
	static const char *const gone[] = { "floor.tmp", "floor.tmp.abc123", "floor.tmp." };
	static const char *const kept[] = { "floor.tmpx", "xfloor.tmp", "floor" };
	char dir[PATH_MAX], path[PATH_MAX + 32], err[512];

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
		put_file(path, "x", 1);
		snprintf(path, sizeof(path), "%s/%s", dir, kept[i]);
		put_file(path, "x", 1);
	}
	snprintf(path, sizeof(path), "%s/floor.tmp.dir", dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	ASSERT_EQ(3, sf_state_clean(dir, err, sizeof(err))) TH_LOG("%s", err);
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
		ASSERT_NE(0, access(path, F_OK)) TH_LOG("%s left", gone[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, kept[i]);
		ASSERT_EQ(0, access(path, F_OK)) TH_LOG("%s removed", kept[i]);
	}
	snprintf(path, sizeof(path), "%s/floor.tmp.dir", dir);
	ASSERT_EQ(0, access(path, F_OK));
	snprintf(path, sizeof(path), "%s/missing", dir);
	ASSERT_EQ(-ENOENT, sf_state_clean(path, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "state directory ")) TH_LOG("%s", err);
	rmtree(dir);
}

TEST(load_corrupt_file)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[512], buf[SF_STATE_MAX];
	struct sf_state st;
	int n;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/floor", dir);
	n = sf_state_format(&sample, buf, sizeof(buf));
	put_file(path, buf, (size_t)n - 5);	/* torn */
	ASSERT_EQ(-EBADMSG, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "/floor: corrupt: ")) TH_LOG("%s", err);
	ASSERT_NE(NULL, strstr(err, dir));
	put_file(path, "\x7f" "ELF garbage\n", 13);
	ASSERT_EQ(-EBADMSG, sf_state_load(dir, &st, err, sizeof(err)));
	/* A file far too big is refused without reading it all. */
	{
		char big[3 * SF_STATE_MAX];

		memset(big, 'a', sizeof(big));
		put_file(path, big, sizeof(big));
		ASSERT_EQ(-EBADMSG, sf_state_load(dir, &st, err, sizeof(err)));
		ASSERT_NE(NULL, strstr(err, "larger than"));
	}
	/* Another format version. */
	n = with_crc("snowflake-floor 7\nfloor_ms 5\n", buf, sizeof(buf));
	put_file(path, buf, (size_t)n);
	ASSERT_EQ(-EPROTONOSUPPORT, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "unknown format: format version 7")) TH_LOG("%s", err);
	/* "floor" is a directory. */
	unlink(path);
	ASSERT_EQ(0, mkdir(path, 0755));
	ASSERT_EQ(-EISDIR, sf_state_load(dir, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "Is a directory")) TH_LOG("%s", err);
	rmtree(dir);
}

TEST(missing_directory)
{
	char dir[PATH_MAX], sub[PATH_MAX + 16], err[512];
	struct sf_state st;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(sub, sizeof(sub), "%s/missing", dir);
	ASSERT_EQ(-ENOENT, sf_state_save(sub, &sample, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "state directory ")) TH_LOG("%s", err);
	ASSERT_NE(NULL, strstr(err, "/missing: No such file or directory")) TH_LOG("%s", err);
	ASSERT_EQ(-ENOENT, sf_state_load(sub, &st, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "state directory ")) TH_LOG("%s", err);
	/* A file where the directory should be. */
	put_file(sub, "x", 1);
	ASSERT_EQ(-ENOTDIR, sf_state_save(sub, &sample, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "Not a directory")) TH_LOG("%s", err);
	rmtree(dir);
}

/*
 * A write that runs out of room (here the file size limit, EFBIG, as a
 * full disk gives ENOSPC): a clear error, the old file intact, no
 * temporary file left.
 */
TEST(write_error_keeps_old_file)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[512], before[SF_STATE_MAX], after[SF_STATE_MAX];
	size_t nb, na;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	ASSERT_EQ(0, sf_state_save(dir, &sample, err, sizeof(err))) TH_LOG("%s", err);
	snprintf(path, sizeof(path), "%s/floor", dir);
	nb = get_file(path, before, sizeof(before));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 16, .rlim_max = 16 };
		struct sf_state next = sample;
		int r;

		next.floor_ms += 1000;
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		r = sf_state_save(dir, &next, err, sizeof(err));
		if (r != -EFBIG)
			_exit(11);
		if (!strstr(err, "writing ") || !strstr(err, "/floor.tmp.") ||
		    !strstr(err, ": File too large"))
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	na = get_file(path, after, sizeof(after));
	ASSERT_EQ(nb, na);
	ASSERT_EQ(0, memcmp(before, after, nb));
	ASSERT_EQ(0, tmp_files(dir));
	rmtree(dir);
}

/* The rename fails (a directory is in the way): the temporary file is removed. */
TEST(rename_error)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], err[512];

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/floor", dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/floor/x", dir);
	put_file(path, "x", 1);
	ASSERT_GT(0, sf_state_save(dir, &sample, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "renaming ")) TH_LOG("%s", err);
	ASSERT_EQ(0, tmp_files(dir));
	rmtree(dir);
}

/* The sysfs file: 32 lowercase hex digits and a newline, or an error. */
TEST(read_instance_id)
{
	static const struct {
		const char *data;
		int err;
	} cases[] = {
		{ ID_A "\n", 0 },
		{ ID_A, -EBADMSG },			/* no newline */
		{ ID_A "\n\n", -EBADMSG },
		{ "0f3c9a5e7d1b24c68e0a9b3f5c7d1e2\n", -EBADMSG },	/* 31 digits */
		{ "0F3C9A5E7D1B24C68E0A9B3F5C7D1E2A\n", -EBADMSG },
		{ " 0f3c9a5e7d1b24c68e0a9b3f5c7d1e2\n", -EBADMSG },
		{ "", -EBADMSG },
	};
	char dir[PATH_MAX], path[PATH_MAX + 16], id[SF_INSTANCE_ID_LEN + 1];

	ASSERT_NE(NULL, tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/instance_id", dir);
	/* A module without the file. */
	memset(id, 'x', sizeof(id));
	ASSERT_EQ(-ENOENT, sf_read_instance_id(path, id));
	ASSERT_STREQ("", id);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_file(path, cases[i].data, strlen(cases[i].data));
		memset(id, 'x', sizeof(id));
		ASSERT_EQ(cases[i].err, sf_read_instance_id(path, id)) TH_LOG("case %zu", i);
		ASSERT_STREQ(cases[i].err ? "" : ID_A, id) TH_LOG("case %zu", i);
	}
	/* Not readable (root reads it anyway: then only the mode is set). */
	put_file(path, ID_A "\n", 33);
	ASSERT_EQ(0, chmod(path, 0));
	if (geteuid() != 0) {
		ASSERT_EQ(-EACCES, sf_read_instance_id(path, id));
		ASSERT_STREQ("", id);
	}
	unlink(path);
	ASSERT_EQ(0, mkdir(path, 0755));
	ASSERT_EQ(-EISDIR, sf_read_instance_id(path, id));
	rmtree(dir);
}

/*
 * The restore leaves the floor alone only for the instance that saved, and
 * only when that instance's high-water mark is not below the saved one.
 */
TEST(restore_decision)
{
	struct sf_state st = sample;
	const uint64_t h = sample.high_ms;

	ASSERT_EQ(SF_RESTORE_SAME_INSTANCE, sf_restore_decide(&st, ID_A, h));
	ASSERT_EQ(SF_RESTORE_SAME_INSTANCE, sf_restore_decide(&st, ID_A, h + 1));
	/* Even with the saved floor (high + margin) far above the device's clock. */
	ASSERT_EQ(SF_RESTORE_SAME_INSTANCE, sf_restore_decide(&st, ID_A, st.floor_ms - 1));
	/* The instance went back: its mark is below what it saved. */
	ASSERT_EQ(SF_RESTORE_WENT_BACK, sf_restore_decide(&st, ID_A, h - 1));
	ASSERT_EQ(SF_RESTORE_WENT_BACK, sf_restore_decide(&st, ID_A, 0));
	/* Another instance: a reload, a reboot. */
	ASSERT_EQ(SF_RESTORE_NEW_INSTANCE, sf_restore_decide(&st, ID_B, UINT64_MAX));
	/* The device's id unknown (an old module, sysfs unreadable). */
	ASSERT_EQ(SF_RESTORE_DEVICE_NO_INSTANCE, sf_restore_decide(&st, "", UINT64_MAX));
	/* A version 1 file. */
	st.instance_id[0] = '\0';
	ASSERT_EQ(SF_RESTORE_FILE_NO_INSTANCE, sf_restore_decide(&st, ID_A, UINT64_MAX));
	ASSERT_EQ(SF_RESTORE_FILE_NO_INSTANCE, sf_restore_decide(&st, "", UINT64_MAX));
}

TEST(durations)
{
	static const struct {
		const char *s;
		int err;
		uint64_t ms;
	} cases[] = {
		{ "1", 0, 1000 }, { "10", 0, 10000 }, { "10s", 0, 10000 }, { "500ms", 0, 500 },
		{ "1ms", 0, 1 }, { "2m", 0, 120000 }, { "1440m", 0, 86400000 }, { "86400", 0, 86400000 },
		{ "86401", -ERANGE, 0 }, { "0", -ERANGE, 0 }, { "0ms", -ERANGE, 0 },
		{ "99999999999999999999999", -ERANGE, 0 },
		{ "", -EINVAL, 0 }, { "s", -EINVAL, 0 }, { "-1", -EINVAL, 0 }, { "1h", -EINVAL, 0 },
		{ "1 s", -EINVAL, 0 }, { "1.5", -EINVAL, 0 }, { "10S", -EINVAL, 0 }, { "ms", -EINVAL, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ms = 12345;

		ASSERT_EQ(cases[i].err, sf_parse_duration(cases[i].s, &ms)) TH_LOG("\"%s\"", cases[i].s);
		ASSERT_EQ(cases[i].err ? 12345 : cases[i].ms, ms) TH_LOG("\"%s\"", cases[i].s);
	}
	ASSERT_EQ(-EINVAL, sf_parse_duration(NULL, NULL));
}

TEST(policy)
{
	ASSERT_EQ(30ULL, sf_high_water(10, 20, 30));
	ASSERT_EQ(30ULL, sf_high_water(30, 20, 0));
	ASSERT_EQ(30ULL, sf_high_water(10, 30, 0));
	/* Nothing saved yet, or the saved floor behind or at the mark: save. */
	ASSERT_TRUE(sf_need_save(0, 1000, 10000));
	ASSERT_TRUE(sf_need_save(1000, 1000, 10000));
	ASSERT_TRUE(sf_need_save(999, 1000, 10000));
	/* Less than half the margin left: save; more: wait. */
	ASSERT_TRUE(sf_need_save(1000 + 4999, 1000, 10000));
	ASSERT_FALSE(sf_need_save(1000 + 5000, 1000, 10000));
	ASSERT_FALSE(sf_need_save(1000 + 10000, 1000, 10000));
	ASSERT_EQ(0, sf_check_timing(1000, 10000));
	ASSERT_EQ(0, sf_check_timing(1000, 2001));
	ASSERT_EQ(-EINVAL, sf_check_timing(1000, 2000));
	ASSERT_EQ(-EINVAL, sf_check_timing(5000, 1000));
}

/*
 * The argument of snowflake-floord(8), run: the generator's clock moves at
 * one ms per ms; the daemon looks every interval and, when the policy says
 * so, writes high + margin, which is durable `latency` ms later.  As long as
 * latency <= margin/2 - interval, the durable floor stays above every ID
 * issued at every instant, so a crash at any instant is safe.  With a write
 * slower than that, the simulation finds the instant where it is not (the
 * check can fail).
 */
static uint64_t first_unsafe_ms(uint64_t interval, uint64_t margin, uint64_t latency)
{
	const uint64_t start = 1763769600000ULL, span = 10 * 60 * 1000;
	uint64_t durable, pending = 0, pending_at = 0, next_poll;

	/* The daemon saves at start, before the service lets anyone read. */
	durable = start + margin;
	next_poll = start + interval;
	for (uint64_t t = start; t < start + span; t++) {
		if (pending && t >= pending_at) {
			durable = pending;
			pending = 0;
		}
		if (t == next_poll) {
			next_poll += interval;
			if (!pending && sf_need_save(durable, sf_high_water(t, t, 0), margin)) {
				pending = t + margin;
				pending_at = t + latency;
			}
		}
		/* An ID issued now has a timestamp of at most t. */
		if (durable <= t)
			return t - start;
	}
	return 0;
}

TEST(margin_covers_the_interval)
{
	ASSERT_EQ(0ULL, first_unsafe_ms(1000, 10000, 0));
	ASSERT_EQ(0ULL, first_unsafe_ms(1000, 10000, 4000));	/* the budget: margin/2 - interval */
	ASSERT_EQ(0ULL, first_unsafe_ms(1, 3, 0));
	ASSERT_EQ(0ULL, first_unsafe_ms(250, 2000, 750));
	/* Writes slower than the budget: unsafe, and found. */
	ASSERT_NE(0ULL, first_unsafe_ms(1000, 10000, 6000));
	ASSERT_NE(0ULL, first_unsafe_ms(1000, 2000, 100));	/* margin not > 2 * interval */
}

TEST_HARNESS_MAIN
