// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzzing the module from userspace: at least SNOWFLAKE_FUZZ_CALLS
 * (default 1,000,000) random calls against /dev/snowflake and its sysfs
 * files, seeded by SNOWFLAKE_FUZZ_SEED (default: from the clock; printed).
 *
 * - ioctl: magic 0xB9 with every nr 0..255, every direction, sizes
 *   0..16383, and far commands of other magics; random or almost valid
 *   contents; bad pointers (NULL, low, unmapped, PROT_NONE, read-only,
 *   kernel and non-canonical addresses, a structure that runs off the end
 *   of a mapping);
 * - read: read(), readv() with odd iovecs, preadv2() at the current
 *   position (with RWF_NOWAIT) and at offsets, pread(), write(); sizes
 *   0, 1, 7, 8, huge; unaligned, read-only, unmapped and partly mapped
 *   buffers; blocking and O_NONBLOCK files;
 * - sysfs: writes of random strings, numbers, overflowing, negative, hex,
 *   with whitespace or NULs to every file of /sys/class/misc/snowflake/,
 *   and short reads.
 *
 * Every call's result is predicted from the documented ABI (README.md):
 * an unexpected errno, a success that should have failed, an ID that is
 * not above every ID before it, or a GET that does not show the expected
 * state fails.  The valid changes (SET_IDS, SET_CONFIG of ids and flags,
 * floors, sysfs writes) are tracked; at the end the configuration, the
 * floor and the counters must be exactly what they imply, and 100,000 more
 * IDs must be unique and strictly increasing.
 *
 * Floors are kept below the wall clock plus a day (a larger accepted one
 * would move the clock so far ahead that the rest of the test stops being
 * about fuzzing), lease ceilings (SNOWFLAKE_IDS_WINDOW) that would be
 * accepted are none or above that band plus a day (a reachable one would
 * refuse every later read: ceiling_test.c tests those), and the layout is
 * locked by reading an ID first.  The
 * module is reloaded with default parameters afterwards (SF_TEST_MAIN).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define DEFAULT_CALLS	1000000ULL
#define FINAL_IDS	100000
#define RW_PAGES	16		/* the valid buffer, then a guard page */
#define MAX_REPORTS	20
#define DAY_MS		86400000ULL
#define MAX_FILES	64
#define TASK_SIZE_GUESS	0x00007ffffffff000ULL

/* Where a pointer points: how many bytes from it can be read/written. */
struct uptr {
	uint8_t *p;
	size_t r, w;
	bool exact;	/* r and w are known (else only "too few") */
};

struct sysfs_file {
	char name[300];
	bool writable;
	int rfd, wfd;	/* kept open: pread/pwrite at 0 */
};

struct fz {
	struct __test_metadata *md;
	uint64_t rng;
	long pagesz;
	int fd, fd_nb, fd_wr;
	uint8_t *rw;		/* RW_PAGES pages, then a PROT_NONE page */
	size_t rw_len;
	uint8_t *ro;		/* one PROT_READ page, then a PROT_NONE page */
	uint8_t *none;		/* a PROT_NONE page */
	uint8_t *hole;		/* an unmapped page */
	uint8_t *scratch;	/* where read IDs are gathered */

	/* What the state must be. */
	struct snowflake_config cfg;
	uint64_t floor;
	uint64_t floor_band;	/* floors above this (and valid) are avoided */
	uint64_t ts_end_ms;	/* last Unix ms timestamp_bits hold */
	uint64_t ceiling;	/* the lease's ceiling (SNOWFLAKE_NO_CEILING) */
	uint64_t windows;	/* SET_IDS with a window accepted */
	bool fenced;

	/* IDs. */
	uint64_t max_id;
	uint64_t delivered, reads_ok, eagain;

	/* Counts, and the time spent in each kind of call. */
	uint64_t calls, n_ioctl, n_read, n_sysfs, accepted, failures;
	uint64_t ns_ioctl, ns_read, ns_sysfs;
	struct sysfs_file files[MAX_FILES];
	int nfiles;
};

static uint64_t rnd(struct fz *z)
{
	/* xorshift64* */
	z->rng ^= z->rng >> 12;
	z->rng ^= z->rng << 25;
	z->rng ^= z->rng >> 27;
	return z->rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t rnd_below(struct fz *z, uint64_t n)
{
	return n ? rnd(z) % n : 0;
}

static bool chance(struct fz *z, unsigned int percent)
{
	return rnd_below(z, 100) < percent;
}

static void __attribute__((format(printf, 2, 3)))
fz_fail(struct fz *z, const char *fmt, ...)
{
	va_list ap;

	z->failures++;
	if (z->failures > MAX_REPORTS)
		return;
	va_start(ap, fmt);
	printf("# fuzz: call %" PRIu64 ": ", z->calls);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Values and pointers                                                 */
/* ------------------------------------------------------------------ */

/* An interesting 64-bit number. */
static uint64_t rnd_value(struct fz *z)
{
	static const uint64_t edges[] = {
		0, 1, 2, 7, 8, 30, 31, 32, 33, 63, 64, 255, 256, 4095, 4096,
		0x7fffffffULL, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL,
		SNOWFLAKE_TWITTER_EPOCH_MS, (1ULL << 41) - 1, 1ULL << 41,
		(1ULL << 63) - 1, 1ULL << 63, ~0ULL, ~0ULL - 1,
	};

	switch (rnd_below(z, 6)) {
	case 0:
		return edges[rnd_below(z, SF_ARRAY_SIZE(edges))];
	case 1:
		return rnd_below(z, 40);
	case 2:
		return sf_real_ms() + rnd_below(z, 2 * DAY_MS) - DAY_MS;
	case 3:
		return rnd_below(z, sf_real_ms());
	case 4:
		return rnd(z) >> rnd_below(z, 64);
	default:
		return rnd(z);
	}
}

static void rnd_fill(struct fz *z, void *buf, size_t len)
{
	uint8_t *b = buf;
	size_t i;

	if (chance(z, 30)) {
		memset(b, chance(z, 50) ? 0 : 0xff, len);
		return;
	}
	for (i = 0; i < len; i++)
		b[i] = (uint8_t)rnd(z);
}

/* A pointer for @size bytes: mostly valid, else bad in one of many ways. */
static struct uptr rnd_ptr(struct fz *z, size_t size, unsigned int bad_percent)
{
	struct uptr u = { .exact = true };
	size_t off;

	if (!chance(z, bad_percent)) {
		/* In the RW area: whole, or running into the guard page. */
		if (chance(z, 85) && size < z->rw_len)
			off = rnd_below(z, z->rw_len - size + 1);
		else
			off = z->rw_len - rnd_below(z, size < z->rw_len ? size + 1 : z->rw_len);
		if (off >= z->rw_len)
			off = z->rw_len - 1;
		u.p = z->rw + off;
		u.r = u.w = z->rw_len - off;
		return u;
	}
	switch (rnd_below(z, 8)) {
	case 0:
		u.p = NULL;
		break;
	case 1:
		u.p = (uint8_t *)(uintptr_t)(1 + rnd_below(z, 0xfff));
		break;
	case 2:
		off = rnd_below(z, z->pagesz);
		u.p = z->ro + off;
		u.r = z->pagesz - off;
		break;
	case 3:
		u.p = z->none + rnd_below(z, z->pagesz);
		break;
	case 4:
		u.p = z->hole + rnd_below(z, z->pagesz);
		break;
	case 5:
		u.p = (uint8_t *)(uintptr_t)(0xffffffff80000000ULL + rnd_below(z, 1ULL << 30));
		break;
	case 6:
		u.p = (uint8_t *)(uintptr_t)(0x0000800000000000ULL + (rnd(z) >> 2));
		break;
	default:
		u.p = (uint8_t *)(uintptr_t)(0xffff800000000000ULL + (rnd(z) >> 18));
		break;
	}
	return u;
}

/* ------------------------------------------------------------------ */
/* The rules (README.md "ioctls"), written from the documentation      */
/* ------------------------------------------------------------------ */

static int rule_config(const struct fz *z, const struct snowflake_config *c)
{
	unsigned int sum = c->timestamp_bits + c->datacenter_bits + c->worker_bits +
			   c->sequence_bits;

	if (c->__reserved || (c->flags & ~SNOWFLAKE_CONFIG_FLAGS_ALL) ||
	    c->time_unit_ms < 1 || c->time_unit_ms > SNOWFLAKE_MAX_TIME_UNIT_MS ||
	    c->timestamp_bits < 1 || c->datacenter_bits > 31 ||
	    c->worker_bits > 31 || c->sequence_bits > 31 || sum > 63 ||
	    c->datacenter_id > sf_mask(c->datacenter_bits) ||
	    c->worker_id > sf_mask(c->worker_bits))
		return -EINVAL;
	/* An ID was issued: the layout is fixed. */
	if (c->epoch_ms != z->cfg.epoch_ms || c->time_unit_ms != z->cfg.time_unit_ms ||
	    c->timestamp_bits != z->cfg.timestamp_bits ||
	    c->datacenter_bits != z->cfg.datacenter_bits ||
	    c->worker_bits != z->cfg.worker_bits ||
	    c->sequence_bits != z->cfg.sequence_bits)
		return -EBUSY;
	return 0;
}

static int rule_floor_ms(const struct fz *z, uint64_t v);

/* @size: the bytes the caller gave; the kernel reads zeros past them. */
static int rule_ids(const struct fz *z, const struct snowflake_ids *ids, size_t size)
{
	bool window = ids->flags & SNOWFLAKE_IDS_WINDOW;
	unsigned __int128 start, unit = z->cfg.time_unit_ms;
	int ret;

	/* No deadline is ever sent: SNOWFLAKE_IDS_DEADLINE alone is EINVAL. */
	if ((ids->flags & ~SNOWFLAKE_IDS_FLAGS_ALL) || ids->__reserved ||
	    (ids->flags & SNOWFLAKE_IDS_DEADLINE) ||
	    ids->datacenter_id > sf_mask(z->cfg.datacenter_bits) ||
	    ids->worker_id > sf_mask(z->cfg.worker_bits))
		return -EINVAL;
	/* The window: its flag, 48 bytes, floor <= ceiling, not below the epoch. */
	if (!window)
		return ids->floor_ms || ids->ceiling_ms ? -EINVAL : 0;
	if (size < SNOWFLAKE_IDS_SIZE_VER2 || ids->floor_ms > ids->ceiling_ms ||
	    ids->ceiling_ms < z->cfg.epoch_ms)
		return -EINVAL;
	ret = rule_floor_ms(z, ids->floor_ms);
	if (ret)
		return ret;
	/* And a tick starts in it, epoch_ms + k * time_unit_ms (any, with 1 ms). */
	start = z->cfg.epoch_ms;
	if (ids->floor_ms > start)
		start += ((unsigned __int128)ids->floor_ms - start + unit - 1) / unit * unit;
	return start <= ids->ceiling_ms ? 0 : -EINVAL;
}

/* A ceiling that would be accepted and could be reached: moved far up. */
static uint64_t tame_ceiling(const struct fz *z, uint64_t v)
{
	if (v >= z->cfg.epoch_ms && v < z->floor_band + DAY_MS)
		v |= 1ULL << 63;
	return v;
}

static int rule_floor_ms(const struct fz *z, uint64_t v)
{
	if (v <= z->floor)
		return 0;
	if (v > (1ULL << 63) - 1 || v > z->ts_end_ms)
		return -EOVERFLOW;
	return 0;
}

/* A floor that would be accepted and move the clock too far: refused instead. */
static uint64_t tame_floor(const struct fz *z, uint64_t v)
{
	if (v > z->floor_band && v <= z->ts_end_ms)
		v |= 1ULL << 63;
	return v;
}

/* ------------------------------------------------------------------ */
/* ioctl                                                               */
/* ------------------------------------------------------------------ */

struct cmd_info {
	unsigned int nr, dir, ksize, ver0;
	bool set;
};

static const struct cmd_info cmds[] = {
	{ 0, _IOC_READ, sizeof(struct snowflake_config), SNOWFLAKE_CONFIG_SIZE_VER0, false },
	{ 1, _IOC_WRITE, sizeof(struct snowflake_config), SNOWFLAKE_CONFIG_SIZE_VER0, true },
	{ 2, _IOC_WRITE, sizeof(struct snowflake_ids), SNOWFLAKE_IDS_SIZE_VER0, true },	/* 48 */
	{ 3, _IOC_READ, sizeof(struct snowflake_stats), SNOWFLAKE_STATS_SIZE_VER0, false },
	{ 4, _IOC_READ, sizeof(struct snowflake_floor), SNOWFLAKE_FLOOR_SIZE_VER0, false },
	{ 5, _IOC_WRITE, sizeof(struct snowflake_floor), SNOWFLAKE_FLOOR_SIZE_VER0, true },
#ifdef SNOWFLAKE_IOC_SET_FENCE
	{ _IOC_NR(SNOWFLAKE_IOC_SET_FENCE), _IOC_WRITE, sizeof(struct snowflake_fence),
	  SNOWFLAKE_FENCE_SIZE_VER0, true },
	{ _IOC_NR(SNOWFLAKE_IOC_GET_FENCE), _IOC_READ, sizeof(struct snowflake_fence),
	  SNOWFLAKE_FENCE_SIZE_VER0, false },
#endif
};

static const struct cmd_info *cmd_of(unsigned int nr)
{
	size_t i;

	for (i = 0; i < SF_ARRAY_SIZE(cmds); i++)
		if (cmds[i].nr == nr)
			return &cmds[i];
	return NULL;
}

/* The argument of a "set" command, almost valid or random. */
static void fill_set_arg(struct fz *z, const struct cmd_info *ci, void *arg)
{
	if (chance(z, 25)) {
		rnd_fill(z, arg, ci->ksize);
		if (ci->nr == 5)	/* keep a raw floor harmless too */
			((struct snowflake_floor *)arg)->floor_ms =
				tame_floor(z, ((struct snowflake_floor *)arg)->floor_ms);
		if (ci->nr == 2) {	/* and a raw window */
			struct snowflake_ids *ids = arg;

			ids->floor_ms = tame_floor(z, ids->floor_ms);
			ids->ceiling_ms = tame_ceiling(z, ids->ceiling_ms);
		}
		return;
	}
	switch (ci->nr) {
	case 1: {
		struct snowflake_config *c = arg;

		*c = z->cfg;
		c->datacenter_id = rnd_below(z, 40);
		c->worker_id = rnd_below(z, 40);
		c->flags = chance(z, 90) ? (uint32_t)rnd_below(z, 2) : (uint32_t)rnd(z);
		if (chance(z, 5))
			c->__reserved = (uint32_t)rnd(z) | 1;
		if (chance(z, 10))
			((uint8_t *)c)[rnd_below(z, 16)] ^= 1U << rnd_below(z, 8);
		break;
	}
	case 2: {
		struct snowflake_ids *ids = arg;

		ids->datacenter_id = rnd_below(z, 40);
		ids->worker_id = rnd_below(z, 40);
		ids->flags = chance(z, 5) ? (uint32_t)rnd(z) :
			     chance(z, 50) ? SNOWFLAKE_IDS_ASSIGN_WORKER : 0;
		ids->__reserved = chance(z, 5) ? (uint32_t)rnd(z) : 0;
		/* Never a deadline: one would refuse every later read. */
		ids->deadline_ns = 0;
		ids->vm_forks = 0;
		ids->__reserved2 = 0;
		ids->floor_ms = 0;
		ids->ceiling_ms = 0;
		if (chance(z, 30)) {
			/* A window: mostly valid, never reachable (tame_ceiling()). */
			if (chance(z, 90))
				ids->flags = (ids->flags & SNOWFLAKE_IDS_ASSIGN_WORKER) |
					     SNOWFLAKE_IDS_WINDOW;
			ids->floor_ms = chance(z, 50) ? 0 : tame_floor(z, rnd_value(z));
			switch (rnd_below(z, 5)) {
			case 0:
				ids->ceiling_ms = SNOWFLAKE_NO_CEILING;
				break;
			case 1:
				ids->ceiling_ms = z->cfg.epoch_ms - 1 - rnd_below(z, 3);
				break;
			case 2:
				ids->ceiling_ms = ids->floor_ms ? ids->floor_ms - 1 : 0;
				break;
			default:
				ids->ceiling_ms = tame_ceiling(z, rnd_value(z));
				break;
			}
		}
		break;
	}
	case 5: {
		struct snowflake_floor *f = arg;

		f->floor_ms = tame_floor(z, rnd_value(z));
		f->last_timestamp_ms = chance(z, 5) ? rnd(z) | 1 : 0;
		break;
	}
#ifdef SNOWFLAKE_IOC_SET_FENCE
	default: {
		struct snowflake_fence *f = arg;

		/* Fence rarely, lift often: reads are refused while fenced. */
		f->flags = chance(z, z->fenced ? 50 : 1) ? SNOWFLAKE_FENCE_ON : 0;
		if (chance(z, 5))
			f->flags = (uint32_t)rnd(z);
		f->__reserved = chance(z, 5) ? (uint32_t)rnd(z) : 0;
		f->fences = chance(z, 5) ? rnd(z) : 0;
		break;
	}
#else
	default:
		rnd_fill(z, arg, ci->ksize);
		break;
#endif
	}
}

/*
 * Rule for a set argument of @size bytes; applies it to the expected state
 * when @apply.
 */
static int rule_set(struct fz *z, const struct cmd_info *ci, const void *arg,
		    size_t size, bool apply)
{
	int ret = 0;

	switch (ci->nr) {
	case 1: {
		const struct snowflake_config *c = arg;

		ret = rule_config(z, c);
		if (!ret && apply)
			z->cfg = *c;
		break;
	}
	case 2: {
		const struct snowflake_ids *ids = arg;

		ret = rule_ids(z, ids, size);
		if (!ret && apply) {
			z->cfg.datacenter_id = ids->datacenter_id;
			z->cfg.worker_id = ids->worker_id;
			if (ids->flags & SNOWFLAKE_IDS_WINDOW) {
				if (ids->floor_ms > z->floor)
					z->floor = ids->floor_ms;
				z->ceiling = ids->ceiling_ms;
				z->windows++;
			}
		}
		break;
	}
	case 5: {
		const struct snowflake_floor *f = arg;

		ret = f->last_timestamp_ms ? -EINVAL : rule_floor_ms(z, f->floor_ms);
		if (!ret && apply && f->floor_ms > z->floor)
			z->floor = f->floor_ms;
		break;
	}
#ifdef SNOWFLAKE_IOC_SET_FENCE
	default: {
		const struct snowflake_fence *f = arg;

		if ((f->flags & ~SNOWFLAKE_FENCE_FLAGS_ALL) || f->__reserved || f->fences)
			ret = -EINVAL;
		if (!ret && apply)
			z->fenced = f->flags & SNOWFLAKE_FENCE_ON;
		break;
	}
#endif
	}
	return ret;
}

/* A successful GET: the output must show the expected state. */
static void check_get(struct fz *z, const struct cmd_info *ci, const uint8_t *out,
		      size_t size)
{
	size_t i;

	for (i = ci->ksize; i < size; i++) {
		if (out[i]) {
			fz_fail(z, "GET nr %u size %zu: byte %zu of the tail is %#x",
				ci->nr, size, i, out[i]);
			return;
		}
	}
	switch (ci->nr) {
	case 0:
		if (memcmp(out, &z->cfg, sizeof(z->cfg)))
			fz_fail(z, "GET_CONFIG differs from the expected configuration");
		break;
	case 3: {
		struct snowflake_stats st;

		memcpy(&st, out, sizeof(st));
		if (st.floor_ms != z->floor || st.__reserved ||
		    !(st.state & SNOWFLAKE_STATE_LOCKED))
			fz_fail(z, "GET_STATS: floor %" PRIu64 " (expected %" PRIu64 "), state %#x",
				(uint64_t)st.floor_ms, z->floor, st.state);
		break;
	}
	case 4: {
		struct snowflake_floor f;

		memcpy(&f, out, sizeof(f));
		if (f.floor_ms != z->floor)
			fz_fail(z, "GET_FLOOR: %" PRIu64 ", expected %" PRIu64,
				(uint64_t)f.floor_ms, z->floor);
		break;
	}
	default:
		break;
	}
}

static bool vfs_magic(unsigned int magic)
{
	/* Commands the VFS answers itself (FIONBIO, FIGETBSZ, FS_IOC_*, ...). */
	return magic == 0x00 || magic == 0x15 || magic == 'T' || magic == 'X' ||
	       magic == 'f' || magic == 0x94;
}

static void fz_ioctl(struct fz *z)
{
	const struct cmd_info *ci = NULL;
	unsigned int nr, dir, size, magic = SNOWFLAKE_IOC_MAGIC;
	struct uptr u;
	uint8_t arg[16384];
	int fd = chance(z, 80) ? z->fd : z->fd_wr;
	int want = -ENOTTY, err;
	bool maybe_e2big = false;
	long ret;

	z->n_ioctl++;
	if (chance(z, 10)) {
		do {
			magic = (unsigned int)rnd_below(z, 256);
		} while (magic == SNOWFLAKE_IOC_MAGIC || vfs_magic(magic));
		nr = (unsigned int)rnd_below(z, 256);
		dir = (unsigned int)rnd_below(z, 4);
		size = (unsigned int)rnd_below(z, 16384);
	} else {
		nr = chance(z, 70) ? (unsigned int)rnd_below(z, 8) :
				     (unsigned int)rnd_below(z, 256);
		ci = cmd_of(nr);
		dir = ci && chance(z, 75) ? ci->dir : (unsigned int)rnd_below(z, 4);
		if (ci && chance(z, 60))
			size = ci->ksize;
		else if (ci && chance(z, 50))
			size = (unsigned int)rnd_below(z, ci->ksize + 17);
		else
			size = (unsigned int)rnd_below(z, 16384);
		if (ci && dir != ci->dir)
			ci = NULL;
	}

	u = rnd_ptr(z, size, 25);
	if (ci && ci->set) {
		/* The argument as the kernel will see it: struct, then tail. */
		memset(arg, 0, size > ci->ksize ? size : ci->ksize);
		fill_set_arg(z, ci, arg);
		/* A shorter structure: the kernel reads zeros past it. */
		if (size < ci->ksize)
			memset(arg + size, 0, ci->ksize - size);
		if (size > ci->ksize && chance(z, 20))
			arg[ci->ksize + rnd_below(z, size - ci->ksize)] = (uint8_t)(1 + rnd_below(z, 255));
		if (u.r >= size && u.w >= size)
			memcpy(u.p, arg, size);
		else if (u.p >= z->rw && u.p < z->rw + z->rw_len)
			memcpy(u.p, arg, u.r < size ? u.r : size);
		else if (u.r)
			memcpy(arg, u.p, u.r < size ? u.r : size);	/* read-only page */
	} else if (ci && u.w >= size && size) {
		memset(u.p, 0xcc, size);
	}

	errno = 0;
	ret = ioctl(fd, _IOC(dir, magic, nr, size), u.p);
	err = ret ? errno : 0;

	if (ci) {
		if (size < ci->ver0) {
			want = -EINVAL;
		} else if (!ci->set) {
			want = u.w >= size ? 0 : -EFAULT;
		} else if (u.r >= size) {
			bool tail = false;
			size_t i;

			for (i = ci->ksize; i < size; i++)
				tail |= arg[i] != 0;
			if (u.w < size)	/* read-only page: its own bytes */
				memcpy(arg, u.p, size);
			want = tail ? -E2BIG : rule_set(z, ci, arg, size, false);
		} else {
			want = -EFAULT;
			maybe_e2big = size > ci->ksize;
		}
	}

	if (ret == 0 && want == 0) {
		z->accepted++;
		if (ci->set)
			rule_set(z, ci, arg, size, true);
		else
			check_get(z, ci, u.p, size);
		return;
	}
	if (ret == 0 || -err != want) {
		if (maybe_e2big && err == E2BIG)
			return;
		fz_fail(z, "ioctl(_IOC(%u, %#x, %u, %u), %p): %ld errno %d (%s), expected %d (%s)",
			dir, magic, nr, size, (void *)u.p, ret, err, strerror(err),
			-want, strerror(-want));
	}
}

/* ------------------------------------------------------------------ */
/* read                                                                */
/* ------------------------------------------------------------------ */

/* IDs that arrived: strictly increasing, above every earlier one. */
static void check_ids(struct fz *z, const uint8_t *bytes, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t id;

		memcpy(&id, bytes + i, 8);
		if (id <= z->max_id) {
			fz_fail(z, "%s: ID %#" PRIx64 " at byte %zu not above %#" PRIx64,
				what, id, i, z->max_id);
			return;
		}
		z->max_id = id;
	}
}

/*
 * A read of @count bytes into what @ok bytes can hold returned @ret (errno
 * @err): check it against the rules; @maybe_efault when the kernel may
 * refuse the address range as a whole.
 */
static bool check_read(struct fz *z, int fd, size_t count, size_t ok, long ret, int err,
		       bool maybe_efault, bool nowait, const char *what)
{
	size_t want = count / 8 < SNOWFLAKE_MAX_IDS_PER_READ ? count / 8 :
		      SNOWFLAKE_MAX_IDS_PER_READ;

	if (ret >= 0) {
		if (count < 8 || ok < 8 || ret % 8 || ret == 0 || (size_t)ret > want * 8 ||
		    (size_t)ret > ok) {
			fz_fail(z, "%s of %zu (%zu usable) returned %ld", what, count, ok, ret);
			return false;
		}
		z->accepted++;
		z->delivered += ret / 8;
		z->reads_ok++;
		return true;
	}
	if (maybe_efault && err == EFAULT)
		return false;
	if (count < 8 && err == EINVAL)
		return false;
	if (count >= 8 && z->fenced && err == ENOTCONN)
		return false;
	if (count >= 8 && nowait && err == EAGAIN) {
		z->eagain++;
		return false;
	}
	if (count >= 8 && ok < 8 && err == EFAULT)
		return false;
	fz_fail(z, "%s of %zu (%zu usable, fd %d): errno %d (%s)", what, count, ok, fd,
		err, strerror(err));
	return false;
}

static size_t rnd_count(struct fz *z)
{
	static const size_t sizes[] = {
		0, 1, 7, 8, 9, 15, 16, 24, 4095, 4096 * 8, 4097 * 8, 65536,
		1U << 20, 1ULL << 31, 1ULL << 40, 1ULL << 47, SIZE_MAX, SIZE_MAX - 7,
	};

	if (chance(z, 40))
		return sizes[rnd_below(z, SF_ARRAY_SIZE(sizes))];
	if (chance(z, 50))
		return 8 * (1 + rnd_below(z, 64));
	return rnd_below(z, 2000);
}

static void fz_read(struct fz *z)
{
	bool nb = chance(z, 50);
	int fd = nb ? z->fd_nb : z->fd;
	size_t count = rnd_count(z);
	struct uptr u = rnd_ptr(z, count < z->rw_len ? count : 64, 15);
	bool maybe_efault;
	size_t ok;
	long ret;
	int err;

	/* Big reads mostly run into the guard page after a few IDs. */
	if (count > 4096 && u.w > 4096 && chance(z, 80)) {
		u.w = u.r = 1 + rnd_below(z, 256);
		u.p = z->rw + z->rw_len - u.w;
	}
	ok = u.w < count ? u.w : count;
	maybe_efault = !u.w || count >= (1ULL << 46) ||
		       (uintptr_t)u.p + count > TASK_SIZE_GUESS ||
		       (uintptr_t)u.p + count < (uintptr_t)u.p;

	z->n_read++;
	errno = 0;
	ret = read(fd, u.p, count);
	err = errno;
	/* Whole IDs only: a partial copy ends at an ID boundary. */
	if (check_read(z, fd, count, ok, ret, err, maybe_efault, nb, "read"))
		check_ids(z, u.p, ret, "read");
}

static void fz_readv(struct fz *z)
{
	struct iovec iov[12];
	size_t len[12], count = 0, ok = 0, pos = 0;
	int n = 1 + (int)rnd_below(z, 12), i, fd, err, flags = 0;
	bool nb = chance(z, 50), bad_seen = false, kernel_bad = false, v2 = chance(z, 30);
	long ret;

	z->n_read++;
	for (i = 0; i < n; i++) {
		static const size_t odd[] = { 0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 24, 100 };

		len[i] = chance(z, 70) ? odd[rnd_below(z, SF_ARRAY_SIZE(odd))] :
					 rnd_below(z, 300);
		if (chance(z, 8) && len[i]) {
			struct uptr u = rnd_ptr(z, len[i], 100);

			iov[i].iov_base = u.p;
			/* Refused by import_iovec(), or a fault that ends the copy. */
			if ((uintptr_t)u.p >= TASK_SIZE_GUESS)
				kernel_bad = true;
			bad_seen = true;
		} else {
			/* Consecutive pieces of the RW area. */
			if (pos + len[i] > z->rw_len)
				len[i] = 0;
			iov[i].iov_base = z->rw + pos;
			pos += len[i];
			if (!bad_seen)
				ok += len[i];
		}
		iov[i].iov_len = len[i];
		count += len[i];
	}
	fd = nb ? z->fd_nb : z->fd;
	errno = 0;
	if (v2) {
		if (chance(z, 50))
			flags = RWF_NOWAIT;
		ret = preadv2(fd, iov, n, -1, flags);
	} else {
		ret = readv(fd, iov, n);
	}
	err = errno;
	if (kernel_bad) {
		if (ret >= 0 || err != EFAULT)
			fz_fail(z, "readv with a kernel address: %ld errno %d", ret, err);
		return;
	}
	if (!count) {
		/* vfs_readv() answers an empty vector itself. */
		if (ret != 0)
			fz_fail(z, "readv of 0 bytes: %ld errno %d", ret, err);
		return;
	}
	if (ok > count)
		ok = count;
	if (!check_read(z, fd, count, ok, ret, err, false, nb || flags,
			v2 ? "preadv2" : "readv"))
		return;
	/* Gather what arrived, in order. */
	pos = 0;
	for (i = 0; i < n && pos < (size_t)ret; i++) {
		size_t k = len[i] < (size_t)ret - pos ? len[i] : (size_t)ret - pos;

		memcpy(z->scratch + pos, iov[i].iov_base, k);
		pos += k;
	}
	check_ids(z, z->scratch, ret, "readv");
}

/* pread, preadv at offsets, lseek, write: refused. */
static void fz_refused(struct fz *z)
{
	uint8_t *buf = z->rw + rnd_below(z, 64);
	struct iovec iov = { .iov_base = buf, .iov_len = 8 * (1 + rnd_below(z, 8)) };
	off_t off = chance(z, 20) ? -(off_t)(1 + rnd_below(z, 100)) : (off_t)rnd_value(z) >> 1;
	int want, err;
	long ret;

	z->n_read++;
	errno = 0;
	switch (rnd_below(z, 5)) {
	case 0:
		ret = pread(z->fd, buf, iov.iov_len, off);
		want = off < 0 ? EINVAL : ESPIPE;
		break;
	case 1:
		ret = preadv(z->fd, &iov, 1, off);
		want = off < 0 ? EINVAL : ESPIPE;
		break;
	case 2:
		off = off < 0 ? 0 : off;	/* -1 is "the current position" */
		ret = preadv2(z->fd, &iov, 1, off, 0);
		want = ESPIPE;
		break;
	case 3:
		ret = write(z->fd, buf, iov.iov_len);
		want = EBADF;
		break;
	default:
		ret = write(z->fd_wr, buf, iov.iov_len);
		want = EINVAL;
		break;
	}
	err = errno;
	if (ret != -1 || err != want)
		fz_fail(z, "refused call: %ld errno %d (%s), expected %d", ret, err,
			strerror(err), want);
}

/* ------------------------------------------------------------------ */
/* sysfs                                                               */
/* ------------------------------------------------------------------ */

/* kstrtoull(s, 10) as lib/kstrtox.c: 0, -EINVAL or -ERANGE. */
static int parse_kstrtoull(const char *s, uint64_t *res)
{
	uint64_t v = 0;
	bool any = false, over = false;

	if (*s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			over = true;
		v = v * 10 + d;
		any = true;
	}
	if (over)
		return -ERANGE;
	if (!any)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = v;
	return 0;
}

/* A string for a sysfs write: @len bytes in @buf (may hold NULs). */
static size_t rnd_sysfs_string(struct fz *z, char *buf, size_t cap)
{
	static const char *const junk[] = {
		"", "\n", " ", "\t", "-", "+", "0x", "x", " 1", "1 ", "1\n\n", "\n1",
		"-1", "+1\n", "0x1f", "1e3", "\xff", "3abc", "abc",
		"99999999999999999999999", "18446744073709551616", "4294967296",
		"-0", "00000000000000000000000000000007\n", "1\0009", "\xd9\xa1",
	};
	uint64_t v = rnd_value(z);
	size_t len;

	switch (rnd_below(z, 8)) {
	case 0:
	case 1:
		len = (size_t)snprintf(buf, cap, "%" PRIu64 "\n", v);
		break;
	case 2:
		len = (size_t)snprintf(buf, cap, "%" PRIu64, v);
		break;
	case 3: {
		static const char *const fmt[] = { "-%" PRIu64, "0x%" PRIx64, " %" PRIu64,
						   "%" PRIu64 " ", "+%" PRIu64 "\n",
						   "%" PRIu64 "\n\n", "0%" PRIu64, "%" PRIu64 "\t" };

		len = (size_t)snprintf(buf, cap, fmt[rnd_below(z, SF_ARRAY_SIZE(fmt))], v);
		break;
	}
	case 4: {
		const char *j = junk[rnd_below(z, SF_ARRAY_SIZE(junk))];

		len = strlen(j);
		if (!strcmp(j, "1"))	/* "1\0009" */
			len = 3;
		memcpy(buf, j, len + 1);
		break;
	}
	case 5:
		len = (size_t)snprintf(buf, cap, "%" PRIu64 "%c%" PRIu64, v,
				       chance(z, 50) ? '\0' : '.', rnd(z));
		break;
	case 6:
		len = rnd_below(z, 48);
		rnd_fill(z, buf, len);
		break;
	default:
		/* Long: too many digits (kernfs passes at most a page). */
		len = chance(z, 50) ? 4000 + rnd_below(z, 200) : 30 + rnd_below(z, 100);
		memset(buf, '0' + (int)rnd_below(z, 10), len);
		buf[0] = '9';
		break;
	}
	return len;
}

/* What the store functions of the module answer for @s: 0 or -errno. */
static int rule_sysfs(struct fz *z, const char *name, const char *s, size_t len,
		      bool apply)
{
	uint64_t v;
	int ret;

	if (!len)
		return 0;
	ret = parse_kstrtoull(s, &v);	/* the kernel's copy ends at a NUL */
	if (!strcmp(name, "floor_ms")) {
		if (ret)
			return -EINVAL;
		ret = rule_floor_ms(z, v);
		if (!ret && apply && v > z->floor)
			z->floor = v;
		return ret;
	}
	if (ret || v > 0xffffffffULL)
		return -EINVAL;
	if (!strcmp(name, "random_sequence")) {
		if (v > 1)
			return -EINVAL;
		if (apply)
			z->cfg.flags = (z->cfg.flags & ~SNOWFLAKE_CONFIG_RANDOM_SEQUENCE) |
				       (v ? SNOWFLAKE_CONFIG_RANDOM_SEQUENCE : 0);
		return 0;
	}
	if (!strcmp(name, "worker_id")) {
		if (v > sf_mask(z->cfg.worker_bits))
			return -EINVAL;
		if (apply)
			z->cfg.worker_id = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "datacenter_id")) {
		if (v > sf_mask(z->cfg.datacenter_bits))
			return -EINVAL;
		if (apply)
			z->cfg.datacenter_id = (uint32_t)v;
		return 0;
	}
	return -EACCES;
}

static void fz_sysfs(struct fz *z)
{
	const struct sysfs_file *f;
	char path[400], buf[4300], saved;
	size_t len, klen;
	int fd, want, err;
	bool fresh;
	long ret;

	z->n_sysfs++;
	/* The writable files most of the time. */
	do {
		f = &z->files[rnd_below(z, z->nfiles)];
	} while (!f->writable && chance(z, 80));
	snprintf(path, sizeof(path), SF_SYSFS "/%s", f->name);

	if (chance(z, 15)) {
		/* A short or odd read. */
		size_t n = rnd_below(z, 9);
		struct uptr u = rnd_ptr(z, n, 10);

		fresh = chance(z, 25);
		fd = fresh ? open(path, O_RDONLY | O_CLOEXEC) : f->rfd;
		if (fd < 0) {
			fz_fail(z, "open %s: %s", path, strerror(errno));
			return;
		}
		errno = 0;
		ret = fresh ? read(fd, u.p, n) : pread(fd, u.p, n, 0);
		err = errno;
		if (fresh)
			close(fd);
		if (ret >= 0 ? (size_t)ret > n || (n && !ret) || u.w < (size_t)ret :
			       err != EFAULT || (u.w >= n && u.w))
			fz_fail(z, "read(%s, %zu): %ld errno %d", f->name, n, ret, err);
		else if (ret > 0)
			z->accepted++;
		return;
	}

	len = rnd_sysfs_string(z, buf, sizeof(buf) - 1);
	buf[len] = '\0';
	/* kernfs hands at most a page to the store function. */
	klen = len < (size_t)z->pagesz ? len : (size_t)z->pagesz;
	saved = buf[klen];
	buf[klen] = '\0';
	want = f->writable ? rule_sysfs(z, f->name, buf, klen, false) : -EACCES;
	if (!want && !strcmp(f->name, "floor_ms")) {
		uint64_t v;

		/* Keep the clock near the wall clock: refuse far floors. */
		if (!parse_kstrtoull(buf, &v) && tame_floor(z, v) != v) {
			buf[0] = 'z';
			want = -EINVAL;
		}
	}

	fresh = !f->writable || chance(z, 25);
	fd = fresh ? open(path, O_WRONLY | O_CLOEXEC) : f->wfd;
	if (fd < 0) {
		if (f->writable || errno != EACCES)
			fz_fail(z, "open %s for writing: %s", path, strerror(errno));
		return;
	}
	if (!f->writable) {
		fz_fail(z, "%s opened for writing", path);
		close(fd);
		return;
	}
	errno = 0;
	buf[klen] = saved;
	ret = fresh ? write(fd, buf, len) : pwrite(fd, buf, len, 0);
	err = errno;
	if (fresh)
		close(fd);
	buf[klen] = '\0';
	if (ret >= 0 && !want && (size_t)ret == klen) {
		if (klen)
			z->accepted++;
		rule_sysfs(z, f->name, buf, klen, true);
		return;
	}
	if (ret >= 0 || err != -want)
		fz_fail(z, "write(%s, \"%.40s\" (%zu bytes)): %ld errno %d (%s), expected %d (%s)",
			f->name, buf, len, ret, err, strerror(err), -want, strerror(-want));
}

static int list_sysfs(struct fz *z, const char *sub)
{
	char dir[160];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), SF_SYSFS "%s%s", *sub ? "/" : "", sub);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && z->nfiles < MAX_FILES) {
		struct sysfs_file *f = &z->files[z->nfiles];
		char path[400];
		struct stat st;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "uevent") ||
		    !strcmp(de->d_name, "dev"))
			continue;
		snprintf(f->name, sizeof(f->name), "%s%s%s", sub, *sub ? "/" : "", de->d_name);
		snprintf(path, sizeof(path), SF_SYSFS "/%s", f->name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		f->writable = st.st_mode & 0200;
		f->rfd = open(path, O_RDONLY | O_CLOEXEC);
		f->wfd = f->writable ? open(path, O_WRONLY | O_CLOEXEC) : -1;
		if (f->rfd < 0 || (f->writable && f->wfd < 0))
			return -errno;
		z->nfiles++;
	}
	closedir(d);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The test                                                            */
/* ------------------------------------------------------------------ */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	uint64_t v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return def;
	return v;
}

FIXTURE(fz) {
	struct fz z;
};

FIXTURE_SETUP(fz)
{
	struct fz *z = &self->z;
	struct snowflake_config def;
	uint64_t id;

	memset(z, 0, sizeof(*z));
	z->md = _metadata;
	z->fd = z->fd_nb = z->fd_wr = -1;
	z->pagesz = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, sf_reload_defaults());

	z->rw_len = RW_PAGES * z->pagesz;
	z->rw = mmap(NULL, z->rw_len + z->pagesz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, z->rw);
	ASSERT_EQ(0, mprotect(z->rw + z->rw_len, z->pagesz, PROT_NONE));
	z->ro = mmap(NULL, 2 * z->pagesz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, z->ro);
	memset(z->ro, 0x5a, z->pagesz);
	ASSERT_EQ(0, mprotect(z->ro, z->pagesz, PROT_READ));
	ASSERT_EQ(0, mprotect(z->ro + z->pagesz, z->pagesz, PROT_NONE));
	z->none = mmap(NULL, z->pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, z->none);
	z->hole = mmap(NULL, z->pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, z->hole);
	ASSERT_EQ(0, munmap(z->hole, z->pagesz));
	z->scratch = malloc(z->rw_len);
	ASSERT_NE(NULL, z->scratch);

	z->fd = sf_open(O_RDONLY);
	ASSERT_LE(0, z->fd);
	z->fd_nb = sf_open(O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, z->fd_nb);
	z->fd_wr = sf_open(O_WRONLY);
	ASSERT_LE(0, z->fd_wr);

	ASSERT_EQ(0, list_sysfs(z, ""));
	ASSERT_EQ(0, list_sysfs(z, "statistics"));
	ASSERT_LE(4, z->nfiles);

	/* One ID: the layout is fixed from now on. */
	ASSERT_EQ(0, sf_read1(z->fd, &id));
	z->max_id = id;
	z->delivered = 1;
	z->reads_ok = 1;
	ASSERT_EQ(0, sf_get_config(z->fd, &z->cfg));
	sf_default_config(&def);
	ASSERT_TRUE(sf_config_eq(&def, &z->cfg));
	z->floor = 0;
	z->ceiling = SNOWFLAKE_NO_CEILING;
	z->floor_band = sf_real_ms() + DAY_MS;
	z->ts_end_ms = z->cfg.epoch_ms + sf_mask(z->cfg.timestamp_bits) * z->cfg.time_unit_ms;
}

FIXTURE_TEARDOWN(fz)
{
	if (self->z.fd >= 0)
		close(self->z.fd);
	if (self->z.fd_nb >= 0)
		close(self->z.fd_nb);
	if (self->z.fd_wr >= 0)
		close(self->z.fd_wr);
	free(self->z.scratch);
	for (int i = 0; i < self->z.nfiles; i++) {
		close(self->z.files[i].rfd);
		if (self->z.files[i].wfd >= 0)
			close(self->z.files[i].wfd);
	}
}

/* The state the module shows must be the one the accepted calls imply. */
static void check_final_state(struct __test_metadata *_metadata, struct fz *z)
{
	struct snowflake_config cfg;
	struct snowflake_stats st;
	struct snowflake_floor fl;

	ASSERT_EQ(0, sf_get_config(z->fd, &cfg));
	EXPECT_TRUE(sf_config_eq(&z->cfg, &cfg))
		TH_LOG("config: dc %u worker %u flags %#x, expected dc %u worker %u flags %#x",
		       cfg.datacenter_id, cfg.worker_id, cfg.flags, z->cfg.datacenter_id,
		       z->cfg.worker_id, z->cfg.flags);
	ASSERT_EQ(0, sf_get_floor(z->fd, &fl));
	EXPECT_EQ(z->floor, fl.floor_ms);
	EXPECT_EQ(z->floor, sf_sysfs_u64("floor_ms"));
	{
		uint64_t ceiling = 0;

		EXPECT_EQ(0, sf_sysfs_read_u64("lease_ceiling_ms", &ceiling));
		EXPECT_EQ(z->ceiling, ceiling);
		EXPECT_EQ(0, sf_sysfs_u64("statistics/lease_ceiling_hits"));
	}
	EXPECT_EQ(z->cfg.worker_id, sf_sysfs_u64("worker_id"));
	EXPECT_EQ(z->cfg.datacenter_id, sf_sysfs_u64("datacenter_id"));
	EXPECT_EQ(!!(z->cfg.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE),
		  sf_sysfs_u64("random_sequence"));
	ASSERT_EQ(0, sf_get_stats(z->fd, &st));
	EXPECT_EQ(z->delivered, st.ids_issued);
	EXPECT_EQ(z->reads_ok, st.reads);
	EXPECT_EQ(z->eagain, st.eagain);
#ifdef SNOWFLAKE_IOC_SET_FENCE
	{
		struct snowflake_fence fe;

		memset(&fe, 0xcc, sizeof(fe));
		ASSERT_EQ(0, ioctl(z->fd, SNOWFLAKE_IOC_GET_FENCE, &fe));
		EXPECT_EQ(z->fenced, !!(fe.flags & SNOWFLAKE_FENCE_ON));
		memset(&fe, 0, sizeof(fe));
		ASSERT_EQ(0, ioctl(z->fd, SNOWFLAKE_IOC_SET_FENCE, &fe));
		z->fenced = false;
	}
#endif
}

TEST_F_TIMEOUT(fz, random_calls, 1800)
{
	struct fz *z = &self->z;
	uint64_t seed = env_u64("SNOWFLAKE_FUZZ_SEED", 0);
	uint64_t calls = env_u64("SNOWFLAKE_FUZZ_CALLS", DEFAULT_CALLS);
	uint64_t t0 = sf_mono_ns(), i, *ids;
	int n;

	if (!seed)
		seed = sf_mono_ns() ^ ((uint64_t)getpid() << 32) ^ sf_real_ms();
	z->rng = seed | 1;
	printf("# fuzz: seed %" PRIu64 " (SNOWFLAKE_FUZZ_SEED), %" PRIu64
	       " calls (SNOWFLAKE_FUZZ_CALLS), %d sysfs files\n", seed, calls, z->nfiles);
	fflush(stdout);

	for (i = 0; i < calls; i++) {
		uint64_t op = rnd_below(z, 100), t = sf_mono_ns();

		z->calls = i;
		if (op < 50) {
			fz_ioctl(z);
			z->ns_ioctl += sf_mono_ns() - t;
		} else if (op < 93) {
			if (op < 70)
				fz_read(z);
			else if (op < 88)
				fz_readv(z);
			else
				fz_refused(z);
			z->ns_read += sf_mono_ns() - t;
		} else {
			fz_sysfs(z);
			z->ns_sysfs += sf_mono_ns() - t;
		}
		if (z->failures > MAX_REPORTS)
			break;
		if ((i + 1) % 100000 == 0 && i + 1 < calls) {
			printf("# fuzz: %" PRIu64 " calls, %" PRIu64 " s\n", i + 1,
			       (uint64_t)((sf_mono_ns() - t0) / NSEC_PER_SEC));
			fflush(stdout);
		}
	}
	printf("# fuzz: %" PRIu64 " calls (ioctl %" PRIu64 ", read %" PRIu64 ", sysfs %"
	       PRIu64 "), %" PRIu64 " accepted, %" PRIu64 " IDs, %" PRIu64 " failed; %" PRIu64
	       " s\n", z->n_ioctl + z->n_read + z->n_sysfs, z->n_ioctl, z->n_read, z->n_sysfs,
	       z->accepted, z->delivered, z->failures, (uint64_t)((sf_mono_ns() - t0) / NSEC_PER_SEC));
	printf("# fuzz: time in ioctl %" PRIu64 " s, read %" PRIu64 " s, sysfs %" PRIu64 " s\n",
	       (uint64_t)(z->ns_ioctl / NSEC_PER_SEC), (uint64_t)(z->ns_read / NSEC_PER_SEC),
	       (uint64_t)(z->ns_sysfs / NSEC_PER_SEC));
	printf("# fuzz: end state: datacenter %u, worker %u, random_sequence %u, floor %" PRIu64
	       ", ceiling %" PRIu64 " (%" PRIu64 " windows accepted)\n", z->cfg.datacenter_id,
	       z->cfg.worker_id, z->cfg.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE, z->floor,
	       z->ceiling, z->windows);
	EXPECT_EQ(0, z->failures) TH_LOG("seed %" PRIu64, seed);
	EXPECT_LE(calls, z->n_ioctl + z->n_read + z->n_sysfs);

	check_final_state(_metadata, z);

	/* Normal reads: unique and strictly increasing, above all earlier IDs. */
	ids = (uint64_t *)z->scratch;
	for (i = 0; i < FINAL_IDS; i += n) {
		size_t want = 1 + rnd_below(z, 512);

		if (want > FINAL_IDS - i)
			want = FINAL_IDS - i;
		n = (int)sf_read_ids(z->fd, ids, want);
		ASSERT_LT(0, n) TH_LOG("read: %s", strerror(-n));
		check_ids(z, (uint8_t *)ids, (size_t)n * 8, "final read");
	}
	EXPECT_EQ(0, z->failures);
	printf("# fuzz: %d more IDs unique and increasing\n", FINAL_IDS);
}

SF_TEST_MAIN()
