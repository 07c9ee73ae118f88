// SPDX-License-Identifier: GPL-2.0
/*
 * P9 natively (bench/db/p9-native.sh): the library call alone, without the
 * database: N calls of snowflake_next() (one read(2) of 8 bytes each) on
 * the file that stands in for /dev/snowflake, with the test build of
 * libsnowflake (SF_TESTING, SF_TESTING_ANY_FILE=1 in the environment).
 * What snowflake.nextval() pays for the ID itself there; the rest of its
 * cost is the database's.  Prints "ids=N ns=T first=A last=B"; exits 1 on
 * a failed open or read.
 *
 * Usage: p9-native-read FILE N
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <snowflake.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t id = 0, first = 0;
	struct snowflake *h;
	long n, i;
	int64_t t0, t1;
	int err;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) < 1) {
		fprintf(stderr, "usage: %s FILE N\n", argv[0]);
		return 2;
	}
	err = snowflake_open(&h, argv[1], 0);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], snowflake_strerror(err));
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		err = snowflake_next(h, &id);
		if (err) {
			fprintf(stderr, "%s: read %ld: %s\n", argv[1], i, snowflake_strerror(err));
			return 1;
		}
		if (i == 0)
			first = id;
	}
	t1 = now_ns();
	snowflake_close(h);
	printf("ids=%ld ns=%" PRId64 " first=%" PRIu64 " last=%" PRIu64 "\n", n, t1 - t0, first, id);
	return 0;
}
