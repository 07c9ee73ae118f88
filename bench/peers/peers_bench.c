// SPDX-License-Identifier: GPL-2.0
/*
 * peers_bench: the guest half of `make bench` for issue 14 (scripts/bench.sh,
 * bench/peers/init-peers.sh).  Runs in the same QEMU guest boot as
 * bench/snowflake_bench, after it, and prints one line per figure:
 *
 *   BENCH <section> key=value key=value ...
 *
 * Modes (first argument):
 *
 *   peers   P7: what a user would pick instead of the device, with 1 and 8
 *           client processes, single IDs and batches where the peer has them:
 *           /dev/snowflake, /dev/uuidv7, Redis INCR / INCRBY over loopback
 *           TCP and a Unix socket (hiredis), a MariaDB ticket server (Flickr's
 *           table and statement, Unix socket, the C client), and the textbook
 *           in-process generator (one per process, each with its own worker
 *           id).  Then scaling: 1, 2, 4, 8, 16 readers of the device (single
 *           and batches of 4096) and of Redis INCR over TCP.
 *   pinned  P7 again, one client, the client and the servers on CPU 0
 *           (after "pin CPU PID..." has pinned the servers' threads).
 *   native  on the host: Redis, MariaDB and an 8-byte read of /dev/zero
 *           natively, for the scale of a round trip on hardware.
 *   p6      P6, with the module loaded with an uncapped layout (41 timestamp
 *           bits, no node bits, 22 sequence bits): bytes per second of batch
 *           reads of the device against reads of the same size of /dev/zero,
 *           alternating slices; then the batched scaling again.
 *
 * Every client is a separate process (fork) with its own connection; every
 * request is timed with the vDSO CLOCK_MONOTONIC (the same method for every
 * peer); the aggregate is all IDs over the longest client's wall time.  IDs
 * are checked to increase within each client.  Nothing asserts a timing.
 *
 * Options: -s SECONDS per point (default 1.0), -r ROUNDS (default 3),
 * -R REDIS_UNIX_SOCKET, -M MARIADB_UNIX_SOCKET (empty: skip that peer).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <mariadb/mysql.h>

#include "../bench_util.h"

#define BATCH 4096		/* the device's per-call cap */
#define MAX_SAMPLES (1 << 19)	/* latency samples kept per client */

static double point_s = 1.0;
static int pin_cpu = -1;
static int redis_port = 6379;	/* >= 0: every client on that CPU */
static int rounds = 3;
static const char *redis_sock = "/run/redis.sock";
static const char *mariadb_sock = "/run/mysqld/mysqld.sock";

static void die(const char *what)
{
	fprintf(stderr, "peers_bench: %s: %s\n", what, strerror(errno));
	printf("BENCH-ERROR %s\n", what);
	exit(1);
}

/* One client of a peer: its connection or file, and a buffer. */
struct client {
	int fd;
	redisContext *rc;
	MYSQL *my;
	uint64_t tw_last_ms, tw_seq, tw_node;	/* textbook generator */
	uint64_t *buf;
};

struct peer {
	const char *name;
	int batch;		/* IDs asked per request */
	bool (*open)(struct client *c, const struct peer *p, int idx);
	/* One request: returns the IDs got (>= 1) and the first in *first. */
	int (*next)(struct client *c, const struct peer *p, uint64_t *first);
	const char *arg;	/* device path, socket, ... */
};

static bool dev_open(struct client *c, const struct peer *p, int idx)
{
	(void)idx;
	c->fd = open(p->arg, O_RDONLY | O_CLOEXEC);
	c->buf = malloc((size_t)BATCH * 16);
	return c->fd >= 0 && c->buf;
}

static int dev_next(struct client *c, const struct peer *p, uint64_t *first)
{
	size_t rec = strstr(p->arg, "uuid") ? 16 : 8;
	ssize_t r = read(c->fd, c->buf, (size_t)p->batch * rec);

	if (r < (ssize_t)rec)
		return -1;
	r /= (ssize_t)rec;
	/*
	 * UUIDs are not integers: count them (bench/snowflake_bench checks
	 * their order); IDs are checked to increase.
	 */
	if (rec == 16) {
		c->tw_seq += (uint64_t)r;
		*first = c->tw_seq - (uint64_t)r + 1;
	} else {
		*first = c->buf[0];
	}
	return (int)r;
}

static bool redis_open(struct client *c, const struct peer *p, int idx)
{
	(void)idx;
	if (strstr(p->name, "unix"))
		c->rc = redisConnectUnix(p->arg);
	else
		c->rc = redisConnect("127.0.0.1", redis_port);
	return c->rc && !c->rc->err;
}

static int redis_next(struct client *c, const struct peer *p, uint64_t *first)
{
	redisReply *r;
	long long v;

	if (p->batch == 1)
		r = redisCommand(c->rc, "INCR sf:ticket");
	else
		r = redisCommand(c->rc, "INCRBY sf:ticket %d", p->batch);
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		if (r)
			freeReplyObject(r);
		return -1;
	}
	v = r->integer;
	freeReplyObject(r);
	*first = (uint64_t)v - (uint64_t)p->batch + 1;
	return p->batch;
}

static bool my_open(struct client *c, const struct peer *p, int idx)
{
	(void)idx;
	c->my = mysql_init(NULL);
	if (!c->my)
		return false;
	if (!mysql_real_connect(c->my, NULL, "root", NULL, "tickets", 0, p->arg,
				CLIENT_MULTI_STATEMENTS)) {
		fprintf(stderr, "peers_bench: mariadb: %s\n", mysql_error(c->my));
		return false;
	}
	return true;
}

/*
 * Flickr's ticket server: REPLACE INTO Tickets64 (stub) VALUES ('a');
 * SELECT LAST_INSERT_ID(); sent as one multi-statement query (one round
 * trip), the ID read from the SELECT's row.
 */
static int my_next(struct client *c, const struct peer *p, uint64_t *first)
{
	static const char q[] =
		"REPLACE INTO Tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()";
	uint64_t id = 0;
	int st;

	(void)p;
	if (mysql_real_query(c->my, q, sizeof(q) - 1))
		return -1;
	do {
		MYSQL_RES *res = mysql_store_result(c->my);

		if (res) {
			MYSQL_ROW row = mysql_fetch_row(res);

			if (row && row[0])
				id = strtoull(row[0], NULL, 10);
			mysql_free_result(res);
		}
		st = mysql_next_result(c->my);
	} while (st == 0);
	if (st > 0 || !id)
		return -1;
	*first = id;
	return 1;
}

/* The textbook in-process generator (as bench/snowflake_bench.c's P4). */
static bool tw_open(struct client *c, const struct peer *p, int idx)
{
	(void)p;
	c->tw_node = (uint64_t)idx << 12;	/* its own worker id */
	return true;
}

static int tw_next(struct client *c, const struct peer *p, uint64_t *first)
{
	(void)p;
	*first = tw_step(&c->tw_last_ms, &c->tw_seq, c->tw_node);
	return 1;
}

struct slot {
	uint64_t n;		/* samples stored */
	uint64_t reqs, ids, ns;
	uint64_t lat[MAX_SAMPLES];
};

/*
 * Run @p with @clients processes for point_s; print one line for section
 * @sec.  Returns false (after printing a BENCH-SKIP line) when a client
 * could not connect.
 */
static bool run_peer(const char *sec, const struct peer *p, int clients)
{
	size_t sz = sizeof(struct slot) * (size_t)clients;
	struct slot *slots;
	uint64_t *all, reqs = 0, ids = 0, total = 0, max_ns = 0;
	int gate[2], ready[2], i, status, bad = 0;
	char c;

	slots = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		die("mmap");
	if (pipe(gate) || pipe(ready))
		die("pipe");
	fflush(stdout);
	for (i = 0; i < clients; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			struct slot *s = &slots[i];
			struct client cl;
			uint64_t t0, t, t1, end, first, last = 0;
			int n;

			memset(&cl, 0, sizeof(cl));
			if (pin_cpu >= 0) {
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET(pin_cpu, &set);
				if (sched_setaffinity(0, sizeof(set), &set))
					_exit(6);
			}
			close(gate[1]);
			close(ready[0]);
			c = p->open(&cl, p, i) ? 'y' : 'n';
			/*
			 * Warm up (the servers' code and the connection are
			 * cold in a fresh guest), unmeasured: a fifth of a point.
			 */
			end = now_ns() + (uint64_t)(point_s * 0.2e9);
			while (c == 'y' && now_ns() < end)
				if (p->next(&cl, p, &first) < 1)
					c = 'n';
			if (write(ready[1], &c, 1) != 1 || c != 'y')
				_exit(2);
			if (read(gate[0], &c, 1) < 0)	/* EOF: go */
				_exit(3);
			t0 = now_ns();
			end = t0 + (uint64_t)(point_s * 1e9);
			t = t0;
			do {
				n = p->next(&cl, p, &first);
				t1 = now_ns();
				if (n < 1)
					_exit(4);
				if (first <= last && last) {
					fprintf(stderr, "peers_bench: %s: not increasing\n", p->name);
					_exit(5);
				}
				last = first + (uint64_t)n - 1;
				if (s->n < MAX_SAMPLES)
					s->lat[s->n++] = t1 - t;
				s->reqs++;
				s->ids += (uint64_t)n;
				t = t1;
			} while (t < end);
			s->ns = t - t0;
			if (cl.rc)
				redisFree(cl.rc);
			if (cl.my)
				mysql_close(cl.my);
			_exit(0);
		}
	}
	close(gate[0]);
	close(ready[1]);
	for (i = 0; i < clients; i++)
		if (read(ready[0], &c, 1) != 1 || c != 'y')
			bad = 1;
	close(ready[0]);
	close(gate[1]);
	for (i = 0; i < clients; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	if (bad) {
		printf("BENCH-SKIP %s peer=%s clients=%d batch=%d (a client failed)\n",
		       sec, p->name, clients, p->batch);
		munmap(slots, sz);
		return false;
	}
	for (i = 0; i < clients; i++) {
		reqs += slots[i].reqs;
		ids += slots[i].ids;
		total += slots[i].n;
		if (slots[i].ns > max_ns)
			max_ns = slots[i].ns;
	}
	all = malloc(total * sizeof(*all));
	if (!all)
		die("malloc");
	total = 0;
	for (i = 0; i < clients; i++) {
		memcpy(all + total, slots[i].lat, slots[i].n * sizeof(*all));
		total += slots[i].n;
	}
	qsort(all, total, sizeof(*all), cmp_u64);
	printf("BENCH %s peer=%s clients=%d batch=%d requests=%llu ids=%llu seconds=%.4f ids_per_s=%.0f p50_ns=%llu p99_ns=%llu max_ns=%llu\n",
	       sec, p->name, clients, p->batch, (unsigned long long)reqs,
	       (unsigned long long)ids, (double)max_ns / 1e9,
	       (double)ids * 1e9 / (double)max_ns,
	       (unsigned long long)pct(all, total, 50),
	       (unsigned long long)pct(all, total, 99),
	       (unsigned long long)all[total - 1]);
	free(all);
	munmap(slots, sz);
	return true;
}

static void mode_peers(void)
{
	struct peer peers[] = {
		{ "snowflake", 1, dev_open, dev_next, "/dev/snowflake" },
		{ "snowflake", BATCH, dev_open, dev_next, "/dev/snowflake" },
		{ "uuidv7", 1, dev_open, dev_next, "/dev/uuidv7" },
		{ "uuidv7", BATCH, dev_open, dev_next, "/dev/uuidv7" },
		{ "redis_tcp", 1, redis_open, redis_next, "" },
		{ "redis_tcp", BATCH, redis_open, redis_next, "" },
		{ "redis_unix", 1, redis_open, redis_next, redis_sock },
		{ "redis_unix", BATCH, redis_open, redis_next, redis_sock },
		{ "mariadb_ticket", 1, my_open, my_next, mariadb_sock },
		{ "textbook", 1, tw_open, tw_next, "" },
	};
	static const int nclients[] = { 1, 8 };
	static const int scale[] = { 1, 2, 4, 8, 16 };
	size_t i, j;
	int r;

	for (r = 1; r <= rounds; r++) {
		printf("BENCH round i=%d\n", r);
		for (j = 0; j < sizeof(nclients) / sizeof(nclients[0]); j++)
			for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
				if (!*peers[i].arg && peers[i].open == my_open)
					continue;
				run_peer("p7", &peers[i], nclients[j]);
			}
		for (j = 0; j < sizeof(scale) / sizeof(scale[0]); j++) {
			run_peer("scale", &peers[0], scale[j]);
			run_peer("scale", &peers[1], scale[j]);
			run_peer("scale", &peers[4], scale[j]);
		}
	}
}

/*
 * P7 on one vCPU: the servers' threads (pinned by "pin PID...") and the one
 * client all on CPU 0, so that a round trip is two context switches on one
 * CPU and never a wake-up of an idle vCPU, which on a loaded host waits for
 * the host's scheduler (milliseconds) and is an artefact of the emulation.
 */
static void mode_pinned(void)
{
	struct peer peers[] = {
		{ "snowflake", 1, dev_open, dev_next, "/dev/snowflake" },
		{ "redis_tcp", 1, redis_open, redis_next, "" },
		{ "redis_unix", 1, redis_open, redis_next, redis_sock },
		{ "mariadb_ticket", 1, my_open, my_next, mariadb_sock },
	};
	size_t i;
	int r;

	pin_cpu = 0;
	for (r = 1; r <= rounds; r++) {
		printf("BENCH round i=%d\n", r);
		for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
			run_peer("p7pin", &peers[i], 1);
	}
}

/*
 * On the host, natively (scripts/bench.sh, servers on a private port and
 * sockets): the scale of a round trip on hardware, and an 8-byte read of
 * /dev/zero, the floor of a read of the device (which cannot be loaded
 * into the host's kernel: P1 gives the device's cost against that floor).
 */
static void mode_native(void)
{
	struct peer peers[] = {
		{ "zero8", 1, dev_open, dev_next, "/dev/zero" },
		{ "redis_tcp", 1, redis_open, redis_next, "" },
		{ "redis_unix", 1, redis_open, redis_next, redis_sock },
		{ "mariadb_ticket", 1, my_open, my_next, mariadb_sock },
		{ "textbook", 1, tw_open, tw_next, "" },
	};
	size_t i;
	int r;

	for (r = 1; r <= rounds; r++) {
		printf("BENCH round i=%d\n", r);
		for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
			run_peer("native", &peers[i], 1);
		run_peer("native", &peers[0], 8);
		run_peer("native", &peers[1], 8);
	}
}

/* Every thread of each process of @pids on CPU @cpu. */
static void mode_pin(int cpu, char **pids, int n)
{
	cpu_set_t set;
	int i, done = 0;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	for (i = 0; i < n; i++) {
		char path[64];
		struct dirent *e;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%s/task", pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' &&
			    !sched_setaffinity(atoi(e->d_name), sizeof(set), &set))
				done++;
		closedir(d);
	}
	printf("BENCH pin cpu=%d threads=%d\n", cpu, done);
}

/*
 * P6: reads of @size bytes of the device against the same reads of
 * /dev/zero, in alternating slices (read_rate() of bench_util.h).
 */
#define P6_SLICES 5
static void mode_p6(void)
{
	static const size_t ids[] = { 64, 512, BATCH };
	static const int scale[] = { 1, 2, 4, 8, 16 };
	struct peer dev = { "snowflake_uncapped", BATCH, dev_open, dev_next, "/dev/snowflake" };
	int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int sfd = open("/dev/snowflake", O_RDONLY | O_CLOEXEC);
	void *buf = malloc((size_t)BATCH * 8);
	size_t i;
	int r, k;

	if (zfd < 0 || sfd < 0 || !buf)
		die("open");
	memset(buf, 1, (size_t)BATCH * 8);
	for (r = 1; r <= rounds; r++) {
		printf("BENCH round i=%d\n", r);
		for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			double z[P6_SLICES], d[P6_SLICES], slice = point_s / P6_SLICES;
			uint64_t zs = 0, ds = 0;
			size_t size = ids[i] * 8;

			for (k = 0; k < P6_SLICES; k++) {
				z[k] = read_rate(zfd, buf, size, slice, &zs);
				d[k] = read_rate(sfd, buf, size, slice, &ds);
				if (z[k] < 0 || d[k] < 0)
					die("read");
			}
			qsort(z, P6_SLICES, sizeof(z[0]), cmp_dbl);
			qsort(d, P6_SLICES, sizeof(d[0]), cmp_dbl);
			printf("BENCH p6 ids=%zu bytes=%zu zero_bytes_per_s=%.0f snowflake_bytes_per_s=%.0f ratio=%.3f snowflake_short_reads=%llu\n",
			       ids[i], size, z[P6_SLICES / 2], d[P6_SLICES / 2],
			       d[P6_SLICES / 2] / z[P6_SLICES / 2], (unsigned long long)ds);
		}
		for (i = 0; i < sizeof(scale) / sizeof(scale[0]); i++)
			run_peer("scale", &dev, scale[i]);
	}
	free(buf);
	close(zfd);
	close(sfd);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int opt;

	if (!strcmp(mode, "pin") && argc > 3) {
		mode_pin(atoi(argv[2]), argv + 3, argc - 3);
		return 0;
	}

	optind = 2;
	while ((opt = getopt(argc, argv, "s:r:R:M:P:")) != -1) {
		switch (opt) {
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
		case 'R':
			redis_sock = optarg;
			break;
		case 'M':
			mariadb_sock = optarg;
			break;
		case 'P':
			redis_port = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "peers"))
		mode_peers();
	else if (!strcmp(mode, "native"))
		mode_native();
	else if (!strcmp(mode, "pinned"))
		mode_pinned();
	else if (!strcmp(mode, "p6"))
		mode_p6();
	else
		goto usage;
	printf("BENCH %s_done\n", mode);
	return 0;
usage:
	fprintf(stderr, "usage: %s peers|pinned|native|p6 [-s SECONDS] [-r ROUNDS] [-R REDIS_SOCK] [-M MARIADB_SOCK] [-P REDIS_PORT]\n",
		argv[0]);
	return 2;
}
