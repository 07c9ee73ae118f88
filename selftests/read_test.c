// SPDX-License-Identifier: GPL-2.0
/*
 * read(2) on /dev/snowflake: sizes, the layout of the IDs, order within and
 * across reads, readv/preadv2/io_uring, ESPIPE, write(2), bad buffers and
 * partial copies, poll/select/epoll when IDs are available.
 *
 * The module is loaded with default widths and datacenter_id=21
 * worker_id=10, so a packing mistake shows in the decoded fields.  These
 * tests are the only reader, so with the default 4096 IDs per 1 ms tick a
 * read that follows one that emptied its tick gets a full tick.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <linux/io_uring.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define DC	21
#define WORKER	10
/* An ID's time is never later than the wall clock at return, give or take. */
#define FUTURE_TOL_MS	50
/* ...and is within a few seconds of it. */
#define NEAR_MS		3000

#define MAX_IDS	SNOWFLAKE_MAX_IDS_PER_READ

FIXTURE(rd) {
	int fd;
	struct snowflake_config cfg;
	uint64_t *big;		/* MAX_IDS + 64 IDs */
};

FIXTURE_SETUP(rd)
{
	self->fd = -1;
	ASSERT_EQ(0, sf_reload("datacenter_id=21 worker_id=10"));
	self->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sf_get_config(self->fd, &self->cfg));
	ASSERT_EQ(DC, self->cfg.datacenter_id);
	ASSERT_EQ(WORKER, self->cfg.worker_id);
	ASSERT_EQ(SNOWFLAKE_DEFAULT_SEQUENCE_BITS, self->cfg.sequence_bits);
	ASSERT_EQ(0, self->cfg.flags);
	self->big = calloc(MAX_IDS + 64, sizeof(uint64_t));
	ASSERT_NE(NULL, self->big);
}

FIXTURE_TEARDOWN(rd)
{
	if (self->fd >= 0)
		close(self->fd);
	free(self->big);
}

/* Check one ID's fields against the configuration and the wall clock. */
static void check_id(struct __test_metadata *_metadata,
		     const struct snowflake_config *cfg, uint64_t id,
		     uint64_t real_before, uint64_t real_after)
{
	struct sf_id f = sf_decode(cfg, id);

	EXPECT_EQ(0, id >> 63) TH_LOG("bit 63 set: %#" PRIx64, id);
	EXPECT_LT(0, (int64_t)id);
	EXPECT_EQ(0, f.high) TH_LOG("bits above the timestamp: %#" PRIx64, id);
	EXPECT_EQ(cfg->datacenter_id, f.dc) TH_LOG("id %#" PRIx64, id);
	EXPECT_EQ(cfg->worker_id, f.worker) TH_LOG("id %#" PRIx64, id);
	EXPECT_GE(real_after + FUTURE_TOL_MS, f.ms)
		TH_LOG("id %#" PRIx64 " is from %" PRIu64 " ms, wall clock %" PRIu64,
		       id, f.ms, real_after);
	EXPECT_LE(real_before - NEAR_MS, f.ms)
		TH_LOG("id %#" PRIx64 " is from %" PRIu64 " ms, wall clock %" PRIu64,
		       id, f.ms, real_before);
}

/* Read and discard what is left in the current tick (at most MAX_IDS). */
static void drain_tick(struct __test_metadata *_metadata, int fd, uint64_t *buf,
		       uint64_t *last)
{
	ssize_t n = sf_read_ids(fd, buf, MAX_IDS);

	ASSERT_LT(0, n) TH_LOG("drain: %s", strerror((int)-n));
	*last = buf[n - 1];
}

TEST_F(rd, count_below_8)
{
	struct snowflake_stats st;
	unsigned char buf[16];
	size_t n;

	for (n = 0; n < 8; n++) {
		memset(buf, 0xcc, sizeof(buf));
		EXPECT_ERRNO(EINVAL, read(self->fd, buf, n));
		EXPECT_TRUE(sf_all_bytes(buf, sizeof(buf), 0xcc))
			TH_LOG("count %zu wrote to the buffer", n);
	}
	/* A failed read issues nothing and is not a read that returned IDs. */
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.ids_issued);
	EXPECT_EQ(0, st.reads);
	EXPECT_EQ(0, st.last_timestamp_ms);
	EXPECT_EQ(0, st.state & SNOWFLAKE_STATE_LOCKED);
}

TEST_F(rd, one_id)
{
	struct snowflake_stats st;
	struct snowflake_floor fl;
	uint64_t id = 0, before, after;
	struct sf_id f;

	before = sf_real_ms();
	ASSERT_EQ(8, read(self->fd, &id, 8));
	after = sf_real_ms();
	check_id(_metadata, &self->cfg, id, before, after);
	f = sf_decode(&self->cfg, id);
	/* The first ID of a fresh generator starts its tick. */
	EXPECT_EQ(0, f.seq);

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(1, st.ids_issued);
	EXPECT_EQ(1, st.reads);
	EXPECT_EQ(f.ms, st.last_timestamp_ms);
	EXPECT_EQ(SNOWFLAKE_STATE_LOCKED, st.state & SNOWFLAKE_STATE_LOCKED);
	ASSERT_EQ(0, sf_get_floor(self->fd, &fl));
	EXPECT_EQ(f.ms, fl.last_timestamp_ms);
	EXPECT_EQ(0, fl.floor_ms);
	EXPECT_EQ(f.ms, sf_sysfs_u64("last_timestamp_ms"));
}

TEST_F(rd, count_12_copies_one_id)
{
	unsigned char buf[24];
	uint64_t id, before, after;

	memset(buf, 0xcc, sizeof(buf));
	before = sf_real_ms();
	ASSERT_EQ(8, read(self->fd, buf, 12));
	after = sf_real_ms();
	memcpy(&id, buf, 8);
	check_id(_metadata, &self->cfg, id, before, after);
	EXPECT_TRUE(sf_all_bytes(buf + 8, sizeof(buf) - 8, 0xcc));

	/* 15 bytes: still one ID. */
	memset(buf, 0xcc, sizeof(buf));
	ASSERT_EQ(8, read(self->fd, buf, 15));
	EXPECT_TRUE(sf_all_bytes(buf + 8, sizeof(buf) - 8, 0xcc));
	/* 23 bytes: at most two. */
	memset(buf, 0xcc, sizeof(buf));
	ASSERT_EQ(16, read(self->fd, buf, 23));
	EXPECT_TRUE(sf_all_bytes(buf + 16, sizeof(buf) - 16, 0xcc));
}

/*
 * Big reads: a whole number of IDs, at most 4096, consecutive integers from
 * one tick, and every read above the one before.  As the only reader, every
 * read gets a full tick: the first one a fresh generator's, the later ones
 * the tick after the one the previous read emptied.
 */
TEST_F(rd, big_reads)
{
	const size_t count = (MAX_IDS + 64) * 8 - 5;
	unsigned char *buf = (unsigned char *)self->big;
	uint64_t prev = 0, before, after;
	int r;

	for (r = 0; r < 24; r++) {
		struct sf_id f0, fi;
		uint64_t *ids = self->big;
		ssize_t ret, n, i;

		memset(buf, 0xcc, (MAX_IDS + 64) * 8);
		before = sf_real_ms();
		ret = read(self->fd, buf, count);
		after = sf_real_ms();
		ASSERT_LT(0, ret) TH_LOG("read: %s", strerror(errno));
		ASSERT_EQ(0, ret % 8);
		n = ret / 8;
		ASSERT_GE(MAX_IDS, n);
		EXPECT_EQ(MAX_IDS, n) TH_LOG("read %d got %zd IDs", r, n);
		EXPECT_TRUE(sf_all_bytes(buf + ret, (MAX_IDS + 64) * 8 - ret, 0xcc))
			TH_LOG("bytes past the IDs were written");
		check_id(_metadata, &self->cfg, ids[0], before, after);
		check_id(_metadata, &self->cfg, ids[n - 1], before, after);
		f0 = sf_decode(&self->cfg, ids[0]);
		EXPECT_EQ(0, f0.seq);
		ASSERT_LT(prev, ids[0]);
		for (i = 1; i < n; i++) {
			ASSERT_EQ(ids[i - 1] + 1, ids[i])
				TH_LOG("read %d: ids[%zd]=%#" PRIx64 " ids[%zd]=%#" PRIx64,
				       r, i - 1, ids[i - 1], i, ids[i]);
		}
		fi = sf_decode(&self->cfg, ids[n - 1]);
		EXPECT_EQ(f0.ts, fi.ts) TH_LOG("one read, two ticks");
		prev = ids[n - 1];
	}
}

TEST_F(rd, single_reads_strictly_increase)
{
	struct snowflake_stats st;
	uint64_t prev = 0, id, prev_ms = 0;
	int i;

	for (i = 0; i < 5000; i++) {
		struct sf_id f;

		ASSERT_EQ(0, sf_read1(self->fd, &id));
		ASSERT_LT(prev, id) TH_LOG("read %d: %#" PRIx64 " after %#" PRIx64,
					   i, id, prev);
		f = sf_decode(&self->cfg, id);
		ASSERT_LE(prev_ms, f.ms);
		ASSERT_EQ(0, f.high);
		ASSERT_EQ(WORKER, f.worker);
		ASSERT_EQ(DC, f.dc);
		prev = id;
		prev_ms = f.ms;
	}
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(5000, st.ids_issued);
	EXPECT_EQ(5000, st.reads);
}

/* readv() with odd-sized iovecs: IDs straddle iovecs, bytes past stay. */
TEST_F(rd, readv_odd_iovecs)
{
	static const size_t lens[] = { 3, 5, 7, 9, 5, 4, 3 };	/* 36 bytes */
	unsigned char parts[SF_ARRAY_SIZE(lens)][16], flat[36];
	struct iovec iov[SF_ARRAY_SIZE(lens)];
	uint64_t ids[4], last, before, after;
	size_t i, off = 0;
	ssize_t ret;

	drain_tick(_metadata, self->fd, self->big, &last);
	before = sf_real_ms();
	memset(parts, 0xcc, sizeof(parts));
	for (i = 0; i < SF_ARRAY_SIZE(lens); i++) {
		iov[i].iov_base = parts[i];
		iov[i].iov_len = lens[i];
	}
	ret = readv(self->fd, iov, SF_ARRAY_SIZE(lens));
	after = sf_real_ms();
	ASSERT_EQ(32, ret) TH_LOG("readv: %zd (%s)", ret, strerror(errno));
	for (i = 0; i < SF_ARRAY_SIZE(lens); i++) {
		memcpy(flat + off, parts[i], lens[i]);
		/* nothing written past each iovec */
		EXPECT_TRUE(sf_all_bytes(parts[i] + lens[i], 16 - lens[i], 0xcc));
		off += lens[i];
	}
	memcpy(ids, flat, 32);
	EXPECT_TRUE(sf_all_bytes(flat + 32, 4, 0xcc)) TH_LOG("bytes past 4 IDs");
	EXPECT_LT(last, ids[0]);
	for (i = 1; i < 4; i++)
		EXPECT_EQ(ids[i - 1] + 1, ids[i]);
	for (i = 0; i < 4; i++)
		check_id(_metadata, &self->cfg, ids[i], before, after);

	/* Under 8 bytes in total: EINVAL. */
	iov[0].iov_len = 3;
	iov[1].iov_len = 4;
	EXPECT_ERRNO(EINVAL, readv(self->fd, iov, 2));
}

/* preadv2(..., -1, RWF_NOWAIT) returns IDs when the tick has some left. */
TEST_F(rd, preadv2_nowait)
{
	uint64_t id, ids[4] = { 0 };
	struct iovec iov = { .iov_base = ids, .iov_len = sizeof(ids) };
	int attempt;
	ssize_t ret;

	for (attempt = 0; attempt < 10; attempt++) {
		struct sf_id f;

		ASSERT_EQ(0, sf_read1(self->fd, &id));
		f = sf_decode(&self->cfg, id);
		if (f.seq == sf_mask(self->cfg.sequence_bits))
			continue;	/* that emptied the tick: try again */
		/* This tick has IDs left, and a later one has all. */
		ret = preadv2(self->fd, &iov, 1, -1, RWF_NOWAIT);
		ASSERT_LT(0, ret) TH_LOG("preadv2 RWF_NOWAIT: %s", strerror(errno));
		ASSERT_EQ(0, ret % 8);
		EXPECT_LT(id, ids[0]);
		break;
	}
	ASSERT_GT(10, attempt);

	/* Without flags, at the current position. */
	ret = preadv2(self->fd, &iov, 1, -1, 0);
	ASSERT_LT(0, ret) TH_LOG("preadv2: %s", strerror(errno));
	/* With an offset: ESPIPE. */
	EXPECT_ERRNO(ESPIPE, preadv2(self->fd, &iov, 1, 0, 0));
	EXPECT_ERRNO(ESPIPE, preadv2(self->fd, &iov, 1, 8, RWF_NOWAIT));
}

TEST_F(rd, pread_and_lseek_espipe)
{
	struct snowflake_stats st;
	uint64_t ids[2];
	struct iovec iov = { .iov_base = ids, .iov_len = sizeof(ids) };

	EXPECT_ERRNO(ESPIPE, pread(self->fd, ids, 8, 0));
	EXPECT_ERRNO(ESPIPE, pread(self->fd, ids, 16, 8));
	EXPECT_ERRNO(ESPIPE, preadv(self->fd, &iov, 1, 0));
	EXPECT_ERRNO(ESPIPE, lseek(self->fd, 0, SEEK_SET));
	EXPECT_ERRNO(ESPIPE, lseek(self->fd, 0, SEEK_CUR));
	EXPECT_ERRNO(ESPIPE, lseek(self->fd, 0, SEEK_END));
	EXPECT_ERRNO(ESPIPE, lseek(self->fd, 8, SEEK_SET));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(0, st.ids_issued);
}

/* The node is 0444; root may open it for writing, but write() is EINVAL. */
TEST_F(rd, write_einval)
{
	uint64_t ids[2] = { 1, 2 };
	struct iovec iov = { .iov_base = ids, .iov_len = sizeof(ids) };
	struct snowflake_stats st;
	int fd;

	fd = sf_open(O_RDWR);
	ASSERT_LE(0, fd) TH_LOG("root open O_RDWR: %s", strerror(-fd));
	EXPECT_ERRNO(EINVAL, write(fd, ids, 8));
	EXPECT_ERRNO(EINVAL, write(fd, ids, 16));
	EXPECT_ERRNO(EINVAL, writev(fd, &iov, 1));
	/* Reading through the same file still works. */
	EXPECT_EQ(8, read(fd, ids, 8));
	close(fd);

	fd = sf_open(O_WRONLY);
	ASSERT_LE(0, fd) TH_LOG("root open O_WRONLY: %s", strerror(-fd));
	EXPECT_ERRNO(EINVAL, write(fd, ids, 8));
	/* ...and a write-only file cannot read. */
	EXPECT_ERRNO(EBADF, read(fd, ids, 8));
	close(fd);

	ASSERT_EQ(0, sf_get_stats(self->fd, &st));
	EXPECT_EQ(1, st.ids_issued);
}

TEST_F(rd, decoded_fields)
{
	uint64_t ids[64], before, after, prev = 0;
	int r;

	for (r = 0; r < 20; r++) {
		ssize_t n, i;

		before = sf_real_ms();
		n = sf_read_ids(self->fd, ids, 1 + r * 3);
		after = sf_real_ms();
		ASSERT_LT(0, n);
		for (i = 0; i < n; i++) {
			check_id(_metadata, &self->cfg, ids[i], before, after);
			EXPECT_LT(prev, ids[i]);
			prev = ids[i];
		}
	}
	/* sysfs shows the same identity. */
	EXPECT_EQ(DC, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(WORKER, sf_sysfs_u64("worker_id"));
}

/* read() without glibc's checks of the buffer argument. */
static long raw_read(int fd, void *buf, size_t count)
{
	return syscall(SYS_read, fd, buf, count);
}

TEST_F(rd, bad_buffer_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct snowflake_stats st0, st1;
	void *unmapped, *ro;
	uint64_t id, last;

	unmapped = mmap(NULL, page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, unmapped);
	ASSERT_EQ(0, munmap(unmapped, page));
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);

	ASSERT_EQ(0, sf_read1(self->fd, &last));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));

	EXPECT_ERRNO(EFAULT, raw_read(self->fd, NULL, 8));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, NULL, 64));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, unmapped, 8));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, unmapped, 4096));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, ro, 8));
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, ro, 256));
	EXPECT_TRUE(sf_all_bytes(ro, page, 0));
	/* A kernel address fails access_ok(). */
	EXPECT_ERRNO(EFAULT, raw_read(self->fd, (void *)0xffff888000000000UL, 8));

	/* Failed reads did not count as reads that returned IDs. */
	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(st0.reads, st1.reads);
	/* Whatever was reserved and lost is never issued again. */
	ASSERT_EQ(0, sf_read1(self->fd, &id));
	EXPECT_LT(last, id);
	munmap(ro, page);
}

/*
 * The first page is mapped, the second is not (unmapped, or PROT_NONE, or
 * read-only): the whole IDs that fit are returned, and no byte of the ID
 * that did not fit lands before the boundary: the bytes after the last
 * whole ID stay as they were (a copy of 512-byte chunks once left up to 7
 * bytes of an undelivered ID there).  All 10 IDs were reserved (the tick
 * was fresh), so the next ID is above all ten: reserved IDs are skipped,
 * not reissued.
 */
static void partial_copy(struct __test_metadata *_metadata, FIXTURE_DATA(rd) *self,
			 int hole)
{
	long page = sysconf(_SC_PAGESIZE);
	static const struct {
		size_t room;		/* mapped bytes before the hole */
		ssize_t want;		/* bytes returned */
	} cases[] = {
		{ 24, 24 }, { 20, 16 }, { 8, 8 }, { 15, 8 }, { 23, 16 }, { 1, -EFAULT },
	};
	unsigned char *map;
	uint64_t last, id;
	size_t c;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	if (hole == 0) {
		ASSERT_EQ(0, munmap(map + page, page));
	} else {
		ASSERT_EQ(0, mprotect(map + page, page, hole));
	}

	for (c = 0; c < SF_ARRAY_SIZE(cases); c++) {
		unsigned char *buf = map + page - cases[c].room;
		uint64_t ids[3];
		ssize_t ret, i;

		drain_tick(_metadata, self->fd, self->big, &last);
		memset(map, 0xcc, page);
		ret = read(self->fd, buf, 80);
		if (ret < 0)
			ret = -errno;
		ASSERT_EQ(cases[c].want, ret)
			TH_LOG("room %zu: read returned %zd (%s)", cases[c].room,
			       ret, ret < 0 ? strerror(errno) : "");
		EXPECT_TRUE(sf_all_bytes(buf + (ret > 0 ? ret : 0),
					 cases[c].room - (ret > 0 ? ret : 0), 0xcc))
			TH_LOG("room %zu: bytes of an undelivered ID written before the hole",
			       cases[c].room);
		if (ret < 0)
			continue;
		memcpy(ids, buf, ret);
		EXPECT_LT(last, ids[0]);
		for (i = 1; i < ret / 8; i++)
			EXPECT_EQ(ids[i - 1] + 1, ids[i]);
		EXPECT_TRUE(sf_all_bytes(map, page - cases[c].room, 0xcc));
		ASSERT_EQ(0, sf_read1(self->fd, &id));
		EXPECT_LE(ids[0] + 10, id)
			TH_LOG("room %zu: first %#" PRIx64 ", next read %#" PRIx64,
			       cases[c].room, ids[0], id);
	}
	munmap(map, 2 * page);
}

TEST_F(rd, partial_copy_at_unmapped_page)
{
	partial_copy(_metadata, self, 0);
}

TEST_F(rd, partial_copy_at_prot_none_page)
{
	partial_copy(_metadata, self, PROT_NONE);
}

TEST_F(rd, partial_copy_at_read_only_page)
{
	partial_copy(_metadata, self, PROT_READ);
}

/* Readable now: poll, select and epoll say so. */
TEST_F(rd, poll_readable)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct timeval tv = { 0, 0 };
	fd_set rfds;
	int ep, r;

	/* Nothing issued yet: the tick has IDs. */
	r = sf_poll_in(self->fd, 0);
	EXPECT_EQ(POLLIN | POLLRDNORM, r & (POLLIN | POLLRDNORM | POLLERR | POLLHUP));

	FD_ZERO(&rfds);
	FD_SET(self->fd, &rfds);
	EXPECT_EQ(1, select(self->fd + 1, &rfds, NULL, NULL, &tv));
	EXPECT_TRUE(FD_ISSET(self->fd, &rfds));

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 0));
	EXPECT_TRUE(out.events & EPOLLIN);
	close(ep);
}

/* io_uring IORING_OP_READ, with raw syscalls (no liburing in the guest). */
static int uring_read(int fd, void *buf, unsigned int len, int *res)
{
	struct io_uring_params p;
	size_t sq_sz, cq_sz, sqe_sz;
	struct io_uring_sqe *sqes, *sqe;
	struct io_uring_cqe *cqes;
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	unsigned int tail, idx, head;
	void *sq, *cq;
	int ring, ret = 0;

	memset(&p, 0, sizeof(p));
	ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0)
		return -errno;
	sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_sz = cq_sz = sq_sz > cq_sz ? sq_sz : cq_sz;
	sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  ring, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED) {
		ret = -errno;
		goto out_ring;
	}
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		cq = sq;
	} else {
		cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED) {
			ret = -errno;
			goto out_sq;
		}
	}
	sqe_sz = p.sq_entries * sizeof(struct io_uring_sqe);
	sqes = mmap(NULL, sqe_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    ring, IORING_OFF_SQES);
	if (sqes == MAP_FAILED) {
		ret = -errno;
		goto out_cq;
	}

	sq_tail = (unsigned int *)((char *)sq + p.sq_off.tail);
	sq_mask = (unsigned int *)((char *)sq + p.sq_off.ring_mask);
	sq_array = (unsigned int *)((char *)sq + p.sq_off.array);
	cq_head = (unsigned int *)((char *)cq + p.cq_off.head);
	cq_tail = (unsigned int *)((char *)cq + p.cq_off.tail);
	cq_mask = (unsigned int *)((char *)cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);

	tail = *sq_tail;
	idx = tail & *sq_mask;
	sqe = &sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)-1;
	sqe->user_data = 0x5f;
	sq_array[idx] = idx;
	__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);

	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0) {
		ret = -errno;
		goto out_sqes;
	}
	head = *cq_head;
	if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
		ret = -ENODATA;
		goto out_sqes;
	}
	if (cqes[head & *cq_mask].user_data != 0x5f)
		ret = -EPROTO;
	*res = cqes[head & *cq_mask].res;
	__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
out_sqes:
	munmap(sqes, sqe_sz);
out_cq:
	if (cq != sq)
		munmap(cq, cq_sz);
out_sq:
	munmap(sq, sq_sz);
out_ring:
	close(ring);
	return ret;
}

TEST_F(rd, io_uring_read)
{
	struct snowflake_stats st0, st1;
	uint64_t ids[9], last;
	int res = 0, ret, i;

	ASSERT_EQ(0, sf_read1(self->fd, &last));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st0));
	memset(ids, 0xcc, sizeof(ids));
	ret = uring_read(self->fd, ids, 8 * 8 + 3, &res);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "io_uring not available: %s", strerror(-ret));
	ASSERT_EQ(0, ret) TH_LOG("io_uring: %s", strerror(-ret));
	ASSERT_LT(0, res) TH_LOG("io_uring read: %s", strerror(-res));
	ASSERT_EQ(0, res % 8);
	ASSERT_GE(64, res);
	EXPECT_LT(last, ids[0]);
	for (i = 1; i < res / 8; i++)
		EXPECT_EQ(ids[i - 1] + 1, ids[i]);
	EXPECT_TRUE(sf_all_bytes((char *)ids + res, sizeof(ids) - res, 0xcc));
	ASSERT_EQ(0, sf_get_stats(self->fd, &st1));
	EXPECT_EQ(st0.ids_issued + res / 8, st1.ids_issued);
	EXPECT_EQ(st0.reads + 1, st1.reads);
}

SF_TEST_MAIN()
