// SPDX-License-Identifier: GPL-2.0
/*
 * sf-upgrade-reader: a reader of /dev/snowflake that does not stop while
 * the packages are upgraded, downgraded and the host rebooted
 * (tests/upgrade/guest.sh), and the checker of what the readers read.
 *
 *   sf-upgrade-reader read NAME DEVICE OUT STOPFILE held|reopen
 *	Reads one ID (8 bytes) every 5 ms until STOPFILE exists:
 *	"held" through one descriptor opened at the start and kept across
 *	everything (what a long-running service does), "reopen" through a
 *	descriptor opened for each read (what each run of a CLI does).  Every
 *	ID goes to OUT (8 bytes, host order).  At the end one line:
 *	  reader NAME mode=M reads=R ids=N errors=E [errno=count ...]
 *	  longest_gap_ms=G gap_from=T0 gap_to=T1 first=ID last=ID not_above=V
 *	where a gap is the time between two served reads (CLOCK_MONOTONIC),
 *	T0 and T1 are CLOCK_REALTIME ms, and not_above counts the IDs not
 *	above the ID read before them by this reader.  Every gap of 100 ms
 *	or more is also printed as "gap NAME MS from T0 to T1 errno=E".
 *	A gap still open when STOPFILE appears (no read served since, or
 *	none at all: from the start) counts too, its line ending "open".
 *
 *   sf-upgrade-reader check ABOVE FILE...
 *	The IDs of all FILEs: how many, how many repeat (across the files
 *	too), how many are not above ABOVE (the highest ID of an earlier
 *	boot; 0 for none), the highest.  One line:
 *	  check ids=N repeats=D not_above=B max=M
 *	and exit 1 when D or B is not 0, or when there is no ID at all.
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

static uint64_t ms_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int do_read(int argc, char **argv)
{
	const char *name = argv[2], *dev = argv[3], *stop = argv[5];
	int reopen = !strcmp(argv[6], "reopen");
	uint64_t reads = 0, ids = 0, errs = 0, not_above = 0, first = 0, last = 0;
	uint64_t last_ok = 0, last_ok_rt = 0, gap = 0, gap_from = 0, gap_to = 0;
	uint64_t start, start_rt;
	unsigned long errno_count[256] = { 0 };
	int last_errno = 0, fd = -1, i;
	/*
	 * A read every 5 ms: gaps of 100 ms or more are what is reported, to
	 * within 5 ms.  Every 1 ms, the two readers' 2,000 wakeups a second
	 * kept the emulated CPUs busy through each phase (TCG: a wakeup, a
	 * timer and five system calls cost a host CPU thousands of cycles).
	 */
	const struct timespec period = { 0, 5000000 };
	FILE *out;

	(void)argc;
	start = ms_of(CLOCK_MONOTONIC);
	start_rt = ms_of(CLOCK_REALTIME);
	out = fopen(argv[4], "w");
	if (!out) {
		perror(argv[4]);
		return 2;
	}
	/*
	 * Each ID on its way to OUT at once: guest.sh asks whether the held
	 * reader's file grows within 2 s, and stdio's 4 KiB buffer holds 512
	 * IDs, 2.6 s of reads at one every 5 ms (upgrade A's check failed so
	 * in the run of 53012c1).
	 */
	setvbuf(out, NULL, _IONBF, 0);
	while (access(stop, F_OK) != 0) {
		uint64_t id, now, now_rt;
		ssize_t n;

		if (fd < 0)
			fd = open(dev, O_RDONLY | O_CLOEXEC);
		reads++;
		if (fd < 0) {
			n = -1;
		} else {
			n = read(fd, &id, sizeof(id));
			if (n >= 0 && n != (ssize_t)sizeof(id)) {
				n = -1;
				errno = EIO;
			}
		}
		if (n < 0) {
			errs++;
			last_errno = errno;
			errno_count[errno & 255]++;
			if (fd >= 0 && (reopen || errno == ENODEV)) {
				close(fd);
				fd = -1;
			}
		} else {
			now = ms_of(CLOCK_MONOTONIC);
			now_rt = ms_of(CLOCK_REALTIME);
			if (ids && id <= last)
				not_above++;
			if (!ids)
				first = id;
			if (last_ok && now - last_ok > gap) {
				gap = now - last_ok;
				gap_from = last_ok_rt;
				gap_to = now_rt;
			}
			if (last_ok && now - last_ok >= 100)
				printf("gap %s %" PRIu64 " from %" PRIu64 " to %" PRIu64 " errno=%d\n",
				       name, now - last_ok, last_ok_rt, now_rt, last_errno);
			last_ok = now;
			last_ok_rt = now_rt;
			last = id;
			ids++;
			fwrite(&id, sizeof(id), 1, out);
			if (reopen) {
				close(fd);
				fd = -1;
			}
		}
		nanosleep(&period, NULL);
	}
	/*
	 * A gap still open at the stop (the device never served again, or
	 * never served at all: then since the start) is a gap like any other:
	 * a device that stays dark must not read as one that was never dark.
	 */
	{
		uint64_t now = ms_of(CLOCK_MONOTONIC), now_rt = ms_of(CLOCK_REALTIME);
		uint64_t from = last_ok ? last_ok : start, from_rt = last_ok ? last_ok_rt : start_rt;

		if (now - from > gap) {
			gap = now - from;
			gap_from = from_rt;
			gap_to = now_rt;
		}
		if (now - from >= 100)
			printf("gap %s %" PRIu64 " from %" PRIu64 " to %" PRIu64 " errno=%d open\n",
			       name, now - from, from_rt, now_rt, last_errno);
	}
	if (fclose(out)) {
		perror(argv[4]);
		return 2;
	}
	printf("reader %s mode=%s reads=%" PRIu64 " ids=%" PRIu64 " errors=%" PRIu64,
	       name, reopen ? "reopen" : "held", reads, ids, errs);
	for (i = 0; i < 256; i++)
		if (errno_count[i])
			printf(" %s=%lu", strerrorname_np(i) ? strerrorname_np(i) : "?",
			       errno_count[i]);
	printf(" longest_gap_ms=%" PRIu64 " gap_from=%" PRIu64 " gap_to=%" PRIu64
	       " first=%" PRIu64 " last=%" PRIu64 " not_above=%" PRIu64 "\n",
	       gap, gap_from, gap_to, first, last, not_above);
	return 0;
}

static int do_check(int argc, char **argv)
{
	uint64_t above = strtoull(argv[2], NULL, 10), *all = NULL, n = 0, cap = 0;
	uint64_t repeats = 0, low = 0, i;
	int f;

	for (f = 3; f < argc; f++) {
		FILE *in = fopen(argv[f], "r");
		uint64_t id;

		if (!in) {
			perror(argv[f]);
			return 2;
		}
		while (fread(&id, sizeof(id), 1, in) == 1) {
			if (n == cap) {
				cap = cap ? cap * 2 : 1 << 16;
				all = realloc(all, cap * sizeof(*all));
				if (!all)
					return 2;
			}
			all[n++] = id;
		}
		fclose(in);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	for (i = 0; i < n; i++) {
		if (i && all[i] == all[i - 1])
			repeats++;
		if (all[i] <= above)
			low++;
	}
	printf("check ids=%" PRIu64 " repeats=%" PRIu64 " not_above=%" PRIu64 " max=%" PRIu64 "\n",
	       n, repeats, low, n ? all[n - 1] : 0);
	return n && !repeats && !low ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && !strcmp(argv[1], "read"))
		return do_read(argc, argv);
	if (argc >= 4 && !strcmp(argv[1], "check"))
		return do_check(argc, argv);
	fprintf(stderr, "usage: %s read NAME DEVICE OUT STOPFILE held|reopen\n"
		"       %s check ABOVE FILE...\n", argv[0], argv[0]);
	return 2;
}
