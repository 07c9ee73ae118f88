/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the /dev/snowflake selftests.
 *
 * Every test binary runs inside the guest as root with the module loaded
 * with default parameters, and must leave it that way: SF_TEST_MAIN()
 * reloads the module with default parameters after the tests ran, whatever
 * they did (a test killed by the harness' timeout never runs its teardown).
 *
 * The helpers return 0 (or a count) on success and -errno on failure, and
 * never use ASSERT_*(), so they can be called from forked children too.
 * Forked children must not use ASSERT_*() (it longjmp()s into the harness'
 * frames of the parent's copy); they use CHILD_CHECK() and exit non-zero.
 */
#ifndef SNOWFLAKE_UTIL_H
#define SNOWFLAKE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <linux/snowflake.h>

#define SF_DEV		"/dev/snowflake"
#define SF_SYSFS	"/sys/class/misc/snowflake"
#define SF_MODSYSFS	"/sys/module/snowflake"
#define SF_MODULE	"snowflake"
#define SF_KO_DEFAULT	"/snowflake.ko"

#define SF_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define MSEC_PER_SEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL
#define HOUR_MS		3600000ULL

/* ------------------------------------------------------------------ */
/* Module loading                                                      */
/* ------------------------------------------------------------------ */

static inline const char *sf_ko_path(void)
{
	const char *p = getenv("SNOWFLAKE_KO");

	return p && *p ? p : SF_KO_DEFAULT;
}

/* One delete_module(O_NONBLOCK) call: 0 or -errno. */
static inline int sf_try_unload(void)
{
	if (syscall(SYS_delete_module, SF_MODULE, O_NONBLOCK))
		return -errno;
	return 0;
}

/*
 * Unload the module: 0, or -ENOENT when it was not loaded, or -errno.
 * Retries for a while when it is still in use: a file of a process that
 * was just killed may still be on its way to release.
 */
static inline int sf_unload(void)
{
	int ret = 0;
	int i;

	for (i = 0; i < 200; i++) {
		ret = sf_try_unload();
		if (ret != -EAGAIN && ret != -EBUSY)
			return ret;
		usleep(10000);
	}
	return ret;
}

/* finit_module() with @params: 0 or -errno. */
static inline int sf_load(const char *params)
{
	int fd, ret = 0;

	fd = open(sf_ko_path(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params ? params : "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

/* Unload (if loaded) and load with @params: 0 or -errno. */
static inline int sf_reload(const char *params)
{
	int ret = sf_unload();

	if (ret && ret != -ENOENT)
		return ret;
	return sf_load(params);
}

static inline int __attribute__((format(printf, 1, 2)))
sf_reload_fmt(const char *fmt, ...)
{
	char params[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(params, sizeof(params), fmt, ap);
	va_end(ap);
	return sf_reload(params);
}

static inline int sf_reload_defaults(void)
{
	return sf_reload("");
}

static inline bool sf_path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Open /dev/snowflake with @flags: the fd or -errno. */
static inline int sf_open(int flags)
{
	int fd = open(SF_DEV, flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * The node as packaging/udev/60-snowflake.rules leaves it: 0460, group
 * @admins (snowflake-admin: read and write), and an ACL entry giving the
 * group @readers (snowflake) read, which `setfacl -m g:snowflake:r` adds.
 * 0, or -errno (-EOPNOTSUPP: no POSIX ACLs on this /dev).  sf_node_reset()
 * puts back the module's 0444 root:root.
 */
struct sf_acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static inline int sf_node_set_udev_acl(gid_t readers, gid_t admins)
{
	struct {
		uint32_t version;
		struct sf_acl_entry e[5];
	} acl = {
		.version = 2,		/* POSIX_ACL_XATTR_VERSION */
		.e = {
			{ 0x01, 4, (uint32_t)-1 },	/* user::r */
			{ 0x04, 6, (uint32_t)-1 },	/* group::rw (admins) */
			{ 0x08, 4, readers },		/* group:readers:r */
			{ 0x10, 6, (uint32_t)-1 },	/* mask::rw */
			{ 0x20, 0, (uint32_t)-1 },	/* other::- */
		},
	};

	if (chown(SF_DEV, 0, admins) || chmod(SF_DEV, 0460))
		return -errno;
	if (setxattr(SF_DEV, "system.posix_acl_access", &acl, sizeof(acl), 0))
		return -errno;
	return 0;
}

static inline void sf_node_reset(void)
{
	removexattr(SF_DEV, "system.posix_acl_access");
	if (chown(SF_DEV, 0, 0) || chmod(SF_DEV, 0444))
		perror("restoring " SF_DEV);
}

/* ------------------------------------------------------------------ */
/* sysfs                                                               */
/* ------------------------------------------------------------------ */

/* Read a small file (sysfs, procfs, debugfs) into @buf: length or -errno. */
static inline int sf_read_path(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = '\0';
	return n;
}

/* Read a whole sysfs file of the device into @buf: length or -errno. */
static inline int sf_sysfs_read_str(const char *name, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), SF_SYSFS "/%s", name);
	return sf_read_path(path, buf, len);
}

/*
 * Parse "<decimal>\n" exactly (one value per file, newline-terminated):
 * 0, or -EPROTO when the format is wrong.
 */
static inline int sf_parse_u64_line(const char *buf, uint64_t *val)
{
	const char *p = buf;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return -EPROTO;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EPROTO;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p[0] != '\n' || p[1] != '\0')
		return -EPROTO;
	*val = v;
	return 0;
}

/* Read one number from a sysfs file of the device: 0 or -errno/-EPROTO. */
static inline int sf_sysfs_read_u64(const char *name, uint64_t *val)
{
	char buf[128];
	int n;

	n = sf_sysfs_read_str(name, buf, sizeof(buf));
	if (n < 0)
		return n;
	return sf_parse_u64_line(buf, val);
}

/* Read a sysfs number, or UINT64_MAX on any error (for EXPECT_EQ()). */
static inline uint64_t sf_sysfs_u64(const char *name)
{
	uint64_t v;

	if (sf_sysfs_read_u64(name, &v))
		return UINT64_MAX;
	return v;
}

/*
 * Write @len bytes of @s to a sysfs file of the device with one write():
 * 0 when all was written, -errno otherwise (-EIO on a short write).
 */
static inline int sf_sysfs_write_len(const char *name, const char *s, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SF_SYSFS "/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		n = -errno;
	else if ((size_t)n != len)
		n = -EIO;
	else
		n = 0;
	close(fd);
	return n;
}

static inline int sf_sysfs_write(const char *name, const char *s)
{
	return sf_sysfs_write_len(name, s, strlen(s));
}

static inline int sf_sysfs_write_u64(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return sf_sysfs_write(name, buf);
}

/* ------------------------------------------------------------------ */
/* ioctls (output structures are poisoned first)                        */
/* ------------------------------------------------------------------ */

static inline int sf_get_config(int fd, struct snowflake_config *c)
{
	memset(c, 0xcc, sizeof(*c));
	return ioctl(fd, SNOWFLAKE_IOC_GET_CONFIG, c) ? -errno : 0;
}

static inline int sf_set_config(int fd, const struct snowflake_config *c)
{
	struct snowflake_config copy = *c;

	return ioctl(fd, SNOWFLAKE_IOC_SET_CONFIG, &copy) ? -errno : 0;
}

static inline int sf_get_stats(int fd, struct snowflake_stats *s)
{
	memset(s, 0xcc, sizeof(*s));
	return ioctl(fd, SNOWFLAKE_IOC_GET_STATS, s) ? -errno : 0;
}

static inline int sf_get_floor(int fd, struct snowflake_floor *f)
{
	memset(f, 0xcc, sizeof(*f));
	return ioctl(fd, SNOWFLAKE_IOC_GET_FLOOR, f) ? -errno : 0;
}

static inline int sf_set_floor(int fd, uint64_t floor_ms)
{
	struct snowflake_floor f = { .floor_ms = floor_ms };

	return ioctl(fd, SNOWFLAKE_IOC_SET_FLOOR, &f) ? -errno : 0;
}

static inline int sf_set_ids(int fd, uint32_t datacenter_id, uint32_t worker_id)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
	};

	return ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids) ? -errno : 0;
}

/* SET_IDS that assigns the worker id: ends strict mode's refusal. */
static inline int sf_assign_ids(int fd, uint32_t datacenter_id, uint32_t worker_id)
{
	struct snowflake_ids ids = {
		.datacenter_id = datacenter_id,
		.worker_id = worker_id,
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER,
	};

	return ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids) ? -errno : 0;
}

/* GET_CONFIG on a fresh fd: for code that has no fd at hand. */
static inline int sf_get_config_dev(struct snowflake_config *c)
{
	int fd = sf_open(O_RDONLY), ret;

	if (fd < 0)
		return fd;
	ret = sf_get_config(fd, c);
	close(fd);
	return ret;
}

static inline int sf_get_stats_dev(struct snowflake_stats *s)
{
	int fd = sf_open(O_RDONLY), ret;

	if (fd < 0)
		return fd;
	ret = sf_get_stats(fd, s);
	close(fd);
	return ret;
}

static inline bool sf_config_eq(const struct snowflake_config *a,
				const struct snowflake_config *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static inline void sf_default_config(struct snowflake_config *c)
{
	memset(c, 0, sizeof(*c));
	c->epoch_ms = SNOWFLAKE_TWITTER_EPOCH_MS;
	c->time_unit_ms = SNOWFLAKE_DEFAULT_TIME_UNIT_MS;
	c->timestamp_bits = SNOWFLAKE_DEFAULT_TIMESTAMP_BITS;
	c->datacenter_bits = SNOWFLAKE_DEFAULT_DATACENTER_BITS;
	c->worker_bits = SNOWFLAKE_DEFAULT_WORKER_BITS;
	c->sequence_bits = SNOWFLAKE_DEFAULT_SEQUENCE_BITS;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */

struct sf_id {
	uint64_t ts;		/* timestamp field, in time units */
	uint64_t dc;
	uint64_t worker;
	uint64_t seq;
	uint64_t ms;		/* Unix ms of the ID: epoch + ts * unit */
	uint64_t high;		/* bits above the timestamp field: must be 0 */
};

static inline uint64_t sf_mask(unsigned int bits)
{
	return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

static inline struct sf_id sf_decode(const struct snowflake_config *c, uint64_t id)
{
	unsigned int wshift = c->sequence_bits;
	unsigned int dshift = wshift + c->worker_bits;
	unsigned int tshift = dshift + c->datacenter_bits;
	unsigned int hshift = tshift + c->timestamp_bits;
	struct sf_id f;

	f.seq = id & sf_mask(c->sequence_bits);
	f.worker = (id >> wshift) & sf_mask(c->worker_bits);
	f.dc = (id >> dshift) & sf_mask(c->datacenter_bits);
	f.ts = tshift < 64 ? (id >> tshift) & sf_mask(c->timestamp_bits) : 0;
	f.high = hshift < 64 ? id >> hshift : 0;
	f.ms = c->epoch_ms + f.ts * c->time_unit_ms;
	return f;
}

/* The tick (timestamp value) that Unix time @ms falls in. */
static inline uint64_t sf_tick_of(const struct snowflake_config *c, uint64_t ms)
{
	return (ms - c->epoch_ms) / c->time_unit_ms;
}

/* Build an ID from fields (for tests of the layout). */
static inline uint64_t sf_encode(const struct snowflake_config *c, uint64_t ts,
				 uint64_t dc, uint64_t worker, uint64_t seq)
{
	unsigned int wshift = c->sequence_bits;
	unsigned int dshift = wshift + c->worker_bits;
	unsigned int tshift = dshift + c->datacenter_bits;

	return (ts << tshift) | (dc << dshift) | (worker << wshift) | seq;
}

/* ------------------------------------------------------------------ */
/* Time                                                                */
/* ------------------------------------------------------------------ */

static inline uint64_t sf_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t sf_mono_ns(void)
{
	return sf_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t sf_real_ms(void)
{
	return sf_clock_ns(CLOCK_REALTIME) / NSEC_PER_MSEC;
}

static inline void sf_sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

/*
 * read() up to @n IDs: the number of IDs read, or -errno; -EPROTO when
 * the byte count is not a positive multiple of 8 or exceeds the request.
 */
static inline ssize_t sf_read_ids(int fd, uint64_t *ids, size_t n)
{
	ssize_t ret = read(fd, ids, n * sizeof(*ids));

	if (ret < 0)
		return -errno;
	if (ret == 0 || ret % 8 || (size_t)ret > n * sizeof(*ids))
		return -EPROTO;
	return ret / 8;
}

static inline int sf_read1(int fd, uint64_t *id)
{
	ssize_t ret = sf_read_ids(fd, id, 1);

	return ret < 0 ? (int)ret : 0;
}

static inline int sf_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

/* poll() @fd for POLLIN: revents, 0 on timeout, -errno on error. */
static inline int sf_poll_in(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDNORM };
	int ret = poll(&pfd, 1, timeout_ms);

	if (ret < 0)
		return -errno;
	return ret ? pfd.revents : 0;
}

/* True when all @len bytes at @p are @c. */
static inline bool sf_all_bytes(const void *p, size_t len, unsigned char c)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != c)
			return false;
	return true;
}

/*
 * EXPECT that @expr (a syscall) fails with -1 and errno @err.  errno is
 * saved before any EXPECT can clobber it.
 */
#define EXPECT_ERRNO(err, expr) do {					\
	long __sf_r;							\
	int __sf_e;							\
									\
	errno = 0;							\
	__sf_r = (long)(expr);						\
	__sf_e = errno;							\
	EXPECT_EQ(-1, __sf_r) TH_LOG("%s returned %ld", #expr, __sf_r);	\
	EXPECT_EQ(err, __sf_e) TH_LOG("%s: errno %d (%s), wanted %d (%s)", \
				      #expr, __sf_e, strerror(__sf_e),	\
				      err, strerror(err));		\
} while (0)

#define ASSERT_ERRNO(err, expr) do {					\
	long __sf_r;							\
	int __sf_e;							\
									\
	errno = 0;							\
	__sf_r = (long)(expr);						\
	__sf_e = errno;							\
	ASSERT_EQ(-1, __sf_r) TH_LOG("%s returned %ld", #expr, __sf_r);	\
	ASSERT_EQ(err, __sf_e) TH_LOG("%s: errno %d (%s), wanted %d (%s)", \
				      #expr, __sf_e, strerror(__sf_e),	\
				      err, strerror(err));		\
} while (0)

/*
 * Every way of reading @fd fails with ENOTCONN (blocking, O_NONBLOCK: not
 * EAGAIN, waiting would not help; readv; RWF_NOWAIT), poll shows nothing,
 * and the counters say so: five refused reads, nothing issued or waited
 * for.  For the states that refuse reads: strict mode, the fence.
 */
static inline void sf_expect_reads_refused(struct __test_metadata *_metadata, int fd)
{
	struct snowflake_stats st0, st1;
	uint64_t ids[4];
	struct iovec iov = { .iov_base = ids, .iov_len = sizeof(ids) };
	int r;

	ASSERT_EQ(0, sf_get_stats(fd, &st0));
	ASSERT_EQ(0, sf_set_nonblock(fd, false));
	EXPECT_ERRNO(ENOTCONN, read(fd, ids, 8));
	EXPECT_ERRNO(ENOTCONN, read(fd, ids, sizeof(ids)));
	EXPECT_ERRNO(ENOTCONN, readv(fd, &iov, 1));
	EXPECT_ERRNO(ENOTCONN, preadv2(fd, &iov, 1, -1, RWF_NOWAIT));
	ASSERT_EQ(0, sf_set_nonblock(fd, true));
	EXPECT_ERRNO(ENOTCONN, read(fd, ids, 8));
	ASSERT_EQ(0, sf_set_nonblock(fd, false));
	r = sf_poll_in(fd, 0);
	EXPECT_EQ(0, r & (POLLIN | POLLRDNORM)) TH_LOG("poll: %#x", r);
	r = sf_poll_in(fd, 50);
	EXPECT_EQ(0, r & (POLLIN | POLLRDNORM)) TH_LOG("poll: %#x", r);

	ASSERT_EQ(0, sf_get_stats(fd, &st1));
	EXPECT_EQ(st0.refused_reads + 5, st1.refused_reads);
	EXPECT_EQ(st0.ids_issued, st1.ids_issued);
	EXPECT_EQ(st0.reads, st1.reads);
	EXPECT_EQ(st0.eagain, st1.eagain);
	EXPECT_EQ(st1.refused_reads, sf_sysfs_u64("statistics/refused_reads"));
}

/* ------------------------------------------------------------------ */
/* Children                                                            */
/* ------------------------------------------------------------------ */

#define CHILD_FAIL(fmt, ...) do {					\
	fprintf(stderr, "# child %d: %s:%d: " fmt "\n", (int)getpid(),	\
		__FILE__, __LINE__, ##__VA_ARGS__);			\
	_exit(1);							\
} while (0)

#define CHILD_CHECK(cond, fmt, ...) do {				\
	if (!(cond))							\
		CHILD_FAIL("check '%s' failed: " fmt, #cond, ##__VA_ARGS__); \
} while (0)

/* Wait for @pid: its exit code, 128 + signal when killed, -1 on error. */
static inline int sf_wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* Shared anonymous memory for results of forked children. */
static inline void *sf_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static inline int sf_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ */
/* main()                                                              */
/* ------------------------------------------------------------------ */

/* Leave the module loaded with default parameters: 0 or -errno. */
static inline int sf_final_reload(void)
{
	int ret = sf_reload_defaults();

	if (ret)
		ksft_print_msg("cannot reload %s with default parameters: %s\n",
			       sf_ko_path(), strerror(-ret));
	else
		ksft_print_msg("reloaded snowflake with default parameters\n");
	return ret;
}

static void (*sf_after_hook)(void);

/*
 * SIGTERM/SIGINT (an outer timeout): kill the running test's process group
 * (its forked readers would keep the module busy), run the after hook,
 * reload the module with default parameters, exit.
 */
static inline void sf_on_term(int sig)
{
	(void)sig;
	if (__active_test && __active_test->pid > 0)
		kill(-__active_test->pid, SIGKILL);
	usleep(200000);
	if (sf_after_hook)
		sf_after_hook();
	sf_reload_defaults();
	_exit(KSFT_FAIL);
}

static inline void sf_install_term_handler(void (*after)(void))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sf_on_term;
	sigemptyset(&sa.sa_mask);
	sf_after_hook = after;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static pid_t sf_main_pid;

/*
 * atexit() of the main process: test_harness_run() does not return (it
 * ends with ksft_exit()), so the after hook and the final reload run here.
 * Forked children that call exit() skip it.
 */
static inline void sf_at_exit(void)
{
	if (getpid() != sf_main_pid)
		return;
	if (sf_after_hook)
		sf_after_hook();
	if (sf_final_reload()) {
		fflush(NULL);
		_exit(KSFT_FAIL);
	}
}

/*
 * main(): run the tests, then (at exit) reload the module with default
 * parameters.  @before and @after run in the main process around the
 * tests (may be NULL).
 */
#define SF_TEST_MAIN_HOOKS(before, after)				\
	int main(int argc, char **argv)					\
	{								\
		void (*__before)(void) = (before);			\
									\
		if (__before)						\
			__before();					\
		sf_main_pid = getpid();					\
		sf_install_term_handler(after);				\
		atexit(sf_at_exit);					\
		return test_harness_run(argc, argv);			\
	}

#define SF_TEST_MAIN() SF_TEST_MAIN_HOOKS(NULL, NULL)

#endif /* SNOWFLAKE_UTIL_H */
