// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection: when any slab allocation made while loading the module
 * fails, the load fails cleanly (no /dev/snowflake nor /dev/uuidv7, no sysfs
 * directory of the devices or of the module, not in /proc/modules) and the next load
 * works; kmemleak (debug kernel) then finds nothing of ours.
 *
 * failslab with the per-task fail-nth of the loading thread: the Nth slab
 * allocation of one init_module() call fails, for every N from before
 * snowflake_init() starts (the loader's allocations up to a load whose
 * init refuses a bad parameter, less a margin for that failure path's own)
 * until a load makes fewer than N allocations: every allocation point of
 * snowflake_init() and of the rest of the load after it fails once.  The
 * loader's earlier allocations (about 330 of a load's 500 on the debug
 * kernel) are the module loader's business, and at about a second a load
 * on that kernel under TCG, trying them all too would triple the time.
 * init_module(), not finit_module(): the latter reads the file with
 * kernel_read_file(), whose vmalloc() prints a warn_alloc() backtrace when
 * its own bookkeeping allocation fails, which the console check would
 * count as a kernel problem; the loader proper is the same.
 *
 * Needs CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS: the debug
 * kernel (scripts/debug-kernel.sh) has them, Debian's kernels do not, and
 * there the test skips.  SNOWFLAKE_REQUIRE_FAILSLAB=1 (set by vmtest.sh on
 * the debug kernel) turns that skip into a failure.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "snowflake_util.h"

/* /dev/uuidv7, from the same module (driver/snowflake_uuid.c). */
#define UU_DEV		"/dev/" SNOWFLAKE_UUID_DEVICE_NAME
#define UU_SYSFS	"/sys/class/misc/" SNOWFLAKE_UUID_DEVICE_NAME

#define FAILSLAB	"/sys/kernel/debug/failslab"
#define FAIL_NTH	"/proc/thread-self/fail-nth"
/* Allocations before snowflake_init() also tried: the failure path's own. */
#define MARGIN		40

/* failslab's global settings this test changes, saved before the tests. */
static char saved_ignore_wait[16], saved_verbose[16];
static bool saved;

static int read_str(const char *path, char *buf, size_t len)
{
	int n = sf_read_path(path, buf, len);

	return n < 0 ? n : 0;
}

static int write_str(const char *path, const char *s)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : 0;
}

static void save_failslab(void)
{
	saved = !read_str(FAILSLAB "/ignore-gfp-wait", saved_ignore_wait,
			  sizeof(saved_ignore_wait)) &&
		!read_str(FAILSLAB "/verbose", saved_verbose, sizeof(saved_verbose));
}

static void restore_failslab(void)
{
	if (!saved)
		return;
	write_str(FAILSLAB "/ignore-gfp-wait", saved_ignore_wait);
	write_str(FAILSLAB "/verbose", saved_verbose);
}

static bool in_proc_modules(void)
{
	char line[256];
	bool found = false;
	FILE *f;

	f = fopen("/proc/modules", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, SF_MODULE " ", strlen(SF_MODULE) + 1))
			found = true;
	fclose(f);
	return found;
}

/* The module is loaded and works: one ID from a fresh open. */
static int works(void)
{
	uint64_t id;
	int fd, ret;

	fd = sf_open(O_RDONLY);
	if (fd < 0)
		return fd;
	ret = sf_read1(fd, &id);
	close(fd);
	return ret;
}

/* Set the calling thread's fail-nth through @fd: 0 or -errno. */
static int set_fail_nth(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(fd, buf, len, 0) == len ? 0 : -errno;
}

/* The thread's fail-nth: 0 once the fault was injected, else what is left. */
static long get_fail_nth(int fd)
{
	char buf[16];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

struct image {
	void *data;
	unsigned long len;
	int nthfd;		/* this thread's fail-nth, opened once */
};

/*
 * init_module() with its @n-th slab allocation failing (none when @n is
 * beyond them): 0 or -errno; *@left is what was left of @n (0: the
 * failure was injected), -1 when fail-nth did not work.
 */
static int load_nth(struct image *im, const char *params, unsigned int n, long *left)
{
	int ret = 0;

	*left = -1;
	if (set_fail_nth(im->nthfd, n))
		return -EIO;
	if (syscall(SYS_init_module, im->data, im->len, params))
		ret = -errno;
	*left = get_fail_nth(im->nthfd);
	if (set_fail_nth(im->nthfd, 0))
		*left = -1;
	return ret;
}

#define FAR	1000000U

FIXTURE(load) {
	int unused;
};

FIXTURE_SETUP(load)
{
}

FIXTURE_TEARDOWN(load)
{
}

TEST_F_TIMEOUT(load, failslab_every_allocation, 1800)
{
	unsigned int n, first, total, failed = 0, tolerated = 0, errs[256] = { 0 };
	const char *require = getenv("SNOWFLAKE_REQUIRE_FAILSLAB");
	bool clean_load = false;
	char errlist[512] = "";
	struct image im;
	struct stat st;
	size_t len = 0;
	int kofd, ret, e;
	long left;

	if (access(FAILSLAB "/ignore-gfp-wait", W_OK) || access(FAIL_NTH, W_OK)) {
		if (require && !strcmp(require, "1"))
			ASSERT_TRUE(false)
				TH_LOG("SNOWFLAKE_REQUIRE_FAILSLAB=1 but this kernel has no failslab (%s, %s)",
				       FAILSLAB, FAIL_NTH);
		SKIP(return, "no failslab on this kernel (%s, %s: needs CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS; the debug kernel lane runs this)",
		     FAILSLAB, FAIL_NTH);
	}
	ASSERT_TRUE(saved);
	/* Count GFP_KERNEL allocations too; no stack dump per injected failure. */
	ASSERT_EQ(0, write_str(FAILSLAB "/ignore-gfp-wait", "N"));
	ASSERT_EQ(0, write_str(FAILSLAB "/verbose", "0"));

	ASSERT_EQ(0, sf_unload());
	kofd = open(sf_ko_path(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, kofd) TH_LOG("%s: %s", sf_ko_path(), strerror(errno));
	ASSERT_EQ(0, fstat(kofd, &st));
	im.len = st.st_size;
	im.data = mmap(NULL, im.len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, kofd, 0);
	ASSERT_NE(MAP_FAILED, im.data);
	/* Opened once: the open itself allocates. */
	im.nthfd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, im.nthfd) TH_LOG("%s: %s", FAIL_NTH, strerror(errno));

	/*
	 * Where snowflake_init() starts: a load whose init refuses a bad
	 * parameter before allocating makes the loader's allocations, its
	 * failure path's, and no more.
	 */
	ret = load_nth(&im, "timestamp_bits=0", FAR, &left);
	ASSERT_EQ(-EINVAL, ret);
	ASSERT_LT(0, left);
	first = FAR - left;
	ret = load_nth(&im, "", FAR, &left);
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(-ret));
	ASSERT_LT(0, left);
	total = FAR - left;
	ASSERT_EQ(0, sf_unload());
	ksft_print_msg("failslab: a load makes %u slab allocations, %u of them before snowflake_init() returns an error\n",
		       total, first);
	/* A margin for the failure path's own allocations. */
	first = first > MARGIN ? first - MARGIN : 1;

	for (n = first; n <= total + MARGIN && !clean_load; n++) {
		ret = load_nth(&im, "", n, &left);
		ASSERT_LE(0, left) TH_LOG("fail-nth does not work");

		if (left > 0) {
			/* Fewer than n allocations: nothing failed. */
			ASSERT_EQ(0, ret) TH_LOG("allocation %u: nothing injected, load failed: %s",
						 n, strerror(-ret));
			clean_load = true;
		} else if (ret) {
			/* The load failed: nothing of it may remain. */
			failed++;
			errs[-ret & 255]++;
			EXPECT_FALSE(sf_path_exists(SF_DEV)) TH_LOG("allocation %u", n);
			EXPECT_FALSE(sf_path_exists(SF_SYSFS)) TH_LOG("allocation %u", n);
			EXPECT_FALSE(sf_path_exists(SF_MODSYSFS)) TH_LOG("allocation %u", n);
			/* Nor of /dev/uuidv7, registered after /dev/snowflake. */
			EXPECT_FALSE(sf_path_exists(UU_DEV)) TH_LOG("allocation %u", n);
			EXPECT_FALSE(sf_path_exists(UU_SYSFS)) TH_LOG("allocation %u", n);
			EXPECT_FALSE(in_proc_modules()) TH_LOG("allocation %u", n);
			/* Out of memory is the one honest answer. */
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("allocation %u: load failed with %s",
						       n, strerror(-ret));
			if (_metadata->exit_code)
				break;
			continue;
		} else {
			/* The kernel got by without it (kmemleak's pool, say). */
			tolerated++;
		}
		/* Loaded: it must work and unload. */
		EXPECT_TRUE(sf_path_exists(SF_DEV)) TH_LOG("allocation %u", n);
		EXPECT_TRUE(sf_path_exists(UU_DEV)) TH_LOG("allocation %u", n);
		ret = works();
		EXPECT_EQ(0, ret) TH_LOG("allocation %u: %s", n, strerror(-ret));
		ASSERT_EQ(0, sf_unload()) TH_LOG("allocation %u", n);
		EXPECT_FALSE(sf_path_exists(SF_DEV)) TH_LOG("allocation %u", n);
		EXPECT_FALSE(sf_path_exists(SF_SYSFS)) TH_LOG("allocation %u", n);
		EXPECT_FALSE(sf_path_exists(UU_DEV)) TH_LOG("allocation %u", n);
		EXPECT_FALSE(sf_path_exists(UU_SYSFS)) TH_LOG("allocation %u", n);
		if (_metadata->exit_code)
			break;
	}
	close(im.nthfd);
	munmap(im.data, im.len);
	close(kofd);
	restore_failslab();
	ASSERT_TRUE(clean_load) TH_LOG("no load without an injected failure up to %u", n);

	/* The next normal load works. */
	ASSERT_EQ(0, sf_reload_defaults());
	ASSERT_EQ(0, works());

	for (e = 0; e < 256; e++)
		if (errs[e])
			len += snprintf(errlist + len, sizeof(errlist) - len, "%s%s %u",
					len ? ", " : "", strerror(e), errs[e]);
	ksft_print_msg("failslab: %u allocation failure points, all loads failed cleanly (allocations %u..%u of the %u of a load, from before snowflake_init() on; %u failed the load: %s; %u the kernel got by without: loaded, worked, unloaded)\n",
		       failed + tolerated, first, n - 2, total, failed, len ? errlist : "-",
		       tolerated);
	EXPECT_LT(0, failed);
}

SF_TEST_MAIN_HOOKS(save_failslab, restore_failslab)
