// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-floord(8): the saved floor file and its crash-safe write.
 * See state.h for the format.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

/* Called between the write and the rename of a save: the unit tests' fault point. */
#ifndef SF_STATE_SAVE_HOOK
#define SF_STATE_SAVE_HOOK()	((void)0)
#endif

uint32_t sf_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320U & (0U - (crc & 1)));
	}
	return ~crc;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

bool sf_instance_id_valid(const char *s, size_t len)
{
	if (len != SF_INSTANCE_ID_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The keys of versions 1 and 2, in the order they are written. */
enum { K_FLOOR, K_HIGH, K_MARGIN, K_SAVED, K_INSTANCE, NKEYS };

/*
 * Whether the values are ones a save writes (state.h): 0, or -ERANGE with
 * @err saying which.  One check for the writer and the reader, so that what
 * is written always reads back and nothing else does.
 */
static int check_values(const uint64_t v[NKEYS], char *err, size_t errlen)
{
	if (v[K_FLOOR] == 0) {
		set_err(err, errlen, "floor_ms is 0");
		return -ERANGE;
	}
	if (v[K_FLOOR] > SF_STATE_MAX_MS) {
		set_err(err, errlen, "floor_ms %" PRIu64 " is past year 9999 (at most %llu): no device can be restored to it",
			v[K_FLOOR], SF_STATE_MAX_MS);
		return -ERANGE;
	}
	if (v[K_HIGH] > v[K_FLOOR]) {
		set_err(err, errlen, "high_ms %" PRIu64 " is above floor_ms %" PRIu64 " (a save writes the mark plus a margin)",
			v[K_HIGH], v[K_FLOOR]);
		return -ERANGE;
	}
	if (v[K_MARGIN] > SF_MAX_DURATION_MS) {
		set_err(err, errlen, "margin_ms %" PRIu64 " is more than a day (%llu)", v[K_MARGIN],
			SF_MAX_DURATION_MS);
		return -ERANGE;
	}
	if (v[K_SAVED] > SF_STATE_MAX_MS) {
		set_err(err, errlen, "saved_unix_ms %" PRIu64 " is past year 9999 (at most %llu)",
			v[K_SAVED], SF_STATE_MAX_MS);
		return -ERANGE;
	}
	return 0;
}

int sf_state_format(const struct sf_state *st, char *buf, size_t len)
{
	const uint64_t v[NKEYS] = {
		[K_FLOOR] = st->floor_ms, [K_HIGH] = st->high_ms,
		[K_MARGIN] = st->margin_ms, [K_SAVED] = st->saved_unix_ms,
	};
	size_t idlen = strnlen(st->instance_id, sizeof(st->instance_id));
	int n, m;

	if (idlen && !sf_instance_id_valid(st->instance_id, idlen))
		return -EINVAL;
	if (check_values(v, NULL, 0))
		return -ERANGE;
	/* Version 1 when the instance is unknown: what an older floord reads. */
	n = snprintf(buf, len,
		     SF_STATE_MAGIC " %d\n"
		     "floor_ms %" PRIu64 "\n"
		     "high_ms %" PRIu64 "\n"
		     "margin_ms %" PRIu64 "\n"
		     "saved_unix_ms %" PRIu64 "\n"
		     "%s%s%s",
		     idlen ? 2 : 1, st->floor_ms, st->high_ms, st->margin_ms,
		     st->saved_unix_ms, idlen ? "instance_id " : "",
		     idlen ? st->instance_id : "", idlen ? "\n" : "");
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	m = snprintf(buf + n, len - (size_t)n, "crc32 %08" PRIx32 "\n",
		     sf_crc32(0, buf, (size_t)n));
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENOSPC;
	return n + m;
}

/* Strict unsigned decimal of exactly @len bytes: no sign, space or leading zero. */
static int parse_u64(const char *s, size_t len, uint64_t *val)
{
	uint64_t v = 0;

	if (!len || len > 20 || (len > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned int d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned int)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*val = v;
	return 0;
}

static int parse_hex32(const char *s, size_t len, uint32_t *val)
{
	uint32_t v = 0;

	if (len != 8)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint32_t)(c - 'a' + 10);
		else
			return -EINVAL;
	}
	*val = v;
	return 0;
}

int sf_state_parse(const char *buf, size_t len, struct sf_state *st, char *err, size_t errlen)
{
	static const char *const keys[NKEYS] = {
		"floor_ms", "high_ms", "margin_ms", "saved_unix_ms", "instance_id"
	};
	uint64_t vals[NKEYS] = { 0 };
	bool seen[NKEYS] = { false };
	char id[SF_INSTANCE_ID_LEN + 1] = "";
	const char *p = buf, *end = buf + len, *crc_line = NULL;
	const size_t mlen = strlen(SF_STATE_MAGIC);
	uint64_t version = 0;	/* set before use; gcc 12 -O3 cannot see it */
	size_t nkeys = 0;	/* the keys of this version; 0: an unknown version */
	uint32_t want, have;
	int line = 0;

	if (len == 0) {
		set_err(err, errlen, "empty file");
		return -EBADMSG;
	}
	if (len > SF_STATE_MAX) {
		set_err(err, errlen, "larger than %d bytes", SF_STATE_MAX);
		return -EBADMSG;
	}
	if (memchr(buf, '\0', len)) {
		set_err(err, errlen, "contains a NUL byte");
		return -EBADMSG;
	}
	if (buf[len - 1] != '\n') {
		set_err(err, errlen, "does not end with a newline (torn write?)");
		return -EBADMSG;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp, *v;
		size_t llen = (size_t)(nl - p), klen, vlen;

		line++;
		if (crc_line) {
			set_err(err, errlen, "line %d: data after the crc32 line", line);
			return -EBADMSG;
		}
		sp = memchr(p, ' ', llen);
		if (!sp) {
			set_err(err, errlen, "line %d: not \"key value\"", line);
			return -EBADMSG;
		}
		klen = (size_t)(sp - p);
		v = sp + 1;
		vlen = (size_t)(nl - v);
		if (line == 1) {
			if (klen != mlen || memcmp(p, SF_STATE_MAGIC, mlen) != 0) {
				set_err(err, errlen, "not a snowflake-floord state file (no \"%s\" line)",
					SF_STATE_MAGIC);
				return -EBADMSG;
			}
			if (parse_u64(v, vlen, &version)) {
				set_err(err, errlen, "line 1: bad format version");
				return -EBADMSG;
			}
			nkeys = version == 1 ? K_INSTANCE : version == 2 ? NKEYS : 0;
		} else if (klen == 5 && memcmp(p, "crc32", 5) == 0) {
			if (parse_hex32(v, vlen, &want)) {
				set_err(err, errlen, "line %d: bad crc32 value", line);
				return -EBADMSG;
			}
			crc_line = p;
		} else if (nkeys) {
			size_t k;

			for (k = 0; k < nkeys; k++)
				if (strlen(keys[k]) == klen && memcmp(p, keys[k], klen) == 0)
					break;
			if (k == nkeys) {
				/* This version knows every key: anything else is damage. */
				set_err(err, errlen, "line %d: unknown key \"%.*s\"", line,
					(int)(klen > 32 ? 32 : klen), p);
				return -EBADMSG;
			}
			if (seen[k]) {
				set_err(err, errlen, "line %d: %s given twice", line, keys[k]);
				return -EBADMSG;
			}
			if (k == K_INSTANCE) {
				if (!sf_instance_id_valid(v, vlen)) {
					set_err(err, errlen, "line %d: instance_id is not %d lowercase hex digits",
						line, SF_INSTANCE_ID_LEN);
					return -EBADMSG;
				}
				memcpy(id, v, vlen);
				id[vlen] = '\0';
			} else if (parse_u64(v, vlen, &vals[k])) {
				set_err(err, errlen, "line %d: %s is not a decimal number", line, keys[k]);
				return -EBADMSG;
			}
			seen[k] = true;
		}
		/* An unknown version's keys are not judged: its checksum decides. */
		p = nl + 1;
	}
	if (!crc_line) {
		set_err(err, errlen, "no crc32 line (truncated?)");
		return -EBADMSG;
	}
	have = sf_crc32(0, buf, (size_t)(crc_line - buf));
	if (have != want) {
		set_err(err, errlen, "checksum mismatch (file says %08" PRIx32 ", content has %08" PRIx32 ")",
			want, have);
		return -EBADMSG;
	}
	/* Checked after the checksum: a damaged version line is damage, not a new format. */
	if (!nkeys) {
		set_err(err, errlen, "format version %" PRIu64 " (this snowflake-floord reads 1 and %d)",
			version, SF_STATE_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* Version 1 needs floor_ms only (as it always did); version 2 every key. */
	for (size_t k = 0; k < nkeys; k++) {
		if (!seen[k] && (k == K_FLOOR || version == 2)) {
			set_err(err, errlen, "no %s", keys[k]);
			return -EBADMSG;
		}
	}
	/* A right checksum over a value no save writes: damage all the same. */
	if (check_values(vals, err, errlen))
		return -EBADMSG;
	st->floor_ms = vals[K_FLOOR];
	st->high_ms = vals[K_HIGH];
	st->margin_ms = vals[K_MARGIN];
	st->saved_unix_ms = vals[K_SAVED];
	memcpy(st->instance_id, id, sizeof(id));
	return 0;
}

int sf_state_load(const char *dir, struct sf_state *st, char *err, size_t errlen)
{
	char buf[SF_STATE_MAX + 1], why[160];
	size_t got = 0;
	int fd, e, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		set_err(err, errlen, "state directory %s: %s", dir, strerror(e));
		return -e;
	}
	r = openat(fd, SF_STATE_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	e = errno;
	close(fd);
	if (r < 0) {
		set_err(err, errlen, "%s/%s: %s", dir, SF_STATE_FILE, strerror(e));
		return -e;
	}
	fd = r;
	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			set_err(err, errlen, "reading %s/%s: %s", dir, SF_STATE_FILE, strerror(e));
			return -e;
		}
		if (n == 0 || got + (size_t)n == sizeof(buf)) {
			got += (size_t)n;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	r = sf_state_parse(buf, got, st, why, sizeof(why));
	if (r)
		set_err(err, errlen, "%s/%s: %s: %s", dir, SF_STATE_FILE,
			r == -EPROTONOSUPPORT ? "unknown format" : "corrupt", why);
	return r;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Create DIR/floor.tmp.XXXXXX anew: O_EXCL (and O_NOFOLLOW), so never a
 * file or a link that was there, whoever made it; another name when one
 * exists.  The directory is the daemon's (nobody else may add names), so
 * the names need not be secret, only new.  The fd, or -errno.
 */
static int create_tmp(int dfd, char *name, size_t len)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)getpid() << 16;
	for (int tries = 0; tries < 100; tries++) {
		char sfx[7];
		int fd;

		for (int i = 0; i < 6; i++) {
			/* xorshift64: a new suffix each time round */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			sfx[i] = chars[x % (sizeof(chars) - 1)];
		}
		sfx[6] = '\0';
		snprintf(name, len, "%s.%s", SF_STATE_TMP, sfx);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

int sf_state_save(const char *dir, const struct sf_state *st, char *err, size_t errlen)
{
	char buf[SF_STATE_MAX], tmp[sizeof(SF_STATE_TMP) + 8];
	sigset_t stop, old;
	int dfd, fd, len, r;

	len = sf_state_format(st, buf, sizeof(buf));
	if (len < 0) {
		set_err(err, errlen, "formatting the state: %s", strerror(-len));
		return len;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		set_err(err, errlen, "state directory %s: %s", dir, strerror(-r));
		return r;
	}
	/*
	 * From the create to the rename (or the removal), the signals that
	 * end a program run by hand (Ctrl-C, a closed terminal, kill) wait:
	 * they would leave the temporary file behind.  The daemon blocks
	 * them anyway; the old mask comes back at the end, and a signal that
	 * came meanwhile is delivered then, the save done.
	 */
	sigemptyset(&stop);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGQUIT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	fd = create_tmp(dfd, tmp, sizeof(tmp));
	if (fd < 0) {
		r = fd;
		set_err(err, errlen, "creating %s/%s.XXXXXX: %s", dir, SF_STATE_TMP, strerror(-r));
		close(dfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	r = write_all(fd, buf, (size_t)len);
	if (r) {
		set_err(err, errlen, "writing %s/%s: %s", dir, tmp, strerror(-r));
		goto fail;
	}
	SF_STATE_SAVE_HOOK();
	/* The data first: a rename that reaches the disk before it would leave an empty file. */
	if (fsync(fd)) {
		r = -errno;
		set_err(err, errlen, "fsync %s/%s: %s", dir, tmp, strerror(-r));
		goto fail;
	}
	if (close(fd)) {
		fd = -1;
		r = -errno;
		set_err(err, errlen, "closing %s/%s: %s", dir, tmp, strerror(-r));
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, SF_STATE_FILE)) {
		r = -errno;
		set_err(err, errlen, "renaming %s/%s to %s: %s", dir, tmp, SF_STATE_FILE,
			strerror(-r));
		goto fail;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* The rename itself is durable only once the directory is. */
	if (fsync(dfd)) {
		r = -errno;
		set_err(err, errlen, "fsync of the directory %s: %s", dir, strerror(-r));
		close(dfd);
		return r;
	}
	close(dfd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	close(dfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* "floor.tmp" (older snowflake-floord) or "floor.tmp." and anything. */
static bool is_tmp_name(const char *name)
{
	size_t n = strlen(SF_STATE_TMP);

	return strncmp(name, SF_STATE_TMP, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

int sf_state_clean(const char *dir, char *err, size_t errlen)
{
	struct dirent *de;
	int dfd, n = 0, r = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		set_err(err, errlen, "state directory %s: %s", dir, strerror(-r));
		return r;
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		set_err(err, errlen, "state directory %s: %s", dir, strerror(-r));
		close(dfd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		if (!is_tmp_name(de->d_name))
			continue;
		/* unlinkat() removes a link itself, never what it points to. */
		if (!unlinkat(dfd, de->d_name, 0))
			n++;
		else if (errno != ENOENT && errno != EISDIR && !r) {
			r = -errno;
			set_err(err, errlen, "removing %s/%s: %s", dir, de->d_name, strerror(-r));
		}
	}
	if (errno && !r) {
		r = -errno;
		set_err(err, errlen, "reading the directory %s: %s", dir, strerror(-r));
	}
	closedir(d);
	return r ? r : n;
}

uint64_t sf_layout_last_ms(uint64_t epoch_ms, uint32_t time_unit_ms, unsigned int timestamp_bits)
{
	uint64_t ticks = timestamp_bits >= 64 ? UINT64_MAX : (1ULL << timestamp_bits) - 1;

	if (time_unit_ms && ticks > (UINT64_MAX - epoch_ms) / time_unit_ms)
		return UINT64_MAX;
	return epoch_ms + ticks * time_unit_ms;
}

int sf_read_instance_id(const char *path, char *id)
{
	char buf[SF_INSTANCE_ID_LEN + 8];
	ssize_t n;
	int fd, e;

	id[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	/* One read: sysfs hands the whole value to the first read. */
	if (n != SF_INSTANCE_ID_LEN + 1 || buf[SF_INSTANCE_ID_LEN] != '\n' ||
	    !sf_instance_id_valid(buf, SF_INSTANCE_ID_LEN))
		return -EBADMSG;
	memcpy(id, buf, SF_INSTANCE_ID_LEN);
	id[SF_INSTANCE_ID_LEN] = '\0';
	return 0;
}

enum sf_restore sf_restore_decide(const struct sf_state *st, const char *device_id,
				  uint64_t high_ms)
{
	if (!st->instance_id[0])
		return SF_RESTORE_FILE_NO_INSTANCE;
	if (!device_id[0])
		return SF_RESTORE_DEVICE_NO_INSTANCE;
	if (strcmp(st->instance_id, device_id) != 0)
		return SF_RESTORE_NEW_INSTANCE;
	if (st->high_ms > high_ms)
		return SF_RESTORE_WENT_BACK;
	return SF_RESTORE_SAME_INSTANCE;
}

int sf_parse_duration(const char *s, uint64_t *ms)
{
	uint64_t v = 0, mult = 1000;
	size_t i = 0;

	if (!s)
		return -EINVAL;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	if (strcmp(s + i, "ms") == 0)
		mult = 1;
	else if (strcmp(s + i, "s") == 0 || !s[i])
		mult = 1000;
	else if (strcmp(s + i, "m") == 0)
		mult = 60000;
	else
		return -EINVAL;
	if (v > SF_MAX_DURATION_MS / mult)
		return -ERANGE;
	v *= mult;
	if (v == 0)
		return -ERANGE;
	*ms = v;
	return 0;
}

uint64_t sf_high_water(uint64_t clock_ms, uint64_t last_timestamp_ms, uint64_t floor_ms)
{
	uint64_t h = clock_ms;

	if (last_timestamp_ms > h)
		h = last_timestamp_ms;
	if (floor_ms > h)
		h = floor_ms;
	return h;
}

bool sf_need_save(uint64_t saved_floor_ms, uint64_t high_ms, uint64_t margin_ms)
{
	return saved_floor_ms <= high_ms ||
	       (saved_floor_ms - high_ms < margin_ms && (saved_floor_ms - high_ms) * 2 < margin_ms);
}

int sf_check_timing(uint64_t interval_ms, uint64_t margin_ms)
{
	return margin_ms > 2 * interval_ms ? 0 : -EINVAL;
}
