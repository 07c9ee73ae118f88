// SPDX-License-Identifier: GPL-2.0
/*
 * handoff-ids: the replay round of the handoff guest
 * (tests/handoff/init.sh).
 *
 *   handoff-ids read FILE MS N   for MS ms, once in every millisecond of the
 *                                wall clock, read N IDs from /dev/snowflake;
 *                                append them to FILE (decimal, one a line).
 *                                Prints "reads R refused F ids I".  A refused
 *                                read (ENOTCONN, EOVERFLOW) is counted, not
 *                                fatal.
 *   handoff-ids settime MS       set the wall clock to MS (Unix ms): `date -s`
 *                                has whole seconds only
 *   handoff-ids now              print the wall clock in Unix ms
 *   handoff-ids compare A B DC W the IDs of file A (an earlier holder) and of
 *                                B (decimal, one a line): "ids_a N min_a X
 *                                max_a Y ids_b N min_b X max_b Y
 *                                b_not_above_a K b_equal_a E other_pair O":
 *                                K IDs of B not above A's largest, E equal
 *                                to one of A's, O IDs (of both) whose
 *                                datacenter and worker are not DC and W (the
 *                                default layout: 41/5/5/12 bits)
 *
 * Why once a millisecond: a holder whose clock runs behind repeats an
 * earlier holder's IDs exactly when it reads in a millisecond the earlier
 * one read in (both start each millisecond at sequence 0).  Reading in
 * (nearly) every millisecond of a window, N IDs each time, makes every read
 * of the later holder inside that window a repeat on a tree that passes no
 * time between holders; a busy loop would do the same with ~4096 IDs a
 * millisecond, megabytes a second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_N	4096

static int64_t ms_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int do_read(const char *path, long ms, long n)
{
	static uint64_t ids[MAX_N];
	long reads = 0, refused = 0, total = 0;
	int64_t end;
	FILE *out;
	int fd;

	if (ms <= 0 || n <= 0 || n > MAX_N)
		return 2;
	fd = open("/dev/snowflake", O_RDONLY);
	if (fd < 0) {
		perror("/dev/snowflake");
		return 1;
	}
	out = fopen(path, "a");
	if (!out) {
		perror(path);
		return 1;
	}
	end = ms_of(CLOCK_BOOTTIME) + ms;
	while (ms_of(CLOCK_BOOTTIME) < end) {
		ssize_t r = read(fd, ids, (size_t)n * sizeof(ids[0]));
		struct timespec t;
		int64_t next;

		reads++;
		if (r < 0) {
			if (errno != ENOTCONN && errno != EOVERFLOW) {
				perror("read");
				return 1;
			}
			refused++;
		} else {
			long i;

			for (i = 0; i < r / (long)sizeof(ids[0]); i++)
				fprintf(out, "%" PRIu64 "\n", ids[i]);
			total += r / (long)sizeof(ids[0]);
		}
		/* Sleep into the next millisecond of the wall clock. */
		next = ms_of(CLOCK_REALTIME) + 1;
		t.tv_sec = next / 1000;
		t.tv_nsec = (long)(next % 1000) * 1000000 + 100000;
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, NULL);
	}
	if (fclose(out)) {
		perror(path);
		return 1;
	}
	close(fd);
	printf("reads %ld refused %ld ids %ld\n", reads, refused, total);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The IDs of PATH, sorted; the number of them in *N. */
static uint64_t *load(const char *path, size_t *n)
{
	size_t cap = 4096;
	uint64_t *v = malloc(cap * sizeof(*v)), id;
	FILE *f = fopen(path, "r");

	if (!v || !f) {
		perror(path);
		exit(1);
	}
	*n = 0;
	while (fscanf(f, "%" SCNu64, &id) == 1) {
		if (*n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
			if (!v) {
				perror("realloc");
				exit(1);
			}
		}
		v[(*n)++] = id;
	}
	if (!feof(f)) {
		fprintf(stderr, "%s: not a list of IDs\n", path);
		exit(1);
	}
	fclose(f);
	qsort(v, *n, sizeof(*v), cmp_u64);
	return v;
}

static size_t other_pair(const uint64_t *v, size_t n, unsigned int dc, unsigned int w)
{
	size_t i, other = 0;

	for (i = 0; i < n; i++)
		if (((v[i] >> 17) & 31) != dc || ((v[i] >> 12) & 31) != w)
			other++;
	return other;
}

static int do_compare(const char *pa, const char *pb, unsigned int dc, unsigned int w)
{
	size_t na, nb, i, j = 0, below = 0, equal = 0;
	uint64_t *a = load(pa, &na), *b = load(pb, &nb);

	if (!na || !nb) {
		printf("ids_a %zu ids_b %zu\n", na, nb);
		return 1;
	}
	for (i = 0; i < nb; i++) {
		if (b[i] <= a[na - 1])
			below++;
		while (j < na && a[j] < b[i])
			j++;
		if (j < na && a[j] == b[i])
			equal++;
	}
	printf("ids_a %zu min_a %" PRIu64 " max_a %" PRIu64 " ids_b %zu min_b %" PRIu64
	       " max_b %" PRIu64 " b_not_above_a %zu b_equal_a %zu other_pair %zu\n",
	       na, a[0], a[na - 1], nb, b[0], b[nb - 1], below, equal,
	       other_pair(a, na, dc, w) + other_pair(b, nb, dc, w));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "read"))
		return do_read(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "settime")) {
		long long ms = atoll(argv[2]);
		struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

		if (clock_settime(CLOCK_REALTIME, &t)) {
			perror("clock_settime");
			return 1;
		}
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%" PRId64 "\n", ms_of(CLOCK_REALTIME));
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "compare"))
		return do_compare(argv[2], argv[3], (unsigned int)atoi(argv[4]),
				  (unsigned int)atoi(argv[5]));
	fprintf(stderr, "usage: handoff-ids read FILE MS N | settime MS | now | compare A B DC W\n");
	return 2;
}
