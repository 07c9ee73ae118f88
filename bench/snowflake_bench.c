// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake_bench: the guest half of `make bench` (scripts/bench.sh).
 *
 * Runs inside the QEMU guest, as root, with the module loaded, and prints
 * one machine-readable line per figure:
 *
 *   BENCH <section> <name> key=value key=value ...
 *
 * bench/report.py turns those lines into results.json, table.md and the
 * plot.  Nothing here asserts a timing: it only measures and prints.
 *
 *   P1  single-ID read of /dev/snowflake vs an 8-byte read of /dev/zero
 *   P2  IDs/s for batch sizes 1, 8, 64, 512, 4096 (cap: 4096 IDs per ms)
 *   P3  1, 2, 4, 8 reader processes: aggregate IDs/s, p50/p99 per call
 *   P4  peers: a pthread-mutex Twitter generator, getrandom(8 bytes),
 *       /proc/sys/kernel/random/uuid
 *   P6  /dev/uuidv7: one UUID per read and 4096 per read, CPU per byte
 *       against /dev/snowflake's 4096-ID reads, getrandom(16 bytes)
 *
 * Options: -d DEVICE (default /dev/snowflake), -s SECONDS per throughput
 * point (default 1.0), -r ROUNDS (default 3): P1-P4 and P6 are run ROUNDS times,
 * one after the other, each round starting with "BENCH round i=N"; the
 * report takes the median of the rounds.
 *
 * -H p1 or -H p6: one headline figure once, nothing else (issue 34: the
 * guest runs it on every placement of the module's text, see
 * scripts/bench-place.sh): P1 as above; P6, with the module loaded with an
 * uncapped layout, reads of 4096 IDs against reads of 32 KiB of /dev/zero,
 * bytes per second, the same measurement as `peers_bench p6` at 4096 IDs
 * ("BENCH p6 ..." lines).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_BATCH 4096
#define CAP_IDS_PER_S 4096000.0	/* 12 sequence bits, 1 ms ticks */

static const char *device = "/dev/snowflake";
static const char *uuid_device = "/dev/uuidv7";
static double point_s = 1.0;
static int rounds = 3;

static void die(const char *what)
{
	fprintf(stderr, "snowflake_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int open_or_die(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(path);
	return fd;
}

/* Read exactly 8 bytes (one ID, or 8 bytes of /dev/zero). */
static void read8(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		die("read");
}

/*
 * P1: median ns per 8-byte read.  Samples of CALLS reads each, alternating
 * between the two files so that both see the same guest conditions.
 */
#define P1_SAMPLES 301
#define P1_CALLS 200
static void bench_p1(void)
{
	static uint64_t zs[P1_SAMPLES], ss[P1_SAMPLES];
	int zfd = open_or_die("/dev/zero"), sfd = open_or_die(device);
	uint64_t zmed;
	int s, i;

	for (i = 0; i < 2000; i++) {	/* warm up */
		read8(zfd);
		read8(sfd);
	}
	for (s = 0; s < P1_SAMPLES; s++) {
		uint64_t t0 = now_ns(), t1, t2;

		for (i = 0; i < P1_CALLS; i++)
			read8(zfd);
		t1 = now_ns();
		for (i = 0; i < P1_CALLS; i++)
			read8(sfd);
		t2 = now_ns();
		zs[s] = (t1 - t0) / P1_CALLS;
		ss[s] = (t2 - t1) / P1_CALLS;
	}
	qsort(zs, P1_SAMPLES, sizeof(zs[0]), cmp_u64);
	qsort(ss, P1_SAMPLES, sizeof(ss[0]), cmp_u64);
	zmed = pct(zs, P1_SAMPLES, 50);
	printf("BENCH p1 zero median_ns=%llu p10_ns=%llu p90_ns=%llu calls=%d\n",
	       (unsigned long long)pct(zs, P1_SAMPLES, 50),
	       (unsigned long long)pct(zs, P1_SAMPLES, 10),
	       (unsigned long long)pct(zs, P1_SAMPLES, 90), P1_SAMPLES * P1_CALLS);
	printf("BENCH p1 snowflake median_ns=%llu p10_ns=%llu p90_ns=%llu calls=%d\n",
	       (unsigned long long)pct(ss, P1_SAMPLES, 50),
	       (unsigned long long)pct(ss, P1_SAMPLES, 10),
	       (unsigned long long)pct(ss, P1_SAMPLES, 90), P1_SAMPLES * P1_CALLS);
	/*
	 * Profiling aid: the device reads ktime_get_boottime_ns() on every
	 * read; a clock_gettime(CLOCK_BOOTTIME) system call (not the vDSO)
	 * costs the syscall floor plus that same clocksource read.
	 */
	for (s = 0; s < P1_SAMPLES; s++) {
		struct timespec ts;
		uint64_t t0 = now_ns();

		for (i = 0; i < P1_CALLS; i++)
			syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &ts);
		zs[s] = (now_ns() - t0) / P1_CALLS;
	}
	qsort(zs, P1_SAMPLES, sizeof(zs[0]), cmp_u64);
	printf("BENCH p1 clock_syscall median_ns=%llu p10_ns=%llu p90_ns=%llu calls=%d\n",
	       (unsigned long long)pct(zs, P1_SAMPLES, 50),
	       (unsigned long long)pct(zs, P1_SAMPLES, 10),
	       (unsigned long long)pct(zs, P1_SAMPLES, 90), P1_SAMPLES * P1_CALLS);
	/* And a system call that does nothing: the bare entry/exit cost. */
	for (s = 0; s < P1_SAMPLES; s++) {
		uint64_t t0 = now_ns();

		for (i = 0; i < P1_CALLS; i++)
			syscall(SYS_getppid);
		zs[s] = (now_ns() - t0) / P1_CALLS;
	}
	qsort(zs, P1_SAMPLES, sizeof(zs[0]), cmp_u64);
	printf("BENCH p1 getppid_syscall median_ns=%llu p10_ns=%llu p90_ns=%llu calls=%d\n",
	       (unsigned long long)pct(zs, P1_SAMPLES, 50),
	       (unsigned long long)pct(zs, P1_SAMPLES, 10),
	       (unsigned long long)pct(zs, P1_SAMPLES, 90), P1_SAMPLES * P1_CALLS);
	printf("BENCH p1 ratio value=%.3f\n",
	       (double)pct(ss, P1_SAMPLES, 50) / (double)zmed);
	close(zfd);
	close(sfd);
}

/* P2: IDs/s at one batch size, for point_s seconds. */
static void bench_p2_one(int fd, int batch)
{
	static uint64_t buf[MAX_BATCH];
	uint64_t ids = 0, calls = 0, shorts = 0, t0, t, end;
	uint64_t last = 0;

	/* Start at a tick boundary: wait for a fresh ID timestamp change. */
	t0 = now_ns();
	end = t0 + (uint64_t)(point_s * 1e9);
	do {
		ssize_t r = read(fd, buf, (size_t)batch * 8);

		if (r < 8)
			die("read");
		if (buf[0] <= last) {
			errno = EPROTO;
			die("IDs not increasing");
		}
		last = buf[r / 8 - 1];
		ids += (uint64_t)r / 8;
		calls++;
		if (r != (ssize_t)batch * 8)
			shorts++;
		t = now_ns();
	} while (t < end);
	printf("BENCH p2 batch=%d ids=%llu calls=%llu short_reads=%llu seconds=%.4f ids_per_s=%.0f cap_pct=%.1f\n",
	       batch, (unsigned long long)ids, (unsigned long long)calls,
	       (unsigned long long)shorts, (double)(t - t0) / 1e9,
	       (double)ids * 1e9 / (double)(t - t0),
	       100.0 * (double)ids * 1e9 / (double)(t - t0) / CAP_IDS_PER_S);
}

static void bench_p2(void)
{
	static const int batches[] = { 1, 8, 64, 512, 4096 };
	int fd = open_or_die(device);
	size_t i;

	for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++)
		bench_p2_one(fd, batches[i]);
	close(fd);
}

/*
 * P3: N reader processes, single-ID reads, each call timed.  Latencies go
 * to a shared mapping; the parent merges them.
 */
#define P3_MAX_SAMPLES (1 << 20)	/* per reader */
struct p3_slot {
	uint64_t n;		/* samples stored */
	uint64_t calls;		/* reads done (may exceed n) */
	uint64_t ns;		/* wall time of the loop */
	uint64_t lat[P3_MAX_SAMPLES];
};

static double bench_p3_one(int readers, double single_ids_per_s)
{
	size_t slot_sz = sizeof(struct p3_slot);
	struct p3_slot *slots;
	uint64_t *all, total_calls = 0, total = 0, max_ns = 0;
	int gate[2], r, status;
	double agg;

	slots = mmap(NULL, slot_sz * (size_t)readers, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		die("mmap");
	if (pipe(gate))
		die("pipe");
	for (r = 0; r < readers; r++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			struct p3_slot *s = &slots[r];
			int fd = open_or_die(device);
			uint64_t t0, t1, t, end, id;
			char c;

			close(gate[1]);
			if (read(gate[0], &c, 1) < 0)	/* EOF: go */
				die("gate");
			t0 = now_ns();
			end = t0 + (uint64_t)(point_s * 1e9);
			t = t0;
			do {
				if (read(fd, &id, 8) != 8)
					die("read");
				t1 = now_ns();
				if (s->n < P3_MAX_SAMPLES)
					s->lat[s->n++] = t1 - t;
				s->calls++;
				t = t1;
			} while (t < end);
			s->ns = t - t0;
			_exit(0);
		}
	}
	close(gate[0]);
	usleep(100000);		/* let every reader reach the gate */
	close(gate[1]);
	for (r = 0; r < readers; r++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			die("reader failed");
	for (r = 0; r < readers; r++) {
		total_calls += slots[r].calls;
		total += slots[r].n;
		if (slots[r].ns > max_ns)
			max_ns = slots[r].ns;
	}
	all = malloc(total * sizeof(*all));
	if (!all)
		die("malloc");
	total = 0;
	for (r = 0; r < readers; r++) {
		memcpy(all + total, slots[r].lat, slots[r].n * sizeof(*all));
		total += slots[r].n;
	}
	qsort(all, total, sizeof(*all), cmp_u64);
	agg = (double)total_calls * 1e9 / (double)max_ns;
	printf("BENCH p3 readers=%d ids=%llu seconds=%.4f ids_per_s=%.0f vs_one_pct=%.1f p50_ns=%llu p99_ns=%llu max_ns=%llu\n",
	       readers, (unsigned long long)total_calls, (double)max_ns / 1e9, agg,
	       single_ids_per_s > 0 ? 100.0 * agg / single_ids_per_s : 100.0,
	       (unsigned long long)pct(all, total, 50),
	       (unsigned long long)pct(all, total, 99),
	       (unsigned long long)all[total - 1]);
	fflush(stdout);
	free(all);
	munmap(slots, slot_sz * (size_t)readers);
	return agg;
}

static void bench_p3(void)
{
	static const int counts[] = { 1, 2, 4, 8 };
	double one = 0;
	size_t i;

	/* One reader first: its rate is the reference for the others. */
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		double agg = bench_p3_one(counts[i], one);

		if (i == 0)
			one = agg;
	}
}

/*
 * P4: a textbook in-process Twitter generator: a mutex, CLOCK_REALTIME in
 * ms, same ms -> sequence + 1, sequence overflow -> spin to the next ms.
 */
struct tw_gen {
	pthread_mutex_t lock;
	uint64_t last_ms;
	uint64_t seq;
	uint64_t node;
};

static uint64_t tw_next(struct tw_gen *g)
{
	uint64_t id;

	pthread_mutex_lock(&g->lock);
	id = tw_step(&g->last_ms, &g->seq, g->node);
	pthread_mutex_unlock(&g->lock);
	return id;
}

static void bench_p4(void)
{
	struct tw_gen g = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	uint64_t t0, t, n, end, id, last = 0, sink = 0;
	char uuid[64];
	int fd;

	/* The mutex generator: as many IDs as it can make in point_s. */
	n = 0;
	t0 = now_ns();
	end = t0 + (uint64_t)(point_s * 1e9);
	do {
		int i;

		for (i = 0; i < 1024; i++) {
			id = tw_next(&g);
			if (id <= last) {
				errno = EPROTO;
				die("mutex generator not increasing");
			}
			last = id;
		}
		n += 1024;
		t = now_ns();
	} while (t < end);
	printf("BENCH p4 mutex_generator ids=%llu ns_per_id=%.1f ids_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));

	/* The cost of the generator's clock read alone (vDSO). */
	n = 0;
	t0 = now_ns();
	do {
		int i;

		for (i = 0; i < 1024; i++)
			sink ^= tw_ms();
		n += 1024;
		t = now_ns();
	} while (t < t0 + (uint64_t)(point_s * 1e9));
	printf("BENCH p4 clock_realtime_vdso ids=%llu ns_per_id=%.1f ids_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));

	/*
	 * The first getrandom() of a fresh boot blocks until the kernel's
	 * CRNG is seeded: wait for that outside the measurement.
	 */
	t0 = now_ns();
	if (getrandom(&id, 8, 0) != 8)
		die("getrandom");
	printf("BENCH p4 getrandom_first_call ns=%llu\n",
	       (unsigned long long)(now_ns() - t0));
	n = 0;
	t0 = now_ns();
	do {
		int i;

		for (i = 0; i < 256; i++) {
			if (getrandom(&id, 8, 0) != 8)
				die("getrandom");
			sink ^= id;
		}
		n += 256;
		t = now_ns();
	} while (t < t0 + (uint64_t)(point_s * 1e9));
	printf("BENCH p4 getrandom ids=%llu ns_per_id=%.1f ids_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));

	/* Each UUID: open, read, close, as a program that wants one would. */
	n = 0;
	t0 = now_ns();
	do {
		ssize_t r;

		fd = open_or_die("/proc/sys/kernel/random/uuid");
		r = read(fd, uuid, sizeof(uuid));
		if (r < 36)
			die("read uuid");
		sink ^= (uint64_t)uuid[0];
		close(fd);
		n++;
		t = now_ns();
	} while (t < t0 + (uint64_t)(point_s * 1e9));
	printf("BENCH p4 proc_uuid ids=%llu ns_per_id=%.1f ids_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));

	/* The same for the device: single reads and batches of 4096. */
	fd = open_or_die(device);
	n = 0;
	t0 = now_ns();
	do {
		int i;

		for (i = 0; i < 256; i++)
			read8(fd);
		n += 256;
		t = now_ns();
	} while (t < t0 + (uint64_t)(point_s * 1e9));
	printf("BENCH p4 snowflake_single ids=%llu ns_per_id=%.1f ids_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));
	close(fd);
	if (sink == 42)
		printf("#\n");
}

/*
 * P6: /dev/uuidv7.  Wall-clock ns per UUID for one UUID per read and for
 * reads of 4096; thread CPU ns per byte delivered for those batch reads and
 * for reads of 4096 IDs of /dev/snowflake (CPU time: a snowflake read that
 * sleeps for the next tick costs nothing, so the cap does not count); and
 * getrandom() of 16 bytes.  (/proc/sys/kernel/random/uuid is in P4.)
 */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reads of @size bytes (whole records of @rec bytes) for point_s. */
static void bench_p6_reads(const char *name, int fd, size_t size, size_t rec)
{
	static uint8_t buf[MAX_BATCH * 16], last[16];
	uint64_t t0 = now_ns(), c0 = cpu_ns(), t, n = 0, bytes = 0;
	uint64_t end = t0 + (uint64_t)(point_s * 1e9);
	bool have_last = false;

	do {
		ssize_t r = read(fd, buf, size);

		if (r < (ssize_t)rec || r % (ssize_t)rec)
			die("read");
		/* Strictly increasing as bytes (UUIDs) or as integers (IDs). */
		if (have_last && (rec == 16 ? memcmp(last, buf, 16) >= 0 :
				  *(uint64_t *)(void *)last >= *(uint64_t *)(void *)buf)) {
			errno = EPROTO;
			die("not increasing");
		}
		memcpy(last, buf + r - rec, rec);
		have_last = true;
		n += (uint64_t)r / rec;
		bytes += (uint64_t)r;
		t = now_ns();
	} while (t < end);
	printf("BENCH p8 %s records=%llu bytes=%llu ns_per_record=%.1f cpu_ns_per_byte=%.3f records_per_s=%.0f\n",
	       name, (unsigned long long)n, (unsigned long long)bytes,
	       (double)(t - t0) / (double)n, (double)(cpu_ns() - c0) / (double)bytes,
	       (double)n * 1e9 / (double)(t - t0));
}

static void bench_p6(void)
{
	int ufd = open_or_die(uuid_device), sfd = open_or_die(device);
	uint64_t t0, t, n = 0, sink = 0;
	uint8_t r16[16];

	bench_p6_reads("uuid_single", ufd, 16, 16);
	bench_p6_reads("uuid_batch4096", ufd, (size_t)MAX_BATCH * 16, 16);
	bench_p6_reads("snowflake_batch4096", sfd, (size_t)MAX_BATCH * 8, 8);
	t0 = now_ns();
	do {
		int i;

		for (i = 0; i < 256; i++) {
			if (getrandom(r16, sizeof(r16), 0) != (ssize_t)sizeof(r16))
				die("getrandom");
			sink ^= r16[0];
		}
		n += 256;
		t = now_ns();
	} while (t < t0 + (uint64_t)(point_s * 1e9));
	printf("BENCH p8 getrandom16 records=%llu ns_per_record=%.1f records_per_s=%.0f\n",
	       (unsigned long long)n, (double)(t - t0) / (double)n,
	       (double)n * 1e9 / (double)(t - t0));
	close(ufd);
	close(sfd);
	if (sink == 4242)
		printf("#\n");
}

/*
 * P6's headline point (-H p6): reads of 4096 IDs of the device (loaded with
 * an uncapped layout: no read waits for a tick) against reads of the same
 * size of /dev/zero, five alternating slices of SECONDS / 5 each, bytes per
 * second, the medians.
 */
#define P6_SLICES 5
static void bench_p6_bandwidth(void)
{
	static uint64_t buf[MAX_BATCH];
	double z[P6_SLICES], d[P6_SLICES], slice = point_s / P6_SLICES;
	int zfd = open_or_die("/dev/zero"), sfd = open_or_die(device);
	uint64_t zs = 0, ds = 0;
	int k;

	memset(buf, 1, sizeof(buf));
	for (k = 0; k < P6_SLICES; k++) {
		z[k] = read_rate(zfd, buf, sizeof(buf), slice, &zs);
		d[k] = read_rate(sfd, buf, sizeof(buf), slice, &ds);
		if (z[k] < 0 || d[k] < 0)
			die("read");
	}
	qsort(z, P6_SLICES, sizeof(z[0]), cmp_dbl);
	qsort(d, P6_SLICES, sizeof(d[0]), cmp_dbl);
	printf("BENCH p6 ids=%d bytes=%zu zero_bytes_per_s=%.0f snowflake_bytes_per_s=%.0f ratio=%.3f snowflake_short_reads=%llu\n",
	       MAX_BATCH, sizeof(buf), z[P6_SLICES / 2], d[P6_SLICES / 2],
	       d[P6_SLICES / 2] / z[P6_SLICES / 2], (unsigned long long)ds);
	close(zfd);
	close(sfd);
}

int main(int argc, char **argv)
{
	const char *headline = NULL;
	struct utsname u;
	int opt;

	while ((opt = getopt(argc, argv, "d:s:r:H:")) != -1) {
		switch (opt) {
		case 'd':
			device = optarg;
			break;
		case 'H':
			headline = optarg;
			break;
		case 's':
			point_s = atof(optarg);
			if (point_s <= 0)
				point_s = 1.0;
			break;
		case 'r':
			rounds = atoi(optarg);
			if (rounds < 1)
				rounds = 1;
			break;
		default:
			goto usage;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (headline) {
		if (!strcmp(headline, "p1"))
			bench_p1();
		else if (!strcmp(headline, "p6"))
			bench_p6_bandwidth();
		else
			goto usage;
		return 0;
	}
	uname(&u);
	printf("BENCH env kernel=%s cpus=%ld point_s=%.2f rounds=%d\n", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), point_s, rounds);
	for (opt = 1; opt <= rounds; opt++) {
		printf("BENCH round i=%d\n", opt);
		bench_p1();
		bench_p2();
		bench_p3();
		bench_p4();
		bench_p6();
	}
	printf("BENCH done\n");
	return 0;
usage:
	fprintf(stderr, "usage: %s [-d DEVICE] [-s SECONDS] [-r ROUNDS] [-H p1|p6]\n", argv[0]);
	return 2;
}
