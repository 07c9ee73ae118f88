/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snowflake-floord(8): the saved floor, its file format and its crash-safe
 * write, and the save policy.  No device access here, so the native unit
 * tests (userspace/tests/floord_state_test.c) can link it.
 *
 * The file, DIR/floor, text, at most SF_STATE_MAX bytes:
 *
 *   snowflake-floor 2
 *   floor_ms 1763769600123
 *   high_ms 1763769590123
 *   margin_ms 10000
 *   saved_unix_ms 1763769590125
 *   instance_id 0f3c9a5e7d1b24c68e0a9b3f5c7d1e2a
 *   crc32 8d1f3a0c
 *
 * Line 1 names the format and its version.  floor_ms is what a restore sets
 * as the device's floor (it already includes the margin); high_ms is the
 * high-water mark it was computed from; instance_id is the module's
 * instance_id (sysfs) at the save: a restore into that same instance leaves
 * the floor alone (sf_restore_decide()).  margin_ms and saved_unix_ms are
 * informational.  The last line is the CRC-32 (IEEE 802.3, as zlib's
 * crc32()) of every byte before it, 8 lowercase hex digits, and the file ends
 * with its newline.  A file that does not parse exactly (a torn or truncated
 * write, a flipped bit, garbage) is "corrupt" and is never used.
 *
 * The values must also be ones a save could have written, or the file is
 * corrupt even with its checksum right: floor_ms from 1 to SF_STATE_MAX_MS
 * (no device can be restored to a floor past year 9999, and the one this
 * program writes is the device's clock plus a margin of at most a day);
 * high_ms and saved_unix_ms at most SF_STATE_MAX_MS, high_ms at most
 * floor_ms (the floor is the mark plus the margin, never lowered); margin_ms
 * at most SF_MAX_DURATION_MS (what --margin accepts).  A floor the
 * device's layout cannot stamp (sf_layout_last_ms()) is refused by the
 * restore and the daemon, which then never carry it forward.
 *
 * Versions: 1 has exactly the keys above but instance_id (floor_ms
 * required); 2 has all of them, each required.  A save writes 2 when it
 * knows the instance, else 1 (a module without instance_id), so a file stays
 * readable by every snowflake-floord that could have written it.  Another
 * version is "unknown" (-EPROTONOSUPPORT), not corrupt, when its checksum
 * holds.
 */
#ifndef SNOWFLAKE_FLOORD_STATE_H
#define SNOWFLAKE_FLOORD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SF_STATE_FILE		"floor"
/* The temporary file of a save: "floor.tmp." and 6 random characters. */
#define SF_STATE_TMP		"floor.tmp"
#define SF_STATE_MAGIC		"snowflake-floor"
#define SF_STATE_VERSION	2	/* the newest this program reads and writes */
#define SF_STATE_MAX		4096

/* Defaults of the daemon, in ms (see snowflake-floord(8) for the why). */
#define SF_DEFAULT_INTERVAL_MS	1000
#define SF_DEFAULT_MARGIN_MS	10000
#define SF_MAX_DURATION_MS	86400000ULL	/* one day */
#define SF_DEFAULT_STATE_DIR	"/var/lib/snowflake"
/* The last ms of year 9999 (9999-12-31T23:59:59.999Z): no saved value is above it. */
#define SF_STATE_MAX_MS		253402300799999ULL

/* Exit codes (snowflake-floord(8)). */
#define SF_FLOORD_EXIT_OK	0
#define SF_FLOORD_EXIT_FAIL	1	/* the device or the file system failed */
#define SF_FLOORD_EXIT_USAGE	2	/* bad command line: nothing done */
#define SF_FLOORD_EXIT_CORRUPT	3	/* the saved file is corrupt: refused */

/* The module's instance_id: 32 lowercase hex digits (its sysfs file adds a newline). */
#define SF_INSTANCE_ID_LEN	32

struct sf_state {
	uint64_t floor_ms;	/* restore this floor (Unix ms) */
	uint64_t high_ms;	/* the generator's high-water mark at the save */
	uint64_t margin_ms;	/* floor_ms - high_ms when saved */
	uint64_t saved_unix_ms;	/* wall clock at the save (informational) */
	/* The module instance at the save, NUL-terminated; "": unknown (version 1). */
	char instance_id[SF_INSTANCE_ID_LEN + 1];
};

/* CRC-32 (IEEE), the zlib crc32() of @len bytes starting from @crc (0 first). */
uint32_t sf_crc32(uint32_t crc, const void *buf, size_t len);

/*
 * The file's text for @st into @buf (version 2 with @st->instance_id, else
 * 1): its length, -ENOSPC if @len is too small, -EINVAL if instance_id is
 * neither empty nor valid, -ERANGE if a value is one the parser refuses
 * (floor_ms 0 or past SF_STATE_MAX_MS, high_ms above floor_ms, ...): what
 * is written always reads back.
 */
int sf_state_format(const struct sf_state *st, char *buf, size_t len);

/*
 * Parse a whole file.  0; -EBADMSG (corrupt: @err says why) or
 * -EPROTONOSUPPORT (another format version).  @st is written only on success.
 */
int sf_state_parse(const char *buf, size_t len, struct sf_state *st, char *err, size_t errlen);

/*
 * Read DIR/floor.  0; -ENOENT when there is no file; -EBADMSG or
 * -EPROTONOSUPPORT when it is unusable; another -errno when it cannot be
 * read.  On error, @err holds a message naming the file.
 */
int sf_state_load(const char *dir, struct sf_state *st, char *err, size_t errlen);

/*
 * Replace DIR/floor crash-safely: write a new DIR/floor.tmp.XXXXXX (created
 * with O_EXCL, so never a file or link that was there: a stale one, even
 * root's, is no obstacle), fsync it, rename it over DIR/floor, fsync DIR.
 * After a crash at any point DIR/floor is the old file or the new one,
 * whole.  From the create to the rename or the removal, SIGHUP, SIGINT,
 * SIGQUIT and SIGTERM are blocked (delivered after, if they came), so that
 * an interrupted save by hand leaves no temporary file.  0, or -errno with
 * @err naming the step; on error DIR/floor is unchanged and the temporary
 * file is removed.
 */
int sf_state_save(const char *dir, const struct sf_state *st, char *err, size_t errlen);

/*
 * Remove what an interrupted save left in DIR (SIGKILL, a crash, an older
 * snowflake-floord: "floor.tmp" and "floor.tmp.*", whoever owns them; a
 * symbolic link is removed, never followed; a directory is left).  Only for
 * the holder of the directory's lock (no save under way).  The number
 * removed, or -errno with @err set.
 */
int sf_state_clean(const char *dir, char *err, size_t errlen);

/*
 * The last Unix ms a layout can stamp: @epoch_ms + (2^@timestamp_bits - 1)
 * ticks of @time_unit_ms, UINT64_MAX when that does not fit 64 bits.  A
 * floor above it cannot be restored (SET_FLOOR fails with -EOVERFLOW).
 */
uint64_t sf_layout_last_ms(uint64_t epoch_ms, uint32_t time_unit_ms, unsigned int timestamp_bits);

/* Whether @s is exactly an instance id: 32 lowercase hex digits, nothing else. */
bool sf_instance_id_valid(const char *s, size_t len);

/*
 * Read a module's instance_id file (@path, e.g.
 * /sys/dev/char/MAJ:MIN/instance_id) into @id (SF_INSTANCE_ID_LEN + 1
 * bytes).  0; -errno when it cannot be read (-ENOENT: a module without it);
 * -EBADMSG when it is not 32 lowercase hex digits and a newline.  @id is
 * "" on error.
 */
int sf_read_instance_id(const char *path, char *id);

/* What a restore does with the saved file (sf_restore_decide()). */
enum sf_restore {
	SF_RESTORE_SAME_INSTANCE,	/* leave the floor alone */
	SF_RESTORE_FILE_NO_INSTANCE,	/* raise: a version 1 file */
	SF_RESTORE_DEVICE_NO_INSTANCE,	/* raise: the device's instance is unknown */
	SF_RESTORE_NEW_INSTANCE,	/* raise: a reload or a reboot since the save */
	SF_RESTORE_WENT_BACK,		/* raise: same instance, but it went back */
};

/*
 * Whether a restore of @st into the device whose instance is @device_id
 * ("" if unknown) and whose high-water mark is @high_ms now may leave the
 * floor alone: only when both ids are known and equal and the saved
 * high-water mark is not above the device's.  One instance's high-water
 * mark never decreases (its clock is the wall clock at load plus boottime,
 * moved only forward; its last timestamp and floor only rise), so a saved
 * mark above it means the instance's memory went back (a VM snapshot
 * restored, a clone) or the file was not written here: then the floor is
 * raised as after a reload.
 */
enum sf_restore sf_restore_decide(const struct sf_state *st, const char *device_id,
				  uint64_t high_ms);

/*
 * A duration: digits with an optional unit, "ms", "s" (the default) or "m";
 * 1 ms .. one day.  0, or -EINVAL / -ERANGE.
 */
int sf_parse_duration(const char *s, uint64_t *ms);

/*
 * The high-water mark of the generator: nothing issued so far, nor anything
 * issued before the clock moves on, is above it.
 */
uint64_t sf_high_water(uint64_t clock_ms, uint64_t last_timestamp_ms, uint64_t floor_ms);

/*
 * Whether the daemon must write a new file now: when the saved floor is less
 * than margin/2 ahead of the high-water mark (or behind it).
 */
bool sf_need_save(uint64_t saved_floor_ms, uint64_t high_ms, uint64_t margin_ms);

/* --margin must be more than twice --interval: 0 or -EINVAL. */
int sf_check_timing(uint64_t interval_ms, uint64_t margin_ms);

#endif /* SNOWFLAKE_FLOORD_STATE_H */
