// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-floord(8): keep /dev/snowflake from ever going below an ID it
 * issued before a restart.
 *
 *   snowflake-floord             save the floor now, every time it is needed
 *                                (checked every --interval), and at SIGTERM
 *   snowflake-floord --restore   set the device's floor from the saved file
 *   snowflake-floord --save      save once
 *   snowflake-floord --show      check and print the saved file
 *
 * The saved floor is the generator's high-water mark plus --margin, so that
 * every ID issued until the next save is below it; the argument is in
 * snowflake-floord(8) and README.md.  Exit codes: state.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <snowflake.h>

#include "state.h"

#define PROG	"snowflake-floord"
#ifndef SNOWFLAKE_VERSION
#define SNOWFLAKE_VERSION	"unknown"
#endif

/* Log a failed save at most once per this many attempts (one per minute at 1 s). */
#define ERROR_EVERY	60

enum mode { MODE_RUN, MODE_RESTORE, MODE_SAVE, MODE_SHOW };

static const char usage[] =
"Usage: snowflake-floord [--restore | --save | --show] [OPTIONS]\n"
"\n"
"Save the high-water mark of /dev/snowflake so that, after a restart with a\n"
"clock that is behind, no ID lower than one issued before is ever issued.\n"
"\n"
"Modes:\n"
"  (none)           run: save now, then whenever needed (checked every\n"
"                   --interval), and at SIGTERM or SIGINT; SIGHUP saves now\n"
"  --restore        set the device's floor from the saved file, then exit\n"
"  --save           save once, then exit\n"
"  --show           check the saved file and print it, then exit\n"
"\n"
"Options:\n"
"  --state-dir DIR  where the file 'floor' is (default " SF_DEFAULT_STATE_DIR ")\n"
"  --device PATH    the device (default: $SNOWFLAKE_DEVICE, else /dev/snowflake)\n"
"  --interval DUR   how often to read the device (default 1s)\n"
"  --margin DUR     how far ahead of the high-water mark to save (default 10s);\n"
"                   more than twice --interval\n"
"  -v, --verbose    log every write\n"
"  -h, --help       show this help\n"
"  --version        show the version\n"
"\n"
"DUR: a number with an optional unit, ms, s (default) or m, e.g. 500ms, 10s.\n"
"Exit status: 0 success, 1 the device or the file system failed, 2 bad\n"
"command line, 3 the saved file is corrupt or of an unknown format (refused).\n"
"See snowflake-floord(8).\n";

static bool journal;
static bool verbose;

/* One line to stderr; with a <N> syslog priority prefix under journald. */
static void logp(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logp(int prio, const char *fmt, ...)
{
	va_list ap;

	if (journal)
		fprintf(stderr, "<%d>", prio);
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define LOG_ERR		3
#define LOG_WARNING	4
#define LOG_NOTICE	5
#define LOG_INFO	6

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "2026-11-21T20:48:48.476Z" */
static const char *iso(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, len, "?");
	else
		snprintf(buf + strlen(buf), len - strlen(buf), ".%03uZ", (unsigned int)(ms % 1000));
	return buf;
}

struct floord {
	const char *dir;
	const char *device;
	uint64_t interval_ms, margin_ms;
	struct snowflake *sf;
	uint64_t saved;		/* floor_ms of the file on disk, 0: none */
	uint64_t catchups, jumps;
	unsigned long failures;
	bool restoring;		/* the device is at the saved floor on purpose */
	/* The device's instance_id (constant while it is open); "": unknown. */
	char instance[SF_INSTANCE_ID_LEN + 1];
};

static int read_high(struct floord *d, uint64_t *high, struct snowflake_stats *out)
{
	struct snowflake_stats st;
	int r = snowflake_get_stats(d->sf, &st);

	if (r) {
		logp(LOG_ERR, "%s: reading the counters: %s", d->device, snowflake_strerror(r));
		return r;
	}
	*high = sf_high_water(st.clock_ms, st.last_timestamp_ms, st.floor_ms);
	if (out)
		*out = st;
	return 0;
}

/*
 * Write high + margin (never less than what the file already holds).  After
 * the write, check that the old file was still ahead of the generator: if
 * the generator passed it while the write was under way, a crash in that
 * window could have lost IDs, so say so.
 */
static int save(struct floord *d, const char *why)
{
	struct snowflake_stats st;
	struct sf_state s = { 0 };
	uint64_t high, after, t0, t1;
	char err[512], when[40];
	int r;

	r = read_high(d, &high, &st);
	if (r)
		return r;
	s.high_ms = high;
	s.margin_ms = d->margin_ms;
	memcpy(s.instance_id, d->instance, sizeof(s.instance_id));
	s.floor_ms = high + d->margin_ms;
	if (s.floor_ms < d->saved)
		s.floor_ms = d->saved;
	t0 = wall_ms();
	s.saved_unix_ms = t0;
	r = sf_state_save(d->dir, &s, err, sizeof(err));
	t1 = wall_ms();
	if (r) {
		if (d->failures++ % ERROR_EVERY == 0)
			logp(LOG_ERR, "saving the floor failed (%lu time%s): %s; %s/%s keeps floor_ms %" PRIu64,
			     d->failures, d->failures == 1 ? "" : "s", err, d->dir, SF_STATE_FILE,
			     d->saved);
		return r;
	}
	if (d->failures) {
		logp(LOG_NOTICE, "saving works again after %lu failure%s", d->failures,
		     d->failures == 1 ? "" : "s");
		d->failures = 0;
	}
	if (d->saved && !d->restoring && !read_high(d, &after, NULL) && after >= d->saved)
		logp(LOG_WARNING, "the generator passed the saved floor %" PRIu64
		     " by %" PRIu64 " ms before the new one was on disk (the write took %" PRIu64
		     " ms): raise --margin", d->saved, after - d->saved + 1, t1 > t0 ? t1 - t0 : 0);
	d->saved = s.floor_ms;
	d->catchups = st.clock_catchups;
	d->jumps = st.floor_jumps;
	if (verbose)
		logp(LOG_INFO, "saved floor_ms %" PRIu64 " (%s, high-water mark + %" PRIu64 " ms; %s)",
		     s.floor_ms, iso(s.floor_ms, when, sizeof(when)), s.floor_ms - high, why);
	return 0;
}

/* The file as it is now: 0, -ENOENT, or the error (logged). */
static int load(const char *dir, struct sf_state *st)
{
	char err[512];
	int r = sf_state_load(dir, st, err, sizeof(err));

	if (r && r != -ENOENT)
		logp(LOG_ERR, "%s", err);
	return r;
}

static int exit_of_load(int r)
{
	return r == -EBADMSG || r == -EPROTONOSUPPORT ? SF_FLOORD_EXIT_CORRUPT : SF_FLOORD_EXIT_FAIL;
}

/*
 * The module instance behind the open device: its instance_id, found
 * through the node's own numbers (/sys/dev/char/MAJ:MIN/), so that it is
 * the file of the device we hold, whatever its path.  The module cannot be
 * unloaded while we hold it open, so the id stays true until we close it.
 * Unknown (""), with a note, when the module has no such file (older than
 * this program) or it cannot be read: then the file is written as version 1
 * and a restore raises the floor, as before instance ids.
 */
static void read_instance(struct floord *d)
{
	char path[80];
	struct stat sb;
	int r;

	d->instance[0] = '\0';
	if (fstat(snowflake_fd(d->sf), &sb)) {
		r = -errno;
	} else if (!S_ISCHR(sb.st_mode)) {
		r = -ENOTTY;
	} else {
		snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/instance_id",
			 major(sb.st_rdev), minor(sb.st_rdev));
		r = sf_read_instance_id(path, d->instance);
	}
	if (r == -ENOENT)
		logp(LOG_NOTICE, "%s: the module has no instance_id (older than this snowflake-floord): a restore raises the floor even into the module instance that saved it",
		     d->device);
	else if (r)
		logp(LOG_WARNING, "%s: cannot read the module's instance_id: %s; a restore raises the floor even into the module instance that saved it",
		     d->device, r == -EBADMSG ? "not 32 hex digits" : strerror(-r));
}

/* @flags: SNOWFLAKE_CONFIGURE for the restore, the only change; else 0. */
static int open_device(struct floord *d, int flags)
{
	int r = snowflake_open(&d->sf, d->device, flags);

	if (r) {
		logp(LOG_ERR, "%s: %s", d->device, snowflake_strerror(r));
		return r;
	}
	read_instance(d);
	return 0;
}

/* Only one writer: a lock on the state directory, held until exit. */
static int lock_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n;
	char err[512];

	if (fd < 0) {
		logp(LOG_ERR, "state directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		logp(LOG_ERR, "state directory %s: %s", dir,
		     errno == EWOULDBLOCK ? "another snowflake-floord is using it" : strerror(errno));
		close(fd);
		return -1;
	}
	/*
	 * With the lock no save is under way: a temporary file is what a
	 * killed one left (or an older floord's floor.tmp).  It never stops a
	 * save (each creates a new name), so failing to remove it is a note.
	 */
	n = sf_state_clean(dir, err, sizeof(err));
	if (n > 0)
		logp(LOG_NOTICE, "removed %d temporary file%s of an interrupted save from %s",
		     n, n == 1 ? "" : "s", dir);
	else if (n < 0)
		logp(LOG_WARNING, "%s", err);
	return fd;
}

/*
 * Whether the device's layout can stamp @floor_ms (when it cannot, SET_FLOOR
 * fails with EOVERFLOW, and a later restore would too): 0, else the exit
 * status (logged).  Such a file is refused like a corrupt one, and never
 * carried forward by a save.
 */
static int check_floor_fits(struct floord *d, uint64_t floor_ms, const char *refusing)
{
	struct snowflake_config cfg;
	uint64_t last;
	char a[40], b[40];
	int r = snowflake_get_config(d->sf, &cfg);

	if (r) {
		logp(LOG_ERR, "%s: reading the layout: %s", d->device, snowflake_strerror(r));
		return SF_FLOORD_EXIT_FAIL;
	}
	last = sf_layout_last_ms(cfg.epoch_ms, cfg.time_unit_ms, cfg.timestamp_bits);
	if (floor_ms <= last)
		return 0;
	logp(LOG_ERR, "%s/%s: floor_ms %" PRIu64 " (%s) is past the last ms the device's layout can stamp, %" PRIu64 " (%s): %s (see RECOVERY in snowflake-floord(8))",
	     d->dir, SF_STATE_FILE, floor_ms, iso(floor_ms, a, sizeof(a)), last,
	     iso(last, b, sizeof(b)), refusing);
	return SF_FLOORD_EXIT_CORRUPT;
}

/*
 * No capability left, none to regain (ambient, inheritable, permitted).
 * When none is held there is nothing to drop, and capset(2) is not called:
 * a unit's system call filter may forbid it (@privileged holds capset, and
 * snowflake-floor.service filters ~@privileged).  Ambient capabilities are
 * a subset of permitted and inheritable, so these two tell.
 */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	uint32_t held = 0;
	size_t i;

	if (syscall(SYS_capget, &h, caps))
		return -1;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		held |= caps[i].effective | caps[i].permitted | caps[i].inheritable;
	if (!held)
		return 0;
	memset(caps, 0, sizeof(caps));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -1;
	return syscall(SYS_capset, &h, caps) ? -1 : 0;
}

static int do_show(struct floord *d)
{
	struct sf_state st;
	char a[40], b[40];
	int r = load(d->dir, &st);

	if (r == -ENOENT) {
		logp(LOG_ERR, "no saved floor: %s/%s does not exist", d->dir, SF_STATE_FILE);
		return SF_FLOORD_EXIT_FAIL;
	}
	if (r)
		return exit_of_load(r);
	printf("floor_ms %" PRIu64 " %s\nhigh_ms %" PRIu64 "\nmargin_ms %" PRIu64
	       "\nsaved_unix_ms %" PRIu64 " %s\n", st.floor_ms, iso(st.floor_ms, a, sizeof(a)),
	       st.high_ms, st.margin_ms, st.saved_unix_ms, iso(st.saved_unix_ms, b, sizeof(b)));
	if (st.instance_id[0])
		printf("instance_id %s\n", st.instance_id);
	return SF_FLOORD_EXIT_OK;
}

/*
 * Raise the device's floor to the saved one, then save again at once: from
 * here on the device issues IDs at or above the restored floor, so the file
 * must move ahead of them before anything reads (a crash right after the
 * restore must not restore the same floor again).
 *
 * Unless the device is the module instance that wrote the file (a restart
 * of the service, a package upgrade: no reload, no reboot): then the floor
 * is left alone.  The floor exists for a generator that forgot the IDs it
 * issued, and this one did not: one instance's clock is the wall clock at
 * load plus boottime, moved only forward, and its floor and last timestamp
 * only rise, so it never issues an ID below one it issued before, whether
 * before the save or after it.  Raising the floor would only stamp IDs up
 * to --margin ahead of the clock.  The check that the saved high-water mark
 * is not above the device's (sf_restore_decide()) catches an instance whose
 * memory went back.
 */
static int do_restore(struct floord *d)
{
	struct snowflake_stats before, after;
	struct sf_state st;
	enum sf_restore how;
	char a[40], b[40];
	uint64_t clock, high;
	int lock, r;

	lock = lock_dir(d->dir);
	if (lock < 0)
		return SF_FLOORD_EXIT_FAIL;
	r = load(d->dir, &st);
	if (r && r != -ENOENT) {
		logp(LOG_ERR, "refusing to restore from a file that cannot be trusted; the device keeps its floor (see RECOVERY in snowflake-floord(8))");
		close(lock);
		return exit_of_load(r);
	}
	if (open_device(d, SNOWFLAKE_CONFIGURE)) {
		close(lock);
		return SF_FLOORD_EXIT_FAIL;
	}
	if (r == -ENOENT) {
		logp(LOG_NOTICE, "no saved floor in %s/%s: first start, nothing to restore",
		     d->dir, SF_STATE_FILE);
		d->saved = 0;
		goto save;
	}
	r = snowflake_get_stats(d->sf, &before);
	if (r) {
		logp(LOG_ERR, "%s: reading the counters: %s", d->device, snowflake_strerror(r));
		close(lock);
		return SF_FLOORD_EXIT_FAIL;
	}
	r = check_floor_fits(d, st.floor_ms, "refusing to restore it; the device keeps its floor");
	if (r) {
		close(lock);
		return r;
	}
	high = sf_high_water(before.clock_ms, before.last_timestamp_ms, before.floor_ms);
	how = sf_restore_decide(&st, d->instance, high);
	d->saved = st.floor_ms;
	if (how == SF_RESTORE_SAME_INSTANCE) {
		logp(LOG_NOTICE, "event=restore_same_instance instance_id=%s floor_ms=%" PRIu64 " high_ms=%" PRIu64 " device_high_ms=%" PRIu64 ": %s/%s (saved %s) was written by this module instance, whose high-water mark is not below the saved one: every ID it issues is above every ID it issued before, so its floor is left as it is",
		     d->instance, st.floor_ms, st.high_ms, high, d->dir, SF_STATE_FILE,
		     iso(st.saved_unix_ms, b, sizeof(b)));
		goto save;
	}
	if (how == SF_RESTORE_WENT_BACK)
		logp(LOG_WARNING, "%s/%s was saved by this module instance (%s), but its high-water mark %" PRIu64 " is above the device's %" PRIu64 ": the instance went back (a VM snapshot restored?) or the file was written elsewhere; restoring its floor as after a reload",
		     d->dir, SF_STATE_FILE, d->instance, st.high_ms, high);
	r = snowflake_set_floor(d->sf, st.floor_ms);
	if (!r)
		r = snowflake_get_stats(d->sf, &after);
	if (r) {
		logp(LOG_ERR, "%s: restoring floor_ms %" PRIu64 ": %s", d->device, st.floor_ms,
		     snowflake_strerror(r));
		close(lock);
		/* EOVERFLOW: the floor does not fit (the layout changed meanwhile?). */
		return r == -EOVERFLOW ? SF_FLOORD_EXIT_CORRUPT : SF_FLOORD_EXIT_FAIL;
	}
	clock = before.clock_ms;
	logp(LOG_NOTICE, "restored floor_ms %" PRIu64 " (%s, saved %s) from %s/%s; the generator's clock was %" PRIu64 " ms %s it",
	     st.floor_ms, iso(st.floor_ms, a, sizeof(a)), iso(st.saved_unix_ms, b, sizeof(b)),
	     d->dir, SF_STATE_FILE,
	     clock < st.floor_ms ? st.floor_ms - clock : clock - st.floor_ms,
	     clock < st.floor_ms ? "behind" : "ahead of");
	if (before.ids_issued && before.last_timestamp_ms < st.floor_ms)
		logp(LOG_WARNING, "%" PRIu64 " IDs were issued before this restore, below the restored floor: they may repeat IDs issued before the restart (restore before anything reads)",
		     (uint64_t)before.ids_issued);
	if (after.floor_ms < st.floor_ms)
		logp(LOG_WARNING, "the device's floor is %" PRIu64 ", below %" PRIu64,
		     (uint64_t)after.floor_ms, st.floor_ms);
save:
	d->restoring = true;
	r = save(d, "restore");
	close(lock);
	if (r) {
		logp(LOG_ERR, "cannot save the floor ahead of the device: a crash now could restore too low a floor");
		return SF_FLOORD_EXIT_FAIL;
	}
	return SF_FLOORD_EXIT_OK;
}

/* The file's floor, never to be lowered: 0 when there is none. */
static int saved_floor(struct floord *d)
{
	struct sf_state st;
	int r = load(d->dir, &st);

	if (r == -ENOENT) {
		d->saved = 0;
		return 0;
	}
	if (r) {
		logp(LOG_ERR, "refusing to overwrite it: check it, then move it away (see RECOVERY in snowflake-floord(8))");
		return exit_of_load(r);
	}
	d->saved = st.floor_ms;
	return 0;
}

static int do_save(struct floord *d)
{
	int lock, r;

	lock = lock_dir(d->dir);
	if (lock < 0)
		return SF_FLOORD_EXIT_FAIL;
	r = saved_floor(d);
	if (!r)
		r = open_device(d, 0) ? SF_FLOORD_EXIT_FAIL : 0;
	if (!r && d->saved)
		r = check_floor_fits(d, d->saved, "refusing to carry it forward");
	if (!r)
		r = save(d, "--save") ? SF_FLOORD_EXIT_FAIL : 0;
	close(lock);
	return r;
}

static int do_run(struct floord *d)
{
	struct timespec tmo = {
		.tv_sec = (time_t)(d->interval_ms / 1000),
		.tv_nsec = (long)(d->interval_ms % 1000) * 1000000,
	};
	sigset_t set;
	int lock, r;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);

	lock = lock_dir(d->dir);
	if (lock < 0)
		return SF_FLOORD_EXIT_FAIL;
	r = saved_floor(d);
	if (r)
		return r;
	if (open_device(d, 0))
		return SF_FLOORD_EXIT_FAIL;
	if (d->saved) {
		r = check_floor_fits(d, d->saved, "refusing to carry it forward");
		if (r)
			return r;
	}
	if (save(d, "start")) {
		logp(LOG_ERR, "cannot save the floor at start: giving up");
		return SF_FLOORD_EXIT_FAIL;
	}
	logp(LOG_INFO, "running: %s/%s, floor_ms %" PRIu64 ", checked every %" PRIu64
	     " ms, saved %" PRIu64 " ms ahead", d->dir, SF_STATE_FILE, d->saved,
	     d->interval_ms, d->margin_ms);
	for (;;) {
		struct snowflake_stats st;
		uint64_t high;
		int sig = sigtimedwait(&set, NULL, &tmo);

		if (sig == SIGTERM || sig == SIGINT) {
			r = save(d, sig == SIGTERM ? "SIGTERM" : "SIGINT");
			if (r) {
				logp(LOG_ERR, "the final save failed: %s/%s keeps floor_ms %" PRIu64,
				     d->dir, SF_STATE_FILE, d->saved);
				return SF_FLOORD_EXIT_FAIL;
			}
			logp(LOG_INFO, "stopped: saved floor_ms %" PRIu64, d->saved);
			return SF_FLOORD_EXIT_OK;
		}
		if (sig == SIGHUP) {
			save(d, "SIGHUP");
			continue;
		}
		if (read_high(d, &high, &st))
			continue;
		/* A catch-up or a floor moved the clock forward: the margin may be used up. */
		if (st.clock_catchups != d->catchups || st.floor_jumps != d->jumps)
			save(d, "the clock jumped forward");
		else if (d->failures || sf_need_save(d->saved, high, d->margin_ms))
			save(d, "periodic");
	}
}

int main(int argc, char **argv)
{
	enum { OPT_STATE_DIR = 256, OPT_DEVICE, OPT_INTERVAL, OPT_MARGIN, OPT_RESTORE,
	       OPT_SAVE, OPT_SHOW, OPT_VERSION };
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "margin", required_argument, NULL, OPT_MARGIN },
		{ "restore", no_argument, NULL, OPT_RESTORE },
		{ "save", no_argument, NULL, OPT_SAVE },
		{ "show", no_argument, NULL, OPT_SHOW },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	struct floord d = {
		.dir = SF_DEFAULT_STATE_DIR,
		.interval_ms = SF_DEFAULT_INTERVAL_MS,
		.margin_ms = SF_DEFAULT_MARGIN_MS,
	};
	enum mode mode = MODE_RUN;
	int modes = 0, c, r;
	const char *env;

	journal = getenv("JOURNAL_STREAM") != NULL;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			if (!*optarg) {
				logp(LOG_ERR, "--state-dir: empty");
				return SF_FLOORD_EXIT_USAGE;
			}
			d.dir = optarg;
			break;
		case OPT_DEVICE:
			d.device = optarg;
			break;
		case OPT_INTERVAL:
		case OPT_MARGIN:
			if (sf_parse_duration(optarg, c == OPT_INTERVAL ? &d.interval_ms : &d.margin_ms)) {
				logp(LOG_ERR, "--%s: '%s' is not a duration from 1ms to 1 day (e.g. 500ms, 10s, 2m)",
				     c == OPT_INTERVAL ? "interval" : "margin", optarg);
				return SF_FLOORD_EXIT_USAGE;
			}
			break;
		case OPT_RESTORE:
			mode = MODE_RESTORE;
			modes++;
			break;
		case OPT_SAVE:
			mode = MODE_SAVE;
			modes++;
			break;
		case OPT_SHOW:
			mode = MODE_SHOW;
			modes++;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return SF_FLOORD_EXIT_OK;
		case OPT_VERSION:
			puts(PROG " " SNOWFLAKE_VERSION);
			return SF_FLOORD_EXIT_OK;
		case ':':
			logp(LOG_ERR, "%s needs a value", argv[optind - 1]);
			return SF_FLOORD_EXIT_USAGE;
		default:
			logp(LOG_ERR, "unknown option '%s' (see --help)", argv[optind - 1]);
			return SF_FLOORD_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		logp(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
		return SF_FLOORD_EXIT_USAGE;
	}
	if (modes > 1) {
		logp(LOG_ERR, "--restore, --save and --show exclude each other");
		return SF_FLOORD_EXIT_USAGE;
	}
	if (sf_check_timing(d.interval_ms, d.margin_ms)) {
		logp(LOG_ERR, "--margin (%" PRIu64 " ms) must be more than twice --interval (%" PRIu64 " ms)",
		     d.margin_ms, d.interval_ms);
		return SF_FLOORD_EXIT_USAGE;
	}
	if (!d.device) {
		env = secure_getenv("SNOWFLAKE_DEVICE");
		d.device = env && *env ? env : "/dev/snowflake";
	}

	/*
	 * Only the restore changes the device (SET_FLOOR), through a
	 * descriptor opened for writing (the group snowflake-admin of
	 * snowflake-floor.service) or with CAP_SYS_ADMIN (root by hand); the
	 * daemon, --save and --show only read it, read-only, and let every
	 * capability go before doing anything.
	 */
	if (mode != MODE_RESTORE && drop_capabilities()) {
		logp(LOG_ERR, "dropping the capabilities: %s", strerror(errno));
		return SF_FLOORD_EXIT_FAIL;
	}

	switch (mode) {
	case MODE_RESTORE:
		r = do_restore(&d);
		break;
	case MODE_SAVE:
		r = do_save(&d);
		break;
	case MODE_SHOW:
		r = do_show(&d);
		break;
	default:
		r = do_run(&d);
		break;
	}
	if (d.sf)
		snowflake_close(d.sf);
	return r;
}
