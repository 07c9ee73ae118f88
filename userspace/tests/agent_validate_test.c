// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of what snowflake-agent takes from a store and a
 * configuration file as input: the strict parsers of agent/validate.c
 * (marks, unsigned decimals, the layout's last timestamp, log-safe
 * shortening), the per-pair mark quarantine table, and the configuration
 * file's line reader (agent/conf.c), and the pool-full backoff
 * (agent/backoff.c) that the liveness bound rests on, and the ZooKeeper
 * record's Stat checks (agent/store_parse.c).  Pure: no store, no device; built
 * under ASan + UBSan; kselftest TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../agent/validate.c"
#include "../agent/conf.c"
#include "../agent/redis_parse.c"
#include "../agent/backoff.c"
#define AG_NO_ETCD	/* store_parse.c's etcd parsers need json-c: not here */
#include "../agent/store_parse.c"

#define MAX_MS	3487858230208ULL	/* the default layout's last timestamp */

static int mark20(const char *s, uint64_t *v)
{
	return ag_mark_parse(s, strlen(s), AG_MARK_FIXED20, MAX_MS, v);
}

static int plain(const char *s, uint64_t *v)
{
	return ag_mark_parse(s, strlen(s), AG_MARK_PLAIN, MAX_MS, v);
}

TEST(mark_fixed20_accepts_what_the_agent_writes)
{
	char buf[32];
	uint64_t v = 1;

	snprintf(buf, sizeof(buf), "%020llu", 1764000000123ULL);
	ASSERT_EQ(0, mark20(buf, &v));
	ASSERT_EQ(1764000000123ULL, v);
	ASSERT_EQ(0, mark20("00000000000000000000", &v));	/* --init-store's default */
	ASSERT_EQ(0ULL, v);
	snprintf(buf, sizeof(buf), "%020llu", MAX_MS);
	ASSERT_EQ(0, mark20(buf, &v));
	ASSERT_EQ(MAX_MS, v);
}

/* The values: none of them is read as a number. */
TEST(mark_fixed20_refuses_the_rest)
{
	static const char *const bad[] = {
		"-1", "1000", "abc", "", "0000000000000000000000001",	/* 25 digits */
		"18446744073709551615",				/* 2^64-1: 20 digits, out of range */
		"99999999999999999999", " 0000000000000001000", "0000000000000001000 ",
		"+0000000000000001000", "0000000000000001000\n", "000000000000000100a0",
	};
	char buf[32];
	uint64_t v = 77;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, mark20(bad[i], &v)) TH_LOG("accepted '%s'", bad[i]);
		EXPECT_EQ(77ULL, v);
	}
	snprintf(buf, sizeof(buf), "%020llu", MAX_MS + 1);
	ASSERT_EQ(-1, mark20(buf, &v));
	/* An embedded NUL: the length given counts, not strlen. */
	ASSERT_EQ(-1, ag_mark_parse("0000000000\0000000000", 20, AG_MARK_FIXED20, MAX_MS, &v));
	ASSERT_EQ(-1, ag_mark_parse(NULL, 20, AG_MARK_FIXED20, MAX_MS, &v));
}

TEST(mark_plain)
{
	uint64_t v = 0;

	ASSERT_EQ(0, plain("1000", &v));
	ASSERT_EQ(1000ULL, v);
	ASSERT_EQ(0, plain("0", &v));
	ASSERT_EQ(0ULL, v);
	EXPECT_EQ(-1, plain("01000", &v));
	EXPECT_EQ(-1, plain("-1", &v));
	EXPECT_EQ(-1, plain("18446744073709551615", &v));
	EXPECT_EQ(-1, plain("18446744073709551616", &v));
	EXPECT_EQ(-1, plain("1e3", &v));
	EXPECT_EQ(-1, plain("", &v));
	EXPECT_EQ(-1, ag_mark_parse("1", 1, (enum ag_mark_form)7, MAX_MS, &v));
}

TEST(parse_u64)
{
	uint64_t v = 0;

	ASSERT_EQ(0, ag_parse_u64("18446744073709551615", 20, UINT64_MAX, &v));
	ASSERT_EQ(UINT64_MAX, v);
	EXPECT_EQ(-1, ag_parse_u64("18446744073709551616", 20, UINT64_MAX, &v));
	EXPECT_EQ(-1, ag_parse_u64("123456789012345678901", 21, UINT64_MAX, &v));
	EXPECT_EQ(-1, ag_parse_u64("11", 2, 10, &v));
	ASSERT_EQ(0, ag_parse_u64("10", 2, 10, &v));
	EXPECT_EQ(-1, ag_parse_u64("007", 3, 10, &v));
	EXPECT_EQ(-1, ag_parse_u64(" 7", 2, 10, &v));
	EXPECT_EQ(-1, ag_parse_u64("7", 0, 10, &v));
}

TEST(layout_max)
{
	ASSERT_EQ(MAX_MS, ag_layout_max_ms(1288834974657ULL, 41, 1));
	ASSERT_EQ(1000ULL + 1023 * 10, ag_layout_max_ms(1000, 10, 10));
	ASSERT_EQ(UINT64_MAX - 1, ag_layout_max_ms(0, 63, 3600000));
	ASSERT_EQ(UINT64_MAX - 1, ag_layout_max_ms(0, 0, 1));
	ASSERT_EQ(UINT64_MAX - 1, ag_layout_max_ms(UINT64_MAX - 5, 10, 1));
}

TEST(shorten)
{
	char out[24], big[300];

	ag_shorten("ab\x01\xff" "c", 5, out, sizeof(out));
	ASSERT_STREQ("ab??c", out);
	memset(big, 'x', sizeof(big));
	ag_shorten(big, sizeof(big), out, sizeof(out));
	ASSERT_EQ(sizeof(out) - 1, strlen(out));
	ASSERT_NE(NULL, strstr(out, "(300 bytes)"));
	ag_shorten(NULL, 5, out, sizeof(out));
	ASSERT_STREQ("", out);
	ag_shorten("abc", 3, out, 1);
	ASSERT_STREQ("", out);
}

/* Issue 23, item 3: one pair's sighting says nothing of another's. */
TEST(quarantine_is_per_pair)
{
	struct ag_quarantine *q = calloc(1, sizeof(*q));
	const int64_t gap = 5000;

	ASSERT_NE(NULL, q);
	ASSERT_EQ(100, ag_quarantine_seen(q, 0, 100, gap));
	ASSERT_EQ(100, ag_quarantine_seen(q, 0, 3000, gap));
	/* Pair 1 first seen at 9000: its quarantine starts there. */
	ASSERT_EQ(9000, ag_quarantine_seen(q, 1, 9000, gap));
	ASSERT_EQ(0, ag_quarantine_since(q, 2));
	/* Pair 0 seen again after a gap longer than allowed: it starts again. */
	ASSERT_EQ(9000, ag_quarantine_seen(q, 0, 9000, gap));
	/* The mark seen present (a claim, a holder): forgotten. */
	ag_quarantine_clear(q, 1);
	ASSERT_EQ(0, ag_quarantine_since(q, 1));
	ASSERT_EQ(12000, ag_quarantine_seen(q, 1, 12000, gap));
	ASSERT_EQ(9000, ag_quarantine_since(q, 0));
	free(q);
}

/* Bounded: a pool far larger than the table never makes a quarantine shorter. */
TEST(quarantine_bounded_never_shorter)
{
	struct ag_quarantine *q = calloc(1, sizeof(*q));
	const uint64_t pairs = 1u << 20;
	uint64_t p, kept = 0;

	ASSERT_NE(NULL, q);
	for (p = 0; p < pairs; p++)
		ASSERT_EQ((int64_t)(p + 1), ag_quarantine_seen(q, p, (int64_t)(p + 1), INT64_MAX));
	for (p = 0; p < pairs; p++) {
		int64_t since = ag_quarantine_since(q, p);

		/* Kept with its own start, or dropped (0): never an earlier start. */
		ASSERT_TRUE(since == 0 || since == (int64_t)(p + 1));
		kept += since != 0;
	}
	ASSERT_LE(kept, (uint64_t)AG_QUARANTINE_SLOTS);
	ASSERT_GE(kept, (uint64_t)AG_QUARANTINE_SLOTS / 2);
	/* A dropped pair seen again starts anew. */
	for (p = 0; p < pairs; p++) {
		int64_t since = ag_quarantine_seen(q, p, (int64_t)(pairs + 10), INT64_MAX);

		ASSERT_TRUE(since == (int64_t)(pairs + 10) || since == (int64_t)(p + 1));
	}
	free(q);
}

static FILE *text(const char *s, size_t len)
{
	FILE *f = tmpfile();

	if (f) {
		fwrite(s, 1, len, f);
		rewind(f);
	}
	return f;
}

/* Issue 23, item 9: a line over 1023 bytes is an error of its own. */
TEST(read_line_whole_lines)
{
	char line[AG_CONF_LINE_MAX + 1];
	char *big = malloc(5000);
	FILE *f;
	size_t n;

	ASSERT_NE(NULL, big);
	f = text("a = 1\nb = 2", 11);
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, ag_read_line(f, line, sizeof(line)));
	ASSERT_STREQ("a = 1", line);
	ASSERT_EQ(1, ag_read_line(f, line, sizeof(line)));	/* no newline at the end */
	ASSERT_STREQ("b = 2", line);
	ASSERT_EQ(0, ag_read_line(f, line, sizeof(line)));
	fclose(f);

	/* Exactly 1023 bytes: fine.  1024: too long, and read to its end. */
	for (n = AG_CONF_LINE_MAX; n <= AG_CONF_LINE_MAX + 1; n++) {
		memset(big, 'x', n);
		memcpy(big + n, "\nc = 3\n", 7);
		f = text(big, n + 7);
		ASSERT_NE(NULL, f);
		ASSERT_EQ(n == AG_CONF_LINE_MAX ? 1 : -E2BIG, ag_read_line(f, line, sizeof(line)));
		ASSERT_EQ(AG_CONF_LINE_MAX, strlen(line));
		ASSERT_EQ(1, ag_read_line(f, line, sizeof(line)));
		ASSERT_STREQ("c = 3", line);
		fclose(f);
	}
	free(big);
}

/* The whole file: "FILE:N: line longer than 1023 bytes", not "expected key = value". */
TEST(config_long_line_message)
{
	char path[] = "/tmp/agent-conf-test.XXXXXX", err[1024], arg0[] = "snowflake-agent",
	     arg1[] = "--config", *argv[] = { arg0, arg1, path, NULL };
	struct ag_conf c;
	FILE *f;
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "ttl-ms = 3000\nowner = ");
	for (int i = 0; i < 2000; i++)
		fputc('y', f);
	fputc('\n', f);
	fclose(f);
	ASSERT_EQ(AG_EXIT_USAGE, ag_conf_load(&c, 3, argv, err, sizeof(err)));
	unlink(path);
	ASSERT_NE(NULL, strstr(err, ":2: line longer than 1023 bytes")) TH_LOG("%s", err);
	ag_conf_free(&c);
}

/*
 * The owner's one definition (issue 31 finding 2): printable ASCII, 1 to
 * the limit; --owner is checked with it where it is configured.
 */
TEST(owner_is_printable_ascii)
{
	char arg0[] = "snowflake-agent", arg1[] = "--owner", arg2[] = "z\xc3\xbcrich",
	     arg3[] = "zurich", err[1024], *bad[] = { arg0, arg1, arg2, NULL },
	     *good[] = { arg0, arg1, arg3, NULL };
	struct ag_conf c;

	ASSERT_TRUE(ag_owner_ok("host-1:0f", 9, 200));
	ASSERT_TRUE(ag_owner_ok("a b", 3, 200));
	ASSERT_FALSE(ag_owner_ok("z\xc3\xbcrich", 7, 200));
	ASSERT_FALSE(ag_owner_ok("tab\there", 8, 200));
	ASSERT_FALSE(ag_owner_ok("", 0, 200));
	ASSERT_FALSE(ag_owner_ok("abc", 3, 2));
	ASSERT_EQ(AG_EXIT_USAGE, ag_conf_load(&c, 3, bad, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "printable ASCII")) TH_LOG("%s", err);
	ag_conf_free(&c);
	ASSERT_EQ(0, ag_conf_load(&c, 3, good, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_STREQ("zurich", c.owner);
	ag_conf_free(&c);
}

/* The Redis scripts' replies: only what the agent wrote is a mark. */
TEST(redis_script_reply)
{
	char mk[] = "00000001795608360132", bad[] = "-1", big[] = "99999999999999999999";
	redisReply s = { .type = REDIS_REPLY_STRING, .str = mk, .len = 20 };
	redisReply e = { .type = REDIS_REPLY_STRING, .str = bad, .len = 2 }, *el[] = { &e };
	redisReply arr = { .type = REDIS_REPLY_ARRAY, .elements = 1, .element = el };
	redisReply n = { .type = REDIS_REPLY_INTEGER, .integer = -2 };
	const char *text = NULL;
	long long code = 0;
	uint64_t m = 0;
	size_t len = 0;

	ASSERT_EQ(AG_RS_MARK, ag_redis_script_reply(&s, MAX_MS, &code, &m, &text, &len));
	ASSERT_EQ(1795608360132ULL, m);
	s.str = big;
	ASSERT_EQ(AG_RS_ODD, ag_redis_script_reply(&s, MAX_MS, &code, &m, &text, &len));
	ASSERT_EQ(AG_RS_INVALID, ag_redis_script_reply(&arr, MAX_MS, &code, &m, &text, &len));
	ASSERT_EQ(2, len);
	ASSERT_EQ(0, memcmp(text, "-1", 2));
	ASSERT_EQ(AG_RS_INT, ag_redis_script_reply(&n, MAX_MS, &code, &m, &text, &len));
	ASSERT_EQ(-2, code);
	ASSERT_EQ(AG_RS_ODD, ag_redis_script_reply(NULL, MAX_MS, &code, &m, &text, &len));
	/* The init script: {1}, {2, text}; not {1, text} nor {2}. */
	el[0] = &n;
	n.integer = 1;
	ASSERT_EQ(1, ag_redis_init_reply(&arr, &text, &len));
	n.integer = 2;
	ASSERT_EQ(-1, ag_redis_init_reply(&arr, &text, &len));
}

TEST(redis_info_field)
{
	static const char info[] = "# Server\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n"
				   "uptime_in_seconds:12\r\nrole:master\nempty:\r\nrun_id_x:1\r\n";
	char out[41];

	ASSERT_EQ(0, ag_redis_info_field(info, strlen(info), "run_id", out, sizeof(out)));
	ASSERT_STREQ("0123456789abcdef0123456789abcdef01234567", out);
	ASSERT_EQ(0, ag_redis_info_field(info, strlen(info), "role", out, sizeof(out)));
	ASSERT_STREQ("master", out);
	ASSERT_EQ(0, ag_redis_info_field(info, strlen(info), "empty", out, sizeof(out)));
	ASSERT_STREQ("", out);
	ASSERT_EQ(-1, ag_redis_info_field(info, strlen(info), "uptime", out, sizeof(out)));
	ASSERT_EQ(-1, ag_redis_info_field(info, strlen(info), "run_id", out, 40));	/* too long */
	/* Only the bytes given: the field cut off at the end is not read past it. */
	ASSERT_EQ(0, ag_redis_info_field(info, strlen(info) - 12, "empty", out, sizeof(out)));
	ASSERT_EQ(0, ag_redis_info_field(info, 20, "run_id", out, sizeof(out)));
	ASSERT_STREQ("012", out);
}

/*
 * Issue 23 item 8: the pool-full backoff is never longer than max(ttl, 1 s).
 * The liveness bound of snowflake-agent(8) (a pair freed while the store
 * answers is served within ttl + settle-ms + 1 s) needs that; 27cfb46's
 * backoff jittered to 75 %..125 % of it (up to 10 s for a TTL of 8 s).
 * The draws below are the extremes and a spread between them.
 */
static const uint64_t draws[] = {
	0, 1, 0x7fffffffffffffffULL, 0xffffffffffffffffULL, 0x123456789abcdefULL,
	999999999ULL, 1000000000ULL, 4000000000ULL, 0xfedcba9876543210ULL,
};

TEST(full_backoff_never_past_max_ttl_1s)
{
	static const uint32_t ttls[] = { 300, 1000, 2000, 3000, 8000, 60000 };
	unsigned int i, j, k;

	for (i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
		int64_t cap = (int64_t)(ttls[i] > 1000 ? ttls[i] : 1000) * 1000000;

		for (j = 0; j < sizeof(draws) / sizeof(draws[0]); j++) {
			int64_t state = 0;

			for (k = 0; k < 40; k++) {
				int64_t w = ag_full_backoff(&state, ttls[i], ttls[i] / 3, draws[j] * (k + 1));

				ASSERT_LE(w, cap) TH_LOG("ttl %u ms, draw %u, call %u: wait %lld ns > cap %lld",
						ttls[i], j, k, (long long)w, (long long)cap);
				ASSERT_GE(w, state / 2);
				ASSERT_LE(w, state);
				ASSERT_LE(state, cap);
			}
			/* Saturated: the state is the cap itself. */
			ASSERT_EQ(cap, state);
		}
	}
}

TEST(full_backoff_starts_at_min_renew_1s_and_doubles)
{
	int64_t state = 0;
	int64_t w;

	/* ttl 8 s, renew 2 s: 1 s, 2 s, 4 s, 8 s, 8 s. */
	w = ag_full_backoff(&state, 8000, 2000, 0);
	ASSERT_EQ(1000000000LL, state);
	ASSERT_EQ(500000000LL, w);		/* the smallest draw: half */
	ag_full_backoff(&state, 8000, 2000, 0);
	ASSERT_EQ(2000000000LL, state);
	ag_full_backoff(&state, 8000, 2000, 0);
	ASSERT_EQ(4000000000LL, state);
	w = ag_full_backoff(&state, 8000, 2000, 4000000000ULL);
	ASSERT_EQ(8000000000LL, state);
	ASSERT_EQ(8000000000LL, w);		/* the largest draw: the cap, no more */
	ag_full_backoff(&state, 8000, 2000, 0);
	ASSERT_EQ(8000000000LL, state);

	/* renew 200 ms: the first wait is 100..200 ms. */
	state = 0;
	w = ag_full_backoff(&state, 600, 200, 0xffffffffffffffffULL);
	ASSERT_EQ(200000000LL, state);
	ASSERT_LE(w, 200000000LL);
	ASSERT_GE(w, 100000000LL);
}

/*
 * The retry after a failed claim step: min(renew, 1 s), jittered down to
 * half, never up; two agents' draws give two waits (it was a fixed 1 s).
 */
TEST(retry_wait_is_jittered_down_from_min_renew_1s)
{
	int64_t lo = INT64_MAX, hi = 0;
	uint64_t r;

	for (r = 0; r < 2000; r++) {
		int64_t w = ag_retry_wait(3000, r * 0x9e3779b97f4a7c15ULL);

		ASSERT_GE(w, 500000000LL);
		ASSERT_LE(w, 1000000000LL);
		lo = w < lo ? w : lo;
		hi = w > hi ? w : hi;
	}
	/* spread over the range, not one value */
	ASSERT_LT(lo, 550000000LL);
	ASSERT_GT(hi, 950000000LL);
	/* renew 200 ms: 100..200 ms */
	ASSERT_EQ(100000000LL, ag_retry_wait(200, 0));
	ASSERT_EQ(200000000LL, ag_retry_wait(200, 100000000ULL));
	ASSERT_LE(ag_retry_wait(200, UINT64_MAX), 200000000LL);
}

/* Issue 40: the record is read only in the exact form it is written. */
TEST(record_round_trip)
{
	struct ag_rec_val v = { .nonce = 0x0123456789abcdefULL, .beat = 7, .ttl_ms = 10000,
				.mark = 1700000000123ULL }, w;
	char buf[AG_REC_MAX];
	int n;

	strcpy(v.owner, "web 1:0a0b0c0d0e0f00112233445566778899");
	n = ag_rec_format(&v, buf, sizeof(buf));
	ASSERT_GT(n, 0);
	ASSERT_STREQ("sf2 nonce=0123456789abcdef beat=7 ttl=10000 mark=00000001700000000123 owner=web 1:0a0b0c0d0e0f00112233445566778899",
		     buf);
	ASSERT_EQ(0, ag_rec_parse(buf, (size_t)n, MAX_MS, &w));
	ASSERT_EQ(v.nonce, w.nonce);
	ASSERT_EQ(v.beat, w.beat);
	ASSERT_EQ(v.ttl_ms, w.ttl_ms);
	ASSERT_EQ(v.mark, w.mark);
	ASSERT_STREQ(v.owner, w.owner);
	ASSERT_FALSE(ag_rec_free(&w));
	/* free: owner "-", no ttl */
	v.ttl_ms = 0;
	strcpy(v.owner, AG_REC_FREE);
	n = ag_rec_format(&v, buf, sizeof(buf));
	ASSERT_EQ(0, ag_rec_parse(buf, (size_t)n, MAX_MS, &w));
	ASSERT_TRUE(ag_rec_free(&w));
	/* too long an owner does not fit the buffer: refused, not cut */
	memset(v.owner, 'x', sizeof(v.owner) - 1);
	v.owner[sizeof(v.owner) - 1] = '\0';
	ASSERT_EQ(-1, ag_rec_format(&v, buf, 64));
}

TEST(record_refuses_the_rest)
{
	static const char *const bad[] = {
		"",
		"sf1 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789ABCDEF beat=0 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcde beat=0 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=00 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=-1 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=0 ttl=2147483648 mark=00000001700000000000 owner=a",
		"sf2 nonce=0123456789abcdef beat=0 ttl=5 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=1700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=99999999999999999999 owner=-",
		"sf2 nonce=0123456789abcdef ttl=0 beat=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000",
		"sf2  nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=-",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=caf\xc3\xa9",
		"sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=a\nb",
		"00000001700000000000",
	};
	struct ag_rec_val w = { .beat = 42 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(-1, ag_rec_parse(bad[i], strlen(bad[i]), MAX_MS, &w)) {
			TH_LOG("accepted: \"%s\"", bad[i]);
		}
		ASSERT_EQ(42, w.beat);	/* untouched */
	}
	/* a NUL inside is not the end */
	ASSERT_EQ(-1, ag_rec_parse("sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=-\0x",
				   75, MAX_MS, &w));
}

/* A record's text where no record is (ag_rec_tag()): tagged, never parsed as one. */
TEST(record_tag)
{
	static const char rec[] = "sf2 nonce=0123456789abcdef beat=0 ttl=0 mark=00000001700000000000 owner=-";
	struct ag_rec_val v;
	char text[AG_REC_MAX];
	size_t len = sizeof(rec) - 1, i;

	memcpy(text, rec, len + 1);
	ASSERT_EQ(0, ag_rec_parse(text, len, MAX_MS, &v));
	ag_rec_tag(text, &len, sizeof(text), "zk-ephemeral=0x1f ");
	ASSERT_EQ(sizeof(rec) - 1 + 18, len);
	ASSERT_EQ(0, strcmp(text + 18, rec));
	ASSERT_EQ(0, strncmp(text, "zk-ephemeral=0x1f sf2 ", 22));
	ASSERT_EQ(-1, ag_rec_parse(text, len, MAX_MS, &v));
	/* the longest text: its end cut, the tag whole, NUL-terminated within the buffer */
	memset(text, 'x', sizeof(text));
	memcpy(text, "sf2 ", 4);
	len = sizeof(text) - 1;
	text[len] = '\0';
	ag_rec_tag(text, &len, sizeof(text), "t ");
	ASSERT_EQ(sizeof(text) - 1, len);
	ASSERT_EQ(0, strncmp(text, "t sf2 x", 7));
	ASSERT_EQ('\0', text[len]);
	/* anything else is left as it is: 1.4.0's owner, a short text, a tag too long */
	memcpy(text, "host-a:0123", 12);
	len = 11;
	ag_rec_tag(text, &len, sizeof(text), "t ");
	ASSERT_EQ(11, len);
	ASSERT_EQ(0, strcmp(text, "host-a:0123"));
	memcpy(text, "sf2", 4);
	len = 3;
	ag_rec_tag(text, &len, sizeof(text), "t ");
	ASSERT_EQ(3, len);
	memcpy(text, "sf2 x", 6);
	len = 5;
	ag_rec_tag(text, &len, 6, "tagtoolong");
	ASSERT_EQ(5, len);
	for (i = 0; i < 5; i++)
		ASSERT_EQ("sf2 x"[i], text[i]);
}

/*
 * A ZooKeeper record node's Stat (ag_zk_rec_stat()): the mzxid the engine
 * takes as the version must be above 0, and above the one a write
 * replaced; the data version the next compare names must be the one the
 * write made (a create's 0, a setData's one up), never negative (-1 is
 * "any version" to setData).
 */
TEST(zookeeper_record_stat)
{
	/* read: mzxid above 0, data version 0 or above; an ephemeral node is read too */
	ASSERT_EQ(AG_VAL_OK, ag_zk_rec_stat(1, 0, 0, false, 0, 0));
	ASSERT_EQ(AG_VAL_OK, ag_zk_rec_stat(0x100000004LL, 7, 0x1000007, false, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(0, 0, 0, false, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(-5, 0, 0, false, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(9, -1, 0, false, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(9, INT32_MIN, 0, false, 0, 0));
	/* a create: data version 0, not ephemeral */
	ASSERT_EQ(AG_VAL_OK, ag_zk_rec_stat(10, 0, 0, true, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(10, 1, 0, true, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(10, 0, 0x1000007, true, 0, 0));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(0, 0, 0, true, 0, 0));
	/* a setData over mzxid 10 at data version 3: mzxid above 10, data version 4 */
	ASSERT_EQ(AG_VAL_OK, ag_zk_rec_stat(11, 4, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_OK, ag_zk_rec_stat(0x200000001LL, 4, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(10, 4, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(9, 4, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(11, 3, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(11, 5, 0, true, 10, 3));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(11, 4, 0x1000007, true, 10, 3));
	/* an mzxid at or above 2^63 as the engine's uint64 never passes as int64 */
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(INT64_MIN, 4, 0, true, 10, 3));
	/* the data version at its end: no write is valid past it (it would wrap) */
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(11, INT32_MIN, 0, true, 10, INT32_MAX));
	ASSERT_EQ(AG_VAL_INVALID, ag_zk_rec_stat(11, -1, 0, true, 10, INT32_MAX));
}

/* Expiry on the observer's clock: a wait starts again whenever the version moves. */
TEST(observe_waits_for_one_version)
{
	struct ag_observe *o = calloc(1, sizeof(*o));
	const uint64_t pairs = 1u << 20;
	uint64_t p;

	ASSERT_NE(NULL, o);
	ASSERT_EQ(100, ag_observe_seen(o, 3, 7, 100));
	ASSERT_EQ(100, ag_observe_seen(o, 3, 7, 5000));
	ASSERT_EQ(6000, ag_observe_seen(o, 3, 8, 6000));	/* renewed: again */
	ASSERT_EQ(6000, ag_observe_seen(o, 3, 8, 9000));
	ASSERT_EQ(9500, ag_observe_seen(o, 4, 8, 9500));	/* per pair */
	ag_observe_clear(o, 3);
	ASSERT_EQ(10000, ag_observe_seen(o, 3, 8, 10000));
	/* bounded: a pool far larger than the table never shortens a wait */
	for (p = 0; p < pairs; p++)
		ASSERT_EQ((int64_t)(p + 20000), ag_observe_seen(o, p, 1, (int64_t)(p + 20000)));
	for (p = 0; p < pairs; p++) {
		int64_t since = ag_observe_seen(o, p, 1, (int64_t)(pairs + 30000));

		ASSERT_TRUE(since == (int64_t)(pairs + 30000) || since == (int64_t)(p + 20000));
	}
	free(o);
}

TEST_HARNESS_MAIN
