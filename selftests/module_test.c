// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifetime: an open file keeps the module loaded (delete_module()
 * with O_NONBLOCK fails with EWOULDBLOCK, the kernel's answer for a module
 * in use), also while a reader sleeps for the next tick; once the files
 * are closed it unloads and leaves no device behind; reloads start fresh.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

/* The state letter of /proc/<pid>/stat, or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

FIXTURE(mod) {
	int unused;
};

FIXTURE_SETUP(mod)
{
}

FIXTURE_TEARDOWN(mod)
{
}

static void expect_gone(struct __test_metadata *_metadata)
{
	EXPECT_FALSE(sf_path_exists(SF_DEV));
	EXPECT_FALSE(sf_path_exists(SF_SYSFS));
	EXPECT_FALSE(sf_path_exists(SF_MODSYSFS));
	/* /dev/uuidv7 goes with it (driver/snowflake_uuid.c). */
	EXPECT_FALSE(sf_path_exists("/dev/" SNOWFLAKE_UUID_DEVICE_NAME));
	EXPECT_FALSE(sf_path_exists("/sys/class/misc/" SNOWFLAKE_UUID_DEVICE_NAME));
}

/* MODULE_VERSION comes from the top-level VERSION file (Kbuild). */
TEST_F(mod, version_in_sysfs)
{
	unsigned int a, b, c;
	char buf[64], nl, extra;
	int n;

	n = sf_read_path(SF_MODSYSFS "/version", buf, sizeof(buf));
	ASSERT_LT(0, n) TH_LOG("read " SF_MODSYSFS "/version: %s", strerror(-n));
	EXPECT_EQ(4, sscanf(buf, "%u.%u.%u%c%c", &a, &b, &c, &nl, &extra))
		TH_LOG("version \"%s\" is not MAJOR.MINOR.PATCH", buf);
	EXPECT_EQ('\n', nl);
}

TEST_F(mod, unload_refused_while_open)
{
	uint64_t a, b;
	int fd, ret;

	ASSERT_EQ(0, sf_reload_defaults());
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &a));

	ret = sf_try_unload();
	EXPECT_EQ(-EWOULDBLOCK, ret) TH_LOG("delete_module: %s", strerror(-ret));
	/* still there and working */
	EXPECT_TRUE(sf_path_exists(SF_DEV));
	EXPECT_TRUE(sf_path_exists(SF_SYSFS));
	ASSERT_EQ(0, sf_read1(fd, &b));
	EXPECT_LT(a, b);
	EXPECT_EQ(2, sf_sysfs_u64("statistics/ids_issued"));
	close(fd);

	ASSERT_EQ(0, sf_try_unload()) TH_LOG("%s", strerror(errno));
	expect_gone(_metadata);
	EXPECT_EQ(-ENOENT, sf_try_unload());
	ASSERT_EQ(0, sf_load(""));
	fd = sf_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_read1(fd, &a));
	close(fd);
}

/* A file passed to another process keeps the module too. */
TEST_F(mod, unload_refused_while_child_holds_file)
{
	int pipefd[2], fd;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload_defaults());
	ASSERT_EQ(0, pipe(pipefd));
	fd = open(SF_DEV, O_RDONLY);	/* inherited: no O_CLOEXEC needed */
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(pipefd[1]);
		/* hold the file until the parent closes the pipe */
		while (read(pipefd[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(pipefd[0]);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	close(pipefd[1]);
	EXPECT_EQ(0, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/*
 * A reader sleeping for the next tick (one ID a minute) keeps the module
 * loaded; meanwhile the rest of the device works (the sleeper holds no
 * lock); after SIGKILL the module unloads.
 */
TEST_F_TIMEOUT(mod, unload_refused_while_reader_sleeps, 60)
{
	struct snowflake_stats st;
	uint64_t id, buf[2];
	int pipefd[2], fd, i;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=60000"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = sf_open(O_RDONLY);

		close(pipefd[0]);
		CHILD_CHECK(cfd >= 0, "open");
		CHILD_CHECK(read(cfd, &id, 8) == 8, "first read");
		CHILD_CHECK(write(pipefd[1], "r", 1) == 1, "pipe");
		for (;;)	/* sleeps until the next minute, again and again */
			CHILD_CHECK(read(cfd, &id, 8) == 8, "read: %s", strerror(errno));
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	/* wait until the child sleeps */
	for (i = 0; i < 500 && proc_state(pid) != 'S'; i++)
		usleep(10000);
	EXPECT_EQ('S', proc_state(pid));

	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	EXPECT_TRUE(sf_path_exists(SF_DEV));

	/* The device keeps working around the sleeper. */
	fd = sf_open(O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sf_get_stats(fd, &st));
	EXPECT_LE(1, st.ids_issued);
	EXPECT_NE(UINT64_MAX, sf_sysfs_u64("clock_ms"));
	errno = 0;
	if (read(fd, buf, 8) == -1)
		EXPECT_EQ(EAGAIN, errno);	/* else a new minute began */
	ASSERT_EQ(0, sf_set_ids(fd, 1, 1));
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());

	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/* A poller sleeping on an empty tick keeps it too. */
TEST_F_TIMEOUT(mod, unload_refused_while_poller_sleeps, 60)
{
	int pipefd[2], i;
	pid_t pid;
	char c;

	ASSERT_EQ(0, sf_reload("sequence_bits=0 time_unit_ms=60000"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = sf_open(O_RDONLY | O_NONBLOCK);
		struct pollfd pfd = { .fd = cfd, .events = POLLIN };
		uint64_t id;

		close(pipefd[0]);
		CHILD_CHECK(cfd >= 0, "open");
		CHILD_CHECK(read(cfd, &id, 8) == 8, "first read");
		CHILD_CHECK(write(pipefd[1], "r", 1) == 1, "pipe");
		for (;;) {
			poll(&pfd, 1, -1);
			while (read(cfd, &id, 8) == 8)
				;
		}
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	for (i = 0; i < 500 && proc_state(pid) != 'S'; i++)
		usleep(10000);
	EXPECT_EQ(-EWOULDBLOCK, sf_try_unload());
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, sf_wait_child(pid));
	EXPECT_EQ(0, sf_unload());
	expect_gone(_metadata);
	ASSERT_EQ(0, sf_load(""));
}

/*
 * Load/unload cycles: each load starts from scratch.  Ten loads: under the
 * debug kernel on TCG a load takes seconds, and the harness' default of 30 s
 * a test would end a slow run, not a hung one.
 */
TEST_F_TIMEOUT(mod, reload_cycles, 300)
{
	int i;

	for (i = 0; i < 10; i++) {
		struct snowflake_stats st;
		uint64_t id;
		int fd;

		ASSERT_EQ(0, sf_reload(i % 2 ? "worker_id=9" : ""));
		fd = sf_open(O_RDONLY);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, sf_get_stats(fd, &st));
		EXPECT_EQ(0, st.ids_issued);
		EXPECT_EQ(0, st.last_timestamp_ms);
		EXPECT_EQ((uint64_t)(i % 2 ? 9 : 0), sf_sysfs_u64("worker_id"));
		ASSERT_EQ(0, sf_read1(fd, &id));
		close(fd);
	}
	ASSERT_EQ(0, sf_unload());
	expect_gone(_metadata);
	EXPECT_EQ(-ENOENT, sf_unload());
	ASSERT_EQ(0, sf_load(""));
	/* loading twice: EEXIST */
	EXPECT_EQ(-EEXIST, sf_load(""));
}

/*
 * The load/unload lane: 50 cycles of load (with varied valid parameters)
 * -> 4 reader processes (single and batch reads; each reader's IDs strictly
 * increase, all the cycle's IDs are unique and carry the configured node
 * ids) -> rmmod attempted while reader 0 still holds the device (refused
 * with EWOULDBLOCK, the device keeps working) -> reader 0 closes -> rmmod
 * succeeds and leaves nothing behind.
 */
#define LU_CYCLES	50
#define LU_READERS	4
#define LU_READS	50
#define LU_MAX_IDS	(LU_READS * 64)

static const char *const lu_params[] = {
	"",
	"worker_id=3",
	"datacenter_id=7 worker_id=30",
	"worker_bits=8 sequence_bits=9 worker_id=200",
	"random_sequence=1 worker_id=1",
	"time_unit_ms=10 datacenter_id=2 worker_id=5",
	"sequence_bits=4 worker_id=2",
	"strict=1 worker_id=9",
	"epoch_ms=1600000000000 datacenter_id=31 worker_id=31",
	"catchup_threshold_ms=100 datacenter_bits=0 worker_bits=10 worker_id=1000",
};

/* Batch sizes the readers cycle through (IDs per read). */
static const unsigned int lu_batches[] = { 1, 64, 1, 3, 17, 1, 8, 64, 2, 1, 33 };

/*
 * What the device looks like right now, for failure messages: the node
 * (and its dev_t), the sysfs "dev" file, the module's state.
 */
static const char *lu_state(char *buf, size_t len)
{
	char sysdev[32] = "-", modstate[32] = "-";
	struct stat st;
	int n;

	n = sf_sysfs_read_str("dev", sysdev, sizeof(sysdev));
	if (n > 0 && sysdev[n - 1] == '\n')
		sysdev[n - 1] = '\0';
	n = open(SF_MODSYSFS "/initstate", O_RDONLY | O_CLOEXEC);
	if (n >= 0) {
		ssize_t r = read(n, modstate, sizeof(modstate) - 1);

		modstate[r > 0 ? r : 0] = '\0';
		if (r > 0 && modstate[r - 1] == '\n')
			modstate[r - 1] = '\0';
		close(n);
	}
	if (stat(SF_DEV, &st))
		snprintf(buf, len, "%s: %s; %s/dev: %s; module: %s", SF_DEV,
			 strerror(errno), SF_SYSFS, sysdev, modstate);
	else
		snprintf(buf, len, "%s: %u:%u; %s/dev: %s; module: %s", SF_DEV,
			 major(st.st_rdev), minor(st.st_rdev), SF_SYSFS, sysdev,
			 modstate);
	return buf;
}

/*
 * Reader @r of a cycle: LU_READS reads into @ids, the count into @count.
 * Reader 0 (@ready >= 0) then says so on @ready and holds its file until
 * the parent writes to @hold.
 */
static void lu_reader(unsigned int r, uint64_t *ids, uint32_t *count, int ready, int hold)
{
	uint32_t got = 0;
	char state[256];
	char c;
	int fd, i;

	fd = sf_open(O_RDONLY);
	CHILD_CHECK(fd >= 0, "reader %u: open: %s (%s)", r, strerror(-fd),
		    lu_state(state, sizeof(state)));
	for (i = 0; i < LU_READS; i++) {
		unsigned int want = lu_batches[(r + i) % SF_ARRAY_SIZE(lu_batches)];
		ssize_t n = sf_read_ids(fd, ids + got, want);

		CHILD_CHECK(n > 0, "reader %u: read %u: %s", r, want, strerror((int)-n));
		got += n;
		*count = got;
	}
	if (ready >= 0) {
		CHILD_CHECK(write(ready, "r", 1) == 1, "ready pipe");
		CHILD_CHECK(read(hold, &c, 1) == 1, "hold pipe");
	}
	close(fd);
	_exit(0);
}

TEST_F_TIMEOUT(mod, load_unload_50_cycles_with_readers, 900)
{
	const size_t max_ids = LU_READERS * LU_MAX_IDS + 2;
	unsigned long checked = 0;
	uint64_t *ids, *all;
	uint32_t *counts;
	char state[256];
	int cycle;

	ids = sf_shared_alloc(sizeof(*ids) * LU_READERS * LU_MAX_IDS);
	counts = sf_shared_alloc(sizeof(*counts) * LU_READERS);
	all = malloc(sizeof(*all) * max_ids);
	ASSERT_NE(NULL, ids);
	ASSERT_NE(NULL, counts);
	ASSERT_NE(NULL, all);

	ASSERT_EQ(0, sf_unload());
	for (cycle = 0; cycle < LU_CYCLES; cycle++) {
		const char *params = lu_params[cycle % SF_ARRAY_SIZE(lu_params)];
		int ready[2], hold[2], fd, r, ret;
		struct snowflake_config cfg;
		pid_t pids[LU_READERS];
		size_t n = 0, i;
		char c;

		ret = sf_load(params);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: load '%s': %s", cycle, params,
					 strerror(-ret));
		memset(counts, 0, sizeof(*counts) * LU_READERS);
		ASSERT_EQ(0, pipe(ready));
		ASSERT_EQ(0, pipe(hold));
		for (r = 0; r < LU_READERS; r++) {
			pids[r] = fork();
			ASSERT_LE(0, pids[r]);
			if (pids[r] == 0) {
				close(ready[0]);
				close(hold[1]);
				lu_reader(r, ids + (size_t)r * LU_MAX_IDS, &counts[r],
					  r ? -1 : ready[1], hold[0]);
			}
		}
		close(ready[1]);
		close(hold[0]);
		for (r = 1; r < LU_READERS; r++)
			ASSERT_EQ(0, sf_wait_child(pids[r]))
				TH_LOG("cycle %d ('%s'): reader %d failed", cycle, params, r);
		/*
		 * Wait until reader 0 has the device open: the unload below
		 * must meet an open file, not a reader that is yet to start.
		 */
		ASSERT_EQ(1, read(ready[0], &c, 1))
			TH_LOG("cycle %d ('%s'): reader 0 failed", cycle, params);
		close(ready[0]);

		/* Reader 0 holds the device: rmmod is refused... */
		ret = sf_try_unload();
		ASSERT_EQ(-EWOULDBLOCK, ret) TH_LOG("cycle %d: delete_module: %s", cycle,
						    strerror(-ret));
		/* ...and the device keeps working. */
		ASSERT_TRUE(sf_path_exists(SF_SYSFS));
		fd = sf_open(O_RDONLY);
		ASSERT_LE(0, fd) TH_LOG("cycle %d: open: %s (%s)", cycle, strerror(-fd),
					lu_state(state, sizeof(state)));
		ASSERT_EQ(0, sf_get_config(fd, &cfg));
		ASSERT_EQ(0, sf_read1(fd, &all[n]));
		ASSERT_EQ(0, sf_read1(fd, &all[n + 1]));
		EXPECT_LT(all[n], all[n + 1]);
		n += 2;
		close(fd);

		/* Reader 0 closes its file: now rmmod goes through. */
		ASSERT_EQ(1, write(hold[1], "x", 1));
		close(hold[1]);
		ASSERT_EQ(0, sf_wait_child(pids[0])) TH_LOG("cycle %d: reader 0 failed", cycle);
		ret = sf_try_unload();
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: delete_module: %s", cycle, strerror(-ret));
		expect_gone(_metadata);

		/*
		 * Each reader's IDs strictly increase and carry the loaded node
		 * ids; none of the cycle's IDs repeats.
		 */
		for (r = 0; r < LU_READERS; r++) {
			const uint64_t *mine = ids + (size_t)r * LU_MAX_IDS;

			ASSERT_LE((uint32_t)LU_READS, counts[r]);
			for (i = 0; i < counts[r]; i++) {
				struct sf_id f = sf_decode(&cfg, mine[i]);

				if (i)
					ASSERT_LT(mine[i - 1], mine[i])
						TH_LOG("cycle %d reader %d: ID %zu", cycle, r, i);
				ASSERT_EQ(cfg.datacenter_id, f.dc);
				ASSERT_EQ(cfg.worker_id, f.worker);
				ASSERT_EQ(0, f.high);
				all[n++] = mine[i];
			}
		}
		qsort(all, n, sizeof(*all), sf_cmp_u64);
		for (i = 1; i < n; i++)
			ASSERT_NE(all[i - 1], all[i]) TH_LOG("cycle %d ('%s'): duplicate %" PRIu64,
							     cycle, params, all[i]);
		checked += n;
	}
	ksft_print_msg("load/unload: %d cycles, %lu IDs checked\n", LU_CYCLES, checked);
	free(all);
	ASSERT_EQ(0, sf_load(""));
}

SF_TEST_MAIN()
