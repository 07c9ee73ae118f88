// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/uuidv7: every read returns whole 16-byte RFC 9562 UUIDv7s (version
 * 7, variant 0b10), each greater as bytes (memcmp) than every UUID issued
 * before it on the host: within a read, across reads and processes (a read
 * that starts after another one returned gets larger UUIDs), and while the
 * wall clock is stepped by hours.  None is stamped later than the wall
 * clock.  The read contract (EINVAL below 16 bytes, short reads, the
 * per-call cap, readv, O_NONBLOCK, poll, EFAULT), the sysfs counters, the
 * floor, and strict mode and the fence, which do not apply here.
 *
 * UUID fields are decoded here from the RFC, independently of the module.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/select.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define UU_DEV		"/dev/" SNOWFLAKE_UUID_DEVICE_NAME
#define UU_SYSFS	"/sys/class/misc/" SNOWFLAKE_UUID_DEVICE_NAME
#define UU		SNOWFLAKE_UUID_SIZE
#define UU_MAX		SNOWFLAKE_UUID_MAX_PER_READ
#define NEAR_MS		3000

/* ------------------------------------------------------------------ */
/* Decoding (RFC 9562 section 5.7)                                     */
/* ------------------------------------------------------------------ */

static uint64_t uu_ms(const uint8_t *u)
{
	uint64_t ms = 0;
	int i;

	for (i = 0; i < 6; i++)
		ms = ms << 8 | u[i];
	return ms;
}

static unsigned int uu_version(const uint8_t *u)
{
	return u[6] >> 4;
}

static unsigned int uu_variant(const uint8_t *u)
{
	return u[8] >> 6;
}

/* A /dev/uuidv7 counter, statistics/<name>: the value, UINT64_MAX if none. */
static uint64_t uu_stat(const char *name)
{
	char path[128], buf[64];
	uint64_t v;

	snprintf(path, sizeof(path), UU_SYSFS "/statistics/%s", name);
	if (sf_read_path(path, buf, sizeof(buf)) < 0 || sf_parse_u64_line(buf, &v))
		return UINT64_MAX;
	return v;
}

static int uu_open(int flags)
{
	int fd = open(UU_DEV, flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * Check the @n UUIDs at @buf: version 7, variant 0b10, strictly increasing
 * (and above @prev, if not NULL), stamped between @lo_ms and @hi_ms.
 * Returns NULL, or what is wrong (static storage).
 */
static const char *uu_check(const uint8_t *buf, size_t n, const uint8_t *prev,
			    uint64_t lo_ms, uint64_t hi_ms)
{
	static char why[160];
	size_t i;

	for (i = 0; i < n; i++) {
		const uint8_t *u = buf + i * UU;
		uint64_t ms = uu_ms(u);

		if (uu_version(u) != 7 || uu_variant(u) != 2) {
			snprintf(why, sizeof(why), "UUID %zu: version %u variant %u",
				 i, uu_version(u), uu_variant(u));
			return why;
		}
		if (prev && memcmp(prev, u, UU) >= 0) {
			snprintf(why, sizeof(why), "UUID %zu not above the one before", i);
			return why;
		}
		if (ms < lo_ms || ms > hi_ms) {
			snprintf(why, sizeof(why),
				 "UUID %zu at %" PRIu64 " ms, outside %" PRIu64 "..%" PRIu64,
				 i, ms, lo_ms, hi_ms);
			return why;
		}
		prev = u;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The wall clock (as in clock_test.c)                                 */
/* ------------------------------------------------------------------ */

static int64_t real_minus_mono_ns;
static bool clock_saved;

static void save_clock(void)
{
	real_minus_mono_ns = (int64_t)(sf_clock_ns(CLOCK_REALTIME) - sf_mono_ns());
	clock_saved = true;
}

/* Set the wall clock to the true time + @delta_ms: 0 or -errno. */
static int step_clock(int64_t delta_ms)
{
	int64_t ns = (int64_t)sf_mono_ns() + real_minus_mono_ns +
		     delta_ms * (int64_t)NSEC_PER_MSEC;
	struct timespec ts = {
		.tv_sec = ns / (int64_t)NSEC_PER_SEC,
		.tv_nsec = ns % (int64_t)NSEC_PER_SEC,
	};

	if (!clock_saved)
		return -EINVAL;
	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

static void restore_clock(void)
{
	if (clock_saved && step_clock(0))
		ksft_print_msg("cannot restore the wall clock: %s\n", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* The fixture: a fresh load, the true time, /dev/uuidv7 open          */
/* ------------------------------------------------------------------ */

FIXTURE(uu) {
	int fd;
	uint8_t *big;
};

FIXTURE_SETUP(uu)
{
	self->fd = -1;
	self->big = NULL;
	ASSERT_TRUE(clock_saved);
	ASSERT_EQ(0, step_clock(0));
	ASSERT_EQ(0, sf_reload(""));
	self->fd = uu_open(O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", UU_DEV, strerror(-self->fd));
	self->big = calloc(UU_MAX + 64, UU);
	ASSERT_NE(NULL, self->big);
}

FIXTURE_TEARDOWN(uu)
{
	restore_clock();
	if (self->fd >= 0)
		close(self->fd);
	free(self->big);
}

/* The node, its mode and its sysfs files. */
TEST_F(uu, node_and_sysfs)
{
	struct stat st;

	ASSERT_EQ(0, stat(UU_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0444, st.st_mode & 0777);
	EXPECT_EQ(0, uu_stat("issued"));
	EXPECT_EQ(0, uu_stat("reads"));
	EXPECT_ERRNO(ESPIPE, lseek(self->fd, 0, SEEK_SET));
	EXPECT_ERRNO(ESPIPE, pread(self->fd, self->big, UU, 0));
	/* No ioctl on this node. */
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, SNOWFLAKE_IOC_GET_STATS, self->big));
}

/*
 * A full read: UU_MAX UUIDs, each version 7 and variant 0b10, strictly
 * increasing, none later than the wall clock after the read (nor far
 * before the one before it); the counters count them.
 */
TEST_F(uu, full_read_layout_and_order)
{
	const char *why;
	uint64_t before, after;
	ssize_t ret;
	int i;

	for (i = 0; i < 20; i++) {
		before = sf_real_ms();
		ret = read(self->fd, self->big, (size_t)UU_MAX * UU);
		after = sf_real_ms();
		ASSERT_EQ((ssize_t)UU_MAX * UU, ret) TH_LOG("%s", strerror(errno));
		why = uu_check(self->big, UU_MAX, NULL, before - NEAR_MS, after);
		ASSERT_EQ(NULL, why) TH_LOG("read %d: %s", i, why);
	}
	EXPECT_EQ(20ULL * UU_MAX, uu_stat("issued"));
	EXPECT_EQ(20, uu_stat("reads"));
}

/* Single-UUID reads: each above the one before, never after the wall clock. */
TEST_F(uu, single_reads_increase)
{
	uint8_t prev[UU] = { 0 }, u[UU];
	const char *why;
	int i;

	for (i = 0; i < 20000; i++) {
		uint64_t before = sf_real_ms(), after;

		ASSERT_EQ(UU, read(self->fd, u, UU));
		after = sf_real_ms();
		why = uu_check(u, 1, prev, before - NEAR_MS, after);
		ASSERT_EQ(NULL, why) TH_LOG("read %d: %s", i, why);
		memcpy(prev, u, UU);
	}
	EXPECT_EQ(20000, uu_stat("issued"));
	EXPECT_EQ(20000, uu_stat("reads"));
}

/* Fewer than 16 bytes: EINVAL, and nothing counted or written. */
TEST_F(uu, short_buffer_einval)
{
	static const size_t lens[] = { 1, 8, 15 };
	uint8_t buf[UU];
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(lens); i++) {
		memset(buf, 0xcc, sizeof(buf));
		EXPECT_ERRNO(EINVAL, read(self->fd, buf, lens[i]));
		EXPECT_TRUE(sf_all_bytes(buf, sizeof(buf), 0xcc));
	}
	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	EXPECT_ERRNO(EINVAL, read(self->fd, buf, 15));
	EXPECT_EQ(0, uu_stat("issued"));
	EXPECT_EQ(0, uu_stat("reads"));
}

/*
 * Short reads: only whole UUIDs (the rest of the buffer untouched), and at
 * most UU_MAX per call.
 */
TEST_F(uu, whole_uuids_and_cap)
{
	static const struct {
		size_t len;
		ssize_t want;
	} cases[] = {
		{ 16, 16 }, { 17, 16 }, { 31, 16 }, { 32, 32 }, { 47, 32 },
		{ 100, 96 }, { (size_t)UU_MAX * UU + 15, (ssize_t)UU_MAX * UU },
		{ (size_t)(UU_MAX + 64) * UU, (ssize_t)UU_MAX * UU },
	};
	uint8_t prev[UU] = { 0 };
	size_t c;

	for (c = 0; c < SF_ARRAY_SIZE(cases); c++) {
		size_t len = cases[c].len;
		const char *why;
		ssize_t ret;

		memset(self->big, 0xcc, (size_t)(UU_MAX + 64) * UU);
		ret = read(self->fd, self->big, len);
		ASSERT_EQ(cases[c].want, ret) TH_LOG("len %zu: %s", len, strerror(errno));
		why = uu_check(self->big, ret / UU, prev, 0, sf_real_ms());
		ASSERT_EQ(NULL, why) TH_LOG("len %zu: %s", len, why);
		EXPECT_TRUE(sf_all_bytes(self->big + ret, len - ret, 0xcc))
			TH_LOG("len %zu: bytes after the last UUID written", len);
		memcpy(prev, self->big + ret - UU, UU);
	}
}

/* readv across odd-sized segments, preadv2 with and without RWF_NOWAIT. */
TEST_F(uu, readv_and_nowait)
{
	uint8_t a[7], b[9], c[40], flat[64], prev[UU] = { 0 };
	struct iovec iov[3] = {
		{ .iov_base = a, .iov_len = sizeof(a) },
		{ .iov_base = b, .iov_len = sizeof(b) },
		{ .iov_base = c, .iov_len = sizeof(c) },
	};
	const char *why;
	ssize_t ret;

	memset(c, 0xcc, sizeof(c));
	ret = readv(self->fd, iov, 3);
	ASSERT_EQ(48, ret) TH_LOG("%s", strerror(errno));
	memcpy(flat, a, 7);
	memcpy(flat + 7, b, 9);
	memcpy(flat + 16, c, 32);
	why = uu_check(flat, 3, prev, 0, sf_real_ms());
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	EXPECT_TRUE(sf_all_bytes(c + 32, 8, 0xcc));
	memcpy(prev, flat + 32, UU);

	iov[0].iov_base = flat;
	iov[0].iov_len = sizeof(flat);
	ret = preadv2(self->fd, iov, 1, -1, RWF_NOWAIT);
	ASSERT_EQ(64, ret) TH_LOG("RWF_NOWAIT: %s", strerror(errno));
	why = uu_check(flat, 4, prev, 0, sf_real_ms());
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	memcpy(prev, flat + 48, UU);
	ret = preadv2(self->fd, iov, 1, -1, 0);
	ASSERT_EQ(64, ret);
	why = uu_check(flat, 4, prev, 0, sf_real_ms());
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	EXPECT_ERRNO(ESPIPE, preadv2(self->fd, iov, 1, 0, 0));
}

/*
 * The last 32 bits of rand_b are fresh random bits for every UUID, also in
 * a batch read, whose random bits the driver draws SFU_CHUNK at a time and
 * formats per UUID (the unguessability of RFC 9562 section 6.9).  In a
 * read of 4096, whole and split by readv() across odd-sized segments: at
 * most 2 equal values among the 4096 (random: about 0.002 pairs), and each
 * bit set in 40% to 60% of them (6 standard deviations).  A reused word, a
 * chunk drawn once for several, or zeros fail this.
 */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static const char *uu_rand_check(const uint8_t *buf, size_t n)
{
	static char why[120];
	uint32_t *v = calloc(n, sizeof(*v));
	size_t i, dup = 0, ones[32] = { 0 };
	int b;

	if (!v)
		return "calloc";
	for (i = 0; i < n; i++) {
		const uint8_t *u = buf + i * UU;

		v[i] = (uint32_t)u[12] << 24 | (uint32_t)u[13] << 16 |
		       (uint32_t)u[14] << 8 | u[15];
		for (b = 0; b < 32; b++)
			ones[b] += v[i] >> b & 1;
	}
	qsort(v, n, sizeof(*v), cmp_u32);
	for (i = 1; i < n; i++)
		dup += v[i] == v[i - 1];
	free(v);
	if (dup > 2) {
		snprintf(why, sizeof(why), "%zu equal random words in %zu UUIDs", dup, n);
		return why;
	}
	for (b = 0; b < 32; b++) {
		if (ones[b] * 10 < n * 4 || ones[b] * 10 > n * 6) {
			snprintf(why, sizeof(why), "random bit %d set in %zu of %zu UUIDs",
				 b, ones[b], n);
			return why;
		}
	}
	return NULL;
}

TEST_F(uu, random_bits_fresh_in_batches)
{
	uint8_t *p = self->big;
	/* Contiguous segments: UUID 1000 is split 7 + 9 across the first two. */
	struct iovec iov[3] = {
		{ .iov_base = p, .iov_len = 1000 * UU + 7 },
		{ .iov_base = p + 1000 * UU + 7, .iov_len = 9 + 1500 * UU },
		{ .iov_base = p + 2501 * UU, .iov_len = (UU_MAX - 2501) * UU },
	};
	const char *why;

	ASSERT_EQ((ssize_t)UU_MAX * UU, read(self->fd, p, (size_t)UU_MAX * UU));
	why = uu_rand_check(p, UU_MAX);
	ASSERT_EQ(NULL, why) TH_LOG("read: %s", why);

	memset(p, 0, (size_t)UU_MAX * UU);
	ASSERT_EQ((ssize_t)UU_MAX * UU, readv(self->fd, iov, 3));
	why = uu_check(p, UU_MAX, NULL, 0, sf_real_ms());
	ASSERT_EQ(NULL, why) TH_LOG("readv: %s", why);
	why = uu_rand_check(p, UU_MAX);
	ASSERT_EQ(NULL, why) TH_LOG("readv: %s", why);
}

/*
 * O_NONBLOCK: reads at full speed never find the millisecond used up (the
 * counter has 2^41 values of headroom), so they never fail with EAGAIN;
 * poll, select and epoll say readable.
 */
TEST_F(uu, nonblock_and_poll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct timeval tv = { 0, 0 };
	uint8_t prev[UU] = { 0 };
	const char *why;
	fd_set rfds;
	int i, r, ep;

	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	for (i = 0; i < 200; i++) {
		ssize_t ret = read(self->fd, self->big, (size_t)UU_MAX * UU);

		ASSERT_EQ((ssize_t)UU_MAX * UU, ret) TH_LOG("read %d: %s", i, strerror(errno));
		why = uu_check(self->big, UU_MAX, prev, 0, sf_real_ms());
		ASSERT_EQ(NULL, why) TH_LOG("read %d: %s", i, why);
		memcpy(prev, self->big + (UU_MAX - 1) * UU, UU);
		r = sf_poll_in(self->fd, 0);
		ASSERT_EQ(POLLIN | POLLRDNORM, r & (POLLIN | POLLRDNORM | POLLERR | POLLHUP));
	}

	FD_ZERO(&rfds);
	FD_SET(self->fd, &rfds);
	EXPECT_EQ(1, select(self->fd + 1, &rfds, NULL, NULL, &tv));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 0));
	EXPECT_TRUE(out.events & EPOLLIN);
	close(ep);
}

/* read(2) without the C library's checks of the buffer. */
static long raw_read(int fd, void *buf, size_t count)
{
	return syscall(SYS_read, fd, buf, count);
}

/*
 * Bad buffers: EFAULT, no read counted, and the UUIDs reserved for them
 * are never issued: the next one is above everything before.
 */
TEST_F(uu, bad_buffer_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t last[UU], u[UU];
	uint8_t *ro, *unmapped;
	uint64_t reads;

	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	unmapped = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, unmapped);
	ASSERT_EQ(0, munmap(unmapped, page));

	ASSERT_EQ(UU, read(self->fd, last, UU));
	reads = uu_stat("reads");
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, NULL, UU));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, NULL, 64));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, unmapped, UU));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, unmapped, page));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, ro, UU));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, ro, 256));
	EXPECT_TRUE(sf_all_bytes(ro, page, 0));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, (void *)0xffff888000000000UL, UU));
	EXPECT_EQ(reads, uu_stat("reads"));
	EXPECT_EQ(1, uu_stat("issued"));

	ASSERT_EQ(UU, read(self->fd, u, UU));
	EXPECT_GT(0, memcmp(last, u, UU));
	munmap(ro, page);
}

/*
 * The first page is mapped, the second is not: the whole UUIDs that fit
 * are returned and counted, nothing is written before the buffer nor after
 * the bytes returned, and the next UUID is above all that were reserved.
 */
TEST_F(uu, partial_copy_at_unmapped_page)
{
	long page = sysconf(_SC_PAGESIZE);
	static const struct {
		size_t room;		/* mapped bytes before the hole */
		ssize_t want;		/* bytes returned */
	} cases[] = {
		{ 48, 48 }, { 40, 32 }, { 16, 16 }, { 17, 16 }, { 2008, 2000 },
	};
	uint8_t prev[UU] = { 0 }, u[UU];
	uint64_t issued = 0;
	unsigned char *map;
	size_t c;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));

	for (c = 0; c < SF_ARRAY_SIZE(cases); c++) {
		unsigned char *buf = map + page - cases[c].room;
		const char *why;
		ssize_t ret;

		memset(map, 0xcc, page);
		ret = read(self->fd, buf, 4096);
		ASSERT_EQ(cases[c].want, ret)
			TH_LOG("room %zu: read returned %zd (%s)", cases[c].room,
			       ret, ret < 0 ? strerror(errno) : "");
		why = uu_check(buf, ret / UU, prev, 0, sf_real_ms());
		ASSERT_EQ(NULL, why) TH_LOG("room %zu: %s", cases[c].room, why);
		EXPECT_TRUE(sf_all_bytes(map, page - cases[c].room, 0xcc));
		/* Nothing of the UUID that faulted lands after them. */
		EXPECT_TRUE(sf_all_bytes(buf + ret, cases[c].room - ret, 0xcc))
			TH_LOG("room %zu: bytes written past the %zd returned",
			       cases[c].room, ret);
		memcpy(prev, buf + ret - UU, UU);
		issued += ret / UU;
		ASSERT_EQ(UU, read(self->fd, u, UU));
		EXPECT_GT(0, memcmp(prev, u, UU));
		memcpy(prev, u, UU);
		issued++;
	}
	EXPECT_EQ(issued, uu_stat("issued"));
	EXPECT_EQ(2 * SF_ARRAY_SIZE(cases), uu_stat("reads"));
	munmap(map, page);
}

/* ------------------------------------------------------------------ */
/* Many processes                                                      */
/* ------------------------------------------------------------------ */

/* One read by one process: its interval (CLOCK_MONOTONIC) and its ends. */
struct uu_read {
	uint64_t start_ns, end_ns;
	uint8_t first[UU], last[UU];
	uint32_t n, proc;
};

#define PROCS		8
#define PER_PROC	(512 * 1024)	/* 8 x 512 Ki = 4 Mi UUIDs */
#define MAX_READS	(PER_PROC)

struct uu_shared {
	volatile int go;
	volatile int steps;
	volatile int readers_done;
	volatile int stepper_done;
	uint32_t nreads[PROCS];
	struct uu_read reads[PROCS][MAX_READS / 8];
};

static const unsigned int batches[] = { 1, 64, 3, 4096, 1, 17, 256, 1, 2, 1000 };

/*
 * Reader @p: PER_PROC UUIDs in reads of varied sizes, each checked (layout,
 * strictly increasing, above the reader's previous read; when the wall
 * clock is not being stepped, between the wall clock before and after the
 * read).  Records every read.  With @paced, reads at most 64 at a time
 * and waits for a wall clock step every 20 reads.
 */
static int uu_reader(struct uu_shared *sh, unsigned int p, bool paced)
{
	uint8_t *buf = malloc((size_t)UU_MAX * UU), prev[UU] = { 0 };
	unsigned int got = 0, b = p, nr = 0;
	int fd = uu_open(O_RDONLY);

	CHILD_CHECK(fd >= 0 && buf, "open/malloc");
	while (!sh->go)
		sched_yield();
	while (got < PER_PROC) {
		unsigned int want = batches[b++ % SF_ARRAY_SIZE(batches)];
		struct uu_read *r = &sh->reads[p][nr];
		uint64_t before, after;
		const char *why;
		ssize_t ret;

		CHILD_CHECK(nr < MAX_READS / 8, "too many reads");
		if (paced && want > 64)
			want = 64;
		if (want > PER_PROC - got)
			want = PER_PROC - got;
		while (paced && sh->steps < (int)(nr / 20) && !sh->stepper_done)
			sched_yield();
		before = sf_real_ms();
		r->start_ns = sf_mono_ns();
		ret = read(fd, buf, (size_t)want * UU);
		r->end_ns = sf_mono_ns();
		after = sf_real_ms();
		CHILD_CHECK(ret == (ssize_t)want * UU, "read %u: %zd (%s)", want, ret,
			    ret < 0 ? strerror(errno) : "");
		why = paced ? uu_check(buf, want, prev, 0, UINT64_MAX) :
			      uu_check(buf, want, prev, before - NEAR_MS, after);
		CHILD_CHECK(!why, "read %u: %s", nr, why);
		memcpy(r->first, buf, UU);
		memcpy(r->last, buf + (want - 1) * UU, UU);
		memcpy(prev, r->last, UU);
		r->n = want;
		r->proc = p;
		got += want;
		nr++;
	}
	sh->nreads[p] = nr;
	__atomic_add_fetch(&sh->readers_done, 1, __ATOMIC_SEQ_CST);
	free(buf);
	close(fd);
	return 0;
}

/* -1 h, +1 h, -1 h, ... every 200 us until the readers are done. */
static int uu_stepper(struct uu_shared *sh, unsigned int readers)
{
	int i = 0;

	while (!sh->go)
		sched_yield();
	while (__atomic_load_n(&sh->readers_done, __ATOMIC_SEQ_CST) < (int)readers) {
		if (step_clock(i % 2 ? (int64_t)HOUR_MS : -(int64_t)HOUR_MS)) {
			fprintf(stderr, "# clock_settime: %s\n", strerror(errno));
			return 1;
		}
		sh->steps = ++i;
		usleep(200);
	}
	sh->stepper_done = 1;
	return step_clock(0) ? 1 : 0;
}

static int cmp_first(const void *a, const void *b)
{
	return memcmp(((const struct uu_read *)a)->first,
		      ((const struct uu_read *)b)->first, UU);
}

static int cmp_start(const void *a, const void *b)
{
	uint64_t x = (*(struct uu_read *const *)a)->start_ns;
	uint64_t y = (*(struct uu_read *const *)b)->start_ns;

	return (x > y) - (x < y);
}

static int cmp_end(const void *a, const void *b)
{
	uint64_t x = (*(struct uu_read *const *)a)->end_ns;
	uint64_t y = (*(struct uu_read *const *)b)->end_ns;

	return (x > y) - (x < y);
}

/*
 * Judge the recorded reads of @procs readers: (1) sorted by first UUID, no
 * two reads' ranges overlap, so with every read strictly increasing no UUID
 * appears twice; (2) a read that started after another one returned got
 * larger UUIDs.  Returns the number of UUIDs.
 */
static uint64_t uu_judge(struct __test_metadata *_metadata,
			 struct uu_shared *sh, unsigned int procs)
{
	struct uu_read *all, **by_start, **by_end;
	const uint8_t *max_last = NULL;
	size_t n = 0, i, e = 0, later = 0;
	uint64_t total = 0;
	unsigned int p;

	for (p = 0; p < procs; p++)
		n += sh->nreads[p];
	all = malloc(n * sizeof(*all));
	by_start = malloc(n * sizeof(*by_start));
	by_end = malloc(n * sizeof(*by_end));
	if (!all || !by_start || !by_end) {
		EXPECT_TRUE(false) TH_LOG("malloc");
		goto out;
	}
	n = 0;
	for (p = 0; p < procs; p++) {
		memcpy(all + n, sh->reads[p], sh->nreads[p] * sizeof(*all));
		n += sh->nreads[p];
	}
	qsort(all, n, sizeof(*all), cmp_first);
	for (i = 0; i < n; i++) {
		total += all[i].n;
		if (i && memcmp(all[i - 1].last, all[i].first, UU) >= 0) {
			EXPECT_TRUE(false)
				TH_LOG("reads of processes %u and %u overlap",
				       all[i - 1].proc, all[i].proc);
			goto out;
		}
		by_start[i] = by_end[i] = &all[i];
	}
	qsort(by_start, n, sizeof(*by_start), cmp_start);
	qsort(by_end, n, sizeof(*by_end), cmp_end);
	for (i = 0; i < n; i++) {
		struct uu_read *r = by_start[i];

		while (e < n && by_end[e]->end_ns < r->start_ns) {
			if (!max_last || memcmp(by_end[e]->last, max_last, UU) > 0)
				max_last = by_end[e]->last;
			e++;
		}
		if (max_last) {
			if (memcmp(max_last, r->first, UU) >= 0) {
				EXPECT_TRUE(false)
					TH_LOG("a read of process %u got UUIDs below one returned before it started",
					       r->proc);
				goto out;
			}
			later++;
		}
	}
	TH_LOG("%zu reads, %" PRIu64 " UUIDs, %zu reads ordered after an earlier one",
	       n, total, later);
	EXPECT_LT(n / 2, later);
out:
	free(all);
	free(by_start);
	free(by_end);
	return total;
}

/*
 * 8 processes, 4 Mi UUIDs: no duplicate, every read strictly increasing and
 * ordered after every read that returned before it started; the counters
 * agree.
 */
TEST_F_TIMEOUT(uu, eight_processes_4M, 600)
{
	struct uu_shared *sh = sf_shared_alloc(sizeof(*sh));
	pid_t pids[PROCS];
	uint64_t total, nreads = 0;
	unsigned int p;

	ASSERT_NE(NULL, sh);
	for (p = 0; p < PROCS; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (pids[p] == 0)
			_exit(uu_reader(sh, p, false));
	}
	sh->go = 1;
	for (p = 0; p < PROCS; p++)
		EXPECT_EQ(0, sf_wait_child(pids[p])) TH_LOG("reader %u", p);
	for (p = 0; p < PROCS; p++)
		nreads += sh->nreads[p];
	total = uu_judge(_metadata, sh, PROCS);
	EXPECT_EQ((uint64_t)PROCS * PER_PROC, total);
	EXPECT_EQ(total, uu_stat("issued"));
	EXPECT_EQ(nreads, uu_stat("reads"));
	munmap(sh, sizeof(*sh));
}

/*
 * 4 readers while the wall clock is stepped back and forth by an hour
 * (one step per 20 reads of each reader): order and uniqueness hold as
 * above; afterwards, the next UUID is above all of them.
 */
TEST_F_TIMEOUT(uu, wall_clock_steps, 600)
{
	struct uu_shared *sh = sf_shared_alloc(sizeof(*sh));
	pid_t pids[5];
	uint8_t u[UU];
	unsigned int p;
	uint64_t total;

	ASSERT_NE(NULL, sh);
	for (p = 0; p < 5; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (pids[p] == 0)
			_exit(p < 4 ? uu_reader(sh, p, true) : uu_stepper(sh, 4));
	}
	sh->go = 1;
	for (p = 0; p < 5; p++)
		EXPECT_EQ(0, sf_wait_child(pids[p])) TH_LOG("child %u", p);
	restore_clock();
	TH_LOG("%d wall clock steps", sh->steps);
	EXPECT_LE(100, sh->steps);
	total = uu_judge(_metadata, sh, 4);
	EXPECT_EQ(4ULL * PER_PROC, total);
	ASSERT_EQ(UU, read(self->fd, u, UU));
	for (p = 0; p < 4; p++) {
		struct uu_read *r = &sh->reads[p][sh->nreads[p] - 1];

		EXPECT_GT(0, memcmp(r->last, u, UU));
	}
	munmap(sh, sizeof(*sh));
}

/*
 * The same clock as /dev/snowflake: a backward step changes nothing (the
 * UUIDs keep the true time), a floor an hour ahead moves both nodes there.
 */
TEST_F_TIMEOUT(uu, shared_clock_and_floor, 60)
{
	struct snowflake_config cfg;
	uint8_t a[UU], b[UU];
	uint64_t floor, id, now;
	int sfd;

	ASSERT_EQ(UU, read(self->fd, a, UU));
	ASSERT_EQ(0, step_clock(-(int64_t)HOUR_MS));
	ASSERT_EQ(UU, read(self->fd, b, UU));
	EXPECT_GT(0, memcmp(a, b, UU));
	EXPECT_LE(uu_ms(a), uu_ms(b));
	EXPECT_GT(uu_ms(a) + NEAR_MS, uu_ms(b));
	ASSERT_EQ(0, step_clock(0));

	now = sf_real_ms();
	floor = now + HOUR_MS;
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", floor));
	ASSERT_EQ(UU, read(self->fd, a, UU));
	EXPECT_LE(floor, uu_ms(a));
	EXPECT_GT(floor + NEAR_MS, uu_ms(a));
	EXPECT_GT(0, memcmp(b, a, UU));

	sfd = sf_open(O_RDONLY);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, sf_get_config(sfd, &cfg));
	ASSERT_EQ(0, sf_read1(sfd, &id));
	EXPECT_LE(floor, sf_decode(&cfg, id).ms);
	close(sfd);
}

/*
 * Strict mode and the fence refuse /dev/snowflake's reads (its IDs carry a
 * worker id that may be another host's); /dev/uuidv7 goes on.
 */
TEST_F(uu, strict_and_fence_do_not_apply)
{
	struct snowflake_fence fe = { .flags = SNOWFLAKE_FENCE_ON };
	uint8_t prev[UU], u[UU];
	uint64_t id;
	int sfd;

	ASSERT_EQ(UU, read(self->fd, prev, UU));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("strict=1"));
	self->fd = uu_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	sfd = sf_open(O_RDONLY);
	ASSERT_LE(0, sfd);

	EXPECT_EQ(-ENOTCONN, sf_read1(sfd, &id));
	ASSERT_EQ(UU, read(self->fd, u, UU));
	EXPECT_EQ(NULL, uu_check(u, 1, NULL, sf_real_ms() - NEAR_MS, sf_real_ms()));
	EXPECT_EQ(POLLIN | POLLRDNORM, sf_poll_in(self->fd, 0) & (POLLIN | POLLRDNORM));

	ASSERT_EQ(0, ioctl(sfd, SNOWFLAKE_IOC_SET_FENCE, &fe));
	EXPECT_EQ(-ENOTCONN, sf_read1(sfd, &id));
	memcpy(prev, u, UU);
	ASSERT_EQ(UU, read(self->fd, u, UU));
	EXPECT_GT(0, memcmp(prev, u, UU));
	EXPECT_EQ(2, uu_stat("issued"));
	close(sfd);
}

/*
 * A floor past what 48 bits of milliseconds hold (a layout wide enough to
 * take it): /dev/uuidv7 refuses with EOVERFLOW, and poll says so at once
 * (POLLERR with POLLIN: a read does not block); /dev/snowflake goes on.
 */
TEST_F(uu, overflow_past_48_bits)
{
	uint64_t floor = 1ULL << 48, id;
	struct snowflake_config cfg;
	uint8_t u[UU];
	int sfd, r;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("epoch_ms=0 timestamp_bits=50 datacenter_bits=0 worker_bits=0"));
	self->fd = uu_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(UU, read(self->fd, u, UU));
	/* A minute below: still served, from there. */
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", floor - 60000));
	ASSERT_EQ(UU, read(self->fd, u, UU));
	EXPECT_LE(floor - 60000, uu_ms(u));
	EXPECT_GT(floor - 60000 + NEAR_MS, uu_ms(u));
	ASSERT_EQ(0, sf_sysfs_write_u64("floor_ms", floor));
	EXPECT_ERRNO(EOVERFLOW, read(self->fd, u, UU));
	ASSERT_EQ(0, sf_set_nonblock(self->fd, true));
	EXPECT_ERRNO(EOVERFLOW, read(self->fd, u, UU));
	r = sf_poll_in(self->fd, 0);
	EXPECT_EQ(POLLIN | POLLERR, r & (POLLIN | POLLERR)) TH_LOG("poll: %#x", r);
	EXPECT_EQ(2, uu_stat("issued"));

	sfd = sf_open(O_RDONLY);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, sf_get_config(sfd, &cfg));
	ASSERT_EQ(0, sf_read1(sfd, &id));
	EXPECT_LE(floor, sf_decode(&cfg, id).ms);
	close(sfd);
}

/* ------------------------------------------------------------------ */
/* The CLI (/usr/bin/snowflake, $SNOWFLAKE_CLI)                        */
/* ------------------------------------------------------------------ */

static const char *cli_path(void)
{
	const char *p = getenv("SNOWFLAKE_CLI");

	return p && *p ? p : "/usr/bin/snowflake";
}

/* Run "CLI @args" through the shell: its exit code; stdout into @out. */
static int run_cli(const char *args, char *out, size_t len)
{
	char cmd[512];
	size_t got = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", cli_path(), args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (got + 1 < len && !feof(f)) {
		size_t n = fread(out + got, 1, len - 1 - got, f);

		if (!n)
			break;
		got += n;
	}
	out[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The canonical text form into 16 bytes, written from RFC 9562 section 4. */
static bool parse_text(const char *s, uint8_t *u)
{
	int i, o = 0;

	for (i = 0; i < 36; i++) {
		unsigned int v;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			continue;
		}
		if (sscanf(s + i, "%2x", &v) != 1 || !isxdigit((unsigned char)s[i + 1]))
			return false;
		u[o++] = (uint8_t)v;
		i++;
	}
	return o == 16 && (s[36] == '\n' || s[36] == '\0');
}

/*
 * `snowflake uuid -n 1000`: 1000 canonical lines, each a UUIDv7 above the
 * one before and above one read from the node just before; `snowflake
 * decode` gives each one's time; usage errors exit 2.
 */
/*
 * It runs the CLI, a new process per command: under the debug kernel
 * (KASAN, lockdep, kmemleak) on TCG beside the contract that took longer
 * than the harness's default 30 s (the fresh-clone run of e4ceea8:
 * "Test terminated by timeout").  The limit only ends a hang; nothing is
 * timed (cli_test's CLI_TEST_TIMEOUT likewise).
 */
TEST_F_TIMEOUT(uu, cli_uuid_and_decode, 300)
{
	static char out[64 * 1024];
	uint8_t prev[UU], u[UU];
	char args[128], want[64];
	uint64_t before, after;
	const char *line;
	const char *why;
	int n = 0;

	ASSERT_EQ(UU, read(self->fd, prev, UU));
	before = sf_real_ms();
	ASSERT_EQ(0, run_cli("uuid -n 1000", out, sizeof(out)));
	after = sf_real_ms();
	for (line = out; *line; line = strchr(line, '\n') + 1) {
		ASSERT_TRUE(parse_text(line, u)) TH_LOG("line %d: '%.40s'", n, line);
		why = uu_check(u, 1, prev, before - NEAR_MS, after);
		ASSERT_EQ(NULL, why) TH_LOG("line %d: %s", n, why);
		memcpy(prev, u, UU);
		n++;
	}
	EXPECT_EQ(1000, n);
	ASSERT_EQ(UU, read(self->fd, u, UU));
	EXPECT_GT(0, memcmp(prev, u, UU));

	/* decode: the time of the last one. */
	snprintf(args, sizeof(args), "decode %.36s", line - 37);
	ASSERT_EQ(0, run_cli(args, out, sizeof(out)));
	snprintf(want, sizeof(want), "unix_ms=%" PRIu64 "\n", uu_ms(prev));
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("decode said '%s', wanted %s", out, want);
	EXPECT_EQ(0, strncmp(out, "uuid=", 5));

	EXPECT_EQ(2, run_cli("uuid -n 0", out, sizeof(out)));
	EXPECT_EQ(2, run_cli("uuid extra", out, sizeof(out)));
	EXPECT_EQ(2, run_cli("decode 017f22e2-79b0-4cc3-98c4-dc0c0c07398f", out, sizeof(out)));
	EXPECT_EQ(1, run_cli("uuid --device /nonexistent", out, sizeof(out)));
}

SF_TEST_MAIN_HOOKS(save_clock, restore_clock)
